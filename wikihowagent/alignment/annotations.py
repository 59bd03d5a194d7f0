"""Reading and validating human annotation files.

Accepted layouts (CSV, or TSV / `;`-separated; UTF-8 with or without BOM, UTF-16 with BOM, or a legacy encoding
such as Excel's cp1252, reported; decimal commas in `;`-separated files):

- **wide, one file per judge** (the paper's format): `conversation_id` plus one column per rubric metric,
  in any case (`clarity`, `Clarity`, ...). Other columns (`filename`, `title`, `comment`, ...) are ignored.
  The judge is named after the file (its stem).
- **wide, one long file**: the same plus an annotator column (`annotator`, `judge`, `rater` or `coder`):
  one row per judge and conversation.
- **fully long**: `conversation_id`, an annotator column, `metric` and `score`.

Validation (each problem is reported as `file:ROW: column 'x': ...`, row numbers as a spreadsheet shows
them, header = row 1; what can still be used, is):

- a blank cell (empty, NA, N/A, nan, -) is a blank: counted, not an error;
- a non-numeric cell, or a score outside 1-5, is left out (reported);
- a duplicated conversation id within one judge's ratings: the first row is kept, later ones are left out;
- an empty conversation id: the row is left out;
- a metric without a column: reported once; that judge's scores for it count as blanks;
- **unknown metric columns**: a column that is neither one of the 8 metrics nor a known id/meta column
  (`filename`, `title`, `comment`, `tutorial_id`, `model`, the paper's automatic metrics, ...) is reported
  when its name is close to a metric name (a typo such as `clartiy`) or when all its non-blank values are
  numbers (it looks like a score column); it is never used. Other text columns are ignored silently.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import schema
from .csv_dialect import read_table
from .problems import AlignInputError, Problems, where
from .schema import ANNOTATOR_KEYS, ID_KEYS, KNOWN_META_KEYS, RUN_KEYS, norm_key
from .score_cells import FAST_SCORES, parse_score


@dataclass
class JudgeRatings:
    """One judge's ratings: conversation id -> 8 scores (NaN = blank or left out)."""

    judge: str
    source: str
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # conversation id -> row in `source`
    runs: dict[str, str] = field(default_factory=dict)  # conversation id -> `filename`/`run` cell
    titles: dict[str, str] = field(default_factory=dict)
    missing_metrics: tuple[str, ...] = ()

    def blanks(self) -> np.ndarray:
        """Blank (or left-out) cells per metric."""
        if not self.scores:
            return np.zeros(len(schema.metrics()), dtype=int)
        return np.isnan(np.stack(list(self.scores.values()))).sum(axis=0)


@dataclass
class Columns:
    id: int
    annotator: int | None
    run: int | None
    title: int | None
    metrics: dict[str, int]  # canonical metric name -> column index
    metric_col: int | None = None  # fully long layout
    score_col: int | None = None


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def classify_columns(path: Path, header: list[str], rows: list[tuple[int, list[str]]], problems: Problems) -> Columns:
    keys = [norm_key(h) for h in header]
    id_col = next((i for i, k in enumerate(keys) if k in ID_KEYS), None)
    if id_col is None:
        raise AlignInputError(
            f"{path}:1: no 'conversation_id' column (columns: {', '.join(repr(h) for h in header)}); file skipped"
        )
    annotator = next((i for i, k in enumerate(keys) if k in ANNOTATOR_KEYS), None)
    run = next((i for i, k in enumerate(keys) if k in RUN_KEYS), None)
    title = next((i for i, k in enumerate(keys) if k == "title"), None)
    metric_col = next((i for i, k in enumerate(keys) if k == "metric"), None)
    score_col = next((i for i, k in enumerate(keys) if k == "score"), None)
    metrics: dict[str, int] = {}
    for i, k in enumerate(keys):
        metric = schema.metric_by_key().get(k)
        if metric is None:
            continue
        if metric in metrics:
            problems.add(
                "duplicate column",
                f"{where(path, 1, header[i])}: a second column for {metric} "
                f"(first: '{header[metrics[metric]]}'); ignored",
            )
            continue
        metrics[metric] = i
    used = {id_col, annotator, run, title, metric_col, score_col, *metrics.values()}
    for i, (name, key) in enumerate(zip(header, keys, strict=True)):
        if i in used or key in KNOWN_META_KEYS:
            continue
        close = difflib.get_close_matches(key, list(schema.metric_by_key()), n=1, cutoff=0.75)
        if close:
            problems.add(
                "unknown column",
                f"{where(path, 1, name)}: not one of the 8 rubric metrics (did you mean '{close[0]}'?); column ignored",
            )
            continue
        values = [cells[i].strip() for _, cells in rows if i < len(cells) and cells[i].strip()]
        if values and all(_is_number(v) for v in values):
            problems.add(
                "unknown column",
                f"{where(path, 1, name)}: holds numbers but is not one of the 8 rubric metrics "
                f"({', '.join(m.lower() for m in schema.metrics())}); column ignored",
            )
    long_layout = metric_col is not None and score_col is not None and not metrics
    if not metrics and not long_layout:
        raise AlignInputError(
            f"{path}:1: no rubric metric column (expected some of {', '.join(m.lower() for m in schema.metrics())}); file skipped"
        )
    return Columns(
        id_col, annotator, run, title, metrics, metric_col if long_layout else None, score_col if long_layout else None
    )


