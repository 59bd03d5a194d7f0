"""Perturbations for `judge-check`: copies of a conversation that should lower named rubrics.

Each kind is a function (conversation, the other conversations, params) -> perturbed conversation, or
None when it cannot apply (e.g. no teacher turn to change). `wikihowagent/data/perturbations.json` names the
perturbations, their kind, parameters and target rubrics; users extend it with new entries (a new kind
= one function + one `KINDS` entry). Only model turns change: the workflow's fixed BEGIN / FINISHED
texts stay, so Completion-style signals do not give the perturbation away.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikihowagent.config import resource_path
from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import JsonInputError, read_json_file
from wikihowagent.records import Conversation, Turn, conversation_lines
from wikihowagent.registry import Registry


class PerturbationError(WikihowagentError, ValueError):
    """An invalid perturbation file; one line naming the file and the entry."""


@dataclass(frozen=True)
class Perturbation:
    name: str
    kind: str
    description: str
    targets: tuple[str, ...]
    params: dict[str, Any]


def _is_model(m: Turn, role: str) -> bool:
    return m.role == role and m.kind not in ("begin", "finish")


def _with_messages(conv: Conversation, msgs: list[Turn]) -> Conversation:
    return conv.model_copy(update={"turns": msgs, "conversation": conversation_lines(msgs)})


def _retext(m: Turn, text: str) -> Turn:
    return m.model_copy(update={"text": text})


def _map_teacher(conv: Conversation, fn: Callable[[int, str], str]) -> Conversation | None:
    out, i = [], 0
    for m in conv.messages:
        if _is_model(m, "teacher"):
            out.append(_retext(m, fn(i, m.text)))
            i += 1
        else:
            out.append(m)
    return _with_messages(conv, out) if i else None


def skip_steps(conv: Conversation, others: list[Conversation], params: dict[str, Any]) -> Conversation | None:
    """The teacher skips steps: with step indices on the turns (this pipeline's records), every turn about
    every `every`-th tutorial step (starting with the second: teaching, clarifications and the learner's
    replies) is removed; without them (paper records), every `every`-th teaching turn and the learner turn
    after it. Turns from the teacher's FINISHED on (the farewell) stay."""
    every = max(2, int(params.get("every", 2)))
    if any(_is_model(m, "teacher") and m.step is not None for m in conv.messages):
        return _skip_step_turns(conv, every)
    out: list[Turn] = []
    i, dropping, dropped = 0, False, 0
    for m in conv.messages:
        if _is_model(m, "teacher"):
            dropping = i % every == 1
            i += 1
            if dropping:
                dropped += 1
                continue
        elif _is_model(m, "learner") and dropping:
            dropping = False
            continue
        out.append(m)
    return _with_messages(conv, out) if dropped else None


def _skip_step_turns(conv: Conversation, every: int) -> Conversation | None:
    out: list[Turn] = []
    finished, dropped = False, False
    for m in conv.messages:
        finished = finished or m.kind == "finish"
        if (
            not finished
            and m.step is not None
            and m.step % every == 1
            and (_is_model(m, "teacher") or _is_model(m, "learner"))
        ):
            dropped = dropped or m.role == "teacher"
            continue
        out.append(m)
    return _with_messages(conv, out) if dropped else None


_NUM_RE = re.compile(r"\b\d+(?:\.\d+)?\b")
_FLIPS = [
    ("do not", "do"),
    ("don't", "do"),
    ("does not", "does"),
    ("always", "never"),
    ("never", "always"),
    ("before", "after"),
    ("after", "before"),
    ("more", "less"),
    ("less", "more"),
    ("hot", "cold"),
    ("cold", "hot"),
    ("increase", "decrease"),
    ("decrease", "increase"),
    ("dry", "wet"),
    ("wet", "dry"),
    ("high", "low"),
    ("low", "high"),
    ("should", "should not"),
    ("must", "must not"),
]
_FLIP_RE = re.compile(r"\b(" + "|".join(re.escape(a) for a, _ in _FLIPS) + r")\b", re.I)


def _change_number(m: re.Match[str]) -> str:
    x = float(m.group(0))
    y = 3 * x + 7
    return str(int(y)) if y.is_integer() else f"{y:g}"


def _flip(m: re.Match[str]) -> str:
    word = m.group(0)
    new = dict(_FLIPS)[word.lower()]
    return new.capitalize() if word[0].isupper() else new


def wrong_facts(conv: Conversation, others: list[Conversation], params: dict[str, Any]) -> Conversation | None:
    """Numbers n -> 3n+7; negations and opposites flipped (one pass, so a flip is never flipped back)."""
    changed = False

    def fn(_i: int, text: str) -> str:
        nonlocal changed
        new = _FLIP_RE.sub(_flip, _NUM_RE.sub(_change_number, text))
        changed = changed or new != text
        return new

    out = _map_teacher(conv, fn)
    return out if changed else None


def off_topic(conv: Conversation, others: list[Conversation], params: dict[str, Any]) -> Conversation | None:
    """The teacher's turns come from another tutorial: another conversation's teacher turns, else its steps."""
    other = next(
        (
            o
            for o in others
            if o.conversation_id != conv.conversation_id
            and (o.tutorial_title or o.title) != (conv.tutorial_title or conv.title)
        ),
        None,
    )
    if other is None:
        return None
    source = [m.text for m in other.messages if _is_model(m, "teacher")] or list(other.steps)
    if not source:
        return None
    return _map_teacher(conv, lambda i, _t: source[i % len(source)])


def terse(conv: Conversation, others: list[Conversation], params: dict[str, Any]) -> Conversation | None:
    n = max(1, int(params.get("words", 4)))
    return _map_teacher(conv, lambda _i, t: " ".join(t.split()[:n]).rstrip(".,;:") + ".")


def passive_learner(conv: Conversation, others: list[Conversation], params: dict[str, Any]) -> Conversation | None:
    text = str(params.get("text", "OK."))
    msgs = [_retext(m, text) if _is_model(m, "learner") else m for m in conv.messages]
    return _with_messages(conv, msgs) if any(_is_model(m, "learner") for m in conv.messages) else None


def shuffled(conv: Conversation, others: list[Conversation], params: dict[str, Any]) -> Conversation | None:
    texts = [m.text for m in conv.messages if _is_model(m, "teacher")]
    if len(set(texts)) < 2:
        return None
    order = list(range(len(texts)))
    random.Random(conv.conversation_id).shuffle(order)  # noqa: S311 - reproducible, not crypto
    if [texts[i] for i in order] == texts:
        order = order[1:] + order[:1]
    return _map_teacher(conv, lambda i, _t: texts[order[i]])


_SENT_RE = re.compile(r"(?<=[.!?])\s+")


def repeat(conv: Conversation, others: list[Conversation], params: dict[str, Any]) -> Conversation | None:
    first = next((m.text for m in conv.messages if _is_model(m, "teacher")), None)
    if not first:
        return None
    sentence = _SENT_RE.split(first.strip())[0]
    return _map_teacher(conv, lambda _i, _t: sentence)


KINDS: Registry[Callable[[Conversation, list[Conversation], dict[str, Any]], Conversation | None]] = Registry(
    "perturbation kind",
    {
        "skip_steps": skip_steps,
        "wrong_facts": wrong_facts,
        "off_topic": off_topic,
        "terse": terse,
        "passive_learner": passive_learner,
        "shuffled": shuffled,
        "repeat": repeat,
    },
)


def default_perturbations_path() -> Path:

    return resource_path("data", "perturbations.json")


def load_perturbations(path: Path | None, rubric_names: list[str]) -> list[Perturbation]:
    path = Path(path) if path else default_perturbations_path()
    try:
        data = read_json_file(path)
    except FileNotFoundError:
        raise PerturbationError(f"{path}: perturbation file not found") from None
    except JsonInputError as exc:
        raise PerturbationError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise PerturbationError(f"{path}: expected a JSON object keyed by perturbation name")
    out = []
    for name, v in data.items():
        where = f"{path}: perturbation {name!r}"
        if not isinstance(v, dict):
            raise PerturbationError(f"{where}: expected an object with kind, description, targets")
        kind = v.get("kind", name)
        if not isinstance(kind, str) or kind not in KINDS:
            raise PerturbationError(f"{where}: unknown kind {kind!r}; valid: {', '.join(KINDS)}")
        targets = v.get("targets")
        if not isinstance(targets, list) or not targets or not all(isinstance(t, str) for t in targets):
            raise PerturbationError(f"{where}: targets must be a non-empty list of rubric names")
        unknown = [t for t in targets if t not in rubric_names]
        if unknown:
            raise PerturbationError(
                f"{where}: targets {', '.join(unknown)} are not rubrics of the rubric file ({', '.join(rubric_names)})"
            )
        params = v.get("params") or {}
        if not isinstance(params, dict):
            raise PerturbationError(f"{where}: params must be an object")
        out.append(
            Perturbation(
                name=name, kind=kind, description=str(v.get("description", "")), targets=tuple(targets), params=params
            )
        )
    return out


def perturb(p: Perturbation, conv: Conversation, others: list[Conversation]) -> Conversation | None:
    return KINDS[p.kind](conv, others, p.params)
