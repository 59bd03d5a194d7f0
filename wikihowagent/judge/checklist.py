"""The checklist judge's data and arithmetic (`--judge-scoring checklist`): narrow yes/no items.

Items are data (`wikihowagent/data/checklists.json`, versioned; its version and a hash of its content are recorded with
every score as `JudgeProvenance.checklist`):

- step items, made from the tutorial: for each step (at most `max_steps` of them, evenly spaced when the
  tutorial is longer; the record says so), one question per template, e.g. "Did the teacher teach this
  step: «{headline}»?" — `{headline}` is the step's first sentence, `{step}` its text (cut at
  `step_chars`). Each template names the rubrics it informs.
- rubric items, 2–5 per rubric, questions a reader can answer from the transcript (or, with
  `"tutorial": true`, from the transcript and the tutorial), each with its polarity: `yes-good` or
  `yes-bad` (a "yes" is a fault: small models lean to "yes").

Templates take text only as values: the only placeholders are `{headline}` and `{step}`, filled by plain
string replacement (never `str.format`), so braces or quotes in an item or a tutorial are literal text.

Reading an answer: the reply must be exactly one word, yes or no (any case, optionally followed by "."
or "!"), and must have ended by itself; "Yes, but…", "Y", "yes/no", "Yes and no" are parse failures
(asked again, never scored). With log-probabilities P(yes) = p_yes / (p_yes + p_no) over the answer
token's top candidates ("yes", "Yes", " yes", "YES"… folded; the same for no); the mass p_yes + p_no is
recorded and below `MASS_MIN` the item is a failure (the model meant something else), never 0.5. Without
log-probabilities the answer itself is read (P(yes) = 1 or 0; `reading` = "answer").

Scores: an item's P(good) = P(yes) (yes-good) or 1 − P(yes) (yes-bad); a rubric's score = 1 + 4 × the
weighted mean of its answered items' P(good) (uniform weights unless a weights file is given), and a
failure when fewer than half of its items (by weight) were answered.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.config import resource_path
from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import JsonInputError, parse_json

POLARITIES = ("yes-good", "yes-bad")
PLACEHOLDERS = ("headline", "step")
MASS_MIN = 0.5  # below this share of probability on yes/no the item is a failure
LOGPROB_SLACK = 1e-6  # a log-probability above this is no log-probability (rounding may give +0.0000001)
MASS_SLACK = 1e-3  # the yes/no candidates' probabilities may sum to this much over 1 by rounding, no more
MIN_ANSWERED = 0.5  # a rubric needs at least this share of its item weight answered
ANSWER_TOKENS = 4  # room for "Yes", "." and to see the reply end (a cut-off reply is never read)
RUBRIC_ITEMS = (2, 5)  # items per rubric the file must give
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ID = re.compile(r"[a-z0-9][a-z0-9-]*")


class ChecklistError(WikihowagentError, ValueError):
    """An invalid checklist or weights file; one line naming the file and the item."""


@dataclass(frozen=True)
class StepTemplate:
    id: str
    text: str
    polarity: str
    rubrics: tuple[str, ...]


@dataclass(frozen=True)
class RubricItem:
    id: str
    text: str
    polarity: str
    tutorial: bool = False


@dataclass(frozen=True)
class Checklist:
    version: str
    sha256: str
    path: str
    system: str
    intro: str
    ask: str
    max_steps: int
    headline_chars: int
    step_chars: int
    steps: tuple[StepTemplate, ...]
    rubric_items: dict[str, tuple[RubricItem, ...]]

    @property
    def ident(self) -> str:
        """What every score records: `<version>@<first 12 hex of the file's canonical hash>`."""
        return f"{self.version}@{self.sha256[:12]}"


@dataclass(frozen=True)
class Item:
    """One question asked of one conversation."""

    id: str  # "rubric:Clarity:clear-instructions" | "step:3:step-taught" (1-based step)
    question: str
    polarity: str
    rubrics: tuple[str, ...]
    tutorial: bool = False


def default_checklist_path() -> Path:
    return resource_path("data", "checklists.json")


# What a checklist file may hold: every text has a size limit (an item is one question; the prompt's texts a
# few sentences), numbers have bounds, and a key the loader does not know is refused (a misspelt key would
# otherwise be silently ignored).
TOP_KEYS = ("version", "description", "system", "intro", "ask", "step_items", "rubric_items")
STEP_KEYS = ("max_steps", "headline_chars", "step_chars", "items")
TEMPLATE_KEYS = ("id", "text", "polarity", "rubrics")
ITEM_KEYS = ("id", "text", "polarity", "tutorial")
VERSION_CHARS = 64
ID_CHARS = 64
PROMPT_CHARS = 4000  # system, intro, ask, description
ITEM_CHARS = 1000  # an item's question or a step template
STEP_TEMPLATES = 10  # step templates at most (each is asked once per chosen step)
BOUNDS = {  # step_items' numbers: (default, low, high)
    "max_steps": (12, 1, 100),
    "headline_chars": (160, 20, 2000),
    "step_chars": (500, 20, 5000),
}


def _text(v: Any, where: str, key: str, limit: int = ITEM_CHARS, lines: bool = False) -> str:
    """A non-empty string of at most `limit` characters without control characters (`lines`: line breaks and
    tabs allowed); else a one-line ChecklistError naming the key."""
    if not isinstance(v, str) or not v.strip():
        shown = "missing" if v is None else f"a {type(v).__name__}" if not isinstance(v, str) else "empty"
        raise ChecklistError(f"{where}: {key} must be a non-empty string, not {shown}")
    if len(v) > limit:
        raise ChecklistError(f"{where}: {key} has {len(v):,} characters; at most {limit:,}")
    allowed = "\n\t" if lines else ""
    bad = next((c for c in v if (unicodedata.category(c) == "Cc" and c not in allowed) or c in "\u2028\u2029"), None)
    if bad is not None:
        raise ChecklistError(f"{where}: {key} contains the control character {bad!r}")
    return v.strip()


def _int(v: Any, where: str, key: str, low: int, high: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ChecklistError(f"{where}: {key} must be an integer from {low} to {high:,}, not {v!r}")
    return v


def _polarity(v: Any, where: str) -> str:
    if v not in POLARITIES:
        raise ChecklistError(f"{where}: polarity must be one of {', '.join(POLARITIES)}, not {v!r}")
    return str(v)


def _id(v: Any, where: str) -> str:
    if not isinstance(v, str) or len(v) > ID_CHARS or not _ID.fullmatch(v):
        shown = repr(v) if not isinstance(v, str) or len(v) <= ID_CHARS else f"{len(v):,} characters"
        raise ChecklistError(
            f"{where}: id must be lower-case letters, digits and '-' (at most {ID_CHARS}), not {shown}"
        )
    return v


def _keys(obj: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    unknown = [k for k in obj if k not in known]
    if unknown:
        raise ChecklistError(f"{where}: unknown key {unknown[0][:60]!r} (known: {', '.join(known)})")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a key given twice in one object is refused (json would keep the last silently)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ChecklistError(f"the key {k[:60]!r} is given twice in one object")
        out[k] = v
    return out


def _read_json(path: Path, what: str) -> Any:
    """A checklist or weights file's JSON: a missing or unreadable file, malformed JSON or a key given twice in
    one object are one-line ChecklistErrors naming the file (NaN is left to the check of the key it is in)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ChecklistError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise ChecklistError(f"{path}: {what} is a directory, not a file") from None
    except UnicodeDecodeError:
        raise ChecklistError(f"{path}: {what} is not UTF-8 text") from None
    except OSError as exc:
        raise ChecklistError(f"{path}: {what} cannot be read ({exc.strerror or exc})") from None
    try:
        return parse_json(raw, object_pairs_hook=_no_duplicate_keys)
    except JsonInputError as exc:
        raise ChecklistError(exc.located(path)) from None
    except ChecklistError as exc:
        raise ChecklistError(f"{path}: {exc}") from None


