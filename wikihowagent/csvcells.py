"""CSV cells people open in a spreadsheet: OWASP "CSV injection" neutralisation, and reading it back exactly.

A text cell that a spreadsheet would run as a formula — it starts with `=`, `+`, `-`, `@`, tab or CR (after
any leading apostrophes) — gets one leading apostrophe, so the spreadsheet shows it as text. A number is not
a formula: values written as numbers (int, float) are never touched, and neither is a text cell that is
exactly a decimal number ("-0.16", "+3", "1e-05"), which a spreadsheet reads as that number and nothing else
(OWASP's list of triggers aims at formulas and commands such as `=HYPERLINK(...)`, `-2+3+cmd|...`, `@SUM(...)`:
"-2+3" is not a number, so it is neutralised). An apostrophe already in front of a trigger is doubled, so
`unneutralise` gives back exactly the cell `neutralise` was given; every reader of these files (`align`'s
tables, the report) undoes it. Rows end in CRLF (as RFC 4180 and Excel write them), so a carriage return inside a
cell is quoted, not read as the end of the row. A file people may have edited (a rating sheet, a key file) is read
with `read_cell`: a neutralised cell exactly, blanks at its ends included, any other without them.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CRLF = "\r\n"  # the line end of every CSV people open
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def _formula_like(cell: str) -> bool:
    bare = cell.lstrip("'")
    return bare.startswith(FORMULA_START) and _NUMBER.fullmatch(bare) is None


def neutralise(cell: str) -> str:
    """A text cell for a file people open in a spreadsheet: one that would start a formula gets a leading
    apostrophe (see the module's docstring); `unneutralise` undoes it exactly."""
    return "'" + cell if _formula_like(cell) else cell


def unneutralise(cell: str) -> str:
    """The cell `neutralise` was given: one apostrophe less before a formula start; anything else as is."""
    return cell[1:] if cell.startswith("'") and _formula_like(cell) else cell


def read_cell(cell: str) -> str:
    """A cell of a CSV people may have edited, as it was written: one `neutralise` changed is given back exactly
    (a leading tab or blank is part of the id it holds); any other without the blanks around it (hand-typed)."""
    exact = unneutralise(cell)
    return exact if exact != cell else cell.strip()


def people_cell(value: Any) -> Any:
    """A value for a people's CSV: text neutralised, anything else (numbers, None) as is."""
    return neutralise(value) if isinstance(value, str) else value


def people_frame(df: Any) -> Any:
    """A pandas DataFrame with its text cells and column names neutralised (for `to_csv`)."""
    out = df.map(people_cell)
    out.columns = [people_cell(c) for c in df.columns]
    return out


def people_csv(df: Any, path: Path, **to_csv: Any) -> Path:
    """`df` written as a CSV people open (`people_frame`, no index, CRLF; `to_csv` e.g. float_format)."""
    people_frame(df).to_csv(path, index=False, **{"lineterminator": CRLF, **to_csv})
    return path


def read_people_csv(path: Path) -> list[list[str]]:
    """The rows (header first) of a CSV written with neutralised cells, each cell as it was before."""
    with Path(path).open(encoding="utf-8", newline="") as fh:
        return [[unneutralise(c) for c in row] for row in csv.reader(fh)]


def read_people_frame(path: Path) -> Any:
    """A CSV written with `people_csv` as a pandas DataFrame, each text cell and column name as it was before
    (numbers are never neutralised, so numeric columns read as numbers)."""
    import pandas as pd

    df = pd.read_csv(path)
    df.columns = [unneutralise(c) if isinstance(c, str) else c for c in df.columns]
    return df.map(lambda v: unneutralise(v) if isinstance(v, str) else v)
