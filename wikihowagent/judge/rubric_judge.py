"""The rubric judge: the evaluator prompt of the paper's Table 3 with the rubrics of its Table 5.

Two prompts per conversation: "conversation" (every rubric whose `reference` is "no", over the whole
conversation) and "reference" (the rubrics judged against the tutorial: Truthfulness). Replies are read
with structured output (a JSON schema) where the backend supports it, else by a tolerant text parser. A
reply without a valid score is retried; after the retries the rubric is a *parse failure* (metric None,
name in `judge_failures`), never a made-up 0, 1 or 5. Scores outside 1-5 are failures, not clamped.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from wikihowagent.config import resource_path
from wikihowagent.errors import WikihowagentError, kind_of
from wikihowagent.jsonlio import JsonInputError, parse_json, read_json_file
from wikihowagent.metrics.computational import reference_text
from wikihowagent.records import Conversation, turn_line

ROLES = ("teacher", "learner", "conversation")
REFERENCES = ("no", "tutorial")
LEVELS = ("5", "4", "3", "2", "1")
ROLE_TEXT = {"teacher": "the teacher", "learner": "the learner", "conversation": "the whole conversation"}


class RubricError(WikihowagentError, ValueError):
    """An invalid rubric file; one line naming the file and the problem."""


class JudgeBackendError(WikihowagentError, RuntimeError):
    """The evaluator model could not be reached (after the backend's own retries)."""


class JudgeRequestError(WikihowagentError, RuntimeError):
    """The evaluator refused this one request (e.g. the prompt exceeds its context): a per-conversation
    failure, not a reason to stop the whole evaluation."""


def _is_context_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "context" in text and any(w in text for w in ("exceed", "length", "too long", "too many"))


_SCHEMA_WORDS = ("response_format", "response format", "json_schema", "json schema", "grammar", "structured output")


def _status(exc: BaseException) -> Any:
    return getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)


def _is_schema_rejection(exc: BaseException) -> bool:
    """The server (or client) refuses the JSON-schema request itself, as opposed to a transport failure
    (timeout, connection error, 5xx): only then is text parsing the right fallback."""
    if isinstance(exc, NotImplementedError):
        return True
    text = str(exc).lower()
    if any(w in text for w in _SCHEMA_WORDS):
        return True
    return type(exc).__name__ in ("BadRequestError", "UnprocessableEntityError") or _status(exc) in (400, 422)


def error_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def is_request_error(exc: BaseException) -> bool:
    name = type(exc).__name__
    status = _status(exc)
    return (
        name in ("BadRequestError", "UnprocessableEntityError") or status in (400, 413, 422) or _is_context_error(exc)
    )


@dataclass(frozen=True)
class Rubric:
    name: str
    role: str
    reference: str
    question: str
    levels: dict[str, str]
    sheet_column: int | None = None  # its column among the rubrics of the annotation sheet (`annotate export`)


def default_rubrics_path() -> Path:
    return resource_path("data", "rubrics.json")


def rubrics_sha256(rubrics: dict[str, Rubric]) -> str:
    """A fingerprint of a rubric set (its canonical JSON), recorded with every judged ScoreRecord."""
    import dataclasses
    import hashlib

    judged = {n: {k: v for k, v in dataclasses.asdict(r).items() if k != "sheet_column"} for n, r in rubrics.items()}
    canon = json.dumps(judged, sort_keys=True, ensure_ascii=False)  # what the judge sees: not the sheet layout
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def read_keyed_json(path: Path, error: type[WikihowagentError], file_what: str, key_what: str) -> dict[str, Any]:
    """A judge data file (rubrics, judge prompts): a non-empty JSON object; else one `error` line naming the file."""
    try:
        data = read_json_file(path)
    except FileNotFoundError:
        raise error(f"{path}: {file_what} not found") from None
    except JsonInputError as exc:
        raise error(exc.located(path)) from None
    if not isinstance(data, dict) or not data:
        raise error(f"{path}: expected a JSON object keyed by {key_what}")
    return data


# Names the outputs use for every rubric pooled (compare's "overall" rows, align's "Overall"): no rubric may
# take one, in any case, or its rows could not be told from the pooled ones.
RESERVED_RUBRIC_NAMES = frozenset({"overall"})


