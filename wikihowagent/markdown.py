"""The one Markdown-table helper (evaluate's summary.md, align's correlations.md)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub-style table: the first column left-aligned, the others right-aligned; `|` and newlines in
    cells are escaped."""

    def esc(cell: object) -> str:
        return str(cell).replace("|", "\\|").replace("\n", " ")

    out = [
        "| " + " | ".join(esc(c) for c in columns) + " |",
        "| " + " | ".join(":--" if i == 0 else "--:" for i in range(len(columns))) + " |",
    ]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]()|~])")


def markdown_text(text: object) -> str:
    """Outside text (a title, a run name) as one line of Markdown: HTML escaped (a renderer that allows HTML
    shows `<img onerror=...>` as text, never runs it), link, emphasis and table punctuation backslash-escaped."""
    return _MD_PUNCTUATION.sub(r"\\\1", html.escape(" ".join(str(text).split()), quote=False))
