"""The file primitives under runs.py and the stages: directory locks, the one bounded reader of JSON and JSONL
text, append-only fsynced JSONL (a torn last line cut before the next append), atomic replacement of a file, and
the one-line errors of a bad line, a missing run or a full disk. runs.py and the stages import them from here;
the files' names are in layout.py.

Every JSON or JSONL file the tool reads goes through `parse_json` (`read_json_file` for a document, `iter_jsonl`
for lines), bounded so that one hostile line is one problem, never a crash or an exhausted machine:
- depth: at most MAX_DEPTH nested arrays and objects. Our records nest 6 deep at most (a score record's judge
  provenance, the paper's records); Python's own parser fails with RecursionError near 1,000.
- integer literals: at most MAX_INT_DIGITS digits. Our records hold counts, indexes and token numbers (a
  few digits); Python refuses ints of more than 4,300 digits with a ValueError (unless that limit is lifted),
  and converting a long one takes time quadratic in its length. A float literal of any length is read in linear
  time (to its nearest float, or inf, which the readers of each field range-check), so it needs no bound.
- a JSONL line: at most MAX_LINE_BYTES. A conversation record of the paper's study is 18-47 kB, a score record
  1-10 kB; a longer line is skipped without being read into memory whole.
- a JSON document: at most MAX_DOCUMENT_BYTES. The human study's run files (10 conversations each) are 130-270
  kB; the paper's released run files (14,287 conversations each) are a few hundred MB: a list of records that
  large is read one record at a time (`iter_json_list`: each record within these bounds and MAX_LINE_BYTES).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel

from wikihowagent.console import disk_full_message
from wikihowagent.errors import WikihowagentError


@contextlib.contextmanager
def dir_lock(
    directory: Path, blocking: bool = True, what: str = "another process", name: str = ".lock"
) -> Iterator[None]:
    """An exclusive POSIX flock on `directory/name` for the duration of the block (no-op without fcntl).

    Non-blocking: raise RunError at once if someone else holds it.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / name, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            raise RunError(f"{directory}: in use by {what} (wait for it to finish, or use another --out)") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class JsonlError(WikihowagentError, ValueError):
    """A bad line in a JSONL file; the message is one line naming the file and line."""


class RunError(WikihowagentError, RuntimeError):
    """A missing or unreadable run; the message is one line."""


class DiskFullError(RunError):
    """A write failed for lack of space; the message names the file and the free space it needed."""


def disk_full_error(path: Path, needed: int | None, exc: OSError) -> OSError | DiskFullError:
    """`exc` as a one-line DiskFullError if it says the disk (or quota) is full, else `exc` itself."""
    message = disk_full_message(path, needed, exc)
    return exc if message is None else DiskFullError(message)


MAX_DEPTH = 100  # nested arrays and objects (see the module's docstring for each bound)
MAX_INT_DIGITS = 100  # digits of one integer literal
MAX_LINE_BYTES = 8 * 2**20  # one JSONL line
MAX_DOCUMENT_BYTES = 128 * 2**20  # one JSON document

_DIGITS_ONLY = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))  # every digit "0", the rest " "
_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # a backslash escape in a JSON string (\\, \", \n, \u...)
_PARENS = bytes.maketrans(b"[]{}", b"()()")  # arrays and objects alike
_NOT_STRUCTURE = bytes(i for i in range(256) if i not in b'[]{}"')  # all but brackets and quotes


class JsonInputError(WikihowagentError, ValueError):
    """JSON text that is not read. str(): the problem, to follow "FILE:" or "FILE:LINE:" ("malformed JSON (why,
    line and column)", "not UTF-8 text (why)", ...); `brief`: the problem without the position; `lineno`: the
    text's line a syntax error is on, else None."""

    def __init__(self, problem: str, lineno: int | None = None, brief: str | None = None) -> None:
        super().__init__(problem)
        self.lineno = lineno
        self.brief = brief or problem

    def located(self, path: Path | str) -> str:
        """One line naming the file (and the line of a syntax error): "PATH:LINE: malformed JSON (why)"."""
        return f"{path}:{self.lineno}: {self.brief}" if self.lineno else f"{path}: {self}"


