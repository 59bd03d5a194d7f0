"""Benchmark of the post-test on the counterfactual validity set (docs/pending/h31.md); writes the
"post-test: validity set" section of BENCHMARKS.md.

Each model step is resumable and chunked: run it under the model lock, as often as needed, until it says
"done" (answers are appended to OUT as they come; `--minutes` stops starting new calls after that long):

    flock /tmp/wikihowagent-model.lock python scripts/bench_validity.py premise --out /work/runs/h31/premise --minutes 8
    flock /tmp/wikihowagent-model.lock python scripts/bench_validity.py likelihood RUN... --out DIR --minutes 8
    python scripts/bench_validity.py report --premise DIR [--validity LABEL=DIR ...] [--runs RUN ...] \
        [--likelihood DIR] [--paper-scores DIR --paper-align DIR] --write-md

- premise: the learner's title-only pre-test (the post-test's wording, `PostTester.pretest`) on every tutorial of
  the validity set and of the bundled set; Step Recall against the tutorial: what the model knows before any
  lesson (goal on the validity set: < 20 %).
- report: the premise table; `judge-check --posttest-learner` validity tables (skip_steps, off_topic) per
  tutorial set; Learning Gain per run (full lessons) with CIs and curious vs passive paired by tutorial; the
  cost of each post-test kind per conversation; the human yardstick (pooled and within-tutorial r).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from wikihowagent.evaluation import posttest as P  # noqa: E402
from wikihowagent.evaluation.summary import markdown_table  # noqa: E402

VALIDITY_SET = Path(__file__).resolve().parent.parent / "data" / "validity" / "counterfactual"


def _sets(paths: list[Path]) -> dict[str, list]:
    from wikihowagent.corpus.core import default_tutorials_path, load_tutorials

    paths = paths or [VALIDITY_SET, default_tutorials_path()]
    return {p.name if p.name != "tutorials" else "bundled": load_tutorials(p) for p in paths}


def _learner(spec: str):
    from wikihowagent.config import load_config
    from wikihowagent.evaluation.core import LEARNER_ROLE, judge_llm_factory

    return judge_llm_factory(load_config(None), None, None, None, *LEARNER_ROLE)(spec)


def premise(out: Path, learner: str, tutorials: list[Path], minutes: float) -> bool:
    """Title-only pre-tests of every tutorial of each set, cached in OUT/pretests.jsonl. True when all done."""
    from wikihowagent.runs import PretestCache
    from wikihowagent.workflow.posttest import PostTester

    out.mkdir(parents=True, exist_ok=True)
    cache = PretestCache(out)
    tester = PostTester(_learner(learner), learner, cache)
    deadline = time.monotonic() + 60 * minutes
    todo = [t for ts in _sets(tutorials).values() for t in ts
            if cache.get(learner, t.tutorial_id, tester.prompt.version) is None]
    loop = asyncio.new_event_loop()
    try:
        for t in todo:
            if time.monotonic() > deadline:
                break
            loop.run_until_complete(tester.pretest(t.tutorial_id, t.title, t.method_title, len(t.steps)))
    finally:
        loop.close()
    left = sum(cache.get(learner, t.tutorial_id, tester.prompt.version) is None
               for ts in _sets(tutorials).values() for t in ts)
    print(f"premise: {len(todo) - left} pre-tests taken now, {left} left" + ("" if left else " — done"))
    return not left


def premise_rows(out: Path, learner: str, tutorials: list[Path]) -> list[list[str]]:
    from bench_posttest import boot_ci, fmt, mean, recall

    from wikihowagent.evaluation.metrics import Scorers
    from wikihowagent.runs import PretestCache
    from wikihowagent.workflow.posttest import get_prompt

    cache, version = PretestCache(out), get_prompt(None).version
    scorers = Scorers("default", [P.STEP_RECALL])
    rows = []
    for name, tuts in _sets(tutorials).items():
        got = [(t, cache.get(learner, t.tutorial_id, version)) for t in tuts]
        scored = [recall(scorers, t.steps, a.steps) for t, a in got if a is not None and P.usable(a)]
        lo, hi = boot_ci(scored)
        rows.append([name, str(len(tuts)), str(len(scored)), f"{fmt(mean(scored))} [{fmt(lo)}, {fmt(hi)}]",
                     fmt(mean([a.latency_s for _, a in got if a is not None]), pct=False)])
    return rows


def validity_rows(path: Path) -> list[list[str]]:
    """A `judge-check --posttest-learner [--tutorials ...]` output: per tutorial set (when split) and perturbation."""
    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import POSTTEST_VALIDITY_CSV, POSTTEST_VALIDITY_SETS_CSV

    from bench_posttest import fmt

    split = (path / POSTTEST_VALIDITY_SETS_CSV).exists()
    t = read_people_frame(path / (POSTTEST_VALIDITY_SETS_CSV if split else POSTTEST_VALIDITY_CSV))
    return [[getattr(r, "tutorials", "all"), r.perturbation, str(r.n),
             f"{r.accuracy:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]", str(r.lower), str(r.ties),
             fmt(r.mean_recall_original), fmt(r.mean_recall_perturbed), str(r.failed)] for r in t.itertuples()]


HUMAN_RUBRICS = ("Overall", "Progress", "Clarity")


def human_rows(scores_dir: Path, align_dir: Path, metrics: list[str]) -> list[list[str]]:
    """Pooled and within-tutorial r (stats.correlation.grouped_r) of each post-test metric with the people's
    ratings: `evaluate --posttest-learner` score files under scores_dir, `align` output (paired_scores.csv)."""
    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import PAIRED_SCORES_CSV, SCORES, read_scores
    from wikihowagent.stats.correlation import grouped_r

    people = read_people_frame(align_dir / PAIRED_SCORES_CSV).set_index("conversation_id")
    recs = [r for f in sorted(scores_dir.glob(f"**/{SCORES}")) for r in read_scores(f).values()
            if r.conversation_id in people.index]

    def cell(v: float, ci: tuple[float, float]) -> str:
        return "–" if v != v else f"{v:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"

    rows = []
    for metric in metrics:
        for rubric in HUMAN_RUBRICS:
            col = f"human_{rubric}"
            if col not in people.columns:
                continue
            xs = [r.metrics.get(metric) for r in recs]
            ys = [float(people.loc[r.conversation_id, col]) for r in recs]
            g = grouped_r(xs, ys, [r.title or "" for r in recs])
            rows.append([metric, rubric, str(g.n), str(g.groups), cell(g.pooled, g.pooled_ci),
                         cell(g.within, g.within_ci), "–" if g.between != g.between else f"{g.between:.2f}",
                         cell(g.mixed_slope, g.mixed_ci)])
    return rows


def report(args) -> str:
    from bench_posttest import cost_rows, labels, paired_rows, persona_rows

    from wikihowagent.evaluation.metrics import Scorers
    from wikihowagent.runs import read_conversations

    out = [args.note, ""] if args.note else []
    if args.premise:
        out += ["**Premise**: the learner's title-only pre-test (what it writes before any lesson, the post-test's "
                "wording) scored against each tutorial — on the counterfactual validity set it should know little "
                "(goal < 20 %); on the bundled tutorials it knows much:", "",
                markdown_table(["tutorial set", "tutorials", "answers scored", "title-only Step Recall (%) [95 % CI]",
                                "pre-test s"], premise_rows(args.premise, args.learner, [])), ""]
    for vdir in args.validity:
        out += [f"**Validity** (`judge-check --posttest-learner --tutorials`, {vdir}): share of pairs where the "
                "original's post-test Step Recall is higher than the perturbed copy's (ties count half; 95 % "
                "bootstrap CI over conversations):", "",
                markdown_table(["tutorials", "perturbation", "pairs", "accuracy [95 % CI]", "lower", "ties",
                                "recall original (%)", "recall perturbed (%)", "not scored"], validity_rows(vdir)), ""]
    if args.runs:
        by_run = {label: [c for c in read_conversations(r) if c.posttest is not None]
                  for label, r in zip(labels(args.runs), args.runs)}
        scorers = Scorers("default", list(P.POSTTEST_METRICS))
        scored = {name: scorers.score(convs) for name, convs in by_run.items()}
        out += ["**Learning per run** (Learning Gain = post − pre Step Recall; mean, 95 % bootstrap CI over "
                "conversations):", "",
                markdown_table(["run", "persona", "conversations", "scored", "Learning Gain (%)", "Detail Gain (%)",
                                "Step Recall post (%)", "pre (%)", "Order (τ %)", "Extraneous (%)",
                                "Detail Recall (%)", "Completion (%)"], persona_rows(by_run, scored, scorers)), "",
                "**Runs against each other**, paired by tutorial (A − B; 95 % bootstrap CI; Wilcoxon signed-rank p):",
                "", markdown_table(["runs", "metric", "tutorials", "A − B (pp)", "p"], paired_rows(by_run, scored)), "",
                "**Cost** per conversation of the recall post-test (one call) and the pre-test (one per tutorial):", "",
                markdown_table(["run", "n", "conversation calls", "conversation s", "extra calls", "post-test s",
                                "pre-test s", "extra s", "extra / conversation time"], cost_rows(by_run)), ""]
    if args.paper_scores and args.paper_align:
        out += ["**The human yardstick, read correctly** (the human study's development split: 70 conversations of "
                "10 tutorials). Pooled r over conversations, and within-tutorial r (the metric and the rating "
                "centred on their tutorial's mean: what is left once *which tutorial* is removed), 95 % CIs "
                "resampling tutorials; between = r of the tutorial means; mixed = the within slope of a "
                "random-intercept model (standardised, y ~ x_within + x_tutorial_mean), 95 % CI:", "",
                markdown_table(["metric", "people's", "n", "tutorials", "pooled r", "within-tutorial r", "between r",
                                "mixed within slope"],
                               human_rows(args.paper_scores, args.paper_align, list(args.metric))), ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("premise", help="title-only pre-tests on the validity set and the bundled tutorials")
    pr.add_argument("--out", type=Path, required=True)
    pr.add_argument("--learner", default="local")
    pr.add_argument("--tutorials", type=Path, action="append", default=[],
                    help="tutorial sets (default: data/validity/counterfactual and the bundled tutorials)")
    pr.add_argument("--minutes", type=float, default=8.0, help="start no new call after this long")
    rp = sub.add_parser("report", help="the BENCHMARKS.md section from finished steps")
    rp.add_argument("--premise", type=Path, help="a `premise` output directory")
    rp.add_argument("--learner", default="local")
    rp.add_argument("--validity", type=Path, action="append", default=[],
                    help="a `judge-check --posttest-learner --tutorials` output directory (repeatable)")
    rp.add_argument("--runs", type=Path, nargs="*", default=[], help="generated runs with post-tests")
    rp.add_argument("--paper-scores", type=Path, help="`evaluate --posttest-learner` output on the paper's run files")
    rp.add_argument("--paper-align", type=Path, help="`align` output of the human study against --paper-scores")
    rp.add_argument("--metric", action="append", default=[],
                    help="metrics for the human yardstick (default: Learning Gain, Detail Gain, Step Recall)")
    rp.add_argument("--note", default="")
    rp.add_argument("--write-md", action="store_true", help="write the 'post-test: validity set' section")
    args = ap.parse_args()
    if args.cmd == "report":
        args.metric = args.metric or [P.LEARNING_GAIN, P.DETAIL_GAIN, P.STEP_RECALL]
        body = report(args)
        print(body)
        if args.write_md:
            from benchmarks_md import write_section

            write_section("post-test: validity set", body)
        return
    if args.cmd == "premise":
        premise(args.out, args.learner, args.tutorials, args.minutes)
        print(markdown_table(["tutorial set", "tutorials", "answers scored", "title-only Step Recall (%) [95 % CI]",
                              "pre-test s"], premise_rows(args.out, args.learner, args.tutorials)))


if __name__ == "__main__":
    main()
