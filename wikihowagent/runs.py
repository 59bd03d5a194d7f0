"""Run directories: what a run is (`RunInfo`, run.json), its readers and writers, and which paths are runs (the
names of the files are in `layout.py`, the bounded JSON reader, JSONL appends and atomic writes in `jsonlio.py`,
the typed readers of other single files in `records_io.py`; stages import those from there).

A run directory holds `run.json` (`RunInfo`: what was run, never a key), `conversations.jsonl` (one
`ConversationRecord` per line), `pretests.jsonl` (the learner's pre-tests, `PretestCache`) and, once evaluated, `scores.jsonl` / `scores-paper.jsonl` (one `ScoreRecord`
per line). Lines are appended whole and fsynced, so a run killed at any moment leaves at most one torn last
line, which the next writer cuts off before appending: resuming never loses or duplicates a record.
Readers hand out typed records (`read_conversations`, `read_scores`, `read_run_info`) and the one score
table every stage computes from (`read_score_table`: scores files and the paper's run files; see
`wikihowagent.scoretable`; judge-check's judgments: `records_io.read_judgment_table`).
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wikihowagent import jsonlio, records_io
from wikihowagent.csvcells import read_people_csv, read_people_frame
from wikihowagent.errors import validation_line
from wikihowagent.jsonlio import JsonlAppender, JsonlError, RunError, iter_jsonl, repair_torn_tail, write_json_atomic
from wikihowagent.layout import (
    CONVERSATIONS,
    OUTPUT_DIRS,
    PEOPLE_ESTIMATE_JSON,
    PRETESTS,
    RESCORED_DIR,
    RUN_FILES,
    RUN_INFO,
    SCORE_FILES,
    SHARDS_DIR,
    SWEEP_INFO,
)
from wikihowagent.records import (
    Conversation,
    ConversationRecord,
    PeopleEstimate,
    PreTestRecord,
    ScoreRecord,
    SourceFile,
    TestAnswer,
)
from wikihowagent.scoretable import ScoreTable

PEOPLE_ESTIMATE_MAX_BYTES = 1_000_000  # a real one is a few kB: one line per metric and input file


# The one rule for a name read from a file (or given by a user) that becomes a directory name: a run's name
# in run.json (`evaluate --out OUT` writes OUT/<name>/), a sweep's name and its cells in sweep.json. It must
# be one plain path component: not empty, not "." or "..", no "/" or "\\" (so never absolute, never a nested
# folder), no control character, at most 255 bytes (a file system's limit for one name). A sweep's name also
# names its Slurm job and is written into a shell script: `shell=True` adds SHELL_SAFE_NAME.
SHELL_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
NAME_RULE = "one folder name: no '/' or '\\', not '.' or '..', no control characters, at most 255 bytes"
SHELL_SAFE_RULE = "1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"


def name_problem(name: str, shell: bool = False) -> str | None:
    """Why `name` cannot be a directory name inside an output folder (see NAME_RULE; with `shell`, also
    SHELL_SAFE_RULE), or None if it can."""
    if not isinstance(name, str) or not name:
        return "is empty"
    if name in (".", ".."):
        return f"is {name!r}"
    if "/" in name or "\\" in name:
        return "contains '/' or '\\' (a path, not one folder name)"
    bad = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        return f"contains the control character {bad!r}"
    if len(name.encode("utf-8", "surrogatepass")) > 255:
        return "is longer than 255 bytes"
    if shell and not SHELL_SAFE_NAME.fullmatch(name):
        return f"is not {SHELL_SAFE_RULE}"
    return None


RunStatus = Literal["running", "complete", "incomplete", "interrupted", "merged"]


class RunInfo(BaseModel):
    """`run.json`: what a run is (written by `generate`, read by every later stage). Unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    name: str = ""
    teacher: str = ""
    learner: str = ""
    evaluator: str | None = None
    resolved: dict[str, Any] = Field(default_factory=dict)  # role -> provider/model/base_url; never a key
    fingerprint: dict[str, Any] = Field(default_factory=dict)  # what the conversations depend on
    config: dict[str, Any] = Field(default_factory=dict)
    tutorials_source: str = ""
    filters: dict[str, Any] = Field(default_factory=dict)
    started_at: str | None = None
    resumed_at: str | None = None
    ended_at: str | None = None
    status: RunStatus = "running"  # incomplete = some conversations failed; merged = joined from shards by `merge`
    counts: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    shards: list[str] | None = None  # set by `merge`
    # `evaluate` on a file (one of the paper's run files, a JSONL of records): the directory of its scores names
    # the file the conversations are in (absolute), so that `report` shows them; "" = this directory's own
    conversations_file: str = Field(default="", exclude_if=lambda v: not v)


