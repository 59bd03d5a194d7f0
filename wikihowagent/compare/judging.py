"""`compare`'s judging passes and the judgments they leave in the output directory: each pending pass judged
by the pairwise judge in both orders (`judge_pairs`) or each conversation alone by the checklist judge, the
verdicts made from the two scores (`judge_checklist_pairs`), both resumable under OUT's lock; and, for
`--from-judgments`, the stored judgments of one judge read once (`stored_judgments`) with their kind and
reading (`stored_scoring`, `stored_reading`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikihowagent.jsonlio import JsonlAppender
from wikihowagent.judge.checklist import ChecklistError, checklist_for
from wikihowagent.judge.modes import first_mode
from wikihowagent.judge.rubric_judge import JudgeBackendError
from wikihowagent.judge.scoring import make_scorer
from wikihowagent.judge.session import JudgeLoop, locked_out, resumable
from wikihowagent.layout import CHECKLIST_SCORES, PAIR_JUDGMENTS
from wikihowagent.layout import SCORES as SCORES_JSONL
from wikihowagent.records import Conversation, PairwiseRecord
from wikihowagent.records_io import read_pairwise
from wikihowagent.runs import read_scores
from wikihowagent.scores.runner import EvalOptions, judge_concurrency

from .engine import (
    PairJob,
    PassStats,
    judgment_files,
    pending,
    read_pair_judgments,
    reading_note,
    run_pair_jobs,
)
from .pairwise import CHECKLIST_READING, ChecklistPairJudge, PairwiseJudge
from .plan import plan_compare
from .request import CHECKLIST, PAIRWISE, CompareError, CompareRequest


class Warnings:
    """The stage's warnings on the console, each said once (the judgments files are read more than once);
    `bad_value` also counts the stored values that were not probabilities."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.said: set[str] = set()
        self.bad_values: set[str] = set()

    def warn(self, msg: str) -> None:
        if msg not in self.said:
            self.said.add(msg)
            self.console.print("warning: " + msg, highlight=False, soft_wrap=True, markup=False)

    def bad_value(self, msg: str) -> None:
        self.bad_values.add(msg)
        self.warn(msg)


@dataclass
class PairPasses:
    """What a judging pass of `compare` works on, for the pairwise and the checklist judge alike."""

    req: CompareRequest
    console: Any
    progress_factory: Callable[[int], Any]
    runs: dict[str, dict[str, Conversation]]
    names: list[str]  # the rubrics asked
    rubric_set: dict[str, Any]
    spec: str  # the judge
    make_llm: Callable[[str], Any]
    opts: EvalOptions
    out: Path
    shard: tuple[int, int] | None
    stats: PassStats
    warn: Callable[[str], None]

    def file(self, stem: str) -> Path:
        """OUT's `stem` file of this shard (`<stem>-K-of-N.jsonl`), or of the whole run."""
        base = stem.removesuffix(".jsonl")
        return self.out / (f"{base}-{self.shard[0]}-of-{self.shard[1]}.jsonl" if self.shard else stem)

    def jobs(self) -> list[PairJob]:
        return plan_compare(self.runs, self.names, self.shard)


def judge_checklist_pairs(p: PairPasses) -> str:
    """Judge each conversation of every pending pass alone with the checklist judge (stored in
    checklist-scores.jsonl), and write each pass's verdicts from the two scores (resumable). A run whose own
    scores.jsonl holds this judge's checklist scores (same checklist and weights) is not judged again."""
    scorer, checklist = _checklist_scorer(p)
    path = p.file(PAIR_JUDGMENTS)
    jobs = p.jobs()
    p.console.print(
        f"compare: {len(p.runs)} runs ({', '.join(p.runs)}), judge {p.spec} (checklist scores, checklist "
        f"{checklist.ident}, weights {scorer.weights_name}): {len(jobs)} passes from each conversation's "
        f"own checklist scores x {len(p.names)} rubrics",
        highlight=False,
        markup=False,
    )
    with (
        JudgeLoop() as loop,
        resumable(CompareError, path),
        locked_out(p.out, "another 'wikihowagent compare'", f".{path.name}.lock"),
    ):
        stored = _stored_checklist_scores(p)
        done = read_pair_judgments(judgment_files(p.out, PAIR_JUDGMENTS), p.spec, CHECKLIST_READING, p.warn)
        todo = pending(jobs, done, p.req.retry_failed)
        p.stats.already = len(jobs) - len(todo)
        with JsonlAppender(p.file(CHECKLIST_SCORES)) as sink, p.progress_factory(len(jobs)) as advance:
            judge = ChecklistPairJudge(scorer, sink, p.spec, stored)
            advance(p.stats.already)
            loop.run(run_pair_jobs(todo, judge, p.spec, path, advance, p.stats))
    return CHECKLIST_READING