def _step_template(t: Any, w: str, where: str, rubric_names: list[str], seen: set[str]) -> StepTemplate:
    """One step item template (`w` names it until its id is known); its id is added to `seen`."""
    if not isinstance(t, dict):
        raise ChecklistError(f"{w}: expected an object with id, text, polarity, rubrics")
    tid = _id(t.get("id"), w)
    w = f"{where}: step item {tid!r}"
    _keys(t, TEMPLATE_KEYS, w)
    if tid in seen:
        raise ChecklistError(f"{w}: duplicate id")
    seen.add(tid)
    text = _text(t.get("text"), w, "text")
    names = _PLACEHOLDER.findall(text)
    bad = [n for n in names if n not in PLACEHOLDERS]
    if bad:
        raise ChecklistError(f"{w}: unknown placeholder {{{bad[0][:40]}}} in text (only {{headline}} and {{step}})")
    if not names:
        raise ChecklistError(f"{w}: text must name the step with {{headline}} or {{step}}")
    rubs = t.get("rubrics")
    if not isinstance(rubs, list) or not rubs or not all(isinstance(r, str) for r in rubs):
        raise ChecklistError(f"{w}: rubrics must be a non-empty list of rubric names")
    for r in rubs:
        if r not in rubric_names:
            raise ChecklistError(f"{w}: unknown rubric {r[:60]!r}; rubrics: {', '.join(rubric_names)}")
    if len(set(rubs)) < len(rubs):
        raise ChecklistError(f"{w}: a rubric is named twice in rubrics")
    return StepTemplate(tid, text, _polarity(t.get("polarity"), w), tuple(rubs))


