"""The paper's released run files, at the edge: turned into `Conversation`s once, here.

A paper run file is `T-<teacher>_L-<learner>_E-<evaluator>_<job>.json` holding `{"total_conversations":
[...]}`; each record has `conversation` ("Teacher: ..." / "Learner: ..." lines), `tutorial`
(`title`, `steps`), `title`, `doc_id`, `method_id`, `categories` and, once judged, `evaluation` (rubric
name -> score). Our own records (`ConversationRecord`, with structured `turns`) are read by the same
function, so every stage sees one type whichever shape it was given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wikihowagent import jsonlio
from wikihowagent.domains import record_domain
from wikihowagent.errors import WikihowagentError, validation_line
from wikihowagent.jsonlio import JsonInputError, read_json_file
from wikihowagent.records import BEGIN_TEXT, FINISH_TEXT, Conversation, ScoreRecord, Turn, paper_tutorial_key, turn_line

# The paper's run-file stem: T-<teacher>_L-<learner>_E-<evaluator>[_<job>].
PAPER_RUN_RE = re.compile(r"^T-(?P<teacher>.+?)_L-(?P<learner>.+?)_E-(?P<evaluator>.+?)(?:_(?P<job>[^_]*))?$")
PAPER_RECORDS_KEY = "total_conversations"
# BEGIN_TEXT with any method title; FINISH_TEXT exactly (the workflow's fixed texts, see records.py).
BEGIN_RE = re.compile("^\\s*" + re.escape(BEGIN_TEXT.split("{method_title}")[0]) + ".*\\bBEGIN\\W*$", re.S)
_ROLE_RE = re.compile(r"^\s*(Teacher|Learner)\s*:\s?", re.I)


class RecordError(WikihowagentError, ValueError):
    """A record that cannot be read as a conversation; str(exc) is the problem (the caller adds where)."""


def default_run_name(teacher: str, learner: str, evaluator: str | None, personas: list[str] | None = None) -> str:
    """The paper's run naming, T-<teacher>_L-<learner>_E-<evaluator>, made filesystem-safe; learner personas
    other than the paper's add _P-<persona>[+<persona>...]."""
    name = f"T-{teacher}_L-{learner}_E-{evaluator or teacher}"
    if personas and personas != ["paper"]:
        name += "_P-" + "+".join(personas)
    return re.sub(r"[^A-Za-z0-9._+=-]+", "-", name)


def parse_run_stem(stem: str) -> dict[str, str] | None:
    """`T-a_L-b_E-c_123` -> {"teacher": "a", "learner": "b", "evaluator": "c", "job": "123"}; else None."""
    m = PAPER_RUN_RE.match(stem or "")
    return {k: v or "" for k, v in m.groupdict().items()} if m else None


def load_paper_file(path: Path) -> tuple[Iterable[Any], str]:
    """The records of a paper run file (or a plain JSON list of records) and how to name item i
    (`"{path}: total_conversations[{i}]"` or `"{path}: [{i}]"`). ValueError (one line) if it is neither."""
    if Path(path).stat().st_size > jsonlio.STREAM_ABOVE:  # the released files (14,287 conversations each)
        key = jsonlio.json_list_key(Path(path))
        if key in (PAPER_RECORDS_KEY, ""):
            where = f"{PAPER_RECORDS_KEY}[{{i}}]" if key else "[{i}]"
            return _located(path, jsonlio.iter_json_list(Path(path))), f"{path}: {where}"
    try:
        data = read_json_file(Path(path))
    except JsonInputError as exc:
        raise ValueError(exc.located(path)) from None
    if isinstance(data, dict) and isinstance(data.get(PAPER_RECORDS_KEY), list):
        return data[PAPER_RECORDS_KEY], f"{path}: {PAPER_RECORDS_KEY}[{{i}}]"
    if isinstance(data, list):
        return data, f"{path}: [{{i}}]"
    raise ValueError(f'{path}: expected the paper\'s run file ({{"{PAPER_RECORDS_KEY}": [...]}}) or a list of records')


def _located(path: Path, records: Iterator[Any]) -> Iterator[Any]:
    """`records` read one at a time; malformed text met on the way is a ValueError naming the file and line."""
    try:
        yield from records
    except JsonInputError as exc:
        raise ValueError(exc.located(path)) from None