def load_rubrics(path: Path | None = None) -> dict[str, Rubric]:
    path = Path(path) if path else default_rubrics_path()
    data = read_keyed_json(path, RubricError, "rubric file", "metric name")
    out: dict[str, Rubric] = {}
    for name, v in data.items():
        where = f"{path}: rubric {name!r}"
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9 _-]*", name):
            raise RubricError(f"{where}: a metric name must be a word (letters, digits, spaces, - or _)")
        if name.strip().casefold() in RESERVED_RUBRIC_NAMES:
            raise RubricError(
                f"{where}: the name is reserved (the outputs' rows of every rubric pooled); choose another"
            )
        if not isinstance(v, dict):
            raise RubricError(f"{where}: expected an object with role, reference, question, rubric")
        missing = [k for k in ("role", "reference", "question", "rubric") if k not in v]
        if missing:
            raise RubricError(f"{where}: missing {', '.join(missing)}")
        if v["role"] not in ROLES:
            raise RubricError(f"{where}: role must be one of {', '.join(ROLES)}, not {v['role']!r}")
        if v["reference"] not in REFERENCES:
            raise RubricError(f'{where}: reference must be "no" or "tutorial", not {v["reference"]!r}')
        if not isinstance(v["question"], str) or not v["question"].strip():
            raise RubricError(f"{where}: question must be a non-empty string")
        levels = v["rubric"]
        if (
            not isinstance(levels, dict)
            or sorted(levels) != sorted(LEVELS)
            or not all(isinstance(levels[k], str) and levels[k].strip() for k in LEVELS)
        ):
            raise RubricError(f'{where}: rubric must map each of "5".."1" to a description')
        column = v.get("sheet_column")
        if column is not None and (not isinstance(column, int) or isinstance(column, bool) or column < 1):
            raise RubricError(f"{where}: sheet_column must be a positive integer")
        out[name] = Rubric(
            name=name,
            role=v["role"],
            reference=v["reference"],
            question=v["question"].strip(),
            levels={k: levels[k].strip() for k in LEVELS},
            sheet_column=column,
        )
    return out


def prompt_groups(rubrics: dict[str, Rubric], names: list[str] | None = None) -> dict[str, list[Rubric]]:
    """{"conversation": reference-free rubrics, "reference": rubrics judged against the tutorial}."""
    chosen = [r for r in rubrics.values() if names is None or r.name in names]
    groups = {
        "conversation": [r for r in chosen if r.reference == "no"],
        "reference": [r for r in chosen if r.reference == "tutorial"],
    }
    return {k: v for k, v in groups.items() if v}


# --------------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------------


def tutorial_block(conv: Conversation) -> str:
    head = f"{conv.tutorial_title}\n" if conv.tutorial_title else ""
    return head + "\n".join(f"Step {i}: {s}" for i, s in enumerate(conv.steps, 1))


def build_prompt(conv: Conversation, group: str, rubrics: list[Rubric], mode: str = "default") -> str:
    if mode == "paper":
        return _paper_prompt(conv, group, rubrics)
    convo = "\n".join(turn_line(m.role, m.text) for m in conv.messages)
    parts = [f"Evaluate the following teacher-learner conversation:\n{convo}"]
    if group == "reference":
        parts.append(f"Reference tutorial:\n{tutorial_block(conv)}")
    crit = ["Score from 1 to 5 (5 = excellent, 1 = very poor):"]
    for r in rubrics:
        crit.append(f"- {r.name} (judge {ROLE_TEXT[r.role]}): {r.question}")
        crit.extend(f"  {k} - {r.levels[k]}" for k in LEVELS)
    parts.append("\n".join(crit))
    example = ", ".join(f'"{r.name}": <score>' for r in rubrics)
    parts.append(
        f"Provide scores in this format: {{{example}}}\nReply with that JSON object only, each score an integer from 1 to 5."
    )
    return "\n\n".join(parts)


def _paper_prompt(conv: Conversation, group: str, rubrics: list[Rubric]) -> str:
    """The released code's prompt strings, whitespace included."""
    rubric_prompt = "\n".join(f"- {r.name} ({r.question})" for r in rubrics)
    format_prompt = ", ".join(f"{r.name}: X" for r in rubrics)
    if group == "reference":
        reference = reference_text(conv)
        generated = "\n".join(line for line in conv.lines if "Teacher:" in line)
        return f"""
        Evaluate the following generated response based on the reference:
        Reference: {reference}
        Generated: {generated}
        
        Score from 1 to 5:
        {rubric_prompt}
        Provide scores in this format: {format_prompt}
        """
    return f"""
        Evaluate the following teacher-learner conversation:
        {conv.lines}
        
        Score from 1 to 5:
        {rubric_prompt}
        Provide scores in this format: {format_prompt}
        """