def _cell(cells: list[str], i: int | None) -> str:
    """Cell `i` of a row of `read_table`, as written (`csvcells.read_cell`), or ""."""
    return cells[i] if i is not None and i < len(cells) else ""


@dataclass
class _Sheet:
    """One annotation file being read: its columns, the judges found so far and the first row of each key."""

    path: Path
    header: list[str]
    cols: Columns
    problems: Problems
    judges: dict[str, JudgeRatings] = field(default_factory=dict)
    first_row: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (judge, id, metric or "") -> row

    def owner(self, cells: list[str], row: int) -> tuple[str, JudgeRatings] | None:
        """(conversation id, judge) of a row; None (reported) when the id or the annotator cell is empty."""
        cid = _cell(cells, self.cols.id)
        if not cid:
            self.problems.add(
                "missing id", f"{where(self.path, row, self.header[self.cols.id])}: empty conversation_id; row left out"
            )
            return None
        if self.cols.annotator is None:
            name = self.path.stem
        else:
            name = _cell(cells, self.cols.annotator)
            if not name:
                col = self.header[self.cols.annotator]
                self.problems.add("missing id", f"{where(self.path, row, col)}: empty annotator; row left out")
                return None
        if name not in self.judges:
            self.judges[name] = JudgeRatings(judge=name, source=str(self.path))
        return cid, self.judges[name]

    def read_long(self, rows: list[tuple[int, list[str]]], metric_col: int, score_col: int) -> None:
        """A fully long sheet: one (conversation, metric, score) cell per row."""
        metric_index = {m: j for j, m in enumerate(schema.metrics())}
        for row, cells in rows:
            owner = self.owner(cells, row)
            if owner is None:
                continue
            cid, judge = owner
            raw_metric = _cell(cells, metric_col)
            metric = schema.metric_by_key().get(norm_key(raw_metric))
            if metric is None:
                self.problems.add(
                    "unknown metric",
                    f"{where(self.path, row, self.header[metric_col])}: {raw_metric!r} is not one of the 8 rubric "
                    "metrics; row left out",
                )
                continue
            key = (judge.judge, cid, metric)
            if key in self.first_row:
                self.problems.add(
                    "duplicate id",
                    f"{where(self.path, row, self.header[self.cols.id])}: {cid} / {metric} by {judge.judge} already "
                    f"on row {self.first_row[key]}; this row left out",
                )
                continue
            self.first_row[key] = row
            value = parse_score(
                _cell(cells, score_col),
                where(self.path, row, self.header[score_col]),
                self.problems,
            )
            arr = judge.scores.get(cid)
            if arr is None:
                arr = judge.scores[cid] = np.full(len(schema.metrics()), np.nan)
                judge.rows[cid] = row
                judge.runs[cid] = _cell(cells, self.cols.run)
                judge.titles[cid] = _cell(cells, self.cols.title)
            arr[metric_index[metric]] = value

    def read_wide(self, rows: list[tuple[int, list[str]]]) -> tuple[str, ...]:
        """A sheet with a column per metric (one row per conversation and judge); -> the metrics it lacks."""
        metric_index = {m: j for j, m in enumerate(schema.metrics())}
        present = [(metric_index[m], i, self.header[i]) for m, i in self.cols.metrics.items()]
        missing = tuple(m for m in schema.metrics() if m not in self.cols.metrics)
        for row, cells in rows:
            owner = self.owner(cells, row)
            if owner is None:
                continue
            cid, judge = owner
            key = (judge.judge, cid, "")
            if key in self.first_row:
                who = f" by {judge.judge}" if self.cols.annotator is not None else ""
                self.problems.add(
                    "duplicate id",
                    f"{where(self.path, row, self.header[self.cols.id])}: {cid}{who} already on row "
                    f"{self.first_row[key]} (duplicate id); this row left out",
                )
                continue
            self.first_row[key] = row
            arr = np.full(len(schema.metrics()), np.nan)
            for j, i, name in present:
                cell = cells[i] if i < len(cells) else ""
                fast = FAST_SCORES.get(cell)  # the common cells ("4", "", ...) without building a location
                arr[j] = fast if fast is not None else parse_score(cell, where(self.path, row, name), self.problems)
            judge.scores[cid] = arr
            judge.rows[cid] = row
            judge.runs[cid] = _cell(cells, self.cols.run)
            judge.titles[cid] = _cell(cells, self.cols.title)
        if missing:
            self.problems.add(
                "missing column",
                f"{where(self.path, 1)}: no column for {', '.join(m.lower() for m in missing)}; counted as blank",
            )
        return missing