def _rubric_items(lst: Any, w: str, rname: str, rubric_names: list[str]) -> tuple[RubricItem, ...]:
    """One rubric's items (`w` names the rubric in messages), checked: a known rubric, RUBRIC_ITEMS items."""
    lo, hi = RUBRIC_ITEMS
    if rname not in rubric_names:
        raise ChecklistError(f"{w}: unknown rubric; rubrics: {', '.join(rubric_names)}")
    if not isinstance(lst, list) or not lo <= len(lst) <= hi:
        n = len(lst) if isinstance(lst, list) else "no list of"
        raise ChecklistError(f"{w}: needs {lo}-{hi} items, has {n}")
    out: list[RubricItem] = []
    ids: set[str] = set()
    for i, it in enumerate(lst):
        wi = f"{w} item {i + 1}"
        if not isinstance(it, dict):
            raise ChecklistError(f"{wi}: expected an object with id, text, polarity")
        iid = _id(it.get("id"), wi)
        _keys(it, ITEM_KEYS, wi)
        if iid in ids:
            raise ChecklistError(f"{wi}: duplicate id {iid!r}")
        ids.add(iid)
        tut = it.get("tutorial", False)
        if not isinstance(tut, bool):
            raise ChecklistError(f"{wi}: tutorial must be true or false")
        out.append(RubricItem(iid, _text(it.get("text"), wi, "text"), _polarity(it.get("polarity"), wi), tut))
    return tuple(out)


def load_checklist(path: Path | None, rubric_names: list[str]) -> Checklist:
    """The checklist file (default wikihowagent/data/checklists.json), validated against the rubrics judged: an
    unknown rubric or key, a rubric without items, a duplicate id, a step template with a placeholder other than
    {headline}/{step}, a field of the wrong type or over its size limit are one-line ChecklistErrors naming
    the file and the key or item."""
    path = Path(path) if path else default_checklist_path()
    data = _read_json(path, "checklist file")
    if not isinstance(data, dict):
        raise ChecklistError(f"{path}: expected a JSON object with version, step_items, rubric_items")
    where = str(path)
    _keys(data, TOP_KEYS, where)
    version = _text(data.get("version"), where, "version", VERSION_CHARS)
    if "description" in data:
        _text(data["description"], where, "description", PROMPT_CHARS, lines=True)
    system = _text(data["system"], where, "system", PROMPT_CHARS, lines=True) if "system" in data else ""
    intro = _text(data.get("intro"), where, "intro", PROMPT_CHARS, lines=True)
    ask = _text(data.get("ask"), where, "ask", PROMPT_CHARS, lines=True)
    steps_obj = data.get("step_items")
    if not isinstance(steps_obj, dict) or not isinstance(steps_obj.get("items"), list):
        raise ChecklistError(f"{where}: step_items must be an object with an 'items' list")
    _keys(steps_obj, STEP_KEYS, f"{where}: step_items")
    if len(steps_obj["items"]) > STEP_TEMPLATES:
        raise ChecklistError(
            f"{where}: step_items.items has {len(steps_obj['items'])} templates; at most {STEP_TEMPLATES}"
        )
    numbers = {
        k: _int(steps_obj.get(k, default), where, f"step_items.{k}", low, high)
        for k, (default, low, high) in BOUNDS.items()
    }
    templates: list[StepTemplate] = []
    seen: set[str] = set()
    for i, t in enumerate(steps_obj["items"]):
        templates.append(_step_template(t, f"{where}: step_items.items[{i}]", where, rubric_names, seen))
    rub_obj = data.get("rubric_items")
    if not isinstance(rub_obj, dict):
        raise ChecklistError(f"{where}: rubric_items must be an object keyed by rubric name")
    items: dict[str, tuple[RubricItem, ...]] = {}
    lo, hi = RUBRIC_ITEMS
    for rname, lst in rub_obj.items():
        items[rname] = _rubric_items(lst, f"{where}: rubric_items {rname[:60]!r}", rname, rubric_names)
    missing = [r for r in rubric_names if r not in items]
    if missing:
        raise ChecklistError(f"{where}: rubric {missing[0]!r} has no items (each judged rubric needs {lo}-{hi})")
    canon = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return Checklist(
        version=version,
        sha256=hashlib.sha256(canon.encode("utf-8")).hexdigest(),
        path=str(path),
        system=system,
        intro=intro,
        ask=ask,
        max_steps=numbers["max_steps"],
        headline_chars=numbers["headline_chars"],
        step_chars=numbers["step_chars"],
        steps=tuple(templates),
        rubric_items=items,
    )


