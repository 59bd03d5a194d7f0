"""The overview's summary tables (Table 1/2 with the run's validity notes) and the alignment section copied from
`align --out`.
"""

from __future__ import annotations

import html
import math
import shutil
from pathlib import Path
from typing import Any

from wikihowagent.layout import (
    CALIBRATION_CSV,
    CALIBRATION_PNG,
    CORRELATION_HEATMAP_PNG,
    CORRELATIONS_CSV,
    FIGURES_DIR,
    JUDGES_CSV,
    METRIC_ALIGNMENT_CSV,
    METRIC_ALIGNMENT_MD,
    METRIC_ALIGNMENT_PNG,
    METRIC_ALIGNMENT_WITHIN_PNG,
    PEOPLE_ESTIMATE_CSV,
    PPI_CSV,
    SCORE_DISTRIBUTIONS_PNG,
)
from wikihowagent.metrics.computational import better, computational_names, percent_metrics
from wikihowagent.records import ESTIMATE_NAME
from wikihowagent.runs import OutputReadError, read_people_rows
from wikihowagent.scores.significance import best_runs
from wikihowagent.scores.summary import (
    SHORT,
    cell,
)

from .head_to_head import csv_table
from .sources import Problems
from .validity import ValidityError, load_validity

RUNS_AS_COLUMNS = 8  # up to this many columns (runs + Overall): a column per run and a row per metric


def summary_tables(tables: list[tuple[str, Any]], run_tables: dict[str, Any]) -> str:
    """The paper's Table 1 (homogeneous runs) / Table 2 (heterogeneous, ↑/↓ against the teacher's homogeneous
    run) as `evaluate --tables` computes them, laid out to read at a glance: with few runs (the terminal's
    layout) a row per metric and a column per run, else a row per run; the metrics grouped by scale (% or
    1-5) with their better direction; each cell the mean (2 decimals, right-aligned), a small ± sd and, on
    a second small line, the 95 % bootstrap CI (the whole cell as a tooltip). Without a baseline (Table 1),
    the best run on a metric is marked where a paired test says it beats every other run
    (significance.best_runs). `run_tables`: run name -> its ScoreTable."""

    e = html.escape
    parts = []
    percent, computational = percent_metrics(), computational_names()
    for title, summary in tables:
        parts.append(f"<h3>{e(title)}</h3>")
        groups = [
            (name, scale, ms)
            for name, scale, ms in (
                ("Computational metrics", "%", [m for m in summary.columns if m in percent]),
                (
                    "Other computational metrics",
                    "as stored (words, nats)",
                    [m for m in summary.columns if m in computational and m not in percent],
                ),
                ("Predicted from metrics", "1–5", [m for m in summary.columns if m == ESTIMATE_NAME]),
                (
                    "Rubric scores (LLM judge)",
                    "1–5",
                    [m for m in summary.columns if m not in percent and m not in computational and m != ESTIMATE_NAME],
                ),
            )
            if ms
        ]
        direction: dict[str, str] = {m: better(m) for m in summary.columns}
        runs = [row for row in summary.table if row["run"] != "Overall"]
        best = (
            {}
            if summary.baseline or summary.stats is None
            else best_runs(runs, run_tables, summary.columns, direction, summary.stats)
        )
        few = len(summary.table) <= RUNS_AS_COLUMNS
        many = not few or len(summary.table) > 2  # a phone hides their CIs until tapped (report.css, report.js)
        parts.append(_table_legend(summary, bool(best), many))
        parts.append(
            (_metric_rows if few else _run_rows)(
                summary.table, groups, direction, best, many, _validity_applies(run_tables)
            )
        )
    return "\n".join(parts)


