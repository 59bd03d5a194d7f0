"""What `compare` is asked (CompareRequest) and every check of it: the option combinations it refuses
whichever judge it turns out to be (`check_request`), which judge makes the verdicts (`chosen_scoring`: the
pairwise or the checklist judge) and that judge's verdict rule and tie band (`judging_mode`), the rubrics asked
(`rubric_names`) and the checklist files (`check_checklist_options`); each refusal a one-line CompareError."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.errors import WikihowagentError
from wikihowagent.judge.checklist import ChecklistError, check_checklist_files
from wikihowagent.judge.request import ScoringRequest
from wikihowagent.shards import parse_shard

from .pairwise import AVERAGE, DEFAULT_TIE_BAND, SCORES, check_tie_band, verdict_rule


class CompareError(WikihowagentError, ValueError):
    """Bad input for `compare`; one line naming the run(s)."""


@dataclass(frozen=True)
class CompareRequest:
    runs: tuple[Path, ...]
    out: Path | None = None  # default <runs_dir>/compare
    scoring: ScoringRequest = field(default_factory=ScoringRequest)  # the judge, its server, concurrency, retries
    rubrics: Path | None = None
    metrics: str | None = None  # comma-separated rubric names; None = every rubric
    config: Path | None = None
    shard: str | None = None
    bootstrap: int = 1000
    seed: int = 0
    reading: str | None = None  # "logprobs" | "answer"; None = by backend
    max_tutorials: int | None = None
    figures: bool = True
    retry_failed: bool = True
    verdict_rule: str | None = None  # pairwise.VERDICT_RULES; None = the default (agree)
    tie_band: float = DEFAULT_TIE_BAND
    from_judgments: bool = False  # analyse OUT's stored judgments only: no judge, no model
    judge_scoring: str | None = None  # "checklist": position-free verdicts from each conversation's own scores
    checklist: Path | None = None  # --checklist: items file (None = wikihowagent/data/checklists.json)
    checklist_weights: Path | None = None  # --checklist-weights: `align --fit-checklist`'s weights
    score_tie_band: float = 0.0  # checklist verdicts: a score difference up to this (points) is a tie


@dataclass(frozen=True)
class CompareMode:
    """The request's judging options, checked (`check_request`, then `judging_mode` once the judge is known)."""

    shard: tuple[int, int] | None
    rule: str  # the verdict rule's name
    band: float  # its tie band (points for the checklist judge's `scores` rule)
    checklist: bool  # checklist verdicts (--judge-scoring checklist, its options, or the judge's measured default)


PAIRWISE, CHECKLIST = "pairwise", "checklist"  # compare's --judge-scoring values


def check_request(req: CompareRequest) -> tuple[int, int] | None:
    """Every option combination `compare` refuses whichever judge it turns out to be, as a one-line
    CompareError, before anything is read; -> the shard."""
    try:
        shard = parse_shard(req.shard) if req.shard else None
        verdict_rule(req.verdict_rule)
        check_tie_band(req.tie_band)
    except ValueError as exc:
        raise CompareError(str(exc)) from None
    if req.judge_scoring not in (None, PAIRWISE, CHECKLIST):
        raise CompareError(
            f"--judge-scoring: compare judges pairs head to head ({PAIRWISE}) or by checklist scores "
            f"({CHECKLIST}), not {req.judge_scoring!r}"
        )
    if not 0.0 <= req.score_tie_band <= 4.0:
        raise CompareError(f"--score-tie-band must be between 0 and 4 points (got {req.score_tie_band:g})")
    if shard is not None and req.from_judgments:
        raise CompareError("--from-judgments analyses every shard's judgments: drop --shard")
    if len(req.runs) < 2:
        raise CompareError(
            f"compare needs at least two runs to judge head to head (got {len(req.runs)}"
            + (f": {req.runs[0]}" if req.runs else "")
            + ")"
        )
    return shard