# --------------------------------------------------------------------------------------------------
# Items of one conversation
# --------------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def headline(step: str, limit: int) -> str:
    """A WikiHow step's first sentence (its bold headline), cut at `limit` characters."""
    text = " ".join(step.split())
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    return _cut(first, limit)


def chosen_steps(n: int, cap: int) -> list[int]:
    """0-based steps that get step items: all of them, or `cap` evenly spaced ones (first and last kept)."""
    if n <= cap:
        return list(range(n))
    if cap == 1:
        return [0]
    return sorted({round(i * (n - 1) / (cap - 1)) for i in range(cap)})


def fill(template: str, values: dict[str, str]) -> str:
    """`template` with {headline}/{step} replaced by `values` (plain replacement: the values' own braces stay)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)] if m.group(1) in values else m.group(0), template)


def conversation_items(cl: Checklist, steps: list[str], rubrics: list[str]) -> tuple[list[Item], str | None]:
    """The items asked for `rubrics` of a conversation over `steps`, conversation-only items first (they share
    the conversation as prefix), then those that also show the tutorial; and a note when the step items were
    capped or there were no steps."""
    want = set(rubrics)
    out: list[Item] = []
    for r in rubrics:
        for it in cl.rubric_items.get(r, ()):
            out.append(Item(f"rubric:{r}:{it.id}", it.text, it.polarity, (r,), it.tutorial))
    note = None
    templates = [t for t in cl.steps if want & set(t.rubrics)]
    if templates:
        idx = chosen_steps(len(steps), cl.max_steps)
        if not steps:
            note = "checklist: the tutorial has no steps: no step items"
        elif len(idx) < len(steps):
            note = (
                f"checklist: step items for {len(idx)} of {len(steps)} steps (max_steps {cl.max_steps}, evenly spaced)"
            )
        for k in idx:
            values = {"headline": headline(steps[k], cl.headline_chars), "step": _cut(steps[k], cl.step_chars)}
            for t in templates:
                rubs = tuple(r for r in t.rubrics if r in want)
                out.append(Item(f"step:{k + 1}:{t.id}", fill(t.text, values), t.polarity, rubs))
    out.sort(key=lambda i: i.tutorial)  # stable: the tutorial items last
    return out, note


# --------------------------------------------------------------------------------------------------
# Reading a yes/no answer
# --------------------------------------------------------------------------------------------------

_ANSWER = re.compile(r"\s*\**\s*(yes|no)\s*[.!]?\s*\**\s*", re.I)
_WORD = re.compile(r"\s*(yes|no)\s*", re.I)


def answer_word(text: str) -> str | None:
    """'yes' / 'no' when the whole reply is unambiguously that word (case-free, "." or "!" after it, bold
    allowed); else None ("Yes, but…", "Y", "yes/no", "Yes and no", "")."""
    m = _ANSWER.fullmatch(text or "")
    return m.group(1).lower() if m else None


def token_word(token: str) -> str | None:
    """'yes' / 'no' for a token that is that word (case and leading/trailing spaces folded), else None."""
    m = _WORD.fullmatch(token or "")
    return m.group(1).lower() if m else None


@dataclass
class Answer:
    p_yes: float | None = None
    mass: float | None = None
    problem: str | None = None
    low_mass: bool = False


def bad_logprob(entry: dict[str, Any], word: Callable[[str], Any]) -> str | None:
    """Why the candidates at one token position that `word` reads (digits, yes/no) carry no probabilities: a
    log-probability that is NaN, positive (+inf included) or not a number, or candidates whose probabilities
    sum to more than 1; None when they are fine. A server that sends such values sends no reading at all."""
    cands = list(entry.get("top_logprobs") or [])
    if not any(c.get("token") == entry.get("token") for c in cands):
        cands.append(entry)
    total, seen = 0.0, set()
    for c in cands:
        tok, lp = c.get("token"), c.get("logprob")
        if not isinstance(tok, str) or tok in seen or word(tok) is None:
            continue
        seen.add(tok)
        if isinstance(lp, bool) or not isinstance(lp, (int, float)) or math.isnan(lp) or lp > LOGPROB_SLACK:
            return f"the log-probability of {tok!r} is {lp!r}, not a log-probability"
        total += math.exp(min(lp, 0.0))
    if total > 1.0 + MASS_SLACK:
        return f"the candidates' probabilities sum to {total:.3f}, more than 1"
    return None


def read_answer(entries: list[dict[str, Any]], text: str, complete: bool) -> Answer:
    """A reply (its token entries with top log-probabilities, its text, whether it ended by itself) -> P(yes)
    and the yes/no mass, or why it is no answer. Without `entries` the answer itself is read (P = 1 or 0)."""
    word = answer_word(text)
    if word is None:
        return Answer(problem=f"not a yes/no answer ({(text or '').strip()[:40]!r})")
    if not complete:
        return Answer(problem=f"the reply was cut off ({text.strip()[:40]!r})")
    if not entries:
        return Answer(p_yes=1.0 if word == "yes" else 0.0, mass=None)
    pos = next((i for i, e in enumerate(entries) if token_word(e.get("token", "")) is not None), None)
    if pos is None:  # the word split over several tokens: only its text can be read
        return Answer(problem=f"no single yes/no token in the reply ({text.strip()[:40]!r})")
    entry = entries[pos]
    bad = bad_logprob(entry, token_word)
    if bad:
        return Answer(problem=bad)
    mass = {"yes": 0.0, "no": 0.0}
    seen: set[str] = set()
    cands = list(entry.get("top_logprobs") or [])
    if not any(c.get("token") == entry.get("token") for c in cands):
        cands.append(entry)
    for c in cands:
        tok, lp = c.get("token"), c.get("logprob")
        if not isinstance(tok, str) or tok in seen or not isinstance(lp, (int, float)):
            continue
        seen.add(tok)
        w = token_word(tok)
        if w is not None:
            mass[w] += math.exp(lp)
    total = mass["yes"] + mass["no"]
    if total < MASS_MIN:
        return Answer(
            mass=min(1.0, total),
            low_mass=True,
            problem=f"below the yes/no probability threshold (p(yes)+p(no) = {total:.2f} < {MASS_MIN:g})",
        )
    return Answer(p_yes=mass["yes"] / total, mass=min(1.0, total))


def p_good(p_yes: float, polarity: str) -> float:
    return p_yes if polarity == "yes-good" else 1.0 - p_yes


# --------------------------------------------------------------------------------------------------
# Rubric scores from item scores
# --------------------------------------------------------------------------------------------------


def item_key(item_id: str) -> str:
    """The weight key of an item: rubric items by their id, step items by template (`step:<template>`), so
    weights fitted on some tutorials apply to any other."""
    parts = item_id.split(":")
    return f"step:{parts[2]}" if parts[0] == "step" and len(parts) == 3 else item_id


@dataclass
class RubricScore:
    score: float | None
    answered: int
    total: int
    problem: str | None = None


def rubric_score(
    rubric: str, goods: list[tuple[str, float | None]], weights: dict[str, float] | None = None
) -> RubricScore:
    """1 + 4 × the weighted mean of the answered items' P(good); `goods` = [(item id, P(good) or None)].
    Step items of one template share the template's weight, split evenly over the steps asked."""
    if not goods:
        return RubricScore(None, 0, 0, "no checklist items")
    per_key: dict[str, int] = {}
    for iid, _ in goods:
        per_key[item_key(iid)] = per_key.get(item_key(iid), 0) + 1
    w_all = w_ans = acc = 0.0
    answered = 0
    for iid, g in goods:
        k = item_key(iid)
        w = (weights.get(k, 0.0) if weights is not None else 1.0) / per_key[k]
        w_all += w
        if g is not None:
            answered += 1
            w_ans += w
            acc += w * g
    if w_all <= 0:
        return RubricScore(None, answered, len(goods), "every item of this rubric has weight 0")
    if w_ans < MIN_ANSWERED * w_all or w_ans <= 0:
        return RubricScore(None, answered, len(goods), f"only {answered} of {len(goods)} checklist items answered")
    return RubricScore(1.0 + 4.0 * acc / w_ans, answered, len(goods))