def _table_legend(summary: Any, best: bool, many: bool) -> str:
    e = html.escape
    ci = summary.stats is not None and summary.stats.n_boot > 0
    text = (
        "Each cell: the mean ± sd over the run's conversations"
        + (
            ", under it the 95 % bootstrap CI over "
            "tutorials"
            + ("<span class='ci-hint'> (on a narrow screen, tap the table to show them)</span>" if many else "")
            if ci
            else ""
        )
        + ". ↑ higher is better, ↓ lower is better."
    )
    if summary.baseline and summary.stats is not None and summary.stats.paired:
        text += (
            f" A ↑/↓ after a mean: against {e(summary.baseline)}, paired by tutorial (Wilcoxon, Holm across "
            "the metrics), p &lt; 0.05 (green: for the better, red: for the worse); ≈ = no significant "
            "difference."
        )
    elif summary.baseline:
        text += (
            f" A ↑/↓ after a mean: against {e(summary.baseline)} (the raw difference of the means; green: for "
            "the better, red: for the worse)."
        )
    elif best:
        text += (
            " <span class='best-key'>★ Bold on green</span>: the best run on that metric, better than every "
            "other run in a paired test by tutorial (Wilcoxon, Holm across the table's tests), p &lt; 0.05."
        )
    return f"<p class='meta'>{text}</p>"


def _run_label(row: dict[str, Any]) -> str:
    """A run's column head: its model label (a narrow column breaks it at spaces only, not at `T-`), and its
    run name under it where that says more."""
    e = html.escape
    if row["run"] == "Overall":
        return "Overall<small>mean ± sd over runs</small>"
    label = " ".join(f"<span class='w'>{e(w)}</span>" for w in row["label"].split())
    if row["run"].replace("_", " ") == row["label"].replace("_", " "):  # e.g. T-qwen2 L-qwen2 / T-qwen2_L-qwen2
        return label
    return f"{label}<small>{e(row['run'])}</small>"


def _metric_head(m: str, direction: dict[str, str], tracked: bool = False) -> str:
    """A metric's head: its name and better direction; with `tracked` (the runs' metrics were computed in the
    mode the validity was measured in), how far it tracked people."""

    e = html.escape
    up = direction.get(m) != "lower"
    return (
        f"{e(SHORT.get(m, m))} <span class='dir' title='{'higher' if up else 'lower'} is better'>"
        f"{'↑' if up else '↓'}</span>" + (_tracked_note(m) if tracked else "")
    )


def _validity_applies(run_tables: dict[str, Any]) -> bool:
    """The runs' metrics were all computed in the mode the measured validity is of (paper mode's METEOR is
    another definition than default mode's)."""
    try:
        mode = load_validity().mode
    except ValidityError:
        return False
    modes = {m for t in run_tables.values() for m in t.modes()}
    return modes == {mode}


def _tracked_note(m: str) -> str:
    """Under a metric's head: how far it tracked people where that was measured (data/metric_validity.json)."""
    e = html.escape
    try:
        v = load_validity().metrics.get(m)
    except ValidityError:
        return ""
    if v is None or v.within_r is None:
        return ""
    pairs = f", pairs {v.pair_share:.2f}" if v.pair_share is not None else ""
    return (
        f"<small class='tracked' title='{e(_validity_title())}: {e(v.short())}'>people: "
        f"r<sub>w</sub> {v.within_r:+.2f}{pairs}</small>"
    )


def _validity_title() -> str:
    try:
        val = load_validity()
    except ValidityError:
        return ""
    return f"measured on {val.study} ({val.measured}); {val.caveat}"


def _value_cell(row: dict[str, Any], m: str, best: dict[str, str], direction: dict[str, str]) -> str:

    e = html.escape
    mean, sd, n = row[m]
    if n == 0 or math.isnan(mean):
        return "<td class='num na'>–</td>"
    out = [f"<span class='m'>{mean:.2f}</span>"]
    if not math.isnan(sd):
        out.append(f"<span class='sd'>±{sd:.2f}</span>")
    arrow = row.get("arrows", {}).get(m)
    if arrow:  # against the baseline: green where the change is for the better, red where for the worse
        good = {"↑": "good", "↓": "bad"}.get(arrow, "")
        if good and direction.get(m) == "lower":
            good = "bad" if good == "good" else "good"
        out.append(f"<span class='arrow {good}'>{e(arrow)}</span>")
    lo, hi = row.get("ci", {}).get(m, (math.nan, math.nan))
    if not (math.isnan(lo) or math.isnan(hi)):
        out.append(f"<span class='ci'>[{lo:.2f}, {hi:.2f}]</span>")
    marked = best.get(m) == row["run"]
    if marked:
        out.insert(0, "<span class='star'>★</span>")
    tip = cell(row, m) + (" (best, significant)" if marked else "")
    return f"<td class='num{' best' if marked else ''}' title='{e(tip)}'>{''.join(out)}</td>"


