"""The one error base: every problem a command reports is a `WikihowagentError` whose str() is one line.

Stage errors subclass it (keeping the builtin base their callers already catch, e.g. `ValueError`), so a
command may catch `WikihowagentError` once and print it with `console.print_error`. The message is made
one line here, once: line breaks (e.g. from a model's reply or a YAML value) become single spaces.
`validation_line` is the one place where a pydantic ValidationError becomes a message. A `Note` is a message
that also carries its kind, so that no code finds a kind by looking for words in a message. `OutputDirError` and
`os_error_line` are an output path that cannot be used, as one line (outdir.py checks the paths;
console.HelpCommand prints the line of either that a command did not catch, and exits 2).
"""

from __future__ import annotations

import errno
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import ValidationError

_BREAKS = re.compile(r"[ \t]*[\r\n\v\f\x85\u2028\u2029]+[ \t]*")


def one_line(message: object) -> str:
    """`message` with every line break (and the blanks around it) replaced by one space."""
    return _BREAKS.sub(" ", str(message)).strip()


class WikihowagentError(Exception):
    """A problem the user can act on; str(exc) is one line naming what (file, record, row) and why."""

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(message))


class OutputDirError(WikihowagentError, ValueError):
    """An output path that cannot be used: not a folder, not writable, holding files the command did not write,
    or overlapping an input (outdir.py). One line; the commands exit 2."""


# OSErrors that mean "this path cannot be used" rather than a fault of the program
PATH_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ELOOP, errno.ENAMETOOLONG}
)


def os_error_line(exc: OSError) -> str | None:
    """The one line for an OSError that says a path cannot be used (permission, read-only file system, a file
    where a folder is needed, ...); None for any other error (a full disk has its own line)."""
    if exc.errno not in PATH_ERRNOS:
        return None
    reason = exc.strerror or errno.errorcode.get(exc.errno or 0, "error")
    reason = reason[:1].lower() + reason[1:]
    if exc.filename is None:
        return one_line(f"cannot use a path: {reason}")
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
    return one_line(f"{where}: {reason}")


def validation_line(exc: ValidationError, quoted: bool = False) -> str:
    """The first error of a pydantic validation as one line: `loc: msg`, or `field 'loc': msg` with `quoted`."""
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    return one_line(f"field {loc!r}: {err['msg']}" if quoted else f"{loc}: {err['msg']}")


class Note(str):
    """A message with a kind: it prints (and serialises) as its text, and code branches on `kind`, never on
    the words (e.g. a judge failure's kind "low-mass" vs "parse", a correlation note's "too few")."""

    kind: str

    def __new__(cls, text: str, kind: str) -> Note:
        note = super().__new__(cls, text)
        note.kind = kind
        return note


def kind_of(message: Any, default: str) -> str:
    """The kind of a `Note`; `default` for a plain message."""
    return message.kind if isinstance(message, Note) else default
