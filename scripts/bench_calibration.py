"""Calibration and prediction-powered estimates against real people: the human study's development split
(../shared/human-study: 70 conversations of 7 models on 10 tutorials, two human judges).

1. `align --calibrate` with the given judge scores (default: the paper's LLM judges, `paper_llm_scores.csv`;
   or run directories scored by our judge, e.g. `evaluate` on the split's conversation files): raw vs
   out-of-fold calibrated Pearson r, Spearman rho and MAE per rubric (GroupKFold by tutorial), 95 %
   bootstrap CIs over conversations.
2. PPI on real people. Every paired conversation is rated, so a rated subset is drawn: R times, per model a
   random half of its paired conversations keeps the human rating and the other half only the judge's score.
   For each model (and all models) and the Overall rating: the PPI estimate and the human-only mean of the
   same rated half, against the reference = the human mean over all the model's paired conversations.
   Reported: mean CI widths and their ratio (PPI / human-only), how often each CI holds the reference (a
   noisy reference: z intervals on a few ratings under-cover) and one draw's estimates.

The section says which conversations are paired: by their length rank among the study's (`bench_alignment.py
judge` judges the shortest first, so a partly judged study is its shortest conversations, not a random sample).

    .venv/bin/python scripts/bench_calibration.py [--study DIR] [--human J1 --human J2] [--scores PATH ...]
        [--label TEXT] [--repeats 200] [--bootstrap 2000] [--section NAME] [--write-md]
    # the embedded judge's scores (bench_alignment.py judge --variants plain): one run directory per model
    .venv/bin/python scripts/bench_calibration.py $(printf -- '--scores %s ' ../runs/human-study/plain/T-*/) \\
        --label "the embedded judge ..." --section "calibration and PPI on the human study: the embedded judge"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from wikihowagent.alignment import estimates, ppi  # noqa: E402
from wikihowagent.alignment.core import compute  # noqa: E402
from wikihowagent.alignment.problems import Problems  # noqa: E402
from wikihowagent.alignment.schema import METRICS  # noqa: E402
from wikihowagent.markdown import markdown_table  # noqa: E402


def ci(e) -> str:
    return f"{e.value:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}]" if np.isfinite(e.value) else "n/a"


def _as_estimate(coef):
    from wikihowagent.alignment.calibration import Estimate

    return Estimate(coef.value, coef.ci_low, coef.ci_high)


def calibration_table(res, bootstrap: int, method: str) -> tuple[str, object]:
    oc = estimates.calibrate(res, method, n_boot=bootstrap, seed=0, problems=Problems(), human_paths=[])
    if not oc.rubrics:
        g = res.groups[0]
        rows = [[m, str(g.correlations[m].n), ci(_as_estimate(g.correlations[m].coefs["pearson"]))] for m in METRICS]
        return (
            f"Not possible: {oc.why_no_file} (calibration needs at least 20 paired conversations per rubric). "
            "Raw correlations only:\n\n" + markdown_table(["rubric", "n", "raw r"], rows)
        ), oc
    rows = []
    for metric, ro in oc.rubrics.items():
        p = ro.comparison.predictors
        cells = [metric, str(ro.comparison.n), str(ro.tutorials)]
        for name in ("raw", "isotonic", "ridge"):
            cells.append(ci(p[name]["r"]) if name in p else "–")
        cells += [ci(p[name]["mae"]) if name in p else "–" for name in ("raw", "isotonic", "ridge")]
        rows.append(cells)
    table = markdown_table(
        [
            "rubric",
            "n",
            "tutorials",
            "raw r",
            "isotonic r (out of fold)",
            "ridge r (out of fold)",
            "raw MAE",
            "isotonic MAE",
            "ridge MAE",
        ],
        rows,
    )
    iso = [
        (ro.comparison.predictors["raw"], ro.comparison.predictors["isotonic"], ro.comparison.deltas["isotonic"])
        for ro in oc.rubrics.values()
    ]
    table += (
        f"\n\nIsotonic out of fold vs raw, over {len(iso)} rubrics: MAE lower on {sum(c['mae'].value < r['mae'].value for r, c, _ in iso)}"
        f" (the paired CI of the difference below 0 on {sum(d['mae'].ci_high < 0 for _, _, d in iso)}); Pearson r "
        f"higher on {sum(c['r'].value > r['r'].value for r, c, _ in iso)} (CI above 0 on "
        f"{sum(d['r'].ci_low > 0 for _, _, d in iso)}). The calibration fixes the judge's scale; it cannot add an "
        "order the judge does not have."
    )
    if any(c["r"].value < r["r"].value for r, c, _ in iso):
        table += (
            " An out-of-fold r below the raw r is what a judge without a usable order gives on few tutorials: "
            "its out-of-fold predictions stay near each fold's training mean (the other tutorials' humans), "
            "which is lower where the held-out tutorials' humans are higher (`calibration_predictions.csv` "
            "shows it); the CIs resample conversations with the folds fixed."
        )
    return table, oc


def ppi_table(res, repeats: int, seed: int = 0) -> str:
    k = len(METRICS)  # the Overall column
    ok = ~np.isnan(res.human[:, k]) & ~np.isnan(res.model[:, k])
    models = np.array([res.group_meta(c)["model"] for c in res.ids], dtype=object)
    rng = np.random.default_rng(seed)
    counts = {m: int((ok & (models == m)).sum()) for m in set(models[ok])}
    groups = ["all", *sorted(m for m, c in counts.items() if c >= 4)]  # half rated, half not: at least 2 + 2
    if ok.sum() < 20:
        return (
            f"Not attempted: {int(ok.sum())} paired conversations (half of them rated would say nothing; "
            "the simulation tests show the method)."
        )
    keys = ("ratio", "ppi_w", "hum_w", "ppi_cov", "hum_cov", "bias", "lam")
    stats = {g: {**{key: [] for key in keys}, "n": 0, "N": 0, "first": None} for g in groups}
    for _ in range(repeats):
        rated = np.zeros(len(res.ids), dtype=bool)
        for m in sorted(set(models[ok])):
            idx = np.flatnonzero(ok & (models == m))
            rated[rng.choice(idx, len(idx) // 2, replace=False)] = True
        for g in groups:
            gm = ok & ((models == g) if g != "all" else True)
            lab, unl = gm & rated, gm & ~rated
            ref = res.human[gm, k].mean()
            e = ppi.estimate(res.human[lab, k], res.model[lab, k], res.model[unl, k])
            s = stats[g]
            s["n"], s["N"] = int(lab.sum()), int(unl.sum())
            s["first"] = s["first"] or e
            s["ratio"].append(e.width_ratio)
            s["ppi_w"].append(e.ppi_high - e.ppi_low)
            s["hum_w"].append(e.human_high - e.human_low)
            s["ppi_cov"].append(e.ppi_low <= ref <= e.ppi_high)
            s["hum_cov"].append(e.human_low <= ref <= e.human_high)
            s["bias"].append(e.judge_mean - ref)
            s["lam"].append(e.lam)
    rows = []
    for g in groups:
        s = stats[g]
        gm = ok & ((models == g) if g != "all" else True)
        rows.append(
            [
                g,
                str(s["n"]),
                str(s["N"]),
                f"{res.human[gm, k].mean():.2f}",
                f"{np.mean(s['bias']):+.2f}",
                f"{np.mean(s['ppi_w']):.2f}",
                f"{np.mean(s['hum_w']):.2f}",
                f"{np.mean(s['ratio']):.2f}",
                f"{np.mean(s['ppi_cov']):.2f}",
                f"{np.mean(s['hum_cov']):.2f}",
            ]
        )
    left = sorted(m for m, c in counts.items() if c < 4)
    per_model = [np.nanmean(stats[g]["ratio"]) for g in groups if g != "all"]
    r_overall = res.groups[0].correlations["Overall"].coefs["pearson"].value
    f = stats["all"]["first"]
    lam = np.nanmean(stats["all"]["lam"])
    note = (
        f"\n\nOne draw (the first), all models: PPI {f.ppi_mean:.2f} [{f.ppi_low:.2f}, {f.ppi_high:.2f}] "
        f"(λ {f.lam:.2f}; mean over the draws {lam:.2f}) vs human-only {f.human_mean:.2f} [{f.human_low:.2f}, {f.human_high:.2f}] on {f.n_labeled} "
        f"rated + {f.n_unlabeled} unrated; the judge alone {f.judge_mean:.2f} [{f.judge_low:.2f}, {f.judge_high:.2f}]. "
        f"Mean CI width ratio over the models: {np.mean(per_model) if per_model else float('nan'):.2f} (1 = the "
        f"judge adds nothing). This judge's Overall r with the humans is {r_overall:.2f}: power-tuned PPI (PPI++) "
        "weighs the judge (λ) by how its scores covary with the people's in the rated half, so a judge that does not "
        "predict them leaves about the human-only interval instead of inheriting its bias (the simulation "
        "tests, r ≈ 0.9: median ratio 0.64)."
    )
    return (
        markdown_table(
            [
                "model",
                "n rated",
                "N unrated",
                "reference (human mean, all paired)",
                "judge − reference",
                "PPI CI width",
                "human-only CI width",
                "PPI / human-only width",
                "PPI CI holds the reference",
                "human-only CI holds it",
            ],
            rows,
        )
        + (f"\n\nLeft out (fewer than 4 conversations): {', '.join(left)}." if left else "")
        + note
    )


def which_conversations(study: Path, paired: list[str]) -> str:
    """Which of the study's conversations are paired, by length rank (the order bench_alignment.py judges in)."""
    from bench_alignment import shortest_first

    files = sorted((study / "conversations").glob("*.json"))
    if not files:
        return f"{len(paired)} conversations"
    order = [c["conversation_id"] for _f, c in shortest_first(files)]
    rank = {cid: i + 1 for i, cid in enumerate(order)}
    ranks = sorted(rank[c] for c in paired if c in rank)
    n, total = len(ranks), len(order)
    if n == total:
        return f"all {total} conversations of the study"
    length = "by characters of their messages, the order `scripts/bench_alignment.py judge` works in"
    prefix = next((i for i, r in enumerate(ranks) if r != i + 1), n)  # ranks 1..prefix are all there
    others = ranks[prefix:]
    more = f" and {len(others)} more (length ranks {', '.join(map(str, others))})" if others else ""
    return (
        f"the {prefix} shortest of the study's {total} conversations{more} ({length}) — not a random sample: "
        "mostly the shorter conversations"
    )


