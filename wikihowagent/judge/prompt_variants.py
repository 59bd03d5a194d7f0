"""Judge prompt variants as data: `wikihowagent/data/judge_prompts.json`, chosen with `--judge-prompt NAME`.

A variant says how one rubric's prompt is laid out for the one-token scorers (`weighted`, `sampled`):
the system message, the instructions, which rubrics see the tutorial ("all", "reference" = only those
judged against it, "none") and where ("tutorial-first" before the conversation, "conversation-first"
after it), whether the rubric's five level descriptions are shown, the closing request, and how a long
conversation is shortened:

- `message_chars`: each message longer than this is cut there and ends with a visible "[... cut]" mark;
- `conversation_chars`: if the conversation is still longer, whole messages are left out *from the
  middle*: the first `head_messages` and as many of the last messages as fit are kept, with a line
  "[... N messages left out ...]" between them. The end of the conversation (what Progress, Coherence
  and the learner's last turns are judged on) is always shown; nothing is cut without a mark, and the
  judge's provenance notes how much was left out.

The variant's name is recorded with every score (`JudgeProvenance.prompt`), so tables never mix variants
unlabelled. Adding a variant = one entry in the JSON file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikihowagent.config import resource_path
from wikihowagent.errors import WikihowagentError
from wikihowagent.records import Conversation, turn_line

from .modes import first_mode
from .rubric_judge import read_keyed_json, tutorial_block

TUTORIAL_CHOICES = ("all", "reference", "none")
ORDERS = ("tutorial-first", "conversation-first")
DEFAULT_PROMPT = "tutorial-first"  # the default changes only on evidence (docs/methodology/judge.md)
LEGACY_PROMPT = "tutorial-first"  # what scores without a recorded prompt were judged with
CUT_MARK = " [... cut]"
SHORTENED_NOTE = "prompt: "  # the judge's note that the truncation rule shortened the conversation (not a failure)
_FIELDS = {"description": str, "system": str, "intro": str, "tutorial": str, "order": str, "levels": bool, "ask": str}


class PromptError(WikihowagentError, ValueError):
    """An invalid prompts file or an unknown variant; one line naming the file and the problem."""


@dataclass(frozen=True)
class JudgePrompt:
    name: str
    description: str
    system: str
    intro: str
    tutorial: str  # "all" | "reference" | "none": which rubrics are shown the tutorial
    order: str  # "tutorial-first" | "conversation-first"
    levels: bool
    ask: str  # the closing request; "{name}" = the rubric's name
    message_chars: int | None = None
    conversation_chars: int | None = None
    head_messages: int = 2


def default_prompts_path() -> Path:
    return resource_path("data", "judge_prompts.json")


def _limit(v: Any, where: str, key: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 50:
        raise PromptError(f"{where}: {key} must be null or an integer >= 50, not {v!r}")
    return v


def load_prompts(path: Path | None = None) -> dict[str, JudgePrompt]:
    path = Path(path) if path else default_prompts_path()
    data = read_keyed_json(path, PromptError, "judge prompts file", "variant name")
    out: dict[str, JudgePrompt] = {}
    for name, v in data.items():
        where = f"{path}: variant {name!r}"
        if not isinstance(v, dict):
            raise PromptError(f"{where}: expected an object")
        missing = [k for k in _FIELDS if k not in v]
        if missing:
            raise PromptError(f"{where}: missing {', '.join(missing)}")
        for k, typ in _FIELDS.items():
            if not isinstance(v[k], typ):
                raise PromptError(f"{where}: {k} must be a {typ.__name__}")
        if v["tutorial"] not in TUTORIAL_CHOICES:
            raise PromptError(f"{where}: tutorial must be one of {', '.join(TUTORIAL_CHOICES)}, not {v['tutorial']!r}")
        if v["order"] not in ORDERS:
            raise PromptError(f"{where}: order must be one of {', '.join(ORDERS)}, not {v['order']!r}")
        unknown = set(v) - set(_FIELDS) - {"message_chars", "conversation_chars", "head_messages"}
        if unknown:
            raise PromptError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        head = v.get("head_messages", 2)
        if isinstance(head, bool) or not isinstance(head, int) or head < 0:
            raise PromptError(f"{where}: head_messages must be an integer >= 0, not {head!r}")
        out[name] = JudgePrompt(
            name=name,
            description=v["description"].strip(),
            system=v["system"].strip(),
            intro=v["intro"].strip(),
            tutorial=v["tutorial"],
            order=v["order"],
            levels=v["levels"],
            ask=v["ask"].strip(),
            message_chars=_limit(v.get("message_chars"), where, "message_chars"),
            conversation_chars=_limit(v.get("conversation_chars"), where, "conversation_chars"),
            head_messages=head,
        )
    return out


def get_prompt(name: str | None, path: Path | None = None) -> JudgePrompt:
    """The variant `name` (None = DEFAULT_PROMPT) of the prompts file; PromptError naming the valid ones."""
    prompts = load_prompts(path)
    name = name or DEFAULT_PROMPT
    if name not in prompts:
        raise PromptError(f"--judge-prompt: unknown variant {name!r}; valid: {', '.join(prompts)}")
    return prompts[name]


@dataclass(frozen=True)
class Shortened:
    lines: list[str]
    cut: int = 0  # messages cut at message_chars
    left_out: int = 0  # whole messages left out of the middle

    @property
    def note(self) -> str | None:
        if not (self.cut or self.left_out):
            return None
        parts = []
        if self.cut:
            parts.append(f"{self.cut} message(s) cut")
        if self.left_out:
            parts.append(f"{self.left_out} message(s) left out of the middle")
        return SHORTENED_NOTE + ", ".join(parts)


def shorten(conv: Conversation, prompt: JudgePrompt) -> Shortened:
    """The conversation's lines under the variant's truncation rule (see the module docstring)."""
    lines: list[str] = []
    cut = 0
    for m in conv.messages:
        text = m.text
        if prompt.message_chars is not None and len(text) > prompt.message_chars:
            text = text[: prompt.message_chars].rstrip() + CUT_MARK
            cut += 1
        lines.append(turn_line(m.role, text))
    budget = prompt.conversation_chars
    if budget is None or sum(len(s) + 1 for s in lines) <= budget:
        return Shortened(lines, cut)
    head = lines[: prompt.head_messages]
    used = sum(len(s) + 1 for s in head)
    tail: list[str] = []
    for s in reversed(lines[len(head) :]):
        if tail and used + len(s) + 1 > budget:  # the last message is always kept
            break
        tail.insert(0, s)
        used += len(s) + 1
    left_out = len(lines) - len(head) - len(tail)
    if left_out == 0:
        return Shortened(lines, cut)
    return Shortened(head + [f"[... {left_out} messages left out ...]"] + tail, cut, left_out)


def shows_tutorial(prompt: JudgePrompt, reference: str) -> bool:
    return prompt.tutorial == "all" or (prompt.tutorial == "reference" and reference == "tutorial")


def render(
    prompt: JudgePrompt, conv: Conversation, lines: list[str], criterion: str, ask: str, with_tutorial: bool
) -> str:
    """The user message: intro, tutorial and conversation in the variant's order, then criterion and ask."""
    convo = "Conversation:\n" + "\n".join(lines)
    parts = [prompt.intro]
    if with_tutorial:
        tut = f"Tutorial:\n{tutorial_block(conv)}"
        parts += [tut, convo] if prompt.order == "tutorial-first" else [convo, tut]
    else:
        parts.append(convo)
    return "\n\n".join(p for p in parts + [criterion, ask] if p)


def recorded_prompt(prov: Any, scoring: str) -> str:
    """The prompt variant a scores line (its JudgeProvenance, or None) was judged with: lines written before
    --judge-prompt existed were judged with the tutorial-first layout (weighted/sampled) or json's own ("")."""
    name = getattr(prov, "prompt", "") or ""
    paper = first_mode("paper")  # a line naming no mode was judged by the paper's mode
    return name or ("" if (scoring or paper) == paper else LEGACY_PROMPT)