@dataclass
class ChecklistWeights:
    """`align --fit-checklist`'s weights file, applied by `evaluate --checklist-weights`."""

    judge: str
    checklist: str
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # rubric -> item key -> weight
    path: str = ""

    @property
    def ident(self) -> str:
        canon = json.dumps(self.weights, sort_keys=True)
        return hashlib.sha256(canon.encode()).hexdigest()[:12]


WEIGHTS_KIND = "wikihowagent-checklist-weights"


def load_weights(path: Path) -> ChecklistWeights:
    path = Path(path)
    data = _read_json(path, "checklist weights file")
    if not isinstance(data, dict) or data.get("kind") != WEIGHTS_KIND:
        raise ChecklistError(
            f"{path}: not a checklist weights file (kind {WEIGHTS_KIND!r}; `align --fit-checklist` writes one)"
        )
    judge, checklist, weights = data.get("judge"), data.get("checklist"), data.get("weights")
    if not isinstance(judge, str) or not isinstance(checklist, str) or not isinstance(weights, dict):
        raise ChecklistError(f"{path}: needs judge, checklist and weights")
    out: dict[str, dict[str, float]] = {}
    for r, ws in weights.items():
        if not isinstance(ws, dict) or not ws:
            raise ChecklistError(f"{path}: weights of rubric {r!r} must be a non-empty object")
        for k, v in ws.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ChecklistError(f"{path}: rubric {r!r} item {k!r}: weight must be a number >= 0, not {v!r}")
        if sum(ws.values()) <= 0:
            raise ChecklistError(f"{path}: rubric {r!r}: every weight is 0")
        out[r] = {k: float(v) for k, v in ws.items()}
    return ChecklistWeights(judge=judge, checklist=checklist, weights=out, path=str(path))