def read_run_info(run_dir: Path) -> RunInfo:
    path = Path(run_dir) / RUN_INFO
    try:
        data = jsonlio.read_json_file(path)
    except FileNotFoundError:
        raise RunError(f"{run_dir}: not a run directory (no {RUN_INFO})") from None
    except jsonlio.JsonInputError as exc:
        raise RunError(f"{path}: {exc}") from None
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: expected a JSON object")
    try:
        info = RunInfo.model_validate(data)
    except ValidationError as exc:
        raise RunError(f"{path}: {validation_line(exc, quoted=True)}") from None
    problem = name_problem(info.name) if info.name else None
    if problem is not None:  # the name becomes a folder in outputs (evaluate --out OUT: OUT/<name>/)
        raise RunError(
            f"{path}: field 'name': {info.name!r} {problem}; a run's name must be {NAME_RULE} "
            "(fix it, or remove it to use the directory's name)"
        )
    return info


def write_run_info(run_dir: Path, info: RunInfo, in_place_if_full: bool = False) -> None:
    unset = {k for k in ("resumed_at", "shards") if getattr(info, k) is None}  # only written when they happen
    write_json_atomic(
        Path(run_dir) / RUN_INFO, info.model_dump(mode="json", exclude=unset), in_place_if_full=in_place_if_full
    )


def run_name(run_dir: Path) -> str:
    """The name in run.json, else the directory's name (an unreadable run.json is not an error here)."""
    try:
        return read_run_info(run_dir).name or Path(run_dir).name
    except (RunError, OSError):
        return Path(run_dir).name


def scores_file(run_dir: Path) -> Path | None:
    """The score file of a run directory: scores.jsonl, else scores-paper.jsonl, else None."""
    for name in SCORE_FILES:
        p = Path(run_dir) / name
        if p.is_file():
            return p
    return None


def shard_dir(run_dir: Path, k: int, n: int) -> Path:
    return Path(run_dir) / SHARDS_DIR / f"{k}-of-{n}"


def shard_dirs(run_dir: Path) -> list[Path]:
    return sorted(p for p in (Path(run_dir) / SHARDS_DIR).glob("*") if (p / RUN_INFO).exists())


def now() -> str:
    """The time stamp of run.json's `started_at` / `ended_at` / `resumed_at` (UTC, seconds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


COUNT_KEYS = (
    "conversations",
    "finished",
    "max_interactions",
    "failed",
    "turn_warnings",
    "turn_retries",
    "manager_fallbacks",
    "learner_stopped",
    "posttests",
    "posttest_failures",
)  # run.json's `counts`, in order


def record_counts(r: ConversationRecord) -> tuple[int, ...]:
    """One record's share of run.json's `counts` (COUNT_KEYS, in order)."""
    return (
        1,
        int(r.stop_reason == "finished"),
        int(r.stop_reason == "max_interactions"),
        int(bool(r.error)),
        sum(len(t.warnings) for t in r.turns),
        sum(len(t.retried) for t in r.turns),
        sum(t.manager_fallback for t in r.turns),
        int(r.stop_reason == "learner_stopped"),
        int(r.posttest is not None),
        int(r.posttest is not None and bool(r.posttest.post.error)),
    )


def sum_counts(shares: Iterable[tuple[int, ...]]) -> dict[str, int]:
    """run.json's `counts` from the records' shares (`record_counts`)."""
    totals = [0] * len(COUNT_KEYS)
    for share in shares:
        totals = [a + b for a, b in zip(totals, share, strict=True)]
    return dict(zip(COUNT_KEYS, totals, strict=True))


def count_records(records: list[ConversationRecord]) -> dict[str, int]:
    """run.json's `counts` of a conversations file's records."""
    return sum_counts(record_counts(r) for r in records)


# --------------------------------------------------------------------------- typed readers


@dataclass
class ReadCounts:
    """What `read_conversations` saw (updated while it streams, e.g. for progress bars)."""

    records: int = 0  # records read, good or failed
    failed: int = 0  # records with `error` set (failed conversations; skipped)
    invalid: int = 0  # unreadable lines / records without conversation or tutorial (reported, skipped)
    seen: int = 0  # lines (or list items) consumed, good or bad


def conversations_file(source: Path) -> Path:
    """A run directory's conversations.jsonl; a file as is."""
    source = Path(source)
    return source / CONVERSATIONS if source.is_dir() else source