def _metric_rows(
    rows: list[dict[str, Any]],
    groups: list[tuple[str, str, list[str]]],
    direction: dict[str, str],
    best: dict[str, str],
    many: bool,
    tracked: bool = False,
) -> str:
    """A row per metric, a column per run (few runs: the width grows with the runs, not the metrics)."""
    head = (
        "<tr><th>Metric</th>"
        + "".join(f"<th class='run'>{_run_label(r)}<small>n = {r['n']}</small></th>" for r in rows)
        + "</tr>"
    )
    body = []
    for name, scale, ms in groups:
        body.append(f"<tr class='group'><th colspan='{len(rows) + 1}'>{html.escape(name)}, {scale}</th></tr>")
        body += [
            f"<tr><th scope='row'>{_metric_head(m, direction, tracked)}</th>"
            + "".join(_value_cell(r, m, best, direction) for r in rows)
            + "</tr>"
            for m in ms
        ]
    return (
        f"<div class='scroll'><table class='summary metric-rows{' many' if many else ''}'><thead>{head}</thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _run_rows(
    rows: list[dict[str, Any]],
    groups: list[tuple[str, str, list[str]]],
    direction: dict[str, str],
    best: dict[str, str],
    many: bool,
    tracked: bool = False,
) -> str:
    """A row per run (many runs): the metrics as columns under their group's scale, one table per group."""
    out = []
    for name, scale, ms in groups:
        head = (
            f"<tr><th rowspan='2'>Run</th><th rowspan='2' class='num'>n</th>"
            f"<th colspan='{len(ms)}' class='group'>{html.escape(name)}, {scale}</th></tr>"
            "<tr>" + "".join(f"<th class='num'>{_metric_head(m, direction, tracked)}</th>" for m in ms) + "</tr>"
        )
        body = "".join(
            f"<tr><th scope='row'>{_run_label(r)}</th><td class='num'>{r['n']}</td>"
            + "".join(_value_cell(r, m, best, direction) for m in ms)
            + "</tr>"
            for r in rows
        )
        out.append(
            f"<div class='scroll'><table class='summary run-rows{' many' if many else ''}'><thead>{head}</thead>"
            f"<tbody>{body}</tbody></table></div>"
        )
    return "\n".join(out)


def short_number(x: str) -> str:
    """A CSV cell for the page: numbers with many digits rounded to 3 decimals."""
    try:
        v = float(x)
    except ValueError:
        return x
    return x if "." not in x or len(x.split(".")[1]) <= 3 else f"{v:.3f}"


METRIC_COLUMNS = (  # metric_alignment.csv's columns shown on the page: (column, head, its CI's columns)
    ("n", "n", None),
    ("pearson", "Pearson r", None),
    ("within", "within-tutorial r", ("within_ci_low", "within_ci_high")),
    ("partial", "partial r (length)", None),
    ("pair_share", "clear pairs ordered", ("pair_ci_low", "pair_ci_high")),
    ("note", "note", None),
)