def _options_of(req: CompareRequest) -> tuple[list[str], list[str]]:
    """(the options given that only the checklist judge takes, those only the pairwise judge takes)."""
    rule = req.verdict_rule
    checklist = [
        name
        for name, given in (
            ("--checklist", req.checklist is not None),
            ("--checklist-weights", req.checklist_weights is not None),
            ("--score-tie-band", bool(req.score_tie_band)),
            (f"--verdict-rule {SCORES}", rule == SCORES),
        )
        if given
    ]
    pairwise = [
        name
        for name, given in (
            ("--pairwise-reading", req.reading is not None),
            ("--tie-band", bool(req.tie_band)),
            (f"--verdict-rule {rule}", rule is not None and rule != SCORES),
        )
        if given
    ]
    return checklist, pairwise


def chosen_scoring(req: CompareRequest, default: str | None) -> str:
    """Which judge makes the verdicts: --judge-scoring; else the one whose options were given (--checklist,
    --checklist-weights, --score-tie-band, --verdict-rule scores: checklist; --pairwise-reading, --tie-band,
    another --verdict-rule: pairwise); else `default` (the judge's measured default; None: pairwise)."""
    if req.judge_scoring is not None:
        return req.judge_scoring
    checklist, pairwise = _options_of(req)
    if checklist and pairwise:
        raise CompareError(
            f"{checklist[0]} is the checklist judge's option and {pairwise[0]} the pairwise judge's: "
            "pass --judge-scoring checklist or pairwise"
        )
    if checklist or pairwise:
        return CHECKLIST if checklist else PAIRWISE
    return default if default in (PAIRWISE, CHECKLIST) else PAIRWISE


def judging_mode(req: CompareRequest, shard: tuple[int, int] | None, scoring: str) -> CompareMode:
    """The verdict rule and tie band of `scoring` (chosen_scoring); a one-line CompareError for an option of
    the other judge."""
    checklist_opts, _ = _options_of(req)
    if scoring == CHECKLIST:
        if req.verdict_rule not in (None, SCORES):
            raise CompareError(
                f"--judge-scoring checklist makes each verdict from the two conversations' own scores "
                f"(rule `{SCORES}`); --verdict-rule {req.verdict_rule} applies to the pairwise judge"
            )
        if req.tie_band:
            raise CompareError("--tie-band is the `average` rule's; checklist verdicts take --score-tie-band (points)")
        if req.reading is not None:
            raise CompareError("--pairwise-reading applies to the pairwise judge, not --judge-scoring checklist")
        return CompareMode(shard, SCORES, req.score_tie_band, True)
    if checklist_opts:
        raise CompareError(
            f"{checklist_opts[0]} applies to the checklist judge: use it with --judge-scoring checklist"
            + (f" (the {SCORES} rule is the checklist judge's)" if req.verdict_rule == SCORES else "")
        )
    rule = verdict_rule(req.verdict_rule)
    if req.tie_band and rule.name != AVERAGE:
        raise CompareError(
            f"--tie-band is the `{AVERAGE}` rule's: add --verdict-rule {AVERAGE} (the `{rule.name}` "
            "rule has no tie band)"
        )
    return CompareMode(shard, rule.name, req.tie_band, False)


def rubric_names(metrics: str | None, rubric_set: dict[str, Any]) -> list[str]:
    """--metrics: the rubrics asked (in the rubric file's order); every rubric without it."""
    if not metrics:
        return list(rubric_set)
    asked = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in asked if m not in rubric_set]
    if unknown:
        raise CompareError(f"--metrics: unknown rubric {unknown[0]!r}; valid: {', '.join(rubric_set)}")
    return [n for n in rubric_set if n in asked]


def check_checklist_options(req: CompareRequest, shard: tuple[int, int] | None, rubric_names: list[str]) -> None:
    """--checklist / --checklist-weights: refused with the other judge (said first), else their files read and
    checked before any model or server is contacted."""
    judging_mode(req, shard, chosen_scoring(req, None))  # an option of the other judge: said first
    try:
        check_checklist_files(req.checklist, req.checklist_weights, rubric_names)
    except ChecklistError as exc:
        raise CompareError(str(exc)) from None
