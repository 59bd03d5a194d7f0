"""The one error base: every problem a command reports is a `WikihowagentError` whose str() is one line.

Stage errors subclass it (keeping the builtin base their callers already catch, e.g. `ValueError`), so a
command may catch `WikihowagentError` once and print it with `console.print_error`. The message is made
one line here, once: line breaks (e.g. from a model's reply or a YAML value) become single spaces.
`validation_line` is the one place where a pydantic ValidationError becomes a message. A `Note` is a message
that also carries its kind, so that no code finds a kind by looking for words in a message.
"""

from __future__ import annotations

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
