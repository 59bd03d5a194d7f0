"""Benchmark of the learner's post-test (docs/methodology/metrics.md "Post-test") on generated persona runs; writes the
"post-test" section of BENCHMARKS.md.

    python scripts/bench_posttest.py /work/runs/personas/curious /work/runs/personas/passive \
        --validity /work/runs/personas/validity --write-md

Reads each run's conversations (with their `posttest`, taken by `generate`) and computes, with no model call:
- the threshold table: for each similarity threshold, mean post-test Step Recall against the conversation's
  own tutorial and against another tutorial of the set (an impostor: what matching alone gives), and the
  mean Learning Gain; the threshold (docs/methodology/metrics.md) is where own - impostor is largest;
- Learning Gain per persona (mean with a 95 % bootstrap CI over conversations, n), Step Recall post vs pre,
  Order, Extraneous, Detail Recall;
- cost: model calls and seconds of the post-test and the pre-test per conversation, against the
  conversation's own model calls and seconds (latencies recorded in the records);
- with --validity DIR (repeatable): the `judge-check --posttest-learner` table (posttest_validity.csv);
- with --paper-scores DIR --paper-align DIR: the post-test on the paper's conversations (evaluate
  --posttest-learner on the human study's run files) per model, beside the people's ratings (align's output).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wikihowagent.evaluation import posttest as P  # noqa: E402
from wikihowagent.evaluation.metrics import Scorers  # noqa: E402
from wikihowagent.evaluation.summary import markdown_table  # noqa: E402
from wikihowagent.judgecheck.accuracy import bootstrap_ci  # noqa: E402
from wikihowagent.runs import POSTTEST_VALIDITY_CSV, read_conversations, run_name  # noqa: E402
from wikihowagent.stats.paired import bootstrap_mean_ci, group_sums  # noqa: E402

THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)
BOOT = 2000


def boot_ci(xs: list[float], seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap CI of the mean over conversations (judge-check's `bootstrap_ci`); none below two values."""
    return bootstrap_ci(xs, BOOT, seed) if len(xs) >= 2 else (math.nan, math.nan)


def fmt(x: float, pct: bool = True) -> str:
    return "–" if x is None or x != x else (f"{100 * x:.1f}" if pct else f"{x:.2f}")


def mean(xs: list[float]) -> float:
    xs = [x for x in xs if x is not None and x == x]
    return sum(xs) / len(xs) if xs else math.nan


def recall(scorers, tutorial_steps, answer, t: float = P.THRESHOLD, rule: str = P.MATCHING) -> float | None:
    """Step Recall of `answer` against `tutorial_steps` at threshold `t` under matching `rule`."""
    sim = scorers.step_similarity(list(tutorial_steps), list(answer))
    return P.step_recall(P.match_steps(sim, t, rule), len(tutorial_steps))


def threshold_table(convs, scorers) -> list[list[str]]:
    tested = [c for c in convs if P.usable(c.posttest.post)]
    rows = []
    for t in THRESHOLDS:
        own, other, sibling, gain = [], [], [], []
        for i, c in enumerate(tested):
            steps, recalled = list(c.steps), c.posttest.post.steps
            own.append(recall(scorers, steps, recalled, t))
            imp = next((o for o in tested[i + 1 :] + tested[:i] if o.title != c.title), None)  # another article
            if imp is not None:
                other.append(recall(scorers, imp.steps, recalled, t))
            sib = next((o for o in tested if o.title == c.title and list(o.steps) != steps), None)  # its other method
            if sib is not None:
                sibling.append(recall(scorers, sib.steps, recalled, t))
            if P.usable(c.posttest.pre):
                gain.append(own[-1] - recall(scorers, steps, c.posttest.pre.steps, t))
        rows.append(
            [
                f"{t:.2f}",
                fmt(mean(own)),
                fmt(mean(other)),
                fmt(mean(own) - mean(other)),
                fmt(mean(sibling)) if sibling else "–",
                fmt(mean(gain)),
                str(len(own)),
            ]
        )
    return rows