def read_human_file(path: Path, problems: Problems) -> list[JudgeRatings]:
    """Read one annotation file: one JudgeRatings per judge in it. Raises AlignInputError if unusable."""

    path = Path(path)
    header, rows = read_table(path, problems)
    sheet = _Sheet(path, header, classify_columns(path, header, rows, problems), problems)
    missing: tuple[str, ...] = ()
    metric_col, score_col = sheet.cols.metric_col, sheet.cols.score_col
    if metric_col is not None and score_col is not None:  # fully long: one cell per row
        sheet.read_long(rows, metric_col, score_col)
    else:
        missing = sheet.read_wide(rows)
    for ratings in sheet.judges.values():
        ratings.missing_metrics = missing
    if not sheet.judges:
        raise AlignInputError(f"{path}: no usable rows; file skipped")
    return list(sheet.judges.values())


def read_human_files(paths: list[Path], problems: Problems) -> list[JudgeRatings]:
    """All judges of all files; unusable files are reported and skipped. Judge names are made unique."""
    judges: list[JudgeRatings] = []
    seen: dict[str, int] = {}
    for path in paths:
        try:
            found = read_human_file(Path(path), problems)
        except AlignInputError as exc:
            problems.add("unusable file", str(exc))
            continue
        for j in found:
            if j.judge in seen:
                seen[j.judge] += 1
                new = f"{j.judge}#{seen[j.judge]}"
                problems.add(
                    "judge name",
                    f"{j.source}: judge name '{j.judge}' already used by another file; called '{new}' here",
                )
                j.judge = new
            else:
                seen[j.judge] = 1
            judges.append(j)
    return judges


def human_matrix(judges: list[JudgeRatings]) -> tuple[list[str], np.ndarray]:
    """(conversation ids in first-seen order, array judges x conversations x metrics, NaN = blank)."""
    ids: dict[str, int] = {}
    for j in judges:
        for cid in j.scores:
            ids.setdefault(cid, len(ids))
    H = np.full((len(judges), len(ids), len(schema.metrics())), np.nan)
    for a, j in enumerate(judges):
        if j.scores:
            idx = np.fromiter((ids[c] for c in j.scores), dtype=np.intp, count=len(j.scores))
            H[a, idx] = np.stack(list(j.scores.values()))
    return list(ids), H


def average_judges(H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the available judges per conversation and metric (blanks ignored) and how many judges
    that mean is over (0 -> NaN)."""
    counts = (~np.isnan(H)).sum(axis=0)
    sums = np.nansum(H, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), math.nan)
    return mean, counts
