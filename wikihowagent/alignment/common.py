"""Shared names, the problem log and atomic output writing for the alignment study."""

from __future__ import annotations

import csv
import fnmatch
import io
import math
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

# The 8 rubric metrics, in the order of the paper's §3.1.2 (and of ScoreRecord.metrics).
METRICS: tuple[str, ...] = (
    "Clarity",
    "Truthfulness",
    "Engagement",
    "Coherence",
    "Depth",
    "Relevance",
    "Progress",
    "Naturalness",
)
OVERALL = "Overall"  # per-conversation mean of the metrics (see `report.overall_scores`)
METRIC_BY_KEY = {m.lower(): m for m in METRICS}
SCORE_MIN, SCORE_MAX = 1.0, 5.0

# The paper's annotation CSV layout (lower-case metric names; `filename` = the run). `tutorial_id` is our
# extra column at the end.
SHEET_METRICS: tuple[str, ...] = (
    "clarity",
    "engagement",
    "coherence",
    "depth",
    "relevance",
    "progress",
    "naturalness",
    "truthfulness",
)
SHEET_COLUMNS: tuple[str, ...] = ("conversation_id", "filename", "title", *SHEET_METRICS, "comment", "tutorial_id")

ID_KEYS = ("conversation_id", "conversationid", "conv_id")
ANNOTATOR_KEYS = ("annotator", "judge", "rater", "coder", "annotator_id", "judge_id", "rater_id")
RUN_KEYS = ("filename", "run", "run_name")
MODEL_KEYS = ("model",)
# Columns that are known not to be rubric scores: never warned about. Anything else that holds numbers is
# reported as an "unknown metric column" (see `annotations.classify_columns`).
KNOWN_META_KEYS = frozenset(
    {
        *ID_KEYS,
        *ANNOTATOR_KEYS,
        *RUN_KEYS,
        *MODEL_KEYS,
        "title",
        "method_title",
        "comment",
        "comments",
        "note",
        "notes",
        "tutorial_id",
        "doc_id",
        "method_id",
        "teacher",
        "learner",
        "evaluator",
        "domain",
        "categories",
        "source_tutorial_path",
        "index",
        "row",
        "",
        # automatic (non-rubric) metrics of the paper's records: numeric but legitimately not rubric scores
        "question_ratio",
        "completion_achieved",
        "diversity_score",
        "diversity",
        "question",
        "completion",
        "bleu",
        "meteor",
        "rouge",
        "bertscore",
    }
)


def norm_key(name: str) -> str:
    """'Conversation ID' -> 'conversation_id'; 'Unnamed: 0' (a pandas index column) -> ''."""
    key = re.sub(r"[\s\-]+", "_", str(name).strip().lower())
    return "" if key.startswith("unnamed:") else key


def stars(p: float) -> str:
    if p is None or not math.isfinite(p):
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


def where(path: str | Path, row: int | None = None, column: str | None = None) -> str:
    """The location prefix of a problem line: `file:ROW: column 'x'`."""
    out = str(path)
    if row is not None:
        out += f":{row}"
    if column is not None:
        out += f": column '{column}'"
    return out


@dataclass
class Problem:
    kind: str  # short category, used for the summary table ("bad value", "duplicate id", ...)
    message: str  # full line, with its location first

    def __str__(self) -> str:
        return self.message


@dataclass
class Problems:
    """Everything left out, and why. One line each: shown on stderr and written to problems.txt."""

    items: list[Problem] = field(default_factory=list)

    def add(self, kind: str, message: str) -> None:
        self.items.append(Problem(kind, message))

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def counts(self) -> Counter:
        return Counter(p.kind for p in self.items)

    def lines(self) -> list[str]:
        return [p.message for p in self.items]

    def echo(self, limit: int | None = 40, stream=None) -> None:
        """Print the problem lines to stderr (one line each), at most `limit` of them."""
        stream = stream or sys.stderr
        shown = self.items if limit is None else self.items[:limit]
        for p in shown:
            print(f"warning: {p.message}", file=stream)
        rest = len(self.items) - len(shown)
        if rest > 0:
            print(f"warning: ... and {rest} more (all of them are in problems.txt)", file=stream)


class AlignInputError(Exception):
    """Input that cannot be used at all (unreadable file, not a table, no id column, ...)."""


# ---------------------------------------------------------------------------------------------------------
# Reading tables


def sniff_delimiter(header_line: str, path: Path) -> str:
    if path.suffix.lower() == ".tsv":
        return "\t"
    counts = {d: header_line.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] else ","


