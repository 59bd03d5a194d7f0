"""The post-test's wordings against each other (docs/methodology/metrics.md, `--posttest-prompt`): writes the
"post-test: wording" section of BENCHMARKS.md.

    python scripts/bench_posttest_wording.py \
        --validity v2=/work/runs/s5/check-v2 --validity v3=/work/runs/s5/check-v3 \
        --scores v2=/work/runs/s5/eval-v2 --scores v3=/work/runs/s5/eval-v3 --write-md

Reads, with no model call:
- per wording, the `judge-check --posttest-learner` validity table (posttest_validity.csv: accuracy under
  skip_steps / off_topic, with the share of "not taught" lines in the originals' and the copies' answers);
- per wording, `evaluate --posttest-learner ... --metrics <post-test>` scores (scores.jsonl): Learning Gain,
  Detail Gain, Step Recall post and pre, Extraneous (mean, 95 % bootstrap CI over conversations), and the
  share of abstained lines in the post- and pre-tests (posttests.jsonl / pretests.jsonl beside the scores, or
  the records' own post-tests);
- the wordings paired by conversation (the first --scores against each other one): difference, CI, Wilcoxon.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_posttest as BP  # noqa: E402

from wikihowagent.evaluation import posttest as P  # noqa: E402
from wikihowagent.evaluation.summary import markdown_table  # noqa: E402

METRICS = (P.LEARNING_GAIN, P.DETAIL_GAIN, P.STEP_RECALL, P.EXTRANEOUS)


def labelled(values: list[str]) -> list[tuple[str, Path]]:
    out = []
    for v in values:
        label, sep, path = v.partition("=")
        if not sep or not label:
            raise SystemExit(f"expected LABEL=DIR, got {v!r}")
        out.append((label, Path(path)))
    return out


def abstained_share(answers: list) -> float:
    """Mean share of an answer's lines that say "not taught" / "don't know" (step lists only)."""
    return BP.mean([a.abstained_share for a in answers if a.abstained_share is not None])


def scores_of(directory: Path) -> tuple[dict[str, dict[str, float | None]], list, list]:
    """(conversation id -> post-test metrics, post-test answers, pre-test answers) of an evaluate output."""
    from wikihowagent.runs import POSTTESTS, SCORES, PretestCache, read_posttests, read_scores

    metrics: dict[str, dict[str, float | None]] = {}
    posts, pres = [], []
    for f in sorted(directory.glob(f"*/{SCORES}")):
        recs = read_scores(f)
        metrics.update({cid: {m: r.metrics.get(m) for m in METRICS} for cid, r in recs.items()})
        posts += [t.post for cid, t in read_posttests(f.parent / POSTTESTS).items() if cid in recs]
        pres += PretestCache(f.parent).answers()
    return metrics, posts, pres


def wording_rows(scored: dict[str, tuple]) -> list[list[str]]:
    rows = []
    for label, (metrics, posts, pres) in scored.items():
        row = [label, str(len(metrics))]
        for m in METRICS:
            xs = [v[m] for v in metrics.values() if v.get(m) is not None]
            lo, hi = BP.boot_ci(xs)
            row.append(f"{BP.fmt(BP.mean(xs))} [{BP.fmt(lo)}, {BP.fmt(hi)}] (n={len(xs)})")
        pre = [
            v[P.STEP_RECALL] - v[P.LEARNING_GAIN]
            for v in metrics.values()
            if v.get(P.STEP_RECALL) is not None and v.get(P.LEARNING_GAIN) is not None
        ]
        row += [
            BP.fmt(BP.mean(pre)),
            BP.fmt(abstained_share(posts)) if posts else "–",
            BP.fmt(abstained_share(pres)) if pres else "–",
        ]
        rows.append(row)
    return rows


def paired_rows(scored: dict[str, tuple]) -> list[list[str]]:
    from scipy.stats import wilcoxon

    labels = list(scored)
    rows = []
    for other in labels[1:]:
        a, b = scored[other][0], scored[labels[0]][0]
        for m in METRICS:
            diffs = [a[c][m] - b[c][m] for c in a if c in b and a[c].get(m) is not None and b[c].get(m) is not None]
            lo, hi = BP.boot_ci(diffs)
            p = wilcoxon(diffs).pvalue if len(diffs) >= 2 and any(diffs) else math.nan
            rows.append(
                [
                    f"{other} − {labels[0]}",
                    m,
                    str(len(diffs)),
                    f"{BP.fmt(BP.mean(diffs))} [{BP.fmt(lo)}, {BP.fmt(hi)}]",
                    "–" if p != p else f"{p:.3f}",
                ]
            )
    return rows


def validity_rows(path: Path) -> list[list[str]]:
    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import POSTTEST_VALIDITY_CSV

    t = read_people_frame(path / POSTTEST_VALIDITY_CSV)
    return [
        base + [BP.fmt(r.abstained_original), BP.fmt(r.abstained_perturbed)]
        for base, r in zip(BP.validity_rows(path), t.itertuples(), strict=False)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--validity",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="a `judge-check --posttest-learner` output directory of one wording (repeatable)",
    )
    ap.add_argument(
        "--scores",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="an `evaluate --posttest-learner` output directory of one wording (repeatable; the first "
        "is the baseline of the paired table)",
    )
    ap.add_argument("--note", default="", help="a line on how the runs were made (settings, machine)")
    ap.add_argument("--write-md", action="store_true", help="write the 'post-test: wording' section of BENCHMARKS.md")
    args = ap.parse_args()
    out = [args.note]
    for label, vdir in labelled(args.validity):
        out += [
            "",
            f"**Validity, wording {label}** (`judge-check --posttest-learner`, {vdir}): share of pairs where "
            "the original's post-test Step Recall is higher than the perturbed copy's (ties count half); "
            'abstained = share of the answers\' lines saying "not taught":',
            "",
            markdown_table(
                [*BP.VALIDITY_HEADER, "abstained original (%)", "abstained perturbed (%)"],
                validity_rows(vdir),
            ),
        ]
    scored = {label: scores_of(d) for label, d in labelled(args.scores)}
    if scored:
        out += [
            "",
            "**Learning per wording** (the same conversations; mean, 95 % bootstrap CI over conversations; "
            'abstained = share of answer lines saying "not taught" / "don\'t know"):',
            "",
            markdown_table(
                [
                    "wording",
                    "conversations",
                    *(f"{m} (%)" for m in METRICS),
                    "Step Recall pre (%)",
                    "abstained post (%)",
                    "abstained pre (%)",
                ],
                wording_rows(scored),
            ),
        ]
    if len(scored) >= 2:
        out += [
            "",
            "**Wordings paired by conversation** (difference in pp, 95 % bootstrap CI, Wilcoxon p):",
            "",
            markdown_table(["wordings", "metric", "conversations", "difference (pp)", "p"], paired_rows(scored)),
        ]
    body = "\n".join(out)
    print(body)
    if args.write_md:
        from benchmarks_md import write_section

        write_section("post-test: wording", body)


if __name__ == "__main__":
    main()
