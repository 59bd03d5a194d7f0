"""The post-test's matching rules against each other (docs/methodology/metrics.md, evaluation/posttest.py MATCHING):
writes the "post-test: matching" section of BENCHMARKS.md. No model call: every answer is already stored.

    python scripts/bench_posttest_matching.py --validity /work/runs/s5/curious=/work/runs/s5/check-v2 \
        --paper /work/shared/human-study/conversations --paper-tests /work/runs/s5/hs-posttest \
        --paper-align /work/runs/s5/hs-align --write-md

For each rule ("assign": the one-to-one assignment of maximal similarity; "nearest": each recalled step allowed
only its most similar tutorial step) and threshold:
- model-free, the 22 bundled tutorials: a terse perfect recall (each step's first sentence) against its own
  steps, another article's, and the same article's other method (bench_posttest.headline_table's yardstick);
- validity: `judge-check --posttest-learner` answers (posttests.jsonl) rescored: share of pairs where the
  original's Step Recall beats the skip_steps / off_topic copy's (ties half), 95 % bootstrap CI; plus the
  run's own Learning Gain (records' post- and pre-tests);
- the human yardstick: Learning Gain of the paper's conversations (`evaluate --posttest-learner` answers) against
  the people's Overall (align's paired_scores.csv, mean of their rubrics): Pearson r per rule with a 95 %
  bootstrap CI over conversations and the paired difference to "assign".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_posttest as BP  # noqa: E402

from wikihowagent.evaluation import posttest as P  # noqa: E402
from wikihowagent.evaluation.summary import markdown_table  # noqa: E402

THRESHOLDS = (0.35, 0.4, 0.45, 0.5)
BOOT = 2000


def headline_rows(scorers) -> list[list[str]]:
    """bench_posttest.headline_table under each rule: [rule, threshold, own, another article, gap, the same
    article's other method, gap to it, tutorials] at THRESHOLDS."""
    rows = []
    for rule in P.MATCHING_RULES:
        table, _, _ = BP.headline_table(scorers, rule)
        rows += [
            [rule, t, own, other, gap, sib, hard_gap, n]
            for t, own, other, gap, n, sib, hard_gap, _ in table
            if float(t) in THRESHOLDS
        ]
    return rows


def win(o: float, q: float) -> float:
    return 1.0 if o > q + 1e-9 else 0.5 if abs(o - q) <= 1e-9 else 0.0


def wins_of(scorers, run: Path, check: Path, rule: str, t: float, pert: str) -> list[float]:
    """Per conversation of `run`: 1 / 0.5 / 0 as the original's Step Recall is above / equal to / below the
    `pert` copy's (the answers `check`'s judge-check stored; the original's own record when it took none)."""
    from wikihowagent.runs import POSTTESTS, read_conversations, read_posttest_variants

    tests = read_posttest_variants(check / POSTTESTS)
    wins = []
    for c in read_conversations(run):
        orig, copy = tests.get((c.conversation_id, "original")) or c.posttest, tests.get((c.conversation_id, pert))
        if orig is None or copy is None or not (P.usable(orig.post) and P.usable(copy.post)):
            continue
        wins.append(
            win(
                BP.recall(scorers, c.steps, orig.post.steps, t, rule),
                BP.recall(scorers, c.steps, copy.post.steps, t, rule),
            )
        )
    return wins


def accuracy_cell(wins: list[float]) -> str:
    lo, hi = BP.boot_ci(wins)
    return f"{BP.mean(wins):.2f} [{lo:.2f}, {hi:.2f}] (n={len(wins)})"


def validity_rows(scorers, run: Path, check: Path) -> list[list[str]]:
    from wikihowagent.runs import read_conversations

    convs = [c for c in read_conversations(run) if c.posttest is not None]
    rows = []
    for rule in P.MATCHING_RULES:
        for t in THRESHOLDS:
            row = [rule, f"{t:.2f}"] + [
                accuracy_cell(wins_of(scorers, run, check, rule, t, pert)) for pert in ("skip_steps", "off_topic")
            ]
            gains = [
                BP.recall(scorers, c.steps, c.posttest.post.steps, t, rule)
                - BP.recall(scorers, c.steps, c.posttest.pre.steps, t, rule)
                for c in convs
                if P.usable(c.posttest.post) and P.usable(c.posttest.pre)
            ]
            lo, hi = BP.boot_ci(gains)
            rows.append(row + [f"{BP.fmt(BP.mean(gains))} [{BP.fmt(lo)}, {BP.fmt(hi)}] (n={len(gains)})"])
    return rows


def paper_gains(scorers, paper: Path, tests_dir: Path, rule: str) -> dict[str, float]:
    """conversation id -> Learning Gain of the paper's conversation under `rule` (stored post- and pre-tests)."""
    from wikihowagent.runs import POSTTESTS, PretestCache, read_conversations, read_posttests

    out: dict[str, float] = {}
    for f in sorted(paper.glob("*.json")):
        d = tests_dir / f.stem
        posts = read_posttests(d / POSTTESTS)
        pres = PretestCache(d)
        for c in read_conversations(f):
            test = posts.get(c.conversation_id)
            pre = pres.get(test.model, c.tutorial_key, test.prompt_version) if test is not None else None
            if test is not None and P.usable(test.post) and P.usable(pre):
                out[c.conversation_id] = BP.recall(scorers, c.steps, test.post.steps, rule=rule) - BP.recall(
                    scorers, c.steps, pre.steps, rule=rule
                )  # type: ignore[union-attr]
    return out


def paper_rows(scorers, paper: Path, tests_dir: Path, align_dir: Path) -> list[list[str]]:
    from wikihowagent.alignment.schema import OVERALL
    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import PAIRED_SCORES_CSV

    people = read_people_frame(align_dir / PAIRED_SCORES_CSV)
    rubrics = [c for c in people.columns if c.startswith("human_") and c != f"human_{OVERALL}"]
    overall = dict(zip(people["conversation_id"], people[rubrics].mean(axis=1, skipna=True), strict=False))
    gains = {rule: paper_gains(scorers, paper, tests_dir, rule) for rule in P.MATCHING_RULES}
    ids = sorted(set(overall).intersection(*gains.values()))
    h = np.array([overall[i] for i in ids])
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(ids), (BOOT, len(ids)))

    def r_of(x: np.ndarray, idx: np.ndarray) -> float:
        return float(np.corrcoef(x[idx], h[idx])[0, 1])

    base = np.array([gains["assign"][i] for i in ids])
    rows = []
    for rule in P.MATCHING_RULES:
        x = np.array([gains[rule][i] for i in ids])
        boots = np.array([r_of(x, p) for p in picks])
        diffs = boots - np.array([r_of(base, p) for p in picks])
        lo, hi = np.nanpercentile(boots, [2.5, 97.5])
        dlo, dhi = np.nanpercentile(diffs, [2.5, 97.5])
        rows.append(
            [
                rule,
                str(len(ids)),
                BP.fmt(float(x.mean())),
                f"{r_of(x, np.arange(len(ids))):.2f} [{lo:.2f}, {hi:.2f}]",
                "–"
                if rule == "assign"
                else f"{r_of(x, np.arange(len(ids))) - r_of(base, np.arange(len(ids))):+.2f} [{dlo:+.2f}, {dhi:+.2f}]",
            ]
        )
    return rows