def is_paper_file(path: Path) -> bool:
    """A JSON file of records (the paper's `{"total_conversations": [...]}` or a list) rather than JSONL.
    A `.json` file whose first line is a complete object other than the paper's is JSONL. ValueError (one
    line) if the file is neither JSON nor JSONL."""
    from wikihowagent.paper_format import PAPER_RECORDS_KEY

    if path.suffix.lower() == ".jsonl":
        return False
    with path.open("rb") as fh:
        head = fh.read(1 << 16).lstrip()
    if not head.startswith((b"{", b"[")):
        raise ValueError(f"{path}: not a JSON or JSONL file of conversations")
    try:
        obj = jsonlio.parse_json(head.split(b"\n", 1)[0])
    except jsonlio.JsonBoundError:
        return False  # a first line beyond a bound: read as JSONL, whose reader reports that line
    except jsonlio.JsonInputError:
        return True
    return not (isinstance(obj, dict) and PAPER_RECORDS_KEY not in obj)


def conversation_items(
    source: Path, on_error: Callable[[str], None] | None = None, paper: bool | None = None
) -> Iterator[tuple[str, Any]]:
    """The one loop over the records of a conversations source (a run directory, a conversations JSONL file,
    one of the paper's run files; `paper` None: told by the content): ("FILE:LINE", object) in file order, or
    for a paper file ("FILE: total_conversations[i]", item). A JSONL line that is not a JSON object is reported
    to `on_error` ("FILE:LINE: problem") and skipped, or raised as JsonlError without `on_error`; a paper file's
    item that is not an object is yielded as it is (each reader words it). ValueError (one line) if a paper file
    cannot be read as one."""
    from wikihowagent.paper_format import load_paper_file

    path = conversations_file(source)
    if paper is None:
        paper = path.suffix.lower() != ".jsonl" and is_paper_file(path)
    if paper:
        items, name = load_paper_file(path)
        yield from ((name.format(i=i), obj) for i, obj in enumerate(items))
    else:
        yield from ((f"{path}:{lineno}", obj) for lineno, obj in iter_jsonl(path, on_error=on_error))


def read_conversations(
    source: Path,
    run: str = "",
    on_error: Callable[[str], None] | None = None,
    counts: ReadCounts | None = None,
    paper: bool | None = None,
) -> Iterator[Conversation]:
    """The scorable conversations of a run directory, a conversations JSONL file (our records or the
    paper's) or a paper run file, as `Conversation`s of run `run`.

    Failed conversations (`error` set) are counted and skipped. A bad line or record is reported as
    "FILE:LINE: problem" to `on_error` and skipped, or raised as JsonlError without `on_error`.
    """
    from wikihowagent.paper_format import RecordError, to_conversation

    counts = counts if counts is not None else ReadCounts()

    def bad(msg: str) -> None:
        counts.invalid += 1
        if on_error is None:
            raise JsonlError(msg)
        on_error(msg)

    def bad_line(msg: str) -> None:
        counts.seen += 1
        bad(msg)

    for where, obj in conversation_items(source, bad_line, paper):
        if not isinstance(obj, dict):
            bad_line(f"{where}: expected a JSON object, got {type(obj).__name__}")
            continue
        counts.seen += 1
        counts.records += 1
        if obj.get("error"):
            counts.failed += 1
            continue
        try:
            yield to_conversation(obj, run, where)
        except RecordError as exc:
            bad(f"{where}: {exc}")


def iter_scores(path: Path, on_error: Callable[[str], None] | None = None) -> Iterator[tuple[int, ScoreRecord]]:
    """(line, record) of a scores file, in file order. A line that is not a score record is reported to
    `on_error` ("FILE:LINE: problem") and skipped."""
    report = on_error or (lambda _m: None)
    for lineno, obj in iter_jsonl(path, on_error=report):
        if not isinstance(obj.get("conversation_id"), str) or not obj["conversation_id"]:
            report(f"{path}:{lineno}: no conversation_id")
            continue
        if not isinstance(obj.get("metrics"), dict):
            report(f"{path}:{lineno}: 'metrics' is not an object")
            continue
        try:
            yield lineno, ScoreRecord.model_validate(obj)
        except ValidationError as exc:
            report(f"{path}:{lineno}: not a score record ({validation_line(exc, quoted=True)})")