def headline_table(scorers, rule: str = P.MATCHING) -> tuple[list[list[str]], float, float]:
    """Model-free: every bundled tutorial "recalled" perfectly but tersely (each step's first sentence, the
    WikiHow headline) against its own full steps, another article's (an easy impostor: what matching alone
    gives) and, where the article has one, its other method's (a hard impostor: the same topic, other steps,
    which a learner who knows the title can guess). -> rows, the threshold with the largest own - easy gap,
    the one with the largest own - hard gap."""
    from wikihowagent.corpus.core import default_tutorials_path
    from wikihowagent.corpus.sampling import select_tutorials
    from wikihowagent.evaluation.metrics import sentences

    tuts = list(select_tutorials(default_tutorials_path(), skip_invalid=True))
    rows, best, best_gap, best_hard, best_hard_gap = [], P.THRESHOLD, -1.0, P.THRESHOLD, -1.0
    for t in THRESHOLDS:
        own, other, own_h, sibling = [], [], [], []
        for i, tut in enumerate(tuts):
            answer = [(sentences(s) or [s])[0] for s in tut.steps]
            own.append(recall(scorers, tut.steps, answer, t, rule))
            imp = next(o for o in tuts[i + 1 :] + tuts[:i] if o.title != tut.title)
            other.append(recall(scorers, imp.steps, answer, t, rule))
            sib = next((o for o in tuts if o.title == tut.title and o.steps != tut.steps), None)
            if sib is not None:
                own_h.append(own[-1])
                sibling.append(recall(scorers, sib.steps, answer, t, rule))
        gap, hard_gap = mean(own) - mean(other), mean(own_h) - mean(sibling)
        if gap > best_gap + 1e-9:
            best, best_gap = t, gap
        if hard_gap > best_hard_gap + 1e-9:
            best_hard, best_hard_gap = t, hard_gap
        rows.append(
            [
                f"{t:.2f}",
                fmt(mean(own)),
                fmt(mean(other)),
                fmt(gap),
                str(len(tuts)),
                fmt(mean(sibling)),
                fmt(hard_gap),
                str(len(sibling)),
            ]
        )
    return rows, best, best_hard


# the columns of persona_rows (bench_validity's learning table too)
PERSONA_HEADER = [
    "run",
    "persona",
    "conversations",
    "scored",
    "Learning Gain (%)",
    "Detail Gain (%)",
    "Step Recall post (%)",
    "pre (%)",
    "Order (τ %)",
    "Extraneous (%)",
    "Detail Recall (%)",
    "Completion (%)",
]


def persona_rows(by_run, scored, scorers):
    """`scored`: {run: the post-test metrics of its conversations (Scorers.score), in by_run's order}."""
    rows = []
    for name, convs in by_run.items():
        scores = scored[name]
        col = {m: [s.metrics.get(m) for s in scores] for m in P.POSTTEST_METRICS}
        gains = [g for g in col[P.LEARNING_GAIN] if g is not None]
        lo, hi = boot_ci(gains)
        dgains = [g for g in col[P.DETAIL_GAIN] if g is not None]
        dlo, dhi = boot_ci(dgains)
        pre = [recall(scorers, c.steps, c.posttest.pre.steps) for c in convs if c.posttest and P.usable(c.posttest.pre)]
        n_post = sum(1 for c in convs if c.posttest is not None)
        n_fail = sum(1 for c in convs if c.posttest is not None and not P.usable(c.posttest.post))
        persona = ",".join(sorted({c.persona or "paper" for c in convs}))
        rows.append(
            [
                name,
                persona,
                str(len(convs)),
                f"{n_post - n_fail}/{n_post}",
                f"{fmt(mean(gains))} [{fmt(lo)}, {fmt(hi)}] (n={len(gains)})",
                f"{fmt(mean(dgains))} [{fmt(dlo)}, {fmt(dhi)}] (n={len(dgains)})",
                fmt(mean(col[P.STEP_RECALL])),
                fmt(mean(pre)),
                fmt(mean(col[P.ORDER])),
                fmt(mean(col[P.EXTRANEOUS])),
                fmt(mean(col[P.DETAIL_RECALL])),
                fmt(mean([float(c.completed) for c in convs])),
            ]
        )
    return rows


