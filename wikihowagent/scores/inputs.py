"""What `evaluate` reads: run directories, the paper's released run files, JSONL of records.

Every input is read as `Conversation`s (wikihowagent.records) by `wikihowagent.runs.read_conversations`.
Bad input never stops the good records: each problem is reported as one line naming the file and line
(or the record's index in a paper JSON file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import RunError
from wikihowagent.layout import CONVERSATIONS, RUN_INFO
from wikihowagent.paper_format import parse_run_stem
from wikihowagent.records import Conversation
from wikihowagent.runs import (
    NAME_RULE,
    ReadCounts,
    RunInfo,
    conversations_file,
    is_paper_file,
    name_problem,
    read_conversations,
    read_run_info,
    resolve_runs,
)


class InputError(WikihowagentError, ValueError):
    """A missing or unreadable input; the message is one line naming the file."""


class EmptyInputError(InputError):
    """An input with no conversations at all (an empty file)."""


@dataclass
class InputSource:
    path: Path
    kind: str  # "run" | "paper-json" | "jsonl"
    name: str  # run name (directory name or file stem)
    teacher: str = ""
    learner: str = ""
    evaluator: str | None = None  # from run.json / the paper file name
    info: RunInfo | None = None
    counts: ReadCounts = field(default_factory=ReadCounts)  # of the last `conversations()` pass

    @property
    def label(self) -> str:
        if not self.teacher:
            return self.name
        return f"T-{self.teacher} L-{self.learner or self.teacher}"

    @property
    def n_records(self) -> int:
        return self.counts.records

    @property
    def n_failed(self) -> int:
        return self.counts.failed

    @property
    def n_invalid(self) -> int:
        return self.counts.invalid

    @property
    def n_seen(self) -> int:
        return self.counts.seen

    @property
    def records_path(self) -> Path:
        return conversations_file(self.path)

    def conversations(self, on_error: Callable[[str], None]) -> Iterator[Conversation]:
        """Stream the scorable conversations; failed ones are counted, bad ones reported and skipped."""
        self.counts = ReadCounts()
        try:
            for conv in read_conversations(
                self.path, self.name, on_error, self.counts, paper=self.kind == "paper-json"
            ):
                conv.teacher = conv.teacher or self.teacher
                conv.learner = conv.learner or self.learner
                yield conv
        except ValueError as exc:  # an unreadable paper JSON file (one line)
            raise InputError(str(exc)) from None


def resolve_inputs(
    paths: list[Path], runs_dir: Path, on_empty: Callable[[str], None] | None = None
) -> list[InputSource]:
    """RUN_DIR / file arguments -> sources; none given -> the latest run under `runs_dir`.

    A missing path raises InputError. An empty file raises too, or, with `on_empty`, is reported there and
    skipped so that the other inputs are still scored.
    """
    try:
        resolved = resolve_runs(paths, latest_in=runs_dir, sweeps=False)
    except RunError as exc:
        raise InputError(str(exc)) from None
    sources = []
    for rp in resolved:
        p = rp.path
        if rp.kind == "missing":
            raise InputError(f"{p}: no such run directory or file")
        try:
            sources.append(_file_source(p) if rp.kind == "file" else _run_source(p))
        except EmptyInputError as exc:
            if on_empty is None:
                raise
            on_empty(str(exc))
    if not sources:
        raise InputError("nothing to evaluate: every input is empty")
    same: dict[Path, InputSource] = {}
    for s in sources:  # `compare a a/conversations.jsonl`, a symlink to a run: one run twice
        key = s.records_path.resolve()
        if key in same:
            raise InputError(f"{same[key].path} and {s.path} are the same run ({key}); give each run once")
        same[key] = s
    for s in sources:  # a run's name becomes a folder (evaluate --out OUT: OUT/<name>/; rescored/<name>/)
        problem = name_problem(s.name)
        if problem is not None:
            raise InputError(
                f"{s.path}: its run name {s.name!r} {problem}; a run's name must be {NAME_RULE} "
                "(rename the file or directory)"
            )
    names = [s.name for s in sources]
    dups = {n for n in names if names.count(n) > 1}
    if dups:
        raise InputError(
            f"two inputs share the run name {sorted(dups)[0]!r}; rename one (scores are kept per run name)"
        )
    return sources


def _run_source(path: Path) -> InputSource:
    if not (path / CONVERSATIONS).exists():
        raise InputError(f"{path}: not a run directory (no {CONVERSATIONS})")
    if (path / CONVERSATIONS).stat().st_size == 0:
        raise EmptyInputError(f"{path / CONVERSATIONS}: empty file (no conversations)")
    info = None
    if (path / RUN_INFO).exists():
        try:
            info = read_run_info(path)
        except RunError as exc:
            raise InputError(str(exc)) from None
    dir_name = path.name if path.name not in ("", ".", "..") else path.resolve().name  # `evaluate .`, `evaluate ..`
    if info is None:
        return InputSource(path=path, kind="run", name=dir_name)
    return InputSource(
        path=path,
        kind="run",
        name=info.name or dir_name,
        info=info,
        teacher=info.teacher,
        learner=info.learner or info.teacher,
        evaluator=info.evaluator or None,
    )


def _file_source(path: Path) -> InputSource:
    if path.stat().st_size == 0:
        raise EmptyInputError(f"{path}: empty file (no conversations)")
    try:
        kind = "paper-json" if is_paper_file(path) else "jsonl"
    except ValueError as exc:
        raise InputError(str(exc)) from None
    src = InputSource(path=path, kind=kind, name=path.stem)
    stem = parse_run_stem(path.stem)
    if stem:
        src.teacher, src.learner, src.evaluator = stem["teacher"], stem["learner"], stem["evaluator"]
    return src
