"""The problem log of the alignment study (one line per thing left out, with its location) and its errors."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from wikihowagent.errors import WikihowagentError


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


class AlignInputError(WikihowagentError):
    """Input that cannot be used at all (unreadable file, not a table, no id column, ...)."""
