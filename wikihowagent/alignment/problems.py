"""The problem log of the alignment study (one line per thing left out, with its location) and its errors."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from wikihowagent.errors import WikihowagentError, one_line


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
    group: str = ""  # problems of one kind and group show as one line on stderr (e.g. one per human file)
    label: str = ""  # this problem's part of that line (e.g. the conversation id)
    group_text: str = ""  # the line: "{group}: " + group_text.format(n=count, first=the first label)

    def __str__(self) -> str:
        return self.message


@dataclass
class Problems:
    """Everything left out, and why. One line each: shown on stderr and written to problems.txt."""

    items: list[Problem] = field(default_factory=list)

    def add(self, kind: str, message: str, *, group: str = "", label: str = "", group_text: str = "") -> None:
        """One problem. With `group`, stderr shows one line per (kind, group) — `group_text` with the count
        `{n}` and the first problem's `{first}` label — while problems.txt keeps every line."""
        self.items.append(Problem(kind, one_line(message), group, label, group_text))  # names from files: one line

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def counts(self) -> Counter:
        return Counter(p.kind for p in self.items)

    def lines(self) -> list[str]:
        return [p.message for p in self.items]

    def screen_lines(self) -> list[str]:
        """The lines for stderr: grouped problems as one line per (kind, group), where the group's first is."""
        counts = Counter((p.kind, p.group) for p in self.items if p.group)
        out: list[str] = []
        seen: set[tuple[str, str]] = set()
        for p in self.items:
            key = (p.kind, p.group)
            if not p.group or counts[key] == 1:
                out.append(p.message)
            elif key not in seen:
                seen.add(key)
                out.append(
                    f"{p.group}: "
                    + p.group_text.format(n=counts[key], first=p.label)
                    + " (each one is in problems.txt)"
                )
        return out

    def echo(self, limit: int | None = 40, stream=None, grouped: bool = True) -> None:
        """Print the problem lines to stderr (one line each, groups as one unless `grouped` is False: when no
        problems.txt is written), at most `limit` of them."""
        stream = stream or sys.stderr
        lines = self.screen_lines() if grouped else self.lines()
        shown = lines if limit is None else lines[:limit]
        for line in shown:
            print(f"warning: {line}", file=stream)
        rest = len(lines) - len(shown)
        if rest > 0:
            print(f"warning: ... and {rest} more (all of them are in problems.txt)", file=stream)


class AlignInputError(WikihowagentError):
    """Input that cannot be used at all (unreadable file, not a table, no id column, ...)."""