LEGACY_ENCODING = "cp1252"  # what Excel on Windows writes for "CSV" (the paper's published judge sheet)
_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d+,\d+\s*$")


def decode_table(data: bytes, path: Path) -> tuple[str, str | None]:
    """Bytes of a CSV -> (text, None if it was UTF-8, else the encoding it was read as). Order: a byte-order
    mark (UTF-8 or UTF-16), UTF-8, cp1252, then the legacy encoding charset-normalizer detects."""
    import codecs

    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # Excel's "Unicode text"
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            text = ""
        head = text.split("\n", 1)[0]
        if head and sum(c.isascii() for c in head) * 2 >= len(head):  # a header of column names, not noise
            return text, "UTF-16"
    nul = data.find(b"\x00")
    if nul >= 0:
        raise AlignInputError(f"{path}: not UTF-8 text (a binary file: NUL byte at byte {nul})")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        utf8_error = exc
    if data.startswith(codecs.BOM_UTF8):  # says UTF-8 but is not
        raise AlignInputError(f"{path}: not UTF-8 text ({utf8_error.reason} at byte {utf8_error.start})")
    try:
        return data.decode(LEGACY_ENCODING), LEGACY_ENCODING
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None or best.encoding in ("utf_8", "ascii"):
        raise AlignInputError(f"{path}: not UTF-8 text ({utf8_error.reason} at byte {utf8_error.start}) and no "
                              "other encoding recognised; save it as CSV UTF-8")
    return str(best), best.encoding


def read_table(path: Path, problems: Problems | None = None) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV/TSV file as (header, [(row_number, cells)]). Row numbers are as a spreadsheet shows them
    (header = row 1; a quoted cell spanning several text lines is still one row). Empty rows are skipped.

    Text that is not UTF-8 is decoded as `decode_table` finds (reported to `problems`). In a `;`-separated
    file, numbers with a decimal comma ("4,5", as a German or French Excel writes them) are read as 4.5."""
    if path.suffix.lower() in (".xlsx", ".xls", ".ods", ".numbers"):
        raise AlignInputError(f"{path}: spreadsheet files are not read; save the sheet as CSV (UTF-8) and pass that")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AlignInputError(f"{path}: file not found") from None
    except OSError as exc:
        raise AlignInputError(f"{path}: cannot read ({exc.strerror})") from None
    text, encoding = decode_table(data, path)
    if encoding is not None and encoding != "UTF-16" and problems is not None:
        problems.add("encoding", f"{path}: not UTF-8; read as {encoding} (a legacy encoding, e.g. Excel's "
                                 "\"CSV\"); check that names with accents look right")
    if not text.strip():
        raise AlignInputError(f"{path}: empty file")
    delimiter = sniff_delimiter(text.split("\n", 1)[0], path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
        rows = [(i + 2, cells) for i, cells in enumerate(reader) if any(c.strip() for c in cells)]
    except csv.Error as exc:
        raise AlignInputError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from None
    if delimiter == ";":
        rows = [(n, [c.replace(",", ".") if _DECIMAL_COMMA.match(c) else c for c in cells]) for n, cells in rows]
    return header, rows


# ---------------------------------------------------------------------------------------------------------
# Writing tables and files


def fmt(value) -> str:
    """A cell for CSV output: NaN/None -> empty, floats with 10 significant digits (tiny p-values survive)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.10g}"
    return str(value)


def csv_text(columns: Sequence[str], rows: Iterable[Sequence]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([fmt(v) for v in r])
    return buf.getvalue()


def md_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


class OutputDirError(AlignInputError):
    """`--out` exists but holds files that are not ours: it is not replaced."""


def _is_owned(rel: str, owned: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pat) for pat in owned)


def foreign_entries(dest: Path, owned: Iterable[str]) -> list[str]:
    """Entries of an existing output directory that this program did not write (relative paths, `/`-separated;
    `owned` holds names or glob patterns such as `figures/*.png`). A sub-directory counts as ours when
    everything in it is."""
    owned = tuple(owned)
    dest = Path(dest)
    if not dest.is_dir():
        return []
    out: list[str] = []
    for p in sorted(dest.rglob("*")):
        rel = p.relative_to(dest).as_posix()
        if p.is_dir() and not p.is_symlink():
            continue  # judged by its contents
        if not _is_owned(rel, owned):
            out.append(rel)
    return out