def main() -> None:
    from bench_alignment import STUDY

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--human", action="append", type=Path)
    ap.add_argument("--scores", action="append", type=Path)
    ap.add_argument(
        "--study",
        type=Path,
        default=STUDY,
        help="the human study folder (its conversations/ give the "
        "length order; default: judge_1.csv, judge_2.csv and paper_llm_scores.csv from it)",
    )
    ap.add_argument("--label", default="the paper's LLM judges (paper_llm_scores.csv, as published)")
    ap.add_argument("--method", default="isotonic")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument(
        "--section",
        default="calibration and PPI on the human study: the paper's judges",
        help="The BENCHMARKS.md section --write-md rewrites (one per judge).",
    )
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    human = args.human or [args.study / "judge_1.csv", args.study / "judge_2.csv"]
    scores = args.scores or [args.study / "paper_llm_scores.csv"]
    problems = Problems()
    res = compute(human, scores, n_boot=args.bootstrap, problems=problems, runs_dir=Path("."))
    for p in problems:  # unreadable or skipped inputs (the human conversations nobody judged yet: counted below)
        if p.kind in ("unusable file", "duplicate id", "mixed judges", "bad value", "bad line"):
            print(f"note: {p.message}", file=sys.stderr)
    cal, oc = calibration_table(res, args.bootstrap, args.method)
    ppi_md = ppi_table(res, args.repeats)
    paired = [
        c
        for c, h, m in zip(res.ids, res.human[:, len(METRICS)], res.model[:, len(METRICS)], strict=False)
        if np.isfinite(h) and np.isfinite(m)
    ]
    n_pairs = len(paired)
    n_tut = len(set(estimates.tutorial_keys(res, paired)[0])) if paired else 0
    per_model = {}
    for c in paired:
        m = res.group_meta(c)["model"]
        per_model[m] = per_model.get(m, 0) + 1
    models = ", ".join(f"{m} {n}" for m, n in sorted(per_model.items()))
    alphas = {m: a.alpha for m, a in res.groups[0].agreement.items() if np.isfinite(a.alpha)}
    agree = (
        f"; Krippendorff α (ordinal) between them over the {max(a.n_units for a in res.groups[0].agreement.values())} "
        f"conversations both rated: {min(alphas.values()):.2f} to {max(alphas.values()):.2f} over the rubrics"
        if alphas
        else ""
    )
    body = (
        f"Judge: {args.label}. Humans: {', '.join(p.name for p in human)} (mean of the two{agree}). "
        f"**{n_pairs} paired conversations** (judge-scored and human-rated; {len(res.ids)} human-rated): "
        f"{which_conversations(args.study, paired)}; {n_tut} tutorials; {len(per_model)} models ({models}). "
        "A development split (10 of the study's 25 tutorials; the other 15 are held out for acceptance): small, "
        "wide CIs, for choosing methods, not for claims about the judge.\n\n"
        f"Overall (per conversation, the mean of the 8 rubrics): raw Pearson r with the human mean "
        f"{ci(_as_estimate(res.groups[0].correlations['Overall'].coefs['pearson']))} (n {n_pairs}).\n\n"
        f"**Calibration** (`align --calibrate`): out of fold, GroupKFold by tutorial (k = min(5, {n_tut})); "
        f"Pearson r and MAE against the human mean with 95 % bootstrap CIs ({args.bootstrap} resamples of "
        "conversations). `scripts/bench_calibration.py`.\n\n"
        + cal
        + "\n\n**Prediction-powered estimates of the Overall human rating** (`align --ppi`). "
        + (
            f"Every paired conversation is rated, so `align --ppi` itself has no unrated one to add (it says so in "
            f"one line); here per model a random half keeps its rating and the other half only the judge's score "
            f"({args.repeats} draws, seed 0); reference = the human mean over all of the model's paired "
            "conversations (itself noisy: z intervals on a few ratings under-cover); 95 % intervals (normal "
            "approximation, `ppi_py`), width = high − low, means over the draws.\n\n"
            if n_pairs >= 20
            else ""
        )
        + ppi_md
        + "\n"
    )
    print(body)
    if args.write_md:
        from benchmarks_md import write_section

        write_section(args.section, body)


if __name__ == "__main__":
    main()
