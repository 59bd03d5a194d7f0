"""What `evaluate` reads: run directories, the paper's released run files, JSONL of records.

Every input is normalised to `Conversation`s. Bad input never stops the good records: each problem is
reported as one line naming the file and line (or the record's index in a paper JSON file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.runs import CONVERSATIONS
from wikihowagent.tutorials import domain_of

# The workflow's fixed texts (no model call): excluded from the default metrics, see README.md, "Metrics".
BEGIN_RE = re.compile(r"^\s*Let's begin:.*\bBEGIN\W*$", re.S)
FINISH_TEXT = "We've reached the end of the tutorial. Bye! FINISHED"
_ROLE_RE = re.compile(r"^\s*(Teacher|Learner)\s*:\s?", re.I)
_PAPER_STEM_RE = re.compile(r"^T-(?P<t>.+?)_L-(?P<l>.+?)_E-(?P<e>.+?)(?:_(?P<job>[^_]*))?$")


class InputError(ValueError):
    """A missing or unreadable input; the message is one line naming the file."""


@dataclass
class Message:
    role: str  # "teacher" | "learner"
    text: str
    kind: str = "model"  # "begin" | "finish" (fixed texts) | "model" | "clarification"


@dataclass
class Conversation:
    conversation_id: str
    run: str
    where: str  # "file:LINE" for messages
    tutorial_title: str
    steps: list[str]
    lines: list[str]  # "Teacher: ..." / "Learner: ..." as the paper stored them
    messages: list[Message]
    finished: bool | None = None  # structured completion (None: unknown, e.g. paper records)
    tutorial_id: str = ""
    title: str = ""
    domain: str = ""
    teacher: str = ""
    learner: str = ""
    persona: str = ""  # learner persona ("" in records made before personas)


@dataclass
class InputSource:
    path: Path
    kind: str  # "run" | "paper-json" | "jsonl"
    name: str  # run name (directory name or file stem)
    teacher: str = ""
    learner: str = ""
    evaluator: str | None = None  # from run.json / the paper file name
    info: dict[str, Any] = field(default_factory=dict)
    n_records: int = 0
    n_failed: int = 0  # records with `error` set (failed conversations, skipped)
    n_invalid: int = 0  # unreadable lines / records without conversation or tutorial
    n_seen: int = 0  # lines (or list items) consumed so far, good or bad: for progress bars

    @property
    def label(self) -> str:
        if not self.teacher:
            return self.name
        return f"T-{self.teacher} L-{self.learner or self.teacher}"

    def conversations(self, on_error: Callable[[str], None]) -> Iterator[Conversation]:
        """Stream the scorable conversations; failed ones are counted, bad ones reported and skipped."""
        self.n_records = self.n_failed = self.n_invalid = self.n_seen = 0

        def bad(msg: str) -> None:
            self.n_invalid += 1
            on_error(msg)

        def bad_line(msg: str) -> None:
            self.n_seen += 1
            bad(msg)

        for where, obj in self._objects(bad_line):
            self.n_seen += 1
            self.n_records += 1
            if obj.get("error"):
                self.n_failed += 1
                continue
            conv, problem = parse_record(obj, self.name, where)
            if problem:
                bad(f"{where}: {problem}")
                continue
            assert conv is not None
            conv.teacher = conv.teacher or self.teacher
            conv.learner = conv.learner or self.learner
            yield conv

    def _objects(self, bad: Callable[[str], None]) -> Iterator[tuple[str, dict[str, Any]]]:
        from wikihowagent.runs import iter_jsonl

        if self.kind == "paper-json":
            data = _load_json(self.path)
            items = data["total_conversations"] if isinstance(data, dict) else data
            for i, obj in enumerate(items):
                where = f"{self.path}: total_conversations[{i}]" if isinstance(data, dict) else f"{self.path}: [{i}]"
                if not isinstance(obj, dict):
                    bad(f"{where}: expected a JSON object, got {type(obj).__name__}")
                    continue
                yield where, obj
            return
        path = self.path / CONVERSATIONS if self.kind == "run" else self.path
        for lineno, obj in iter_jsonl(path, on_error=bad):
            yield f"{path}:{lineno}", obj


def _load_json(path: Path) -> Any:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    if isinstance(data, dict) and isinstance(data.get("total_conversations"), list):
        return data
    if isinstance(data, list):
        return data
    raise InputError(f"{path}: expected the paper's run file ({{\"total_conversations\": [...]}}) or a list of records")


def _split_lines(lines: list[str]) -> list[Message]:
    msgs: list[Message] = []
    for line in lines:
        m = _ROLE_RE.match(line)
        if m:
            msgs.append(Message(role=m.group(1).lower(), text=line[m.end():].strip()))
        elif msgs:  # a line without a role prefix continues the previous message
            msgs[-1].text += "\n" + line.strip()
    _infer_kinds(msgs)
    return msgs


def _infer_kinds(msgs: list[Message]) -> None:
    teachers = [m for m in msgs if m.role == "teacher"]
    if teachers and BEGIN_RE.match(teachers[0].text):
        teachers[0].kind = "begin"
    for m in teachers:
        if m.text.strip() == FINISH_TEXT:
            m.kind = "finish"


def _domain(obj: dict[str, Any]) -> str:
    if obj.get("domain"):
        return str(obj["domain"])
    cats = obj.get("categories")
    return domain_of([c for c in cats if isinstance(c, str)]) if isinstance(cats, list) else ""


def parse_record(obj: dict[str, Any], run: str, where: str) -> tuple[Conversation | None, str | None]:
    """A record of ours (ConversationRecord) or of the paper -> Conversation, or (None, problem)."""
    tut = obj.get("tutorial")
    if not isinstance(tut, dict):
        return None, "record has no tutorial (expected {\"title\", \"steps\"})"
    steps = tut.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
        return None, "record's tutorial has no steps (expected a list of strings)"
    title = tut.get("title") if isinstance(tut.get("title"), str) else ""
    cid = obj.get("conversation_id")
    if not isinstance(cid, str) or not cid.strip():
        return None, "record has no conversation_id"

    turns = obj.get("turns")
    lines = obj.get("conversation")
    messages: list[Message] = []
    if isinstance(turns, list) and turns:
        for t in turns:
            if not isinstance(t, dict) or t.get("role") not in ("teacher", "learner") or not isinstance(t.get("text"), str):
                return None, "record has a malformed turn (expected {\"role\": teacher|learner, \"text\"})"
            messages.append(Message(role=t["role"], text=t["text"], kind=str(t.get("kind") or "model")))
        if not isinstance(lines, list) or not lines:
            lines = [f"{m.role.capitalize()}: {m.text}" for m in messages]
    elif isinstance(lines, list) and lines:
        if not all(isinstance(x, str) for x in lines):
            return None, "record's conversation is not a list of strings"
        messages = _split_lines(lines)
    if not messages:
        return None, "record has no conversation"

    finished: bool | None = None
    if obj.get("stop_reason") is not None:
        finished = obj.get("stop_reason") == "finished" or bool(obj.get("finished"))
    elif isinstance(turns, list) and turns:
        finished = bool(obj.get("finished"))

    conv = Conversation(
        conversation_id=cid,
        run=run,
        where=where,
        tutorial_title=title,
        steps=list(steps),
        lines=[str(x) for x in lines],
        messages=messages,
        finished=finished,
        tutorial_id=str(obj.get("tutorial_id") or ""),
        title=str(obj.get("title") or ""),
        domain=_domain(obj),
        teacher=str(obj.get("teacher") or ""),
        learner=str(obj.get("learner") or ""),
        persona=str(obj.get("persona") or ""),
    )
    return conv, None


def resolve_inputs(paths: list[Path], runs_dir: Path, on_empty: Callable[[str], None] | None = None) -> list[InputSource]:
    """RUN_DIR / file arguments -> sources; none given -> the latest run under `runs_dir`.

    A missing path raises InputError. An empty file raises too, or, with `on_empty`, is reported there and
    skipped so that the other inputs are still scored.
    """
    from wikihowagent.runs import RunError, latest_run

    if not paths:
        try:
            paths = [latest_run(runs_dir)]
        except RunError as exc:
            raise InputError(str(exc)) from None
    sources = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise InputError(f"{p}: no such run directory or file")
        try:
            sources.append(_run_source(p) if p.is_dir() else _file_source(p))
        except InputError as exc:
            if on_empty is None or "empty file" not in str(exc):
                raise
            on_empty(str(exc))
    if not sources:
        raise InputError("nothing to evaluate: every input is empty")
    names = [s.name for s in sources]
    dups = {n for n in names if names.count(n) > 1}
    if dups:
        raise InputError(f"two inputs share the run name {sorted(dups)[0]!r}; rename one (scores are kept per run name)")
    return sources


def _run_source(path: Path) -> InputSource:
    from wikihowagent.runs import RunError, read_run_info

    if not (path / CONVERSATIONS).exists():
        raise InputError(f"{path}: not a run directory (no {CONVERSATIONS})")
    if (path / CONVERSATIONS).stat().st_size == 0:
        raise InputError(f"{path / CONVERSATIONS}: empty file (no conversations)")
    info: dict[str, Any] = {}
    if (path / "run.json").exists():
        try:
            info = read_run_info(path)
        except RunError as exc:
            raise InputError(str(exc)) from None
    return InputSource(
        path=path, kind="run", name=str(info.get("name") or path.name), info=info,
        teacher=str(info.get("teacher") or ""), learner=str(info.get("learner") or info.get("teacher") or ""),
        evaluator=info.get("evaluator") or None,
    )


def _file_source(path: Path) -> InputSource:
    if path.stat().st_size == 0:
        raise InputError(f"{path}: empty file (no conversations)")
    kind = "paper-json"
    if path.suffix.lower() == ".jsonl":
        kind = "jsonl"
    else:
        with path.open("rb") as fh:
            head = fh.read(1 << 16).lstrip()
        if not head.startswith((b"{", b"[")):
            raise InputError(f"{path}: not a JSON or JSONL file of conversations")
        # A JSONL file whose first line is a complete object is read line by line (streaming).
        first = head.split(b"\n", 1)[0]
        try:
            obj = json.loads(first)
            if isinstance(obj, dict) and "total_conversations" not in obj:
                kind = "jsonl"
        except json.JSONDecodeError:
            pass
    src = InputSource(path=path, kind=kind, name=path.stem)
    m = _PAPER_STEM_RE.match(path.stem)
    if m:
        src.teacher, src.learner, src.evaluator = m.group("t"), m.group("l"), m.group("e")
    return src
