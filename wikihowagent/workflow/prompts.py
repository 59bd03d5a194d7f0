"""The agents' prompt templates (configs/prompts.yaml), validated once per run."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ValidationError

from wikihowagent.config import ConfigError, read_yaml, resource_path


class PromptTemplates(BaseModel):
    teacher: str
    teacher_reply_instruction: str = ""
    learner: str
    learner_reply_instruction: str = ""
    history_header: str = "Conversation so far:\n"
    begin: str = "Let's begin: {method_title}. BEGIN"
    finish: str = "We've reached the end of the tutorial. Bye! FINISHED"

    def teacher_prompt(self, **fields: object) -> str:
        return _join(self.teacher.format(**fields), self.teacher_reply_instruction)

    def learner_prompt(self, **fields: object) -> str:
        return _join(self.learner.format(**fields), self.learner_reply_instruction)


_PLACEHOLDERS = {
    "teacher": dict(summary="", current_step_index=1, num_steps=1, current_step_content="", history="",
                    user_utterance=""),
    "learner": dict(instruction="", history=""),
    "begin": dict(method_title=""),
    "finish": {},
}


def _join(prompt: str, instruction: str) -> str:
    return f"{prompt}\n\n{instruction}" if instruction else prompt


def load_prompts(path: Path | str | None = None) -> PromptTemplates:
    path = Path(path) if path else resource_path("configs", "prompts.yaml")
    data = read_yaml(path)
    try:
        prompts = PromptTemplates.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    # Fail at start-up, not in the middle of a run, on an unknown placeholder.
    for name, fields in _PLACEHOLDERS.items():
        try:
            getattr(prompts, name).format(**fields)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"{path}: prompt '{name}' has an unknown or malformed placeholder ({exc})") from None
    return prompts
