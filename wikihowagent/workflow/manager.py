"""The conversation manager's classification of each learner message (Algorithm 1's decision).

A registry of managers (`--manager NAME`): `rules` is the paper's rule (a '?' and no request for the next
step = a question); `llm` asks a chat model to classify the message as question / understood / off-topic /
wants-to-stop, parsed as a `Classification` (JSON), falling back to the rules on a failed call or an
unparsable reply (counted per turn).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from wikihowagent.backends.calls import achat
from wikihowagent.jsonlio import JsonInputError, parse_json
from wikihowagent.records import Label
from wikihowagent.registry import Registry

NEXT_STEP = "next step"
LABELS: tuple[str, ...] = ("question", "understood", "off-topic", "wants-to-stop")

CLASSIFY_SYSTEM = (
    "You classify a learner's message in a tutoring conversation. Labels: question (asks about the step or "
    "wants something explained), understood (acknowledges, or asks to move on to the next step), off-topic "
    "(talks about something unrelated to the tutorial), wants-to-stop (wants to end the lesson). "
    'Answer with JSON only: {"label": "<one of the labels>"}'
)


class Classification(BaseModel):
    label: Label


def asks_question(text: str) -> bool:
    """The paper's rule: a question mark and no request for the next step."""
    return "?" in text and NEXT_STEP not in text.lower()


def rules_label(text: str) -> str:
    return "question" if asks_question(text) else "understood"


def parse_classification(reply: str) -> str | None:
    """The label of a JSON reply such as {"label": "question"} (or a bare label), None if unparsable."""
    match = re.search(r"\{.*?\}", reply, re.S)
    if match:
        try:
            return Classification.model_validate(parse_json(match.group(0))).label
        except (JsonInputError, ValidationError):
            return None
    bare = reply.strip().strip(".\"'` ").lower()
    return bare if bare in LABELS else None


class RulesManager:
    name = "rules"

    async def classify(self, step_text: str, teacher_text: str, learner_text: str) -> tuple[str, bool]:
        return rules_label(learner_text), False


class LLMManager:
    name = "llm"

    def __init__(self, model: BaseChatModel | None):  # None: made for a run with nothing to do; the rules decide
        self.model = model

    async def classify(self, step_text: str, teacher_text: str, learner_text: str) -> tuple[str, bool]:
        """(label, fell_back): the model's label, or the rules' label if the call or the parse failed."""
        user = (
            f"Step being taught: {step_text}\n\nTeacher: {teacher_text}\n\nLearner: {learner_text}\n\n"
            "Classify the learner's message. JSON only."
        )
        if self.model is None:
            return rules_label(learner_text), True
        try:
            reply = await achat(self.model, [SystemMessage(content=CLASSIFY_SYSTEM), HumanMessage(content=user)])
            content = reply.content if isinstance(reply.content, str) else str(reply.content)
        except Exception:  # the manager must never fail a conversation: the rules decide instead
            return rules_label(learner_text), True
        label = parse_classification(content)
        return (label, False) if label else (rules_label(learner_text), True)


Manager = RulesManager | LLMManager
# name -> factory(model for the llm manager, or None). Adding a manager = one entry.
MANAGERS: Registry[Callable[[BaseChatModel | None], Manager]] = Registry(
    "manager",
    {
        "rules": lambda _model: RulesManager(),
        "llm": lambda model: LLMManager(model),
    },
)
