"""Tables in and out: reading CSV/TSV files (delimiter sniffing, spreadsheet row numbers), writing CSV cells,
significance stars. Markdown tables: `wikihowagent.markdown.markdown_table`."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Iterable, Sequence

from .problems import AlignInputError

def sniff_delimiter(header_line: str, path: Path) -> str:
    if path.suffix.lower() == ".tsv":
        return "\t"
    counts = {d: header_line.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] else ","


def read_table(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV/TSV file as (header, [(row_number, cells)]). Row numbers are as a spreadsheet shows them
    (header = row 1; a quoted cell spanning several text lines is still one row). Empty rows are skipped."""
    if path.suffix.lower() in (".xlsx", ".xls", ".ods", ".numbers"):
        raise AlignInputError(f"{path}: spreadsheet files are not read; save the sheet as CSV (UTF-8) and pass that")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise AlignInputError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise AlignInputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise AlignInputError(f"{path}: cannot read ({exc.strerror})") from None
    if not text.strip():
        raise AlignInputError(f"{path}: empty file")
    delimiter = sniff_delimiter(text.split("\n", 1)[0], path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
        rows = [(i + 2, cells) for i, cells in enumerate(reader) if any(c.strip() for c in cells)]
    except csv.Error as exc:
        raise AlignInputError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from None
    return header, rows


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


def stars(p: float) -> str:
    if p is None or not math.isfinite(p):
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""