def check_checklist_files(path: Path | None, weights_path: Path | None, rubric_names: list[str]) -> None:
    """The checklist and weights files a user named, read and checked before any model or server is contacted
    (a bad file is a one-line ChecklistError however the judge turns out); which judge and checklist a
    weights file was fitted for is checked once the judge is known (`checklist_for`)."""
    if path is not None:
        load_checklist(path, rubric_names)
    if weights_path is not None:
        load_weights(weights_path)


def checklist_for(
    spec: str, rubric_names: list[str], path: Path | None, weights_path: Path | None
) -> tuple[Checklist, ChecklistWeights | None]:
    """The checklist and the weights a judge `spec` uses; a weights file fitted for another judge or another
    checklist (version and content) is refused with one line."""
    cl = load_checklist(path, rubric_names)
    if weights_path is None:
        return cl, None
    w = load_weights(weights_path)
    if w.judge != spec:
        raise ChecklistError(f"{weights_path}: fitted for judge {w.judge!r}, not {spec!r}")
    if w.checklist != cl.ident:
        raise ChecklistError(f"{weights_path}: fitted for checklist {w.checklist!r}, not {cl.ident!r} ({cl.path})")
    unknown = [r for r in w.weights if r not in rubric_names]
    if unknown:
        raise ChecklistError(f"{weights_path}: weights for unknown rubric {unknown[0]!r}")
    return cl, w
