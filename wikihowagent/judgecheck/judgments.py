"""The judge check's plan and its record: the jobs to judge (each conversation and its perturbed copies), their
stats, and the judgments read back from judgments.jsonl.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.judge.prompt_variants import recorded_prompt
from wikihowagent.records import Conversation
from wikihowagent.records_io import read_judgment_table

from .accuracy import (
    ORIGINAL,
    ORIGINAL_2,
)
from .perturbations import Perturbation, perturb


@dataclass
class CheckStats:
    judged: int = 0  # judge passes made in this invocation
    already: int = 0  # found in judgments.jsonl
    not_applicable: int = 0  # perturbations that cannot change a conversation (e.g. no numbers to alter)
    rubric_scores: int = 0
    failures: int = 0


@dataclass
class Job:
    conv: Conversation
    variant: str
    names: list[str]
    seed_variant: int = 0


@dataclass
class CheckResult:
    sensitivity: Any  # pandas DataFrame
    consistency: Any
    written: list[Path] = field(default_factory=list)
    mean_accuracy: float = math.nan


def plan(
    convs: list[Conversation], perturbations: list[Perturbation], rubric_names: list[str], stats: CheckStats
) -> list[Job]:
    jobs: list[Job] = []
    for c in convs:
        jobs.append(Job(c, ORIGINAL, list(rubric_names)))
        jobs.append(Job(c, ORIGINAL_2, list(rubric_names), seed_variant=1))
        for p in perturbations:
            pc = perturb(p, c, convs)
            if pc is None:
                stats.not_applicable += 1
                continue
            jobs.append(Job(pc, p.name, [t for t in p.targets if t in rubric_names]))
    return jobs


def read_judgments(path: Path, evaluator: str, scoring: str, prompt: str = "") -> dict[tuple[str, str], dict[str, Any]]:
    """{(conversation_id, variant): {"scores", "judge_failures"}} of this judge (evaluator + scoring mode + prompt
    variant; lines without a prompt were judged with the tutorial-first layout, or json's own), from the
    judgments' rows of the score table (`wikihowagent.records_io.read_judgment_table`); later lines win."""

    t = read_judgment_table(path)
    meta = t.meta
    want = prompt if prompt else recorded_prompt(None, scoring)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for cid, variant, ev, sc, pr, failures, scores in zip(
        meta["conversation_id"],
        meta["variant"],
        meta["evaluator"],
        meta["scoring"],
        meta["prompt"],
        meta["failures"],
        t.iter_row_metrics(),
        strict=True,
    ):
        if ev == evaluator and sc == scoring and (pr or recorded_prompt(None, sc)) == want:
            out[(cid, variant)] = {"scores": scores, "judge_failures": list(failures)}
    return out