def _metric_alignment_html(alignment: Path, problems: Problems) -> str:
    """Every metric against the people's Overall, as align sorted it (metric_alignment.csv), compactly."""
    path = alignment / METRIC_ALIGNMENT_CSV
    if not path.is_file():
        return ""
    try:
        rows = read_people_rows(path)
    except OutputReadError as exc:
        problems.add(f"{path}: cannot read ({exc.detail}); left out")
        return ""
    if not rows or "human_rubric" not in rows[0]:
        return ""
    head = rows[0]
    col = {h: i for i, h in enumerate(head)}
    if any(c not in col for c, _, ci in METRIC_COLUMNS) or "metric" not in col:
        problems.add(f"{path}: not align's {METRIC_ALIGNMENT_CSV} (columns missing); left out")
        return ""

    def cell(r: list[str], c: str, ci: tuple[str, str] | None) -> str:
        v = short_number(r[col[c]]) if col[c] < len(r) else ""
        if ci and all(x in col and col[x] < len(r) and r[col[x]] for x in ci):
            v += f" [{short_number(r[col[ci[0]]])}, {short_number(r[col[ci[1]]])}]"
        return v or "—"

    body = [["metric", *(h for _, h, _ in METRIC_COLUMNS)]]
    body += [
        [r[col["metric"]], *(cell(r, c, ci) for c, _, ci in METRIC_COLUMNS)]
        for r in rows[1:]
        if len(r) > col["human_rubric"] and r[col["human_rubric"]] == "Overall"
    ]
    return (
        f"<h3>Every metric against the people's Overall ({METRIC_ALIGNMENT_CSV}; every rubric in "
        f"{METRIC_ALIGNMENT_MD})</h3>" + csv_table(body)
    )


def copy_alignment(d: Path, alignment: Path, problems: Problems) -> str:

    e = html.escape
    target = d / "alignment"
    target.mkdir()
    parts = [
        "<section id='alignment'><h2>Judge vs human (alignment)</h2>",
        f"<p class='meta'>From <code>{e(str(alignment))}</code>.</p>",
    ]
    corr = alignment / CORRELATIONS_CSV
    rows: list[list[str]] = []
    if corr.is_file():
        try:
            rows = read_people_rows(corr)
        except OutputReadError as exc:
            problems.add(f"{exc}; the alignment section shows the figures only")
        parts.append(csv_table(rows))
    else:
        problems.add(f"{alignment}: no correlations.csv; the alignment section shows the figures only")
    parts.append(_metric_alignment_html(alignment, problems))
    for name, title in (
        (PEOPLE_ESTIMATE_CSV, "Estimated Overall (people): out of fold beside METEOR alone and the judge"),
        (CALIBRATION_CSV, "Calibration on the human ratings (align --calibrate; out of fold, GroupKFold by tutorial)"),
        (PPI_CSV, "Prediction-powered estimates of the human mean rating (align --ppi)"),
        (JUDGES_CSV, "Every judge beside the humans (Krippendorff's α with the judge as a rater)"),
    ):
        if (alignment / name).is_file():
            try:
                rows = read_people_rows(alignment / name)
            except OutputReadError as exc:
                problems.add(f"{alignment / name}: cannot read ({exc.detail}); left out")
                continue
            if rows:
                parts.append(f"<h3>{e(title)}</h3>" + csv_table(rows, short_number))
    captions = {
        SCORE_DISTRIBUTIONS_PNG: "Human vs LLM score distributions per model (Figs. 6/8)",
        CORRELATION_HEATMAP_PNG: "Correlation heatmap (Fig. 7)",
        METRIC_ALIGNMENT_PNG: "Every metric vs people: Pearson r per human rubric (Fig. 7 for every metric)",
        METRIC_ALIGNMENT_WITHIN_PNG: "Every metric vs people: within-tutorial r per human rubric",
        CALIBRATION_PNG: "Judge score vs human mean, with the isotonic calibration",
    }
    for png in sorted((alignment / FIGURES_DIR).glob("*.png")):
        try:
            if not png.is_file():
                raise IsADirectoryError(0, "not a file")
            shutil.copyfile(png, target / png.name)
        except OSError as exc:
            problems.add(f"{png}: {exc.strerror or 'cannot read'}; figure left out")
            continue
        cap = captions.get(png.name, png.stem.replace("_", " "))
        parts.append(
            f"<figure><img src='alignment/{e(png.name)}' alt='{e(cap)}'><figcaption>{e(cap)}</figcaption></figure>"
        )
    parts.append("</section>")
    return "\n".join(parts)
