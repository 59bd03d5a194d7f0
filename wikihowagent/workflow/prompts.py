"""The agents' prompt templates (wikihowagent/configs/prompts.yaml), validated once per run."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from wikihowagent.config import ConfigError, read_yaml, resource_path
from wikihowagent.errors import validation_line
from wikihowagent.records import BEGIN_TEXT, FINISH_TEXT


class PromptTemplates(BaseModel):
    """Chat-message templates of the two agents. An empty system template sends no system message."""

    teacher_system: str
    teach_task: str = ""
    clarify_task: str = ""
    teacher_user: str
    learner_system: str
    learner_user: str
    history_header: str = "Conversation so far:\n"
    begin: str = BEGIN_TEXT
    finish: str = FINISH_TEXT

    def teacher_messages(
        self,
        *,
        summary: str,
        step_index: int,
        num_steps: int,
        step_content: str,
        user_utterance: str,
        history: str = "",
        clarification: bool = False,
    ) -> list[BaseMessage]:
        step = dict(current_step_index=step_index, num_steps=num_steps)
        task = (self.clarify_task if clarification else self.teach_task).format(**step)
        fields = dict(
            summary=summary,
            current_step_content=step_content,
            task=task,
            history=history,
            user_utterance=user_utterance,
            **step,
        )
        return _messages(self.teacher_system.format(**fields), self.teacher_user.format(**fields))

    def learner_messages(self, *, instruction: str, history: str = "") -> list[BaseMessage]:
        fields = dict(instruction=instruction, history=history)
        return _messages(self.learner_system.format(**fields), self.learner_user.format(**fields))


def _messages(system: str, user: str) -> list[BaseMessage]:
    return ([SystemMessage(content=system.strip())] if system.strip() else []) + [HumanMessage(content=user.strip())]


_TEACHER_FIELDS = dict(
    summary="", current_step_index=1, num_steps=1, current_step_content="", task="", history="", user_utterance=""
)
_PLACEHOLDERS: dict[str, dict[str, object]] = {
    "teacher_system": _TEACHER_FIELDS,
    "teacher_user": _TEACHER_FIELDS,
    "teach_task": dict(current_step_index=1, num_steps=1),
    "clarify_task": dict(current_step_index=1, num_steps=1),
    "learner_system": dict(instruction="", history=""),
    "learner_user": dict(instruction="", history=""),
    "begin": dict(method_title=""),
    "finish": {},
}


def load_prompts(path: Path | str | None = None) -> PromptTemplates:
    path = Path(path) if path else resource_path("configs", "prompts.yaml")
    data = read_yaml(path)
    try:
        prompts = PromptTemplates.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {validation_line(exc)}") from None
    # Fail at start-up, not in the middle of a run, on an unknown placeholder.
    for name, fields in _PLACEHOLDERS.items():
        try:
            getattr(prompts, name).format(**fields)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"{path}: prompt '{name}' has an unknown or malformed placeholder ({exc})") from None
    return prompts