def paired_rows(by_run, scored):
    """Every two runs that share tutorials (e.g. two personas on the same ones): Learning Gain and Detail Gain
    of A minus B, paired by tutorial (each run's mean per tutorial), 95 % bootstrap CI and the
    Wilcoxon signed-rank p (stats.paired, as Table 2)."""
    from itertools import combinations

    from wikihowagent.stats.paired import paired_compare

    per = {}
    for name, convs in by_run.items():
        scores = scored[name]
        for m in (P.LEARNING_GAIN, P.DETAIL_GAIN):
            groups: dict[str, list[float]] = {}
            for c, sc in zip(convs, scores, strict=False):
                if sc.metrics.get(m) is not None:
                    groups.setdefault(c.tutorial_key, []).append(sc.metrics[m])
            per[(name, m)] = {k: sum(v) / len(v) for k, v in groups.items()}
    rows = []
    for a, b in combinations(by_run, 2):
        for m in (P.LEARNING_GAIN, P.DETAIL_GAIN):
            r = paired_compare(per[(a, m)], per[(b, m)])
            if r.n:
                rows.append(
                    [
                        f"{a} − {b}",
                        m,
                        str(r.n),
                        f"{fmt(r.diff)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}]",
                        "–" if r.p != r.p else f"{r.p:.3f}",
                    ]
                )
    return rows


def labels(runs: list[Path]) -> list[str]:
    """Each run's name (run.json), with its parent folder when two runs share a name."""
    names = [run_name(r) for r in runs]
    return [f"{r.parent.name}/{n}" if names.count(n) > 1 else n for r, n in zip(runs, names, strict=False)]


# the columns of cost_rows (bench_validity's cost table too)
COST_HEADER = [
    "run",
    "n",
    "conversation calls",
    "conversation s",
    "extra calls",
    "post-test s",
    "pre-test s",
    "extra s",
    "extra / conversation time",
]


def cost_rows(by_run):
    rows = []
    for name, convs in by_run.items():
        conv_calls = [sum(1 for t in c.turns if t.kind not in ("begin", "finish")) for c in convs]
        conv_s = [sum(t.latency_s for t in c.turns) for c in convs]
        post_s = [c.posttest.post.latency_s for c in convs if c.posttest]
        pre_s = [c.posttest.pre.latency_s for c in convs if c.posttest and c.posttest.pre]
        tutorials = len({c.tutorial_key for c in convs})
        extra_calls = (len(post_s) + tutorials) / max(1, len(convs))
        extra_s = (sum(post_s) + sum(pre_s)) / max(1, len(convs))
        rows.append(
            [
                name,
                str(len(convs)),
                f"{mean(conv_calls):.1f}",
                f"{mean(conv_s):.1f}",
                f"{extra_calls:.2f}",
                f"{mean(post_s):.1f}",
                f"{mean(pre_s):.1f}",
                f"{extra_s:.1f}",
                f"{extra_s / max(1e-9, mean(conv_s)):.2f}",
            ]
        )
    return rows


# the columns of validity_rows (bench_posttest_wording's table adds its abstained shares)
VALIDITY_HEADER = [
    "perturbation",
    "pairs",
    "accuracy [95 % CI]",
    "lower",
    "ties",
    "recall original (%)",
    "recall perturbed (%)",
    "not scored",
    "judge accuracy",
]


def validity_rows(path: Path):
    from wikihowagent.csvcells import read_people_frame

    t = read_people_frame(path / POSTTEST_VALIDITY_CSV)
    return [
        [
            r.perturbation,
            str(r.n),
            f"{r.accuracy:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]",
            str(r.lower),
            str(r.ties),
            fmt(r.mean_recall_original),
            fmt(r.mean_recall_perturbed),
            str(r.failed),
            "–" if r.judge_accuracy != r.judge_accuracy else f"{r.judge_accuracy:.3f}",
        ]
        for r in t.itertuples()
    ]


def cluster_ci(values: list[float], clusters: list[str], seed: int = 0, boot: int = BOOT) -> tuple[float, float]:
    """95 % bootstrap CI of the mean, resampling clusters (tutorials) with all their conversations
    (`wikihowagent.stats.paired.bootstrap_mean_ci`); none below two clusters."""
    if len(set(clusters)) < 2:
        return math.nan, math.nan
    return bootstrap_mean_ci([group_sums(list(zip(clusters, values, strict=True)))], boot, seed)