def split_lines(lines: list[str]) -> list[Turn]:
    """The paper's "Role: text" lines -> turns; the fixed BEGIN/FINISHED texts get their kinds."""
    turns: list[Turn] = []
    for line in lines:
        m = _ROLE_RE.match(line)
        if m:
            turns.append(Turn(role=m.group(1).lower(), text=line[m.end() :].strip()))
        elif turns:  # a line without a role prefix continues the previous message
            turns[-1].text += "\n" + line.strip()
    teachers = [t for t in turns if t.role == "teacher"]
    if teachers and BEGIN_RE.match(teachers[0].text):
        teachers[0].kind = "begin"
    for t in teachers:
        if t.text.strip() == FINISH_TEXT:
            t.kind = "finish"
    return turns


def domain_of(obj: dict[str, Any]) -> str:
    """A record's domain: its `domain`, else the paper's domain of its breadcrumb (`categories`, see
    `domains.record_domain`), else ""."""
    if obj.get("domain"):
        return str(obj["domain"])
    cats = obj.get("categories")
    cats = [c for c in cats if isinstance(c, str)] if isinstance(cats, list) else []
    return record_domain(cats, str(obj.get("source_tutorial_path") or "")) if cats else ""


def to_conversation(obj: dict[str, Any], run: str, where: str) -> Conversation:
    """A record of ours (ConversationRecord, structured turns) or of the paper (conversation lines) ->
    Conversation. Raises RecordError naming the problem."""
    tut = obj.get("tutorial")
    if not isinstance(tut, dict):
        raise RecordError('record has no tutorial (expected {"title", "steps"})')
    steps = tut.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
        raise RecordError("record's tutorial has no steps (expected a list of strings)")
    cid = obj.get("conversation_id")
    if not isinstance(cid, str) or not cid.strip():
        raise RecordError("record has no conversation_id")

    turns_in, lines = obj.get("turns"), obj.get("conversation")
    paper = not (isinstance(turns_in, list) and turns_in)
    if isinstance(turns_in, list) and turns_in:  # = not paper (spelt out so the type checker sees the list)
        for t in turns_in:
            if (
                not isinstance(t, dict)
                or t.get("role") not in ("teacher", "learner")
                or not isinstance(t.get("text"), str)
            ):
                raise RecordError('record has a malformed turn (expected {"role": teacher|learner, "text"})')
        turns: list[Any] = turns_in
    elif isinstance(lines, list) and lines:
        if not all(isinstance(x, str) for x in lines):
            raise RecordError("record's conversation is not a list of strings")
        turns = split_lines(lines)
    else:
        turns = []
    if not turns:
        raise RecordError("record has no conversation")
    if not isinstance(lines, list) or not lines:
        lines = [turn_line(t["role"], t["text"]) for t in turns]

    fields = {k: obj[k] for k in Conversation.model_fields if k in obj and obj[k] is not None}
    fields.update(
        tutorial={"title": tut.get("title") if isinstance(tut.get("title"), str) else "", "steps": steps},
        turns=turns,
        conversation=[str(x) for x in lines],
        domain=domain_of(obj),
        title=str(obj.get("title") or ""),
        tutorial_id=str(obj.get("tutorial_id") or ""),
        teacher=str(obj.get("teacher") or ""),
        learner=str(obj.get("learner") or ""),
        run=run,
        where=where,
        paper_format=paper,
    )
    if not isinstance(fields.get("categories"), list):
        fields.pop("categories", None)
    try:
        return Conversation.model_validate(fields)
    except ValidationError as exc:
        raise RecordError(f"record {validation_line(exc, quoted=True)}") from None


@dataclass
class PartialRecord:
    """What a record the adapter (`to_conversation`) refuses still holds, read leniently, and what it lacks."""

    tutorial_id: str = ""
    title: str = ""
    method_title: str = ""
    domain: str = ""
    steps: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    error: str = ""
    warnings: list[str] = field(default_factory=list)
    teacher: str = ""
    learner: str = ""
    missing: list[str] = field(default_factory=list)  # "tutorial", "tutorial.steps", "conversation"


