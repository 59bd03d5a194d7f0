"""The report's conversations, in bounded memory: what the table, the pages and the figures need of each one
(compact columns, one entry per conversation, in the order they are shown) and the rest of it (turns,
tutorial, judge replies: the JSON its data chunk carries) in a spool file beside the output, read back once
when the chunks are written.

A report of the paper's 114,296 conversations holds a few tens of MB of columns; the texts (gigabytes) are
never all in memory at once.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import json
import sys
import tempfile
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from wikihowagent.records import Turn

CHUNK = 250  # conversations per data/conv-NNNN.js
STATUSES = ("finished", "cut", "failed", "unknown")


@dataclass
class StoredRun:
    """What one process's ConversationStore holds (`export`), for the report's store to take over (`adopt`)."""

    spool: Path
    end: int
    columns: tuple[Any, ...]
    ids: list[str]
    at: array[int]
    sizes: array[int]


class ConversationStore:
    """Every conversation of the report: conversation i's columns (`ids[i]`, `run[i]` — the index of its run in
    the report's runs —, `score_row[i]` — its row in its run's score table, -1 if not scored —, status, tokens,
    turns, tutorial, title, domain, persona, teacher, learner) and its spooled parts (`parts(i)`)."""

    def __init__(self, spool_dir: Path | None = None, spool_file: Path | None = None) -> None:
        """The spool: an unnamed temporary file in `spool_dir`, or the file `spool_file` (a store whose columns
        another process's store takes over: `export`, then `adopt` there)."""
        spool = (
            open(spool_file, "w+b")  # noqa: SIM115 - close()
            if spool_file is not None
            else tempfile.TemporaryFile(prefix=".wikihowagent-report-", dir=spool_dir)  # noqa: SIM115 - close()
        )
        self._spools: list[BinaryIO] = [spool]  # the spool files, one address space: spool k from _bases[k] on
        self._bases = [0]
        self._end = 0
        self.ids: list[str] = []
        self.run = array("i")
        self.score_row = array("i")
        self.status = array("b")
        self.tokens = array("q")
        self.turns = array("i")
        self.tutorial: list[str] = []
        self.title: list[str] = []  # the title, else the method's title
        self.domain: list[str] = []
        self.persona: list[str] = []
        self.teacher: list[str] = []
        self.learner: list[str] = []
        self._at = array("q")  # where its parts start in the spools' address space
        self._sizes = array("i")  # the byte size of each part, three per conversation

    def __len__(self) -> int:
        return len(self.ids)

    def close(self) -> None:
        for spool in self._spools:
            spool.close()

    def export(self) -> StoredRun:
        """This store's columns and the name of its spool file (made with `spool_file`), for `adopt` in another
        process; the store is closed."""
        spool = self._spools[-1]
        spool.flush()
        self.close()
        return StoredRun(
            spool=Path(spool.name),
            end=self._end,
            columns=self._columns(),
            ids=self.ids,
            at=self._at,
            sizes=self._sizes,
        )

    def adopt(self, part: StoredRun, run: int) -> range:
        """Append the conversations another store exported, as run number `run` (their spool file is read from
        here on, and removed once open) -> their indices."""
        spool = open(part.spool, "r+b")  # noqa: SIM115 - close()
        with contextlib.suppress(OSError):  # where an open file cannot be removed, the caller's folder goes later
            part.spool.unlink()
        start, base = len(self.ids), self._end
        self._spools.append(spool)
        self._bases.append(base)
        self._end += part.end
        self.ids += part.ids
        self._at.extend(a + base for a in part.at)
        self._sizes.extend(part.sizes)
        n = len(part.ids)
        intern = sys.intern
        for col, got in zip(self._columns(), part.columns, strict=True):
            if col is self.run:
                col.extend(array("i", [run]) * n)
            elif isinstance(col, array):
                col.extend(got)
            else:
                col.extend(intern(v) for v in got)
        return range(start, len(self.ids))

    def chunk(self, i: int) -> int:
        """The data chunk conversation i is in (`data/conv-NNNN.js`)."""
        return i // CHUNK

    def put(self, i: int | None, run: int, score_row: int, c: Any, parts: tuple[bytes, ...]) -> int:
        """Add conversation `c` (a ReportConversation) with its spooled `parts`, or replace conversation `i` by
        it (a rerun's later record, shown in the earlier one's place) -> its index."""
        intern = sys.intern
        values = (
            run,
            score_row,
            STATUSES.index(c.status),
            c.tokens,
            len(c.turns),
            intern(c.tutorial_id),
            intern(c.title or c.method_title),
            intern(c.domain),
            intern(c.persona),
            intern(c.teacher),
            intern(c.learner),
        )
        columns = self._columns()
        spool = self._spools[-1]
        spool.seek(self._end - self._bases[-1])
        for p in parts:
            spool.write(p)
        if i is None:
            i = len(self.ids)
            self.ids.append(c.conversation_id)
            for col, v in zip(columns, values, strict=True):
                col.append(v)
            self._at.append(self._end)
            self._sizes.extend(len(p) for p in parts)
        else:
            self.ids[i] = c.conversation_id
            for col, v in zip(columns, values, strict=True):
                col[i] = v
            self._at[i] = self._end
            self._sizes[3 * i : 3 * i + 3] = array("i", [len(p) for p in parts])
        self._end += sum(len(p) for p in parts)
        return i

    def _columns(self) -> tuple[Any, ...]:
        return (
            self.run,
            self.score_row,
            self.status,
            self.tokens,
            self.turns,
            self.tutorial,
            self.title,
            self.domain,
            self.persona,
            self.teacher,
            self.learner,
        )

    def parts(self, i: int) -> tuple[bytes, bytes, bytes]:
        """Conversation i's spooled parts, as `put` was given them."""
        sizes = self._sizes[3 * i : 3 * i + 3]
        at = self._at[i]
        k = bisect.bisect_right(self._bases, at) - 1
        self._spools[k].seek(at - self._bases[k])
        data = self._spools[k].read(sum(sizes))
        a, b = sizes[0], sizes[0] + sizes[1]
        return data[:a], data[a:b], data[b:]

    def record(self, i: int) -> dict[str, Any]:
        """Conversation i's first spooled part as the object it is (its turns, tutorial, ...; see browser_data)."""
        value: dict[str, Any] = orjson.loads(self.parts(i)[0])
        return value


def dumps(value: Any) -> bytes:
    """`value` as the compact JSON the data files carry (orjson; a value it refuses, e.g. a key that is not a
    string or an integer beyond 64 bits, by the standard library the same way)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_TURN_FIELDS = {"role", "text", "step", "kind", "prompt_tokens", "completion_tokens", "latency_s"}
_TURN_LATER = tuple(k for k in Turn.model_fields if k not in _TURN_FIELDS)
_EMPTY: tuple[Any, ...] = (None, "", [], {}, False)
_JSON_AS_IS = (str, bool, int, float, list)


@functools.lru_cache(maxsize=256)
def _is_file(path: str) -> bool:
    """Whether `path` is a file; asked once per run file, not once per record."""
    return Path(path).is_file()


def shared_where(where: str) -> str:
    """A record's source ("FILE:LINE", "FILE: total_conversations[i]", or a FILE) as the site shows it: the file
    as `<folder>/<file>` (its run and file name), never a path of the machine the report was made on."""
    cuts = [i for i, ch in enumerate(where) if ch == ":"] + [len(where)]
    i = next((i for i in cuts if _is_file(where[:i])), len(where))
    p = Path(where[:i])
    return f"{p.parent.name}/{p.name}{where[i:]}" if p.parent.name else f"{p.name}{where[i:]}"


def _turn_extra(t: Turn) -> dict[str, Any]:
    """A turn's other fields (e.g. the persona's intent, the manager's label, turn-check warnings), non-empty.
    Values JSON already holds as they are (strings, flags, lists of strings: all of today's) are taken as they are;
    any other goes through the model's JSON dump."""
    fields = t.__dict__
    extra = {k: v for k in _TURN_LATER if (v := fields[k]) not in _EMPTY}
    if all(type(v) in _JSON_AS_IS and (type(v) is not list or all(type(x) is str for x in v)) for v in extra.values()):
        return extra
    return {k: v for k, v in t.model_dump(mode="json", include=set(extra)).items() if v not in _EMPTY}


def parts(c: Any) -> tuple[bytes, bytes, bytes]:
    """What conversation `c` (a ReportConversation) shows on its page besides its run, metrics and the same
    tutorial's other conversations (which are known once every run is read): three JSON objects whose members
    `browser_data` puts around those."""
    head = {
        "where": shared_where(c.where),
        "tutorial_id": c.tutorial_id,
        "title": c.title,
        "method_title": c.method_title,
        "domain": c.domain,
        "steps": c.steps,
        "turns": [
            [
                t.role,
                t.text,
                t.step,
                t.kind,
                t.prompt_tokens,
                t.completion_tokens,
                round(t.latency_s, 3),
                _turn_extra(t),
            ]
            for t in c.turns
        ],
        "status": c.status,
        "error": c.error,
        "warnings": c.warnings,
        "teacher": c.teacher,
        "learner": c.learner,
        "persona": c.persona,
        "extra": c.extra,
        "missing": c.missing,
        "scored": c.scored,
    }
    judge = {
        "judge_raw": c.judge_raw,
        "judge_failures": c.judge_failures,
        "notes": c.notes,
        "score_extra": c.score_extra,
    }
    tail = {
        "checklist": c.checklist,
        "checklist_reading": c.checklist_reading,
        "posttest": c.posttest,
        "posttest_matches": c.posttest_matches,
    }
    return dumps(head), dumps(judge), dumps(tail)