def retry_prompt(prompt: str, rubrics: list[Rubric]) -> str:
    example = ", ".join(f'"{r.name}": <integer 1-5>' for r in rubrics)
    return f"{prompt}\n\nYour previous reply could not be read. Reply with only this JSON object: {{{example}}}"


def score_schema(rubrics: list[Rubric]) -> dict[str, Any]:
    return {
        "title": "RubricScores",
        "description": "Rubric scores from 1 (very poor) to 5 (excellent).",
        "type": "object",
        "properties": {
            r.name: {"type": "integer", "minimum": 1, "maximum": 5, "description": r.question} for r in rubrics
        },
        "required": [r.name for r in rubrics],
        "additionalProperties": False,
    }


# --------------------------------------------------------------------------------------------------
# Tolerant parsing
# --------------------------------------------------------------------------------------------------

_THINK_RE = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_LEVEL_ECHO_RE = re.compile(r"^[ \t>-]*[1-5][ \t]*[-–—:=][ \t]*[A-Za-z].*$", re.M)
_NUM_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:(?:/|out of)\s*(\d+))?\s*$", re.I)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def check_value(value: Any) -> tuple[float | None, str | None]:
    """A reply's value -> (score in 1..5, None) or (None, why it is not a score)."""
    if isinstance(value, _Several):
        return None, f"ambiguous reply: several scores ({', '.join(json.dumps(v)[:10] for v in value)})"
    if isinstance(value, bool):
        return None, f"not a number: {value!r}"
    if isinstance(value, dict):
        for k in ("score", "rating", "value"):
            if k in value:
                return check_value(value[k])
        return None, f"not a number: {json.dumps(value)[:40]}"
    if isinstance(value, (int, float)):
        num, denom = float(value), None
    elif isinstance(value, str):
        m = _NUM_RE.match(value)
        if not m:
            return None, f"not a number: {value[:40]!r}"
        num, denom = float(m.group(1)), m.group(2)
    else:
        return None, f"not a number: {value!r}"
    if denom is not None and int(denom) != 5:
        return None, f"score on another scale ({value})"
    if not 1 <= num <= 5:
        return None, f"out of range 1-5 ({num:g})"
    return (int(num) if num.is_integer() else num), None


class _Several(list[Any]):
    """The values of a key that one JSON object gives more than once, differently ({"Clarity": 3, "Clarity": 4})."""


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a key given twice with different values keeps both (`_Several`), not the last."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out and out[k] != v:
            prev = out[k]
            out[k] = _Several([*(prev if isinstance(prev, _Several) else [prev]), v])
        else:
            out[k] = v
    return out


def _json_objects(text: str) -> list[dict[str, Any]]:
    out = []
    starts = [i for i, ch in enumerate(text) if ch == "{"]
    for s in starts:
        depth = 0
        in_str = esc = False
        for j in range(s, len(text)):
            ch = text[j]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = parse_json(text[s : j + 1], object_pairs_hook=_keys_once)
                    except JsonInputError:
                        obj = None
                    if isinstance(obj, dict):
                        out.append(obj)
                    break
    return out


def _flatten(obj: dict[str, Any]) -> dict[str, Any]:
    """{"scores": {...}} and similar wrappers -> the inner mapping merged into the outer one."""
    flat = dict(obj)
    for v in obj.values():
        if isinstance(v, dict) and not ({"score", "rating", "value"} & set(v)):
            flat.update(v)
    return flat