def _checklist_scorer(p: PairPasses) -> tuple[Any, Any]:
    """(the checklist judge's scorer, its checklist); a bad checklist or weights file is a CompareError."""
    llm = p.make_llm(p.spec)
    try:
        checklist, weights = checklist_for(p.spec, list(p.rubric_set), p.req.checklist, p.req.checklist_weights)
    except ChecklistError as exc:
        raise CompareError(str(exc)) from None
    scorer = make_scorer(
        first_mode("checklist"),
        llm,
        p.rubric_set,
        p.names,
        retries=p.req.scoring.retries,
        concurrency=judge_concurrency(p.opts, llm),
        checklist=checklist,
        checklist_weights=weights,
    )
    return scorer, checklist


def _stored_checklist_scores(p: PairPasses) -> dict[str, Any]:
    """The checklist scores already made: the runs' own (`evaluate --judge-scoring checklist`), then OUT's."""
    stored: dict[str, Any] = {}
    for run_path in p.req.runs:
        if (Path(run_path) / SCORES_JSONL).is_file():
            stored.update(read_scores(Path(run_path) / SCORES_JSONL, p.warn))
    for path in judgment_files(p.out, CHECKLIST_SCORES):
        stored.update(read_scores(path, p.warn))
    return stored


def judge_pairs(p: PairPasses) -> str:
    """Make the judge and judge every pending pass into OUT (resumable); -> the judge's reading."""
    llm = p.make_llm(p.spec)
    try:
        judge = PairwiseJudge(
            llm,
            p.rubric_set,
            p.names,
            reading=p.req.reading,
            retries=p.req.scoring.retries,
            concurrency=judge_concurrency(p.opts, llm),
        )
    except ValueError as exc:
        raise CompareError(f"evaluator {p.spec!r}: {exc}") from None
    with JudgeLoop() as loop:
        try:
            loop.run(judge.probe())
        except JudgeBackendError as exc:
            raise CompareError(str(exc)) from None
        _judge_pending(p, judge, loop)
    return judge.label


def _judge_pending(p: PairPasses, judge: Any, loop: JudgeLoop) -> None:
    """Judge every pass not yet in OUT's judgments (resumable) on `loop`, under OUT's lock."""
    path = p.file(PAIR_JUDGMENTS)
    jobs = p.jobs()
    p.console.print(
        f"compare: {len(p.runs)} runs ({', '.join(p.runs)}), judge {p.spec} (pairwise, {judge.label}): "
        f"{len(jobs)} judge passes (both orders of every shared tutorial) x {len(p.names)} rubrics",
        highlight=False,
        markup=False,
    )
    p.console.print(reading_note(judge.label), highlight=False, markup=False)
    with resumable(CompareError, path), locked_out(p.out, "another 'wikihowagent compare'", f".{path.name}.lock"):
        done = read_pair_judgments(judgment_files(p.out, PAIR_JUDGMENTS), p.spec, judge.label, p.warn)
        todo = pending(jobs, done, p.req.retry_failed)
        p.stats.already = len(jobs) - len(todo)
        with p.progress_factory(len(jobs)) as advance:
            advance(p.stats.already)
            loop.run(run_pair_jobs(todo, judge, p.spec, path, advance, p.stats))


def stored_judgments(out: Path, spec: str, said: Warnings) -> list[PairwiseRecord]:
    """--from-judgments: `spec`'s pair judgments in `out` and its shards' files, in file order (read once: the
    kind, the reading and the analysis all come from these)."""
    return [
        r
        for path in judgment_files(out, PAIR_JUDGMENTS)
        for r in read_pairwise(path, said.warn, said.bad_value)
        if r.evaluator == spec
    ]


def stored_scoring(stored: list[PairwiseRecord], default: str | None) -> str | None:
    """--from-judgments with no judge chosen: the kind of the stored judgments (checklist or pairwise) when
    there is one kind, else `default`."""
    kinds = {CHECKLIST if r.reading == CHECKLIST_READING else PAIRWISE for r in stored}
    return kinds.pop() if len(kinds) == 1 else default


def stored_reading(stored: list[PairwiseRecord], out: Path, spec: str, checklist: bool, reading: str | None) -> str:
    """--from-judgments: the reading of the stored judgments of judge `spec` in `out`, of the checklist judge or
    else the pairwise judge's (`reading` if given); CompareError when there are none, or both pairwise readings
    and no choice."""
    found = {r.reading for r in stored if (r.reading == CHECKLIST_READING) == checklist}
    if reading is not None:
        found &= {reading}
    if not found:
        what = CHECKLIST_READING if checklist else f"{PAIRWISE}, {reading}" if reading else PAIRWISE
        raise CompareError(
            f"{out}: no pair judgments of judge {spec} ({what}): run compare without --from-judgments first"
        )
    if len(found) > 1:
        raise CompareError(
            f"{out}: judge {spec} has judgments in both readings ({', '.join(sorted(found))}): pass --pairwise-reading"
        )
    return found.pop()
