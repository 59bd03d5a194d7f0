"""Typed records passed between the pipeline stages.

One record format everyone reads: `generate` writes `ConversationRecord`s (one JSON line each) to a run's
`conversations.jsonl`; `evaluate` reads them (or the paper's released records, which are a subset of the
same fields) and writes `ScoreRecord`s to `scores.jsonl`; `align` reads those.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Literal

from pydantic import BaseModel, Field

# Namespace for deterministic conversation ids: uuid5(namespace, run_name + tutorial_id). The paper used
# uuid4; a deterministic uuid keeps the same shape and makes resumed runs reproducible.
CONVERSATION_NAMESPACE = uuid.UUID("6f1d6a52-4c8e-4a8f-9a57-0e7f2b1c9d31")

Role = Literal["teacher", "learner"]
StopReason = Literal["finished", "max_interactions", "error", "learner_stopped", "quit"]  # quit: a person left `chat`


class Tutorial(BaseModel):
    """One WikiHow method with >= 2 steps: the unit a conversation is grounded in."""

    tutorial_id: str  # stable: derived from source path + method index (see `make_tutorial_id`)
    doc_id: int  # index of the article in the (deterministically ordered) source
    method_id: int  # index of the method inside its article
    source_tutorial_path: str
    title: str  # the article title, "How to ..."
    method_title: str  # e.g. "Part 2 of 3:Writing the Body of the Speech"
    categories: list[str] = Field(default_factory=list)  # breadcrumb, root first
    domain: str = ""  # first category after the root
    summary: str = ""  # the article introduction
    steps: list[str]


def make_tutorial_id(source: str, method_index: int) -> str:
    digest = hashlib.sha1(f"{source}\x00{method_index}".encode()).hexdigest()
    return digest[:16]


def make_conversation_id(run_name: str, tutorial_id: str) -> str:
    return str(uuid.uuid5(CONVERSATION_NAMESPACE, f"{run_name}/{tutorial_id}"))


class Turn(BaseModel):
    role: Role
    text: str
    step: int  # 0-based index of the tutorial step under discussion when the turn was produced
    kind: str = "model"  # "begin" | "finish" (fixed texts, no model call) | "model" | "clarification"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    # The learner persona's intent for this turn ("ask", "acknowledge", "drift", "free", "farewell");
    # None on teacher turns and in records made before personas.
    intent: str | None = None
    retried: list[str] = Field(default_factory=list)  # turn-check problems that caused a retry
    warnings: list[str] = Field(default_factory=list)  # turn-check problems the retry did not fix
    # The manager's classification of a learner turn: question / understood / off-topic / wants-to-stop
    # (None: not classified, e.g. the reply to BEGIN); manager_fallback = the llm manager failed, rules decided.
    manager_label: str | None = None
    manager_fallback: bool = False


class TutorialRef(BaseModel):
    """The paper's `tutorial` field: the method as taught."""

    title: str
    steps: list[str]


class ConversationRecord(BaseModel):
    """One line of `conversations.jsonl`; a superset of the paper's released record."""

    conversation_id: str
    tutorial_id: str = ""
    doc_id: int | None = None
    method_id: int | None = None
    source_tutorial_path: str = ""
    title: str = ""
    categories: list[str] = Field(default_factory=list)
    domain: str = ""
    summary: str = ""
    tutorial: TutorialRef
    conversation: list[str] = Field(default_factory=list)  # "Teacher: ..." / "Learner: ..." lines
    turns: list[Turn] = Field(default_factory=list)
    finished: bool = False
    stop_reason: StopReason | None = None
    error: str | None = None  # set = a failed conversation (re-run on resume)
    warnings: list[str] = Field(default_factory=list)  # problems that did not fail the conversation
    teacher: str = ""  # model specs (never keys)
    learner: str = ""
    persona: str = ""  # learner persona (configs/personas.yaml); "" in records made before personas
    manager: str = ""  # "rules" or "llm:<spec>"; "" in records made before managers
    human: str = ""  # the role a person played (`wikihowagent chat`): "teacher" | "learner"; "" = none
    started_at: str | None = None
    ended_at: str | None = None


class ScoreRecord(BaseModel):
    """One line of `scores.jsonl`: every metric of one conversation plus the judge's raw replies."""

    conversation_id: str
    run: str = ""  # run name (directory name, or the paper's run-file stem)
    tutorial_id: str = ""
    title: str = ""
    domain: str = ""
    teacher: str = ""
    learner: str = ""
    persona: str = ""
    evaluator: str = ""
    mode: Literal["default", "paper"] = "default"
    metrics: dict[str, float | None] = Field(default_factory=dict)  # None = not computable / failed
    judge_raw: dict[str, list[str]] = Field(default_factory=dict)  # prompt name -> raw replies (all tries)
    judge_failures: list[str] = Field(default_factory=list)  # rubric names whose reply could not be parsed
    notes: list[str] = Field(default_factory=list)  # e.g. "BERTScore: teacher text chunked (3 chunks)"


def conversation_lines(turns: list[Turn]) -> list[str]:
    return [f"{t.role.capitalize()}: {t.text}" for t in turns]