def partial_record(obj: dict[str, Any]) -> PartialRecord:
    """The one lenient reading of a record: every field that is usable, the rest left empty and named in
    `missing` (a failed conversation may lack its turns, a damaged one its tutorial)."""
    part = PartialRecord(
        tutorial_id=str(obj.get("tutorial_id") or ""),
        title=str(obj.get("title") or ""),
        domain=domain_of(obj),
        error=str(obj.get("error") or ""),
        teacher=str(obj.get("teacher") or ""),
        learner=str(obj.get("learner") or ""),
    )
    tut = obj.get("tutorial") if isinstance(obj.get("tutorial"), dict) else None
    if tut is None:
        part.missing.append("tutorial")
        tut = {}
    part.method_title = str(tut.get("title") or "")
    steps = tut.get("steps")
    part.steps = [x for x in steps if isinstance(x, str)] if isinstance(steps, list) else []
    if tut and not part.steps:
        part.missing.append("tutorial.steps")
    for t in given if isinstance(given := obj.get("turns"), list) else []:
        try:
            part.turns.append(Turn.model_validate(t))
        except ValueError:
            continue
    if not part.turns and isinstance(obj.get("conversation"), list):
        part.turns = split_lines([x for x in obj["conversation"] if isinstance(x, str)])
    if not part.turns:
        part.missing.append("conversation")
    warnings = obj.get("warnings")
    part.warnings = [str(w) for w in warnings] if isinstance(warnings, list) else []
    return part


def record_status(obj: dict[str, Any]) -> str:
    """How a record's conversation ended: failed (`error` set), finished, cut (stopped otherwise), or unknown
    (the paper's records say neither)."""
    if obj.get("error"):
        return "failed"
    if obj.get("stop_reason") == "finished" or obj.get("finished") is True:
        return "finished"
    if "stop_reason" in obj or "finished" in obj:
        return "cut"
    return "unknown"


def record_persona(obj: dict[str, Any]) -> str:
    """The learner persona a record names (a name, or an object's name / id / JSON), "" if none."""
    persona = obj.get("persona")
    if isinstance(persona, dict):
        persona = persona.get("name") or persona.get("id") or json.dumps(persona, sort_keys=True)
    return str(persona or "")


@dataclass
class LenientRecord:
    """One record read leniently (`read_lenient`), for showing every record, failed and damaged ones too: the
    typed `Conversation` when the adapter takes it, else what the record still holds (`partial`); `refused`: the
    adapter's reason when it refused a record that is not a failed conversation; `obj`: the record as stored
    (fields no type knows are shown as they are)."""

    conversation_id: str
    where: str
    obj: dict[str, Any]
    status: str
    persona: str
    conversation: Conversation | None = None
    partial: PartialRecord | None = None
    refused: str = ""


def read_lenient(obj: dict[str, Any], run: str, where: str) -> LenientRecord | None:
    """A record as a LenientRecord; None if it has no conversation_id (nothing can name it)."""
    cid = obj.get("conversation_id")
    if not isinstance(cid, str) or not cid.strip():
        return None
    rec = LenientRecord(
        conversation_id=cid, where=where, obj=obj, status=record_status(obj), persona=record_persona(obj)
    )
    try:
        rec.conversation = to_conversation(obj, run, where)
    except RecordError as exc:
        if not obj.get("error"):
            rec.refused = str(exc)
        rec.partial = partial_record(obj)
    return rec


# Cells of an `evaluation` dict that mean "no score".
_BLANK_CELLS = frozenset({"", "na", "n/a", "nan", "none", "null", "-"})


def paper_score_record(obj: Any, run: str, on_bad_value: Any = None) -> ScoreRecord:
    """A paper record's `evaluation` scores -> ScoreRecord (run = the run file's stem; the model from its
    name). A number in a string is read as the number, a blank cell as null; any other cell is reported to
    `on_bad_value` ("Clarity: 'five' is not a number; cell left out") and left null. RecordError without a
    conversation_id."""
    if not isinstance(obj, dict) or not isinstance(obj.get("conversation_id"), str) or not obj["conversation_id"]:
        raise RecordError("no conversation_id")
    ev = given if isinstance(given := obj.get("evaluation"), dict) else {}
    metrics: dict[str, float | None] = {}
    for name, raw in ev.items():
        metrics[str(name)] = _cell(raw, str(name), on_bad_value)
    stem = parse_run_stem(run) or {}
    return ScoreRecord(
        conversation_id=obj["conversation_id"],
        run=run,
        tutorial_id=paper_tutorial_key(obj.get("title"), obj.get("doc_id"), obj.get("method_id")),
        title=str(obj.get("title") or ""),
        domain=domain_of(obj),
        teacher=str(obj.get("teacher") or stem.get("teacher", "")),
        learner=str(obj.get("learner") or stem.get("learner", "")),
        mode="paper",
        metrics=metrics,
    )


def _cell(raw: Any, name: str, on_bad_value: Any) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    text = str(raw).strip()
    if text.lower() in _BLANK_CELLS:
        return None
    try:
        return float(text)
    except ValueError:
        if on_bad_value is not None:
            on_bad_value(f"{name}: {text[:40]!r} is not a number; cell left out")
        return None
