"""What one pass of `evaluate` over an input did (SourceStats): conversations scored, already scored, failed,
the judge's failures by kind and the first of their notes, and why conversations were judged again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wikihowagent.judge.prompt_variants import SHORTENED_NOTE
from wikihowagent.records import Conversation, ScoreRecord

FAILURE_NOTES = 3  # judge failures `evaluate` prints (all of them are in scores.jsonl)


@dataclass
class SourceStats:
    scored: int = 0
    already: int = 0
    failed: int = 0
    invalid: int = 0
    judge_failures: int = 0
    judged: int = 0  # rubric scores asked of the judge in this pass
    failure_kinds: dict[str, int] = field(default_factory=dict)  # "call" | "parse" | "low-mass" -> count
    retried: int = 0  # conversations whose failed rubrics were judged again
    rejudged_scoring: int = 0  # ... whose rubric scores came from another --judge-scoring mode
    rejudged_prompt: int = 0  # ... or from another --judge-prompt variant
    rejudged_evaluator: int = 0  # conversations whose rubric scores were by another evaluator
    reweighted: int = 0  # checklist scores computed again from their stored items under other weights (no model)
    rejudged_rubrics: int = 0  # ... or of rubrics the current rubric file does not define
    posttests: int = 0  # post-tests taken in this pass (--posttest-learner)
    posttest_failures: int = 0  # ... without a usable answer (not scored)
    likelihoods: int = 0  # likelihood post-tests taken in this pass (--posttest-likelihood)
    likelihood_failures: int = 0  # ... that the server could not give (not scored)
    notes: list[str] = field(default_factory=list)
    failure_notes: list[str] = field(default_factory=list)  # the first FAILURE_NOTES judge failures, "<id>: <note>"


def count_judged(stats: SourceStats, conv: Conversation, jr: Any) -> None:
    """A judged conversation in the source's statistics (scores, failures, the first failure notes, kinds)."""
    stats.scored += 1
    stats.judged += len(jr.scores)
    stats.judge_failures += len(jr.failures)
    failed = [n for n in jr.notes if not n.startswith(SHORTENED_NOTE)]  # a shortened prompt is no failure
    for note in failed[: max(0, FAILURE_NOTES - len(stats.failure_notes))]:
        stats.failure_notes.append(f"{conv.conversation_id}: {note}")
    for kind in jr.kinds.values():
        stats.failure_kinds[kind] = stats.failure_kinds.get(kind, 0) + 1


def count_rejudged(
    stats: SourceStats,
    todo: list[tuple[Conversation, ScoreRecord | None, str | None, set[str]]],
    rubric_names: set[str],
) -> None:
    """Why the conversations of `todo` are judged again: another judge, rubric file, scoring mode or prompt
    (stale), or a rubric that failed before (retried)."""
    for _, old, stale, have in todo:
        if stale == "evaluator":
            stats.rejudged_evaluator += 1
        elif stale == "rubrics":
            stats.rejudged_rubrics += 1
        elif stale == "scoring":
            stats.rejudged_scoring += 1
        elif stale == "prompt":
            stats.rejudged_prompt += 1
        elif old and set(old.judge_failures) & (rubric_names - have):
            stats.retried += 1