def parse_scores(text: str, names: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """Read the scores of `names` from a reply. -> ({name: score}, {name: problem}) for the others."""
    text = _THINK_RE.sub("", text or "")
    found: dict[str, float] = {}
    problems: dict[str, str] = {}
    wanted = {_norm(n): n for n in names}
    # 1. JSON objects (the requested format), possibly fenced or wrapped in prose. Two objects (or one key
    # twice) giving one rubric different scores: ambiguous, no score.
    ambiguous: set[str] = set()
    for obj in _json_objects(text):
        for k, v in _flatten(obj).items():
            name = wanted.get(_norm(str(k)))
            if name is None or name in ambiguous:
                continue
            val, why = check_value(v)
            if name in found:
                if why is None and val != found[name]:
                    problems[name] = f"ambiguous reply: several scores ({found.pop(name):g}, {val:g})"
                    ambiguous.add(name)
                continue
            if why is None:
                found[name] = val  # type: ignore[assignment]  # check_value gives a float whenever `why` is None
                problems.pop(name, None)
            else:
                problems[name] = why
                if why.startswith("ambiguous"):
                    ambiguous.add(name)
    # 2. "Name: 4", "**Name** (question...): 4/5", "Name - 4" lines. A rubric level the judge repeats
    # ("5 - Excellent ...") is not its score: such lines are dropped, and a label's score must be on its line.
    clean = _LEVEL_ECHO_RE.sub("", re.sub(r"[*#`_]", "", text))
    for name in wanted.values():
        if name in found or name in ambiguous:
            continue
        label = r"[\s\-]*".join(re.escape(part) for part in re.findall(r"[A-Za-z0-9]+", name))
        pat = re.compile(
            rf"(?<![A-Za-z]){label}(?![A-Za-z])[ \t]*(?:score)?[ \t]*(?:\([^)\n]*\))?[ \t]*(?:score)?[ \t]*[:=\-–—]+[ \t]*"
            rf"\"?(-?\d+(?:\.\d+)?(?:[ \t]*(?:/|out of)[ \t]*\d+)?)",
            re.I,
        )
        hits = pat.findall(clean)
        if not hits:
            problems.setdefault(name, "no score found")
            continue
        if len({re.sub(r"\s+", "", h) for h in hits}) > 1:
            problems[name] = f"ambiguous reply: several scores ({', '.join(hits)})"
            continue
        val, why = check_value(hits[-1])
        if why is None:
            found[name] = val  # type: ignore[assignment]  # check_value gives a float whenever `why` is None
            problems.pop(name, None)
        else:
            problems[name] = why
    return found, problems


# --------------------------------------------------------------------------------------------------
# Calling the model
# --------------------------------------------------------------------------------------------------


# Why a rubric got no score: the call failed, the reply held no readable score, or the score digit's (letter's)
# probability mass was below the threshold (the model's own uncertainty: not asked again).
FailureKind = Literal["call", "parse", "low-mass"]
LOW_MASS: FailureKind = "low-mass"
FAILURE_KINDS: tuple[FailureKind, ...] = ("call", "parse", "low-mass")


def failure_kind(message: Any, default: FailureKind = "parse") -> FailureKind:
    """The FailureKind a message carries (errors.Note's kind), `default` when it carries none or another."""
    kind = kind_of(message, default)
    return next((k for k in FAILURE_KINDS if k == kind), default)


@dataclass
class JudgeResult:
    scores: dict[str, float | None] = field(default_factory=dict)
    raw: dict[str, list[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kinds: dict[str, FailureKind] = field(default_factory=dict)  # failed rubric -> why
    dist: dict[str, list[float]] = field(default_factory=dict)  # rubric -> p(1..5) (weighted / sampled)
    argmax: dict[str, int] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    # --judge-scoring checklist (records.JudgeProvenance's fields of the same names)
    items: list[Any] = field(default_factory=list)  # records.ChecklistItemScore, one per item asked
    checklist: str = ""
    checklist_weights: str = ""
    reading: str = ""
    calls: int = 0  # model calls made (cost)
    prompt_tokens: int = 0  # the server's reported prompt tokens over those calls


class Judge:
    """Scores conversations with one chat model; calls run concurrently under a semaphore."""

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, Rubric],
        names: list[str] | None = None,
        *,
        mode: str = "default",
        retries: int = 2,
        concurrency: int = 2,
        structured: bool | None = None,
    ):
        self.llm = llm
        self.groups = prompt_groups(rubrics, names)
        self._order = [n for n in rubrics if names is None or n in names]
        self.mode = mode
        self.retries = max(0, retries)
        self.sem = asyncio.Semaphore(max(1, concurrency))
        # Structured output in default mode where the backend has it; paper mode replays its text prompts.
        self.structured = (mode != "paper") if structured is None else structured
        self._runnables: dict[str, Any] = {}
        self.fallback_note: str | None = None

    @property
    def names(self) -> list[str]:
        """Rubric names in the rubric file's order."""
        return list(self._order)

    def _structured_runnable(self, group: str) -> Any | None:
        if not self.structured:
            return None
        if group not in self._runnables:
            try:
                self._runnables[group] = self.llm.with_structured_output(
                    score_schema(self.groups[group]), method="json_schema", include_raw=True
                )
            except (NotImplementedError, ValueError, TypeError, AttributeError):
                self._runnables[group] = None
                self._disable_structured("structured output not supported by this backend: replies parsed from text")
                return None
        return self._runnables[group]

    def _disable_structured(self, note: str) -> None:
        """Switch to text parsing for the rest of the process. Only flags are set (no container is rebuilt):
        concurrent tasks that already hold a runnable finish their call, and each later call reads the flag."""
        self.structured = False
        if self.fallback_note is None:
            self.fallback_note = note

    async def _call(self, group: str, prompt: str) -> tuple[str, dict[str, Any] | None]:
        """-> (raw reply text, parsed JSON object or None)."""
        async with self.sem:
            runnable = self._structured_runnable(group)  # read after the wait: another call may have switched to text
            if runnable is not None:
                try:
                    out = await runnable.ainvoke(prompt)
                    raw = out.get("raw")
                    text = _message_text(raw)
                    parsed = out.get("parsed")
                    if hasattr(parsed, "model_dump"):
                        parsed = parsed.model_dump()
                    return text, parsed if isinstance(parsed, dict) else None
                except Exception as exc:  # noqa: BLE001 - e.g. the server rejects response_format
                    if _is_context_error(exc):  # this prompt is too long: not the schema's fault
                        raise JudgeRequestError(error_line(exc)[:200]) from exc
                    if not _is_schema_rejection(exc):  # timeout, connection error, 5xx: the schema is not at fault
                        raise JudgeBackendError(f"evaluator call failed: {error_line(exc)}") from exc
                    self._disable_structured(
                        f"structured output refused ({error_line(exc)[:120]}): replies parsed from text"
                    )
            try:
                msg = await self.llm.ainvoke(prompt)
            except Exception as exc:  # noqa: BLE001
                if is_request_error(exc):
                    raise JudgeRequestError(
                        f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                    ) from exc
                raise JudgeBackendError(f"evaluator call failed: {error_line(exc)}") from exc
            return _message_text(msg), None

    async def _judge_group(
        self, conv: Conversation, group: str, res: JudgeResult, only: list[str] | None = None, variant: int = 0
    ) -> None:
        rubrics = [r for r in self.groups[group] if only is None or r.name in only]
        if variant:
            rubrics.reverse()
        names = [r.name for r in rubrics]
        prompt = build_prompt(conv, group, rubrics, self.mode)
        got: dict[str, float] = {}
        problems: dict[str, str] = {}
        raws: list[str] = []
        for attempt in range(1 + self.retries):
            try:
                text, parsed = await self._call(group, prompt if attempt == 0 else retry_prompt(prompt, rubrics))
            except JudgeRequestError as exc:
                for n in names:
                    if n not in got:
                        problems[n] = f"request refused by the evaluator ({exc})"
                        res.kinds[n] = "call"
                break
            raws.append(text)
            missing = [n for n in names if n not in got]
            if parsed is not None:
                vals, probs = parse_scores(json.dumps(parsed), missing)
            else:
                vals, probs = parse_scores(text, missing)
            got.update(vals)
            problems.update(probs)
            if all(n in got for n in names):
                break
        res.raw[group] = raws
        for n in names:
            if n in got:
                res.scores[n] = got[n]
            else:
                res.scores[n] = None
                res.failures.append(n)
                res.kinds.setdefault(n, "parse")
                res.notes.append(f"{n}: {problems.get(n, 'no score found')} after {len(raws)} replies")

    async def judge(self, conv: Conversation, names: list[str] | None = None, variant: int = 0) -> JudgeResult:
        """Score `names` (default: all); `variant` 1 = the rubrics listed in reverse order (self-consistency)."""
        res = JudgeResult()
        groups = [g for g in self.groups if names is None or any(r.name in names for r in self.groups[g])]
        await asyncio.gather(*(self._judge_group(conv, g, res, names, variant) for g in groups))
        order = {n: i for i, n in enumerate(self.names)}
        res.failures.sort(key=lambda n: order.get(n, len(order)))  # all of them are among self.names
        res.scores = {n: res.scores[n] for n in self.names if n in res.scores}
        return res


def _message_text(msg: Any) -> str:
    if msg is None:
        return ""
    content = getattr(msg, "content", msg)
    if isinstance(content, list):
        content = "".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content)
    text = str(content or "")
    if not text.strip():
        calls = getattr(msg, "tool_calls", None) or []
        if calls:
            text = json.dumps(calls[0].get("args", {}))
    return text
