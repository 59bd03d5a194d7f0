"""The pairwise engine `compare` and `judge-check --pairwise` share: a pass (PairJob: one tutorial, two
conversations in one order, the rubrics still to ask), the passes a judgments file does not answer yet
(`pending`), judging them into a resumable JSONL of PairwiseRecords (`run_pair_jobs`), reading one judge's
records back (`read_pair_judgments`, through `records_io.read_pairwise`), the verdict of both orders per rubric
(`verdict_rows`) and the line that says how a verdict was read (`reading_note`). The judge itself (prompt,
strict A/B reading, verdict rules) is pairwise.py's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikihowagent.jsonlio import JsonlAppender
from wikihowagent.judge.gather import gather_cancelling
from wikihowagent.records import Conversation, PairwiseRecord
from wikihowagent.records_io import read_pairwise

from .pairwise import CHECKLIST_READING, DEFAULT_TIE_BAND, verdict, verdict_rule


@dataclass
class PairJob:
    tutorial_id: str
    first: str  # label of the conversation shown as A (a run name, or a judge-check variant)
    second: str
    a: Conversation
    b: Conversation
    names: list[str]

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.tutorial_id, self.first, self.second, self.a.conversation_id, self.b.conversation_id)


def record_key(r: PairwiseRecord) -> tuple[str, str, str, str, str]:
    return (r.tutorial_id, r.first, r.second, r.first_conversation, r.second_conversation)


@dataclass
class PassStats:
    judged: int = 0  # judge passes made in this invocation
    already: int = 0  # found in the judgments file(s)
    asked: int = 0  # rubric verdicts asked in this invocation
    failures: int = 0
    from_scores: bool = False  # verdicts from each conversation's own checklist scores (no pairwise prompt)


def judgment_files(out_dir: Path, stem: str) -> list[Path]:
    """`<stem>.jsonl` and its shards' `<stem>-K-of-N.jsonl` in `out_dir`."""
    base = stem.removesuffix(".jsonl")
    return sorted(
        p
        for p in Path(out_dir).glob(f"{base}*.jsonl")
        if p.name == f"{base}.jsonl" or p.name[len(base) :].startswith("-")
    )


def read_pair_judgments(
    paths: Iterable[Path],
    evaluator: str,
    reading: str,
    on_error: Callable[[str], None] | None = None,
    on_bad_value: Callable[[str], None] | None = None,
) -> dict[tuple[str, ...], PairwiseRecord]:
    """{key: record} of this judge (evaluator + reading) in these files (`merge_pair_judgments`). A stored value
    that is not a probability is reported to `on_bad_value` (default `on_error`) and read as a failure
    (`records_io.read_pairwise`)."""
    return merge_pair_judgments(
        (rec for path in paths for rec in read_pairwise(path, on_error, on_bad_value)), evaluator, reading
    )


def merge_pair_judgments(
    records: Iterable[PairwiseRecord], evaluator: str, reading: str
) -> dict[tuple[str, ...], PairwiseRecord]:
    """{key: record} of this judge (evaluator + reading) among `records` in file order; a later line for the
    same key wins, and a rubric it failed keeps an earlier line's verdict."""
    out: dict[tuple[str, ...], PairwiseRecord] = {}
    for rec in records:
        if rec.evaluator != evaluator or rec.reading != reading:
            continue
        old = out.get(record_key(rec))
        if old is not None:
            merged: dict[str, float | None] = {k: v for k, v in old.p_first.items() if v is not None}
            merged.update({k: v for k, v in rec.p_first.items() if v is not None or k not in merged})
            rec = rec.model_copy(
                update={"p_first": merged, "failures": [f for f in rec.failures if merged.get(f) is None]}
            )
        out[record_key(rec)] = rec
    return out