def read_scores(path: Path, on_error: Callable[[str], None] | None = None) -> dict[str, ScoreRecord]:
    """{conversation_id: record} of a scores file; a later line for the same id replaces an earlier one
    (a resumed or re-judged evaluation). A missing file is empty."""
    if not Path(path).exists():
        return {}
    return {rec.conversation_id: rec for _, rec in iter_scores(path, on_error)}


def latest_run(runs_dir: Path) -> Path:
    """The run directory under `runs_dir` whose run.json changed last."""
    runs_dir = Path(runs_dir)
    infos = list(runs_dir.glob(f"*/{RUN_INFO}")) if runs_dir.is_dir() else []
    if not infos:
        raise RunError(f"{runs_dir}: no runs found; run 'wikihowagent generate' first or name a run directory")
    return max(infos, key=lambda p: p.stat().st_mtime).parent


# --------------------------------------------------------------------------- paths -> runs


def is_run_dir(path: Path) -> bool:
    """A directory holding run.json, conversations.jsonl or a score file."""
    return any((Path(path) / f).exists() for f in RUN_FILES)


RunPathKind = Literal["run", "file", "cell", "runs", "missing"]


@dataclass(frozen=True)
class RunPath:
    """What one path a user named stands for (`resolve_runs`): `run` a run directory (`is_run_dir`); `file` a
    file (a conversations or scores JSONL, one of the paper's run files); `cell` a cell of the sweep `sweep`
    (`generated`: it has conversations, else it is not generated or its shards are not merged yet); `runs`
    another directory (a directory of runs: `runs_below`, `evaluated_runs`); `missing` no such path."""

    path: Path
    kind: RunPathKind
    sweep: Path | None = None

    @property
    def generated(self) -> bool:
        return (self.path / CONVERSATIONS).exists()


def resolve_runs(paths: Iterable[Path], *, latest_in: Path | None = None, sweeps: bool = True) -> list[RunPath]:
    """The one resolver of paths to runs, in the order given. No path and `latest_in`: the latest run under it
    (`latest_run`, RunError if none). With `sweeps`, a sweep directory (sweep.json, no run file of its own)
    stands for its cells in sweep.json's order (RunError, one line, if sweep.json is not a sweep file); without,
    it is a `runs` directory like any other. Each stage words its own refusal of a kind it cannot use."""
    paths = [Path(p) for p in paths]
    if not paths and latest_in is not None:
        paths = [latest_run(latest_in)]
    out: list[RunPath] = []
    for p in paths:
        if not p.exists():
            out.append(RunPath(p, "missing"))
        elif not p.is_dir():
            out.append(RunPath(p, "file"))
        elif is_run_dir(p):
            out.append(RunPath(p, "run"))
        elif sweeps and (p / SWEEP_INFO).is_file():
            out.extend(RunPath(d, "cell", sweep=p) for d in sweep_cell_dirs(p))
        else:
            out.append(RunPath(p, "runs"))
    return out


def runs_below(directory: Path, skip: Iterable[str] = ()) -> list[Path]:
    """The directories below `directory` that can be runs (sorted by name): every one that is a run directory,
    and any other but hidden ones and the stages' output folders (summary/, alignment/, compare/, rescored/,
    and the names in `skip`)."""
    skipped = {*OUTPUT_DIRS, RESCORED_DIR, *skip}
    below = sorted(d for d in Path(directory).iterdir() if d.is_dir() and not d.name.startswith("."))
    return [d for d in below if is_run_dir(d) or d.name not in skipped]


def evaluated_runs(runs_dir: Path) -> list[Path]:
    """Evaluated run directories under `runs_dir`: `<runs_dir>/*/` and `<runs_dir>/rescored/*/` holding a
    score file (`scores.jsonl` or `scores-paper.jsonl`, see `scores_file`). Runs sorted by name, then the
    re-scored ones sorted by name."""
    runs_dir = Path(runs_dir)

    def evaluated(parent: Path, skip: set[str]) -> list[Path]:
        if not parent.is_dir():
            return []
        return sorted(d for d in parent.iterdir() if d.is_dir() and d.name not in skip and scores_file(d))

    return evaluated(runs_dir, set(OUTPUT_DIRS) | {RESCORED_DIR}) + evaluated(runs_dir / RESCORED_DIR, set())


# --------------------------------------------------------------------------- post-test files