def main() -> None:
    from wikihowagent.evaluation.metrics import Scorers

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--validity",
        action="append",
        default=[],
        metavar="RUN=CHECK",
        help="a run directory and its `judge-check --posttest-learner` output (repeatable)",
    )
    ap.add_argument("--paper", type=Path, help="the human study's run files (a directory of *.json)")
    ap.add_argument("--paper-tests", type=Path, help="`evaluate --posttest-learner` output on --paper")
    ap.add_argument("--paper-align", type=Path, help="`align` output of the human study (paired_scores.csv)")
    ap.add_argument("--note", default="", help="a line on how the answers were made (settings, machine)")
    ap.add_argument("--write-md", action="store_true", help="write the 'post-test: matching' section of BENCHMARKS.md")
    args = ap.parse_args()
    scorers = Scorers("default", [P.STEP_RECALL])
    out = [
        args.note,
        "",
        f"**Model-free** (the 22 bundled tutorials; a terse perfect recall = each step's first sentence; the code "
        f"uses rule {P.MATCHING!r} at {P.THRESHOLD:.2f}):",
        "",
        markdown_table(
            [
                "rule",
                "threshold",
                "recall own (%)",
                "recall another article (%)",
                "gap (pp)",
                "recall same article's other method (%)",
                "gap to it (pp)",
                "tutorials",
            ],
            headline_rows(scorers),
        ),
    ]
    pairs = [(Path(run), Path(check)) for run, _, check in (s.partition("=") for s in args.validity)]
    for run, check in pairs:
        out += [
            "",
            f"**Validity** ({check}: the post-tests of {run}'s originals and perturbed copies, rescored; "
            "accuracy = share of pairs where the original's Step Recall is higher, ties half, 95 % bootstrap CI) "
            "and the run's own Learning Gain (its records' post- and pre-tests):",
            "",
            markdown_table(
                ["rule", "threshold", "skip_steps", "off_topic", "Learning Gain (%)"],
                validity_rows(scorers, run, check),
            ),
        ]
    if len(pairs) >= 2:
        pooled = [
            [rule, f"{P.THRESHOLD:.2f}"]
            + [
                accuracy_cell(
                    [w for run, check in pairs for w in wins_of(scorers, run, check, rule, P.THRESHOLD, pert)]
                )
                for pert in ("skip_steps", "off_topic")
            ]
            for rule in P.MATCHING_RULES
        ]
        out += [
            "",
            f"**Validity, all {len(pairs)} runs pooled** (the code's threshold):",
            "",
            markdown_table(["rule", "threshold", "skip_steps", "off_topic"], pooled),
        ]
    if args.paper and args.paper_tests and args.paper_align:
        out += [
            "",
            f"**The human yardstick** (the paper's conversations, {args.paper_tests}: Learning Gain at "
            f"{P.THRESHOLD:.2f} vs the people's Overall, the mean of their rubrics; Pearson r, 95 % bootstrap CI "
            "over conversations; Δr = the rule's r − assign's on the same resamples):",
            "",
            markdown_table(
                ["rule", "conversations", "Learning Gain (%)", "r with people's Overall", "Δr vs assign"],
                paper_rows(scorers, args.paper, args.paper_tests, args.paper_align),
            ),
        ]
    body = "\n".join(out)
    print(body)
    if args.write_md:
        from benchmarks_md import write_section

        write_section("post-test: matching", body)


if __name__ == "__main__":
    main()