def pending(
    jobs: list[PairJob], done: dict[tuple[str, ...], PairwiseRecord], retry_failed: bool = True
) -> list[PairJob]:
    """The jobs (narrowed to the rubrics still missing) that `done` does not answer."""
    todo = []
    for j in jobs:
        old = done.get(j.key)
        have = set() if old is None else {k for k, v in old.p_first.items() if v is not None or not retry_failed}
        missing = [n for n in j.names if n not in have]
        if missing:
            todo.append(PairJob(j.tutorial_id, j.first, j.second, j.a, j.b, missing))
    return todo


async def run_pair_jobs(
    jobs: list[PairJob], judge: Any, evaluator: str, path: Path, progress: Callable[[int], None], stats: PassStats
) -> None:
    """Judge every job, appending one PairwiseRecord per pass to `path` as it finishes. Jobs run in the given
    order under the judge's concurrency (consecutive jobs that share a first conversation share a prefix)."""

    with JsonlAppender(path) as sink:

        async def one(j: PairJob) -> None:
            res = await judge.judge(j.a, j.b, j.names)
            sink.append(
                PairwiseRecord(
                    tutorial_id=j.tutorial_id,
                    first=j.first,
                    second=j.second,
                    first_conversation=j.a.conversation_id,
                    second_conversation=j.b.conversation_id,
                    evaluator=evaluator,
                    reading=judge.label,
                    p_first=res.p_first,
                    failures=res.failures,
                    notes=res.notes,
                    raw=res.raw,
                )
            )
            stats.judged += 1
            stats.asked += len(res.p_first)
            stats.failures += len(res.failures)
            progress(1)

        await gather_cancelling(one(j) for j in jobs)


def verdict_rows(
    records: dict[tuple[str, ...], PairwiseRecord],
    pairs: list[tuple[str, str]],
    rubric_names: list[str],
    rule: str | None = None,
    tie_band: float = DEFAULT_TIE_BAND,
) -> tuple[list[dict[str, Any]], int]:
    """Rows (tutorial, run_a, run_b, rubric, p_ab, p_ba, p_a, order_effect, verdict, consistent, verdict_rule)
    for every (pair, tutorial, rubric) judged in both orders, the verdict under `rule` (default `agree`); and
    how many lacked an order or a readable reply."""
    label = verdict_rule(rule).label(tie_band)
    by_order: dict[tuple[str, str, str], PairwiseRecord] = {}
    for r in records.values():
        by_order[(r.tutorial_id, r.first, r.second)] = r
    rows: list[dict[str, Any]] = []
    missing = 0
    tutorials = sorted({r.tutorial_id for r in records.values()})
    for a, b in pairs:
        for t in tutorials:
            ab, ba = by_order.get((t, a, b)), by_order.get((t, b, a))
            if ab is None and ba is None:
                continue
            for rubric in rubric_names:
                p_ab = ab.p_first.get(rubric) if ab else None
                p_ba = ba.p_first.get(rubric) if ba else None
                if p_ab is None or p_ba is None:
                    missing += 1
                    continue
                v = verdict(p_ab, p_ba, rule, tie_band)
                rows.append(
                    {
                        "tutorial_id": t,
                        "run_a": a,
                        "run_b": b,
                        "rubric": rubric,
                        "p_ab": p_ab,
                        "p_ba": p_ba,
                        "p_a": round(v.p_a, 4),
                        "order_effect": round(v.order_effect, 4),
                        "verdict": v.winner,
                        "consistent": v.consistent,
                        "verdict_rule": label,
                    }
                )
    return rows, missing


def reading_note(reading: str) -> str:
    if reading == CHECKLIST_READING:
        return (
            "Reading: checklist scores: each conversation judged alone by the checklist judge (yes/no items, "
            "P(yes) from log-probabilities where the backend gives them); a pair's verdict per rubric comes "
            "from the two conversations' own scores, so neither is ever shown first. Each conversation's "
            "item probabilities are in checklist-scores.jsonl."
        )
    if reading == "logprobs":
        return "Reading: P(A) from the judge's A/B token log-probabilities (renormalised over the two letters)."
    return (
        "Reading: answer-only mode: the judge's backend returns no token log-probabilities, so each order gives "
        "only its letter (P(A) = 1 or 0)."
    )