class PretestCache:
    """A directory's `pretests.jsonl`: the pre-test answer per (learner model, tutorial, prompt version).

    Read once at start; `put` appends one fsynced line, so a resume (or another run of the same directory)
    reuses every answer already taken. An unreadable line is skipped (that pre-test is simply taken again).
    Use as a context manager (the file is opened on the first `put`)."""

    def __init__(self, directory: Path):
        self.path = Path(directory) / PRETESTS
        self._answers: dict[tuple[str, str, str], TestAnswer] = {}
        self._sink: JsonlAppender | None = None
        if self.path.exists():
            repair_torn_tail(self.path)
            for _, obj in iter_jsonl(self.path, on_error=lambda _m: None):
                try:
                    rec = PreTestRecord.model_validate(obj)
                except ValidationError:
                    continue
                self._answers[(rec.learner, rec.tutorial_key, rec.prompt_version)] = rec.answer

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, learner: str, key: str, version: str) -> TestAnswer | None:
        return self._answers.get((learner, key, version))

    def answers(self) -> list[TestAnswer]:
        return list(self._answers.values())

    def put(self, learner: str, key: str, version: str, answer: TestAnswer) -> None:
        self._answers[(learner, key, version)] = answer
        if self._sink is None:
            self._sink = JsonlAppender(self.path).__enter__()
        self._sink.append(PreTestRecord(learner=learner, tutorial_key=key, prompt_version=version, answer=answer))

    def __enter__(self) -> PretestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sink is not None:
            self._sink.__exit__()
            self._sink = None


def merge_pretests(target: Path, sources: Iterable[Path]) -> int:
    """Append the pre-tests of `sources` (directories, e.g. shards) that `target` lacks; returns the count."""
    added = 0
    with PretestCache(target) as cache:
        for src in sources:
            for (learner, key, version), answer in PretestCache(src)._answers.items():
                if cache.get(learner, key, version) is None:
                    cache.put(learner, key, version, answer)
                    added += 1
    return added


# --------------------------------------------------------------------------- the score table


def read_score_table(
    source: Path,
    run: str = "",
    on_error: Callable[[str], None] | None = None,
    on_bad_value: Callable[[str], None] | None = None,
) -> ScoreTable:
    """The score table of a run directory (its score file, see `scores_file`), a scores JSONL file or one of
    the paper's run files (the records' `evaluation` scores). A conversation id seen twice: the later line
    wins, in the earlier one's place. `run` names rows whose record names no run (default: the run
    directory's name for a scores file, the file's stem for a paper file). A scores file not written yet is
    empty. A bad line is reported to `on_error` ("FILE:LINE: problem") and left out, a paper record's cell
    that is not a number to `on_bad_value` (default: `on_error`) and left null; an unreadable file raises
    RunError (one line)."""
    source = Path(source)
    path = scores_file(source) if source.is_dir() else source
    if path is None:
        raise RunError(f"{source}: no {' or '.join(SCORE_FILES)} (run `wikihowagent evaluate` on it first)")
    if path.suffix.lower() == ".json":
        return _paper_score_table(path, run, on_error, on_bad_value or on_error)
    run = run or run_name(path.parent)
    if not path.exists():  # not scored yet
        return ScoreTable.empty()
    if not os.access(path, os.R_OK):
        raise RunError(f"{path}: cannot read (no permission)")
    last: dict[str, tuple[str, ScoreRecord]] = {}
    try:
        for lineno, rec in iter_scores(path, on_error):
            last[rec.conversation_id] = (f"{path}:{lineno}", rec)
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return ScoreTable.from_records(last.values(), run=run, source=str(path))


def _paper_score_table(
    path: Path, run: str, on_error: Callable[[str], None] | None, on_bad_value: Callable[[str], None] | None
) -> ScoreTable:
    from wikihowagent.paper_format import PAPER_RECORDS_KEY, RecordError, load_paper_file, paper_score_record

    report = on_error or (lambda _m: None)
    bad_value = on_bad_value or report
    try:
        records, item = load_paper_file(path)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not item.endswith(f"{PAPER_RECORDS_KEY}[{{i}}]"):
        raise RunError(f"{path}: not a paper run file (no '{PAPER_RECORDS_KEY}' list)")
    run = run or path.stem
    last: dict[str, tuple[str, ScoreRecord]] = {}
    try:
        for i, obj in enumerate(records):  # a large file: read one record at a time
            where = item.format(i=i)
            try:
                rec = paper_score_record(obj, run, lambda msg, w=where: bad_value(f"{w}: {msg}"))
            except RecordError as exc:
                report(f"{where}: {exc}; record skipped")
                continue
            last[rec.conversation_id] = (where, rec)
    except ValueError as exc:  # malformed text further in a large file
        raise RunError(str(exc)) from None
    return ScoreTable.from_records(last.values(), run=run, source=str(path))


