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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("premise", help="title-only pre-tests on the validity set and the bundled tutorials")
    pr.add_argument("--out", type=Path, required=True)
    pr.add_argument("--learner", default="local")
    pr.add_argument("--tutorials", type=Path, action="append", default=[],
                    help="tutorial sets (default: data/validity/counterfactual and the bundled tutorials)")
    pr.add_argument("--minutes", type=float, default=8.0, help="start no new call after this long")
    args = ap.parse_args()
    if args.cmd == "premise":
        premise(args.out, args.learner, args.tutorials, args.minutes)
        print(markdown_table(["tutorial set", "tutorials", "answers scored", "title-only Step Recall (%) [95 % CI]",
                              "pre-test s"], premise_rows(args.out, args.learner, args.tutorials)))


if __name__ == "__main__":
    main()