class StagedOutput:
    """Write a directory of outputs so that it appears complete or not at all.

    The destination directory is *ours*: it is replaced as a whole. Files are written into a temporary
    sibling directory (same filesystem); `commit()` then swaps the directories: the old destination (if
    any) is renamed aside, the new one renamed into place, and the old one removed. A reader therefore sees
    the old set or the new set, never a mix (if the process dies between the two renames, the destination
    is briefly absent and the previous results are left in the `.<name>.old-*` sibling). Any exception
    before `commit()` leaves the destination untouched (use as a context manager).

    To avoid deleting somebody's files, an existing destination that holds anything not matching `owned`
    (names or glob patterns) is refused with `OutputDirError` before anything is written."""

    def __init__(self, dest: Path, owned: Iterable[str] = ()):
        self.dest = Path(dest)
        self.owned = tuple(owned)
        if self.dest.exists() and not self.dest.is_dir():
            raise OutputDirError(f"{self.dest}: exists and is not a directory")
        foreign = foreign_entries(self.dest, self.owned)
        if foreign:
            listed = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise OutputDirError(f"{self.dest}: holds files this command did not write ({listed}); it would be "
                                 "replaced as a whole, so choose another output directory or empty it")
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        # a private box beside the destination; the staged directory inside it is made by a plain mkdir, so
        # it gets the usual permissions (mkdtemp's would be 0700)
        self._box = Path(tempfile.mkdtemp(prefix=f".{self.dest.name}.tmp-", dir=self.dest.parent))
        self.tmp = self._box / self.dest.name
        self.tmp.mkdir()
        self.written: list[str] = []
        self.committed = False

    def path(self, rel: str) -> Path:
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel not in self.written:
            self.written.append(rel)
        return p

    def write_text(self, rel: str, text: str) -> None:
        self.path(rel).write_text(text, encoding="utf-8")

    def commit(self) -> list[Path]:
        if not self.dest.exists():
            os.rename(self.tmp, self.dest)
        else:
            aside = Path(tempfile.mkdtemp(prefix=f".{self.dest.name}.old-", dir=self.dest.parent))
            os.rename(self.dest, aside / self.dest.name)
            try:
                os.rename(self.tmp, self.dest)
            except BaseException:
                os.rename(aside / self.dest.name, self.dest)  # put the previous results back
                aside.rmdir()
                raise
            shutil.rmtree(aside, ignore_errors=True)
        self.committed = True
        shutil.rmtree(self._box, ignore_errors=True)
        return [self.dest / rel for rel in self.written]

    def abort(self) -> None:
        shutil.rmtree(self._box, ignore_errors=True)

    def __enter__(self) -> "StagedOutput":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.committed:
            self.abort()


def write_files_atomically(files: dict[Path, str]) -> None:
    """Write several single files (e.g. a sheet and its companion) all-or-nothing: each goes to a temp
    name beside its target, and only when all are written are they renamed into place."""
    staged: list[tuple[Path, Path]] = []
    try:
        for target, text in files.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            staged.append((Path(tmp), target))
        for tmp, target in staged:
            os.replace(tmp, target)
        staged = []
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------------------
# Score cells

BLANKS = frozenset({"", "na", "n/a", "nan", "none", "null", "-"})


_FAST = {**{b: math.nan for b in BLANKS}, **{str(i): float(i) for i in range(1, 6)},
         **{f"{i}.0": float(i) for i in range(1, 6)}, **{f"{i}.5": i + 0.5 for i in range(1, 5)}}


def parse_score(raw, loc: str, problems: Problems) -> float:
    """One rubric score cell -> float in [1, 5], or NaN for a blank / unusable cell (reported)."""
    if type(raw) is str:
        fast = _FAST.get(raw)
        if fast is not None:
            return fast
    elif type(raw) is float and SCORE_MIN <= raw <= SCORE_MAX:
        return raw
    if raw is None:
        return math.nan
    if isinstance(raw, bool):
        problems.add("bad value", f"{loc}: {raw!r} is not a number; cell left out")
        return math.nan
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        text = str(raw).strip()
        if text.lower() in BLANKS:
            return math.nan
        try:
            value = float(text)
        except ValueError:
            problems.add("bad value", f"{loc}: {text[:40]!r} is not a number; cell left out")
            return math.nan
    if not math.isfinite(value):
        return math.nan
    if not SCORE_MIN <= value <= SCORE_MAX:
        hint = " (0 is the paper's placeholder for a missing score)" if value == 0 else ""
        problems.add("out of range", f"{loc}: {value:g} is outside the 1-5 scale{hint}; cell left out")
        return math.nan
    return value