def paper_rows(scores_dir: Path, align_dir: Path) -> tuple[list[list[str]], list[str]]:
    """Post-tests of the paper's conversations (`evaluate FILES --posttest-learner SPEC --metrics <post-test>
    --out scores_dir`) beside the human ratings (`align ... --out align_dir`: paired_scores.csv, automatic.csv):
    per model, Learning Gain / Detail Gain with CIs and the people's mean over their rubrics; then how the
    models' order by Learning Gain matches the people's (Spearman over models) and the conversation-level r."""
    from scipy.stats import spearmanr

    from wikihowagent.alignment.schema import OVERALL
    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import AUTOMATIC_CSV, PAIRED_SCORES_CSV, SCORES, read_scores

    people = read_people_frame(align_dir / PAIRED_SCORES_CSV)
    rubrics = [c for c in people.columns if c.startswith("human_") and c != f"human_{OVERALL}"]
    overall = dict(zip(people["conversation_id"], people[rubrics].mean(axis=1, skipna=True), strict=False))
    by_model: dict[str, list] = {}
    for f in sorted(scores_dir.glob(f"*/{SCORES}")):
        for rec in read_scores(f).values():
            by_model.setdefault(rec.teacher or f.parent.name, []).append(rec)
    rows, lg_means, human_means, all_lg, all_tut = [], [], [], [], []
    for model, recs in sorted(by_model.items()):
        lg = [(r.metrics.get(P.LEARNING_GAIN), r.title) for r in recs if r.metrics.get(P.LEARNING_GAIN) is not None]
        dg = [r.metrics[P.DETAIL_GAIN] for r in recs if r.metrics.get(P.DETAIL_GAIN) is not None]
        hum = [overall[r.conversation_id] for r in recs if r.conversation_id in overall]
        lo, hi = boot_ci([g for g, _ in lg])
        dlo, dhi = boot_ci(dg)
        all_lg += [g for g, _ in lg]
        all_tut += [t for _, t in lg]
        lg_means.append(mean([g for g, _ in lg]))
        human_means.append(mean(hum))
        rows.append(
            [
                model,
                str(len(recs)),
                f"{fmt(lg_means[-1])} [{fmt(lo)}, {fmt(hi)}]",
                f"{fmt(mean(dg))} [{fmt(dlo)}, {fmt(dhi)}]",
                fmt(mean([r.metrics.get(P.STEP_RECALL) for r in recs])),
                f"{human_means[-1]:.2f}",
            ]
        )
    lo, hi = cluster_ci(all_lg, all_tut)
    notes = [
        f"All {len(all_lg)} conversations: Learning Gain {fmt(mean(all_lg))} % [{fmt(lo)}, {fmt(hi)}] "
        f"(95 % CI resampling the {len(set(all_tut))} tutorials)."
    ]
    if len(rows) >= 3:
        rho = spearmanr(lg_means, human_means)
        notes.append(
            f"Models ordered by mean Learning Gain vs by the people's mean rating: Spearman ρ "
            f"{rho.statistic:.2f} (p {rho.pvalue:.2f}, {len(rows)} models)."
        )
    auto = read_people_frame(align_dir / AUTOMATIC_CSV)
    for metric in (P.LEARNING_GAIN, P.STEP_RECALL, P.DETAIL_GAIN):
        row = auto[(auto["metric"] == metric) & (auto["human_rubric"] == OVERALL)]
        if len(row) and row.iloc[0]["n"] > 0:
            r = row.iloc[0]
            notes.append(
                f"{metric} vs the people's Overall, per conversation: Pearson r {r.pearson_r:.2f} "
                f"[{r.pearson_ci_low:.2f}, {r.pearson_ci_high:.2f}] (n {int(r.n)})."
            )
    return rows, notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="run directories whose records have post-tests")
    ap.add_argument(
        "--validity",
        type=Path,
        action="append",
        default=[],
        help="a `judge-check --posttest-learner` output directory (repeatable: one table each)",
    )
    ap.add_argument("--note", default="", help="a line on how the runs were made (settings, machine)")
    ap.add_argument("--paper-scores", type=Path, help="`evaluate --posttest-learner` output on the paper's run files")
    ap.add_argument("--paper-align", type=Path, help="`align` output of the human study against --paper-scores")
    ap.add_argument("--write-md", action="store_true", help="write the 'post-test' section of BENCHMARKS.md")
    args = ap.parse_args()
    by_run = {
        label: [c for c in read_conversations(r) if c.posttest is not None]
        for label, r in zip(labels(args.runs), args.runs, strict=False)
    }
    scorers = Scorers("default", list(P.POSTTEST_METRICS))
    all_convs = [c for cs in by_run.values() for c in cs]
    scored = {name: scorers.score(convs) for name, convs in by_run.items()}  # once: both tables below read it
    hrows, best, best_hard = headline_table(scorers)
    out = [
        args.note,
        "",
        "**Threshold** (cosine similarity of a match). Model-free, on the 22 bundled tutorials: a terse but "
        "perfect recall (each step's first sentence, the WikiHow headline) matched against the tutorial's own "
        "full steps vs another article's (impostor = what matching alone gives) and vs the same article's other "
        "method (hard impostor: the same topic, other steps — what a learner who knows the title can guess). "
        f"Largest gap at **{best:.2f}** (impostor), **{best_hard:.2f}** (hard impostor); the code uses "
        f"{P.THRESHOLD:.2f}.",
        "",
        markdown_table(
            [
                "threshold",
                "recall own (%)",
                "recall impostor (%)",
                "gap (pp)",
                "tutorials",
                "recall hard impostor (%)",
                "hard gap (pp)",
                "tutorials with one",
            ],
            hrows,
        ),
        "",
        f"The same on the {len(all_convs)} real post-tests of the runs below (recall of the conversation's own "
        "tutorial vs a tutorial of another article and vs its article's other method; Learning Gain at each "
        "threshold):",
        "",
        markdown_table(
            [
                "threshold",
                "recall own (%)",
                "recall impostor (%)",
                "gap (pp)",
                "recall hard impostor (%)",
                "Learning Gain (%)",
                "n",
            ],
            threshold_table(all_convs, scorers),
        ),
        "",
        "**Per run** (Learning Gain = post − pre Step Recall, Detail Gain = post − pre Detail Recall; mean, 95 % bootstrap CI over conversations; "
        "scored = post-tests that are a step list):",
        "",
        markdown_table(
            PERSONA_HEADER,
            persona_rows(by_run, scored, scorers),
        ),
        "",
        "**Runs against each other** on the tutorials both have (A − B, paired by tutorial; 95 % bootstrap "
        "CI; Wilcoxon signed-rank p):",
        "",
        markdown_table(["runs", "metric", "tutorials", "A − B (pp)", "p"], paired_rows(by_run, scored)),
        "",
        "**Cost** per conversation (latencies as recorded; one pre-test per tutorial, one post-test per conversation):",
        "",
        markdown_table(
            COST_HEADER,
            cost_rows(by_run),
        ),
    ]
    for vdir in args.validity:
        out += [
            "",
            f"**Validity** (`judge-check --posttest-learner`, {vdir}): share of pairs where the "
            "original's post-test Step Recall is higher than the perturbed copy's (ties count half):",
            "",
            markdown_table(
                VALIDITY_HEADER,
                validity_rows(vdir),
            ),
        ]
    if args.paper_scores and args.paper_align:
        prow, pnotes = paper_rows(args.paper_scores, args.paper_align)
        out += [
            "",
            f"**The paper's conversations** (the human study's development split, {args.paper_scores}): the "
            "post-test and pre-test taken by the learner model above on conversations between the paper's 7B "
            "models, beside the two people's ratings (their mean over the 8 rubrics, 1–5):",
            "",
            markdown_table(
                [
                    "teacher = learner",
                    "conversations",
                    "Learning Gain (%)",
                    "Detail Gain (%)",
                    "Step Recall post (%)",
                    "people's mean",
                ],
                prow,
            ),
            "",
            *[f"- {n}" for n in pnotes],
        ]
    body = "\n".join(out)
    print(body)
    if args.write_md:
        from benchmarks_md import write_section

        write_section("post-test", body)


if __name__ == "__main__":
    main()