class JsonBoundError(JsonInputError):
    """JSON text beyond one of the module's bounds (too deep, an integer too long, a file too large)."""


class _LongNumber(WikihowagentError):
    """An integer literal longer than MAX_INT_DIGITS, raised inside json's parse_int; str(): its digits."""


def _int(literal: str) -> int:
    """json's parse_int: an integer literal of at most MAX_INT_DIGITS digits."""
    digits = len(literal) - literal.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise _LongNumber(str(digits))
    return int(literal)


def _beyond(why: str) -> JsonBoundError:
    return JsonBoundError(f"malformed JSON ({why})")


def _too_deep(raw: bytes) -> bool:
    """More than MAX_DEPTH arrays and objects inside one another in `raw` (valid JSON), counted outside strings:
    escapes dropped, then everything but brackets and quotes (C-speed byte operations), then what lies between
    quotes; the levels are then taken away innermost first."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    pairs = b"".join(_ESCAPE.sub(b"", raw).translate(None, _NOT_STRUCTURE).split(b'"')[::2]).translate(_PARENS)
    for _ in range(MAX_DEPTH):  # each round takes away the innermost level
        if not pairs:
            return False
        pairs = pairs.replace(b"()", b"")
    return bool(pairs)


def parse_json(raw: bytes | str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """The one parser of JSON text from outside (files, lines, a model's reply): `json.loads` within the bounds of
    the module's docstring. Bytes are UTF-8 (a leading BOM is skipped). JsonInputError (one line) if the text is
    not UTF-8, not JSON, or beyond a bound; an error `object_pairs_hook` raises passes through. Integers are
    checked one by one only in a text with a run of more than MAX_INT_DIGITS digits somewhere."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonInputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    else:
        text, raw = raw, raw.encode("utf-8", "surrogatepass")
    too_deep = f"nested more than {MAX_DEPTH} levels deep"
    long_digits = b"0" * (MAX_INT_DIGITS + 1) in raw.translate(_DIGITS_ONLY)
    try:
        obj = json.loads(text, parse_int=_int if long_digits else None, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"malformed JSON ({exc})", exc.lineno, f"malformed JSON ({exc.msg})") from None
    except RecursionError:
        raise _beyond(too_deep) from None
    except _LongNumber as exc:
        raise _beyond(f"an integer {exc} digits long; at most {MAX_INT_DIGITS} are read") from None
    if _too_deep(raw):
        raise _beyond(too_deep)
    return obj


def read_json_file(path: Path, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """The JSON document in `path` (`parse_json`); JsonInputError if it is larger than MAX_DOCUMENT_BYTES or not
    one; OSError (FileNotFoundError, ...) as raised, for the caller to word."""
    chunks: list[bytes] = []
    seen = 0
    with Path(path).open("rb") as fh:  # in pieces: one read(MAX_DOCUMENT_BYTES) would allocate all of it at once
        while seen <= MAX_DOCUMENT_BYTES and (piece := fh.read(2**16)):
            chunks.append(piece)
            seen += len(piece)
    raw = b"".join(chunks)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise JsonBoundError(f"larger than {MAX_DOCUMENT_BYTES // 2**20} MiB; not read")
    return parse_json(raw, object_pairs_hook)


STREAM_ABOVE = MAX_DOCUMENT_BYTES  # a larger document of records is read one record at a time (`iter_json_list`)
_LIST_HEAD = re.compile(r'\s*(?:\{\s*"(?P<key>[^"\\]*)"\s*:\s*)?\[')
_READ = 2**20


def json_list_key(path: Path) -> str | None:
    """How the JSON document in `path` opens: "" for a list (`[`), KEY for `{"KEY": [`, None otherwise."""
    with Path(path).open("rb") as fh:
        head = fh.read(2**16).decode("utf-8-sig", errors="replace")
    m = _LIST_HEAD.match(head)
    return None if m is None else m.group("key") or ""


def iter_json_list(path: Path) -> Iterator[Any]:
    """The elements of a JSON document `[...]` or `{"KEY": [...]}` (`json_list_key`), parsed one at a time, each
    within the bounds of `parse_json` and at most MAX_LINE_BYTES: memory holds one element whatever the file's
    size. Nothing may follow the list but the document's end. JsonInputError ("malformed JSON (why)", with its
    line) when the text stops being such a document; the elements before it have been given."""
    decoder = json.JSONDecoder(parse_int=_int)
    text = _IncrementalText(Path(path))
    if (m := _LIST_HEAD.match(text.fill(2**16))) is None:
        raise text.error("malformed JSON (not a list of records, nor an object holding one)", 0)
    closing = "}" if m.group("key") is not None else ""
    pos, first = m.end(), True
    try:
        while True:
            pos = text.skip_space(pos)
            if text.buf.startswith("]", pos):
                break
            if not first:
                if not text.buf.startswith(",", pos):
                    raise text.error("malformed JSON (expected ',' or ']' between records)", pos)
                pos = text.skip_space(pos + 1)
            obj, pos = text.decode(decoder, pos)
            first = False
            yield obj
        if text.rest(pos + 1).strip() != closing:
            raise text.error(f"malformed JSON (expected {closing or 'the end'} after the list of records)", 0)
    finally:
        text.fh.close()


class _IncrementalText:
    """A UTF-8 file as text, read a block at a time: `buf` holds what is not consumed yet."""

    def __init__(self, path: Path) -> None:
        import codecs

        self.fh = path.open("rb")
        self.utf8 = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf, self.eof, self.line = "", False, 1  # `line`: the file's line buf[0] is on

    def fill(self, want: int) -> str:
        while len(self.buf) < want and not self.eof:
            block = self.fh.read(_READ)
            self.eof = not block
            try:
                self.buf += self.utf8.decode(block, final=self.eof)
            except UnicodeDecodeError as exc:
                raise self.error(f"not UTF-8 text ({exc.reason})", len(self.buf)) from None
        return self.buf

    def drop(self, pos: int) -> int:
        """Forget buf[:pos] -> 0 (the new position of pos)."""
        self.line += self.buf.count("\n", 0, pos)
        self.buf = self.buf[pos:]
        return 0

    def skip_space(self, pos: int) -> int:
        while True:
            while pos < len(self.buf) and self.buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(self.buf) or self.eof:
                return pos
            pos = self.drop(pos)
            self.fill(_READ)

    def decode(self, decoder: json.JSONDecoder, pos: int) -> tuple[Any, int]:
        pos = self.drop(pos)
        while True:
            end = None
            try:
                obj, end = decoder.raw_decode(self.buf, pos)
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise self.error(f"malformed JSON ({exc.msg})", exc.pos) from None
            except RecursionError:
                raise self.error(f"malformed JSON (nested more than {MAX_DEPTH} levels deep)", pos) from None
            except _LongNumber as exc:
                raise self.error(f"malformed JSON (an integer {exc} digits long)", pos) from None
            if end is not None and (end < len(self.buf) or self.eof):  # a number may go on in the next block
                if _too_deep(self.buf[pos:end].encode("utf-8", "surrogatepass")):
                    raise self.error(f"malformed JSON (nested more than {MAX_DEPTH} levels deep)", pos)
                return obj, end
            if len(self.buf) > MAX_LINE_BYTES:
                raise self.error(f"malformed JSON (a record longer than {MAX_LINE_BYTES // 2**20} MiB)", pos)
            self.fill(len(self.buf) + _READ)

    def rest(self, pos: int) -> str:
        self.drop(pos)
        self.fill(MAX_LINE_BYTES)
        return self.buf

    def error(self, problem: str, pos: int) -> JsonInputError:
        line = self.line + self.buf.count("\n", 0, pos)
        return JsonInputError(f"{problem[:-1]}: line {line})", line, problem)


LONG_LINE = f"a line longer than {MAX_LINE_BYTES // 2**20} MiB; not read"


def bounded_lines(fh: BinaryIO) -> Iterator[bytes | None]:
    """The lines of `fh` (None for a line longer than MAX_LINE_BYTES, which is skipped, not read whole)."""
    while raw := fh.readline(MAX_LINE_BYTES + 1):
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        while (rest := fh.readline(2**20)) and not rest.endswith(b"\n"):
            pass
        yield None


def iter_jsonl(path: Path, on_error: Callable[[str], None] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each JSON object line (`parse_json`); blank lines are skipped.

    A bad line is reported as "path:LINE: problem" to `on_error` (and skipped) or raised as JsonlError.
    A torn last line (no trailing newline, from a killed writer) is reported the same way.
    """
    path = Path(path)
    with path.open("rb") as fh:
        for lineno, raw in enumerate(bounded_lines(fh), start=1):
            if raw is not None and not raw.strip():
                continue
            problem = None
            if raw is None:
                problem = LONG_LINE
            else:
                try:
                    obj = parse_json(raw)
                    if not isinstance(obj, dict):
                        problem = f"expected a JSON object, got {type(obj).__name__}"
                except JsonInputError as exc:
                    torn = not raw.endswith(b"\n") and not isinstance(exc, JsonBoundError)
                    problem = "incomplete last line (interrupted write)" if torn else str(exc)
            if problem is not None:
                msg = f"{path}:{lineno}: {problem}"
                if on_error is None:
                    raise JsonlError(msg)
                on_error(msg)
                continue
            yield lineno, obj


def repair_torn_tail(path: Path) -> bool:
    """Cut a trailing partial line left by a killed writer. Returns True if something was cut."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return False
        # Scan back for the last newline; everything after it is the torn line.
        pos = size
        chunk = 65536
        keep = 0
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            buf = fh.read(pos - start)
            idx = buf.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                break
            pos = start
        fh.truncate(keep)
        return True


class JsonlAppender:
    """Append records to a JSONL file, one whole line each, flushed and fsynced."""

    def __init__(self, path: Path, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        self._fh: BinaryIO | None = None

    def __enter__(self) -> JsonlAppender:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_torn_tail(self.path)
        self._fh = self.path.open("ab")
        return self

    def append(self, record: BaseModel | dict[str, Any]) -> None:
        assert self._fh is not None, "use JsonlAppender as a context manager"
        data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
        line = json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n"
        start = self._fh.tell()
        try:
            # One write call per record: a kill leaves a prefix of this line at worst, never a mix.
            self._fh.write(line)
            self._fh.flush()
            if self.fsync:
                os.fsync(self._fh.fileno())
        except OSError as exc:
            self._cut_back(start)
            raise disk_full_error(self.path, len(line), exc) from None

    def _cut_back(self, size: int) -> None:
        """After a failed write (e.g. disk full): drop what is still buffered, cut the partial line off, and
        reopen, so the file holds exactly the records appended before and later appends start clean."""
        fh, self._fh = self._fh, None
        assert fh is not None, "only called from append, with the file open"
        try:
            fh.close()  # flushing the rest may fail again: nothing of it is kept
        except OSError:
            pass
        with contextlib.suppress(OSError):
            os.truncate(self.path, size)
        self._fh = self.path.open("ab")

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _replace_atomically(path: Path, payload: bytes) -> None:
    """Write `payload` to a temp file, fsync, rename over `path`. On failure the temp file is removed and
    `path` is untouched; a full disk raises DiskFullError. The temp name is unique per writer
    (`NAME.XXXXXXXX.tmp`): processes replacing the same file at once (a Slurm array's tasks writing the
    sweep's files) must not rename one another's temp file away."""
    tmp: Path | None = None
    try:
        fd, name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
        tmp = Path(name)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise disk_full_error(path, len(payload), exc) from None


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) atomically, like `write_json_atomic`."""
    _replace_atomically(Path(path), text.encode("utf-8"))


def rewrite_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    """Atomically replace `path` with `records` (temp file + rename)."""
    payload = b"".join(json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n" for rec in records)
    _replace_atomically(Path(path), payload)


def merge_lines(path: Path, items: Iterable[tuple[str, bytes, int, Any]]) -> dict[str, Any]:
    """Atomically replace `path` with one line per key of `items` ((key, line, rank, info), read once, in
    order): the line of the highest rank, the later one on a tie, in the place where its key first came. ->
    {key: the info given with the line kept}.

    Holds the keys, never the lines, so its memory does not grow with the size of the records: the lines go to
    a draft file beside `path` as they come, a line that replaces one already written to a second file, and
    only when some key came twice does one more pass over the draft put the replacements in their places.
    Each line is one JSON text ending in a newline. On failure `path` is untouched (a full disk: DiskFullError).
    """
    path = Path(path)
    kept: dict[str, tuple[int, int, Any]] = {}  # key -> (place, rank, info) of the line kept
    moved: dict[int, tuple[int, int]] = {}  # place -> (offset, length) of its replacement in the spare file
    temps: list[Path] = []
    try:
        draft, spare = _temp_beside(path, temps), _temp_beside(path, temps)
        with open(draft, "wb") as out, open(spare, "w+b") as extra:
            for key, line, rank, info in items:
                old = kept.get(key)
                if old is None:
                    kept[key] = (len(kept), rank, info)
                    out.write(line)
                elif rank >= old[1]:
                    moved[old[0]] = (extra.tell(), len(line))
                    extra.write(line)
                    kept[key] = (old[0], rank, info)
            if moved:
                out.close()
                draft = _put_in_place(draft, extra, moved, _temp_beside(path, temps))
            else:
                out.flush()
                os.fsync(out.fileno())
        os.replace(draft, path)
    except OSError as exc:
        raise disk_full_error(path, None, exc) from None
    finally:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return {key: info for key, (_, _, info) in kept.items()}


def _temp_beside(path: Path, temps: list[Path]) -> Path:
    fd, name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    temps.append(Path(name))
    return temps[-1]


def _put_in_place(draft: Path, extra: BinaryIO, moved: dict[int, tuple[int, int]], final: Path) -> Path:
    """`draft` with its lines at the places in `moved` replaced by theirs in `extra`, written to `final`."""
    with open(draft, "rb") as src, open(final, "wb") as out:
        for place, line in enumerate(src):
            if place in moved:
                offset, length = moved[place]
                extra.seek(offset)
                line = extra.read(length)
            out.write(line)
        out.flush()
        os.fsync(out.fileno())
    return final


def write_json_atomic(path: Path, data: dict[str, Any], in_place_if_full: bool = False) -> None:
    """Replace `path` atomically. With `in_place_if_full`, a disk too full for the temp file gets the new
    content written compactly over the old file's own space instead, if it fits there (padded with spaces): a
    final status update (e.g. "interrupted") then still lands when the disk has just filled up."""
    path = Path(path)
    payload = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        _replace_atomically(path, payload)
    except DiskFullError:
        old = path.stat().st_size if in_place_if_full and path.exists() else -1
        compact = (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        if len(compact) > old:
            raise
        with path.open("r+b") as fh:
            fh.write(compact + b" " * (old - len(compact)))  # same size: no new block is needed
            fh.flush()
            os.fsync(fh.fileno())
