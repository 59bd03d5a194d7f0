"""Calibration and prediction-powered estimates against real people: the human study's development split
(../shared/human-study: 70 conversations of 7 models on 10 tutorials, two human judges).

1. `align --calibrate` with the given judge scores (default: the paper's LLM judges, `paper_llm_scores.csv`;
   or run directories scored by our judge, e.g. `evaluate` on the split's conversation files): raw vs
   out-of-fold calibrated Pearson r, Spearman rho and MAE per rubric (GroupKFold by tutorial), 95 %
   bootstrap CIs over conversations.
2. PPI on real people. All 70 conversations are rated, so a rated subset is drawn: R times, per model a
   random half of its conversations keeps the human rating and the other half only the judge's score. For
   each model (and all models) and the Overall rating: the PPI estimate and the human-only mean of the same
   rated half, against the reference = the human mean over all the model's conversations. Reported: mean CI
   width ratio (PPI / human-only) and how often each CI holds the reference (a noisy reference: 10
   conversations per model; z intervals on 5 ratings under-cover).

    .venv/bin/python scripts/bench_calibration.py [--human J1 --human J2] [--scores PATH ...] [--label TEXT]
                                                  [--repeats 200] [--bootstrap 2000] [--section NAME] [--write-md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wikihowagent.alignment import estimates, ppi  # noqa: E402
from wikihowagent.alignment.core import compute  # noqa: E402
from wikihowagent.alignment.problems import Problems  # noqa: E402
from wikihowagent.alignment.schema import METRICS  # noqa: E402
from wikihowagent.markdown import markdown_table  # noqa: E402

STUDY = ROOT.parent.parent / "shared" / "human-study"


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
        return (f"Not possible: {oc.why_no_file} (calibration needs at least 20 paired conversations per rubric). "
                "Raw correlations only:\n\n" + markdown_table(["rubric", "n", "raw r"], rows)), oc
    rows = []
    for metric, ro in oc.rubrics.items():
        p = ro.comparison.predictors
        cells = [metric, str(ro.comparison.n), str(ro.tutorials)]
        for name in ("raw", "isotonic", "ridge"):
            cells.append(ci(p[name]["r"]) if name in p else "–")
        cells += [f"{p['raw']['mae'].value:.2f}", f"{p['isotonic']['mae'].value:.2f}",
                  f"{p['ridge']['mae'].value:.2f}" if "ridge" in p else "–"]
        rows.append(cells)
    table = markdown_table(["rubric", "n", "tutorials", "raw r", "isotonic r (out of fold)", "ridge r (out of fold)",
                            "raw MAE", "isotonic MAE", "ridge MAE"], rows)
    iso = [(ro.comparison.predictors["raw"], ro.comparison.predictors["isotonic"],
            ro.comparison.deltas["isotonic"]) for ro in oc.rubrics.values()]
    table += (f"\n\nIsotonic out of fold vs raw, over {len(iso)} rubrics: MAE lower on {sum(c['mae'].value < r['mae'].value for r, c, _ in iso)}"
              f" (the paired CI of the difference below 0 on {sum(d['mae'].ci_high < 0 for _, _, d in iso)}); Pearson r "
              f"higher on {sum(c['r'].value > r['r'].value for r, c, _ in iso)} (CI above 0 on "
              f"{sum(d['r'].ci_low > 0 for _, _, d in iso)}). The calibration fixes the judge's scale; it cannot add an "
              "order the judge does not have.")
    return table, oc


def ppi_table(res, repeats: int, seed: int = 0) -> str:
    k = len(METRICS)  # the Overall column
    ok = ~np.isnan(res.human[:, k]) & ~np.isnan(res.model[:, k])
    models = np.array([res.group_meta(c)["model"] for c in res.ids], dtype=object)
    rng = np.random.default_rng(seed)
    counts = {m: int((ok & (models == m)).sum()) for m in set(models[ok])}
    groups = ["all", *sorted(m for m, c in counts.items() if c >= 4)]  # half rated, half not: at least 2 + 2
    if ok.sum() < 20:
        return (f"Not attempted: {int(ok.sum())} paired conversations (half of them rated would say nothing; "
                "the simulation tests show the method).")
    stats = {g: {"ratio": [], "ppi_cov": [], "hum_cov": [], "n": 0, "N": 0, "bias": []} for g in groups}
    for _ in range(repeats):
        rated = np.zeros(len(res.ids), dtype=bool)
        for m in set(models[ok]):
            idx = np.flatnonzero(ok & (models == m))
            rated[rng.choice(idx, len(idx) // 2, replace=False)] = True
        for g in groups:
            gm = ok & ((models == g) if g != "all" else True)
            lab, unl = gm & rated, gm & ~rated
            ref = res.human[gm, k].mean()
            e = ppi.estimate(res.human[lab, k], res.model[lab, k], res.model[unl, k])
            s = stats[g]
            s["n"], s["N"] = int(lab.sum()), int(unl.sum())
            s["ratio"].append(e.width_ratio)
            s["ppi_cov"].append(e.ppi_low <= ref <= e.ppi_high)
            s["hum_cov"].append(e.human_low <= ref <= e.human_high)
            s["bias"].append(e.judge_mean - ref)
    rows = []
    for g in groups:
        s = stats[g]
        gm = ok & ((models == g) if g != "all" else True)
        rows.append([g, str(s["n"]), str(s["N"]), f"{res.human[gm, k].mean():.2f}", f"{np.mean(s['bias']):+.2f}",
                     f"{np.mean(s['ratio']):.2f}", f"{np.mean(s['ppi_cov']):.2f}", f"{np.mean(s['hum_cov']):.2f}"])
    left = sorted(m for m, c in counts.items() if c < 4)
    per_model = [np.nanmean(stats[g]["ratio"]) for g in groups if g != "all"]
    r_overall = res.groups[0].correlations["Overall"].coefs["pearson"].value
    note = (f"\n\nMean CI width ratio over the models: {np.mean(per_model):.2f} (1 = the judge adds nothing). This judge's "
            f"Overall r with the humans is {r_overall:.2f}; PPI narrows the interval only as far as the judge predicts "
            "the people (the simulation tests, r ≈ 0.9: median ratio 0.64).") if per_model else ""
    return markdown_table(["model", "n rated", "N unrated", "human mean (all rated)", "judge − human",
                           "PPI / human-only CI width", "PPI CI holds the reference", "human-only CI holds it"], rows) + (
        f"\n\nLeft out (fewer than 4 conversations): {', '.join(left)}." if left else "") + note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--human", action="append", type=Path)
    ap.add_argument("--scores", action="append", type=Path)
    ap.add_argument("--label", default="the paper's LLM judges (paper_llm_scores.csv, as published)")
    ap.add_argument("--method", default="isotonic")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--section", default="calibration and PPI on the human study: the paper's judges",
                    help="The BENCHMARKS.md section --write-md rewrites (one per judge).")
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    human = args.human or [STUDY / "judge_1.csv", STUDY / "judge_2.csv"]
    scores = args.scores or [STUDY / "paper_llm_scores.csv"]
    res = compute(human, scores, n_boot=args.bootstrap, problems=Problems(), runs_dir=Path("."))
    n_pairs = int((~np.isnan(res.human[:, len(METRICS)]) & ~np.isnan(res.model[:, len(METRICS)])).sum())
    cal, oc = calibration_table(res, args.bootstrap, args.method)
    ppi_md = ppi_table(res, args.repeats)
    paired = [c for c, h, m in zip(res.ids, res.human[:, len(METRICS)], res.model[:, len(METRICS)])
              if np.isfinite(h) and np.isfinite(m)]
    n_tut = len(set(estimates._tutorial_keys(res, paired)[0])) if paired else 0
    n_models = len({res.group_meta(c)["model"] for c in paired})
    body = (f"Judge: {args.label}. Humans: {', '.join(p.name for p in human)} (mean of the two). {n_pairs} paired "
            f"conversations ({len(res.ids)} rated), {n_tut} tutorials, {n_models} models — a small development split: "
            "wide CIs, and the two humans themselves agree weakly (Krippendorff α 0.07 on Clarity).\n\n"
            f"**Calibration** (`align --calibrate`): out of fold, GroupKFold by tutorial (k = min(5, {n_tut})); "
            f"Pearson r with 95 % bootstrap CIs ({args.bootstrap} resamples of conversations); MAE against the "
            "human mean. `scripts/bench_calibration.py`.\n\n" + cal
            + "\n\n**Prediction-powered estimates of the Overall human rating** (`align --ppi`). "
            + (f"All {n_pairs} are rated, so per model a random half keeps its rating ({args.repeats} draws); "
               "reference = the human mean over all of the model's rated conversations; 95 % intervals (normal "
               "approximation).\n\n" if n_pairs >= 20 else "") + ppi_md + "\n")
    print(body)
    if args.write_md:
        sys.path.insert(0, str(ROOT / "scripts"))
        from benchmarks_md import write_section

        write_section(args.section, body)


if __name__ == "__main__":
    main()