def read_people_estimate(path: Path, check: Callable[[Any], PeopleEstimate] | None = None) -> PeopleEstimate:
    """A people-estimate file (at most PEOPLE_ESTIMATE_MAX_BYTES); RunError (one line naming the file) if it is
    missing or not one. `check`: the parsed object to the estimate, ValueError naming the field
    (`metrics.people_estimate.check_estimate`, which knows the metrics' ranges)."""
    return records_io.read_kind_file(
        path,
        PeopleEstimate,
        "wikihowagent-people-estimate",
        f"no such estimate file (`wikihowagent align` writes {PEOPLE_ESTIMATE_JSON})",
        'not a people-estimate file (no "kind": "wikihowagent-people-estimate"; `wikihowagent align` writes one as '
        f"{PEOPLE_ESTIMATE_JSON})",
        max_bytes=PEOPLE_ESTIMATE_MAX_BYTES,
        check=check,
    )


def source_files(paths: Iterable[Path | str]) -> list[SourceFile]:
    """The inputs a shared output names (`calibration.json`, `people_estimate.json`): each file's name (a run's
    score file with its run folder: `<run>/scores.jsonl`) and the sha256 of its bytes; never a path of this
    machine. A file that cannot be read is named without a hash."""
    out = []
    for p in map(Path, paths):
        name = f"{p.parent.name}/{p.name}" if p.name in SCORE_FILES and p.parent.name else p.name
        try:
            with open(p, "rb") as fh:
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError:
            digest = ""
        out.append(SourceFile(name=name, sha256=digest))
    return out


# --------------------------------------------------------------------------- outputs other stages read back
# `report` shows `align`'s and `compare`'s tables and notes, `judge-check --posttest-learner` reads its own
# sensitivity.csv: the CSVs were written for people (`csvcells.people_csv`, formula cells neutralised), and
# are read back here with each cell as it was before.


class OutputReadError(RunError):
    """A stage's output file that cannot be read. str(): "FILE: REASON"; `reason`: "not UTF-8 text (why at byte
    N)" or "cannot read (why)"; `detail`: the bare cause (an OSError's strerror, else the error's text)."""

    def __init__(self, path: Path, exc: Exception) -> None:
        self.detail = str(getattr(exc, "strerror", None) or exc)
        if isinstance(exc, UnicodeDecodeError):
            self.reason = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        else:
            self.reason = f"cannot read ({self.detail})"
        super().__init__(f"{path}: {self.reason}")


def read_people_rows(path: Path) -> list[list[str]]:
    """The rows (header first) of a CSV a stage wrote for people, each cell as it was before neutralising
    (`csvcells.read_people_csv`). OutputReadError if it cannot be read (not UTF-8, no permission, bad CSV)."""
    try:
        return read_people_csv(path)
    except (UnicodeDecodeError, OSError, csv.Error) as exc:
        raise OutputReadError(path, exc) from None


def read_people_table(path: Path) -> Any:
    """A CSV a stage wrote for people as a pandas DataFrame, text cells and column names as they were before
    neutralising (`csvcells.read_people_frame`; numbers read as numbers)."""
    return read_people_frame(path)


def read_output_lines(path: Path) -> list[str]:
    """The lines of a stage's text output (e.g. compare's summary.md); OutputReadError if it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError) as exc:
        raise OutputReadError(path, exc) from None


def sweep_cell_dirs(sweep_dir: Path) -> list[Path]:
    """The run directories of a sweep's cells, in the order of its sweep.json (`wikihowagent sweep`), generated
    or not. RunError (one line) if sweep.json is not a sweep file."""
    path = Path(sweep_dir) / SWEEP_INFO
    try:
        data = jsonlio.read_json_file(path)
        cells = data.get("cells") or []
        if not isinstance(cells, list):
            raise TypeError(f"'cells' is a {type(cells).__name__}")
    except (jsonlio.JsonInputError, AttributeError, TypeError) as exc:
        raise RunError(f"{path}: not a sweep file ({exc})") from None
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None
    out = []
    for i, c in enumerate(cells):
        run = str(c.get("run") if isinstance(c, dict) else c)
        problem = name_problem(run)
        if problem is not None:
            raise RunError(f"{path}: cells[{i}]: run {run!r} {problem}; a cell's run must be {NAME_RULE}")
        out.append(Path(sweep_dir) / run)
    return out
