"""The one Markdown-table helper (evaluate's summary.md, align's correlations.md, the tables of compare's and
judge-check's summaries)."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any


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


def number_cell(v: object) -> str:
    """A table cell: "–" for a missing value (None, NaN), a float to 3 decimals, anything else as str."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def frame_table(df: Any) -> str:
    """A DataFrame as a `markdown_table` of `number_cell`s."""
    return markdown_table(list(df.columns), [[number_cell(v) for v in row] for row in df.itertuples(index=False)])


_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]()|~])")


def markdown_text(text: object) -> str:
    """Outside text (a title, a run name) as one line of Markdown: HTML escaped (a renderer that allows HTML
    shows `<img onerror=...>` as text, never runs it), link, emphasis and table punctuation backslash-escaped."""
    return _MD_PUNCTUATION.sub(r"\\\1", html.escape(" ".join(str(text).split()), quote=False))
