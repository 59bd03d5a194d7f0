"""Learner personas (wikihowagent/configs/personas.yaml): a registry of prompts plus a seeded question policy.

Each learner turn gets an *intent* before the model is called:
- `begin` (reply to the fixed BEGIN turn) and `farewell` (reply to FINISHED): fixed by the phase;
- `free`: the persona has no policy (`question_rate: null`, the paper's learner): the prompts file decides;
- otherwise a draw from a generator seeded by (seed, conversation id, step, questions already asked at the
  step): `drift` with `drift_rate`, `ask` with `question_rate`, else `acknowledge` (also once the step's
  clarification limit is reached). The same seed and conversation id give the same intents.
"""

from __future__ import annotations

import random
from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from wikihowagent.config import ConfigError, read_yaml, resource_path
from wikihowagent.errors import validation_line

INTENTS = ("begin", "ask", "acknowledge", "drift", "farewell", "free")
DEFAULT_PERSONA = "paper"


class Persona(BaseModel):
    name: str
    description: str = ""
    question_rate: float | None = Field(default=None, ge=0.0, le=1.0)  # None = no policy (the paper)
    drift_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    system: str = ""
    ask: str = ""
    acknowledge: str = ""
    begin: str = ""
    farewell: str = ""
    drift: str = ""

    @property
    def has_policy(self) -> bool:
        return self.question_rate is not None

    def intent(self, *, seed: int, conversation_id: str, step: int, asked_at_step: int, limit: int) -> str:
        """The seeded intent of a learner turn about a presented step (see the module docstring)."""
        if not self.has_policy:
            return "free"
        if asked_at_step >= limit:
            return "acknowledge"
        draw = random.Random(f"{seed}/{conversation_id}/{step}/{asked_at_step}").random()
        if draw < self.drift_rate:
            return "drift"
        if draw < self.drift_rate + (self.question_rate or 0.0):
            return "ask"
        return "acknowledge"

    def messages(
        self, intent: str, *, instruction: str, history: str, step_index: int, num_steps: int
    ) -> list[BaseMessage]:
        """The learner's chat messages for `intent` (not for `free`: that is the prompts file's)."""
        task = getattr(self, intent).format(step_index=step_index, num_steps=num_steps)
        user = f"{history}Teacher: {instruction}\n\n({task})"
        return ([SystemMessage(content=self.system.strip())] if self.system.strip() else []) + [
            HumanMessage(content=user.strip())
        ]


def load_personas(path: Path | str | None = None) -> dict[str, Persona]:
    """The persona registry: name -> Persona. `_defaults` fills the intent texts a persona leaves out."""
    path = Path(path) if path else resource_path("configs", "personas.yaml")
    data = read_yaml(path)
    defaults = data.pop("_defaults", {}) or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}: _defaults: expected a mapping")
    out: dict[str, Persona] = {}
    for name, spec in data.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"{path}: persona '{name}': expected a mapping")
        try:
            persona = Persona.model_validate({**defaults, **spec, "name": str(name)})
        except ValidationError as exc:
            raise ConfigError(f"{path}: persona '{name}': {validation_line(exc)}") from None
        if persona.has_policy:
            needed = (
                (("ask",) if persona.question_rate else ())
                + ("acknowledge", "begin", "farewell")
                + (("drift",) if persona.drift_rate else ())
            )
            for intent in needed:
                text = getattr(persona, intent)
                if not text.strip():
                    raise ConfigError(f"{path}: persona '{name}': no '{intent}' text (and none in _defaults)")
                try:
                    text.format(step_index=1, num_steps=1)
                except (KeyError, IndexError, ValueError) as exc:
                    raise ConfigError(
                        f"{path}: persona '{name}': '{intent}' has an unknown or malformed placeholder ({exc})"
                    ) from None
            if persona.question_rate is not None and persona.question_rate + persona.drift_rate > 1.0:  # has_policy
                raise ConfigError(f"{path}: persona '{name}': question_rate + drift_rate > 1")
        out[persona.name] = persona
    if not out:
        raise ConfigError(f"{path}: no personas defined")
    return out


def select_personas(names: list[str], path: Path | str | None = None) -> list[Persona]:
    """The named personas in order (an unknown name is a one-line ConfigError listing the known ones)."""
    registry = load_personas(path)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ConfigError(f"unknown learner persona {unknown[0]!r}; known: {', '.join(registry)}")
    if not names:
        raise ConfigError("no learner persona selected")
    return [registry[n] for n in names]
