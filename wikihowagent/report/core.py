"""Build the static report site of one or more runs.

Layout of the output directory (opens from file://, no server, no network):

    index.html           overview, Table 1/2, figures, the conversation browser
    conversation.html    one conversation: `conversation.html#<chunk>/<conversation_id>`
    cases.html/.md       with `--cases N`: best and worst conversations per metric
    assets/              the page's CSS and JavaScript (bundled with the package)
    data/index.js        one row per conversation for the browser table
    data/conv-NNNN.js    the conversations themselves, in chunks of CHUNK (loaded on demand)
    figures/*.png        matplotlib figures; alignment/ with `--alignment DIR`
    problems.txt         what is missing or was left out, one line each

Data files are JavaScript (`window.REPORT_INDEX = ...`, `reportChunk(n, ...)`), not JSON: a page opened
from file:// may load scripts but not fetch files (Chromium refuses fetch() and XMLHttpRequest of file:// URLs).

Memory stays bounded whatever the number of conversations: each run's scores are read, then its records are
streamed once (`sources.load_inputs`) into a `store.ConversationStore` (the table's columns in memory, each
conversation's text in a spool file beside --out), and the chunks are written from it one conversation at a
time.
"""

from __future__ import annotations

import html
import importlib
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.errors import WikihowagentError
from wikihowagent.judge.calibrated import CalibrationMismatch, add_calibrated, calibrated_name, check, load
from wikihowagent.judge.rubric_judge import RubricError, load_rubrics
from wikihowagent.layout import (
    BY_DOMAIN_PNG,
    COMPUTATIONAL_PNG,
    CONVERSATION_HTML,
    CORRELATIONS_CSV,
    DOMAIN_BARS_PNG,
    FIGURES_DIR,
    INDEX_HTML,
    PAGE_SUFFIX,
    PROBLEMS_TXT,
    RADAR_COMPUTATIONAL_PNG,
    RADAR_RUBRICS_PNG,
    REPORT_ASSETS,
    REPORT_INDEX_JS,
    REPORT_JS,
    RUBRICS_PNG,
)
from wikihowagent.metrics.computational import percent_metrics
from wikihowagent.outdir import StagedDir, check_replaceable
from wikihowagent.registry import Registry
from wikihowagent.scores.paper_tables import paper_tables
from wikihowagent.scores.significance import TableStats
from wikihowagent.scores.summary import (
    POSTTEST_METRICS,
    RunScores,
    by_domain,
    metric_order,
    summarize,
    write_figures,
)

from .browser_data import MetricValues, write_chunks, write_index_data
from .evidence import browser_html, conversation_html, evidence_html, metrics_trust_html
from .figures import domain_bars, radar
from .head_to_head import CompareDirError, check_compare_dir
from .page import page
from .reading import reading_html
from .sources import Loaded, Problems, ReportRun, drop_out_of_range, load_inputs
from .store import STATUSES, ConversationStore
from .tables import copy_alignment, short_number, summary_tables

ASSETS = REPORT_ASSETS
TOOL = "report"  # as the manifest of --out names the command (outdir.StagedDir)


class ReportError(WikihowagentError, ValueError):
    """An --alignment, --compare or --calibration input the report cannot use; one line. (An unusable --out is
    an outdir.OutputDirError.)"""


@dataclass
class ReportResult:
    out: Path
    runs: int
    conversations: int
    files: int
    bytes: int
    problems: list[str] = field(default_factory=list)


# A report page writer: `write_page(ctx: SiteContext) -> str` writes its page(s) into ctx.d when its input was
# given and returns the overview's link to it ("" = no page).
PageWriter = Callable[["SiteContext"], str]


def module_page(module: str) -> PageWriter:
    """The `write_page` of a module of this package, imported when the site is written."""
    return lambda ctx: importlib.import_module(module, __package__).write_page(ctx)


# The report's extra pages, by name (`<name>.html`, `SiteContext.page_path`), in the overview's order. A new page
# is a module with `write_page` and its entry here (or `PAGES.add(name, writer)` at run time).
PAGES: Registry[PageWriter] = Registry(
    "report page", {"cases": module_page(".cases"), "head_to_head": module_page(".head_to_head")}
)


@dataclass
class SiteContext:
    """What a report page may use."""

    d: Path  # the site directory being written
    runs: list[ReportRun]
    convs: ConversationStore  # every conversation: convs.chunk(i) is its data chunk (conversation.html#chunk/id)
    values: MetricValues  # their metrics (values.value(i, metrics.index(m)))
    metrics: list[str]  # every metric, display order
    rubrics: list[str]
    problems: Problems
    cases: int | None = None  # --cases N
    compare: Path | None = None  # --compare DIR

    def page_path(self, name: str) -> Path:
        """The file of page `name` (`<name>.html`), for a page whose name is its module's."""
        return self.d / f"{name}{PAGE_SUFFIX}"

    @staticmethod
    def short_number(x: str) -> str:
        return short_number(x)


def build_report(
    paths: list[Path],
    out: Path,
    *,
    cases: int | None = None,
    alignment: Path | None = None,
    problems: Problems | None = None,
    on_record: Callable[[], None] | None = None,
    on_chunk: Callable[[], None] | None = None,
    calibration: Path | None = None,
    compare: Path | None = None,
    workers: int = 1,
) -> ReportResult:
    """Read the runs and write the site to `out`, replaced as a whole (outdir.StagedDir: a folder holding
    anything the report did not write, or being, holding or inside an input, is refused). Raises
    ReportInputError / ReportError / outdir.OutputDirError with one-line messages. `workers`: runs read at once
    (`sources.load_inputs`)."""
    problems = problems or Problems()
    out = Path(out)
    if alignment is not None:
        _check_alignment(Path(alignment))
    if compare is not None:
        try:
            check_compare_dir(Path(compare))
        except CompareDirError as exc:
            raise ReportError(str(exc)) from None
    given = [Path(p) for p in (*paths, alignment, calibration, compare) if p is not None]
    check_replaceable(out, TOOL, inputs=given)  # before the runs are read
    cal = _load_calibration(calibration) if calibration is not None else None
    late = Problems()  # the calibrated columns' problems, said after every run's
    calibrate = partial(_calibrate, cal=cal, path=calibration, problems=late) if calibration is not None else None
    out.resolve().parent.mkdir(parents=True, exist_ok=True)
    loaded = load_inputs(
        paths, problems, on_record=on_record, spool_dir=out.resolve().parent, calibrate=calibrate, workers=workers
    )
    problems.lines += late.lines
    runs = loaded.runs
    # the runs as found below the given paths (a sweep's cells may be symlinks to elsewhere)
    try:
        with StagedDir(out, TOOL, inputs=[*given, *(Path(r.path) for r in runs)]) as staged:
            n = _write_site(
                staged.tmp,
                loaded,
                problems,
                cases,
                Path(alignment) if alignment else None,
                on_chunk,
                Path(compare) if compare else None,
            )
            files = staged.commit()
    finally:
        loaded.store.close()
    return ReportResult(
        out=out,
        runs=len(runs),
        conversations=n,
        files=len(files),
        bytes=sum(p.stat().st_size for p in files),
        problems=list(problems.lines),
    )


def _load_calibration(path: Path) -> Any:

    try:
        return load(path)
    except CalibrationMismatch as exc:
        raise ReportError(str(exc)) from None


def _calibrate(run: ReportRun, cal: Any, path: Path, problems: Problems) -> None:
    """--calibration: the run's score table gains the `<rubric> (cal.)` columns (refused, as by `evaluate`, for
    scores of another judge or rubric file), range-checked as every stored score is; the browser and the
    conversation pages show their finite values."""

    try:
        check(cal, path, run.scores, f"run {run.name}")
    except CalibrationMismatch as exc:
        raise ReportError(str(exc)) from None
    run.scores = add_calibrated(run.scores, cal)
    drop_out_of_range(run.scores, problems, [calibrated_name(m) for m in cal.rubrics])
    run.calibrated = [n for n in (calibrated_name(m) for m in cal.rubrics) if n in run.scores.values]


def _check_alignment(path: Path) -> None:
    if not path.is_dir():
        raise ReportError(f"{path}: no such alignment directory (an `wikihowagent align --out` directory)")
    if not (path / CORRELATIONS_CSV).is_file() and not list((path / FIGURES_DIR).glob("*.png")):
        raise ReportError(f"{path}: no correlations.csv and no figures/*.png (not an `align` output)")


# ------------------------------------------------------------------------------------------------------
# Metrics and the overview


def _metric_order(runs: list[ReportRun]) -> tuple[list[str], list[str]]:
    """(all metrics in display order, the rubric metrics among them): those some conversation has (a calibrated
    column where it has a finite value); a post-test metric without any value is left out."""

    present: set[str] = set()
    valued: set[str] = set()
    for r in runs:
        t = r.scores
        for m in t.values.columns:
            col = t.values[m]
            has = np.isfinite(col) if m in r.calibrated else t.present[m]
            if has.any():
                present.add(m)
            if (has & col.notna()).any():
                valued.add(m)
    empty = {m for m in POSTTEST_METRICS if m not in valued}
    try:  # the bundled rubric file's order (Table 5), then any other rubric by name
        known = list(load_rubrics())
    except (RubricError, OSError):  # only the column order depends on it
        known = []
    order = metric_order(present, known, empty)
    return order, [m for m in order if m not in percent_metrics()]


def _count(store: ConversationStore, r: ReportRun, status: str) -> int:
    code = STATUSES.index(status)
    return sum(1 for i in r.rows if store.status[i] == code)


def _run_scores(runs: list[ReportRun], store: ConversationStore) -> list[RunScores]:
    """The runs' rows of the score table, as `evaluate`'s summary reads them."""

    return [
        RunScores(name=r.name, label=r.model, path=r.path, table=r.scores, n_failed=_count(store, r, "failed"))
        for r in runs
    ]


def _overview_rows(runs: list[ReportRun], store: ConversationStore, rubrics: list[str]) -> list[dict[str, Any]]:
    rows = []
    for r in runs:
        judged = sum(r.scores.judged(rubrics))
        failed = sum(r.scores.failure_counts())
        rows.append(
            {
                "run": r.name,
                "model": r.model,
                "persona": r.persona or "–",
                "conversations": len(r.rows),
                **{s: _count(store, r, s) for s in STATUSES},
                "tokens": sum(store.tokens[i] for i in r.rows),
                "scored": sum(1 for i in r.rows if store.score_row[i] >= 0),
                "evaluator": r.evaluator or "–",
                "mode": r.mode or "–",
                "scoring": r.scoring or "–",
                "parse_failures": (f"{100.0 * failed / judged:.2f} % ({failed} of {judged})" if judged else "–"),
            }
        )
    return rows


# ------------------------------------------------------------------------------------------------------
# Writing the site


def _write_site(
    d: Path,
    loaded: Loaded,
    problems: Problems,
    cases: int | None,
    alignment: Path | None,
    on_chunk: Callable[[], None] | None,
    compare: Path | None = None,
) -> int:
    runs, store = loaded.runs, loaded.store
    (d / "assets").mkdir()
    (d / "data").mkdir()
    (d / FIGURES_DIR).mkdir()
    pkg = resources.files("wikihowagent.report") / "assets"
    for name in ASSETS:
        (d / "assets" / name).write_text(pkg.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    metrics, rubrics = _metric_order(runs)
    values = MetricValues(runs, store, metrics)
    scored = [r for r in runs if any(store.score_row[i] >= 0 for i in r.rows)]
    with ThreadPoolExecutor(1, thread_name_prefix="report-tables") as pool:
        # Tables 1/2 beside the chunks and figures: their bootstrap is numpy, which lets the writing run
        rs = _run_scores(scored, store)
        tables_html = pool.submit(_tables_html, scored, rs, rubrics)
        n_chunks = write_chunks(d, runs, store, values, on_chunk)
        write_index_data(d, runs, store, values, n_chunks)
        figures = _write_figures(d, scored, rs, store, values, rubrics, problems)
        tables = tables_html.result()
    align_html = copy_alignment(d, alignment, problems) if alignment else ""
    ctx = SiteContext(d, runs, store, values, metrics, rubrics, problems, cases=cases, compare=compare)
    links = [write_page(ctx) for _, write_page in PAGES.items()]
    overview = _overview_rows(runs, store, rubrics)
    index = _index_html(runs, overview, metrics, figures, tables, align_html, " ".join(x for x in links if x), problems)
    (d / INDEX_HTML).write_text(index, encoding="utf-8")
    (d / CONVERSATION_HTML).write_text(conversation_html(), encoding="utf-8")
    (d / PROBLEMS_TXT).write_text("".join(line + "\n" for line in problems.lines), encoding="utf-8")
    return len(store)


def _write_figures(
    d: Path,
    scored: list[ReportRun],
    rs: list[RunScores],
    store: ConversationStore,
    values: MetricValues,
    rubrics: list[str],
    problems: Problems,
) -> list[tuple[str, str]]:
    """[(caption, relative path)] of the figures written of the `scored` runs (those with scores; `rs`: their
    score tables)."""
    if not scored:
        problems.add("no run has scores: no tables or figures (run `wikihowagent evaluate` on the runs)")
        return []
    comp = [m for m in values.metrics if m in percent_metrics()]
    by_model: dict[str, list[int]] = {}  # model -> its scored conversations
    for r in scored:
        by_model.setdefault(r.model, []).extend(i for i in r.rows if store.score_row[i] >= 0)
    out = _radar_figures(d, by_model, values, rubrics, comp)
    for path in write_figures(summarize(rs, rubrics), rubrics, d, by_domain(rs, rubrics)):  # all runs' bars
        caption = {
            RUBRICS_PNG: "Rubric means ± std per run (Table 2)",
            COMPUTATIONAL_PNG: "Computational metrics ± std per run (Table 1)",
            BY_DOMAIN_PNG: "Per-domain heatmap (Fig. 5)",
        }.get(path.name, path.name)
        out.append((caption, f"figures/{path.name}"))
    bar_metrics, scale, unit = (rubrics, 1.0, "1-5") if rubrics else (comp, 100.0, "%")
    out += _domain_bar_figure(d, by_model, store, values, bar_metrics, scale, unit)
    return out


def _tables_html(scored: list[ReportRun], rs: list[RunScores], rubrics: list[str]) -> str:
    """The HTML of Tables 1/2 of the `scored` runs (those with scores), as `evaluate --tables` computes them: CIs
    over tutorials and paired arrows; the paper's raw arrows for paper-mode scores."""
    if not scored:
        return ""
    setups = {r.name: (r.teacher or r.model, r.learner or r.teacher or r.model) for r in scored}
    stats = TableStats(paired=not any("paper" in (r.mode or "") for r in scored))
    tables = paper_tables(rs, setups, rubrics, stats)
    return summary_tables([(title, t) for _, title, t in tables], {r.name: r.table for r in rs})


def _radar_figures(
    d: Path, by_model: dict[str, list[int]], values: MetricValues, rubrics: list[str], comp: list[str]
) -> list[tuple[str, str]]:
    """The radars of the rubric means (1-5) and of the computational metrics (%) per model."""

    def means(ms: list[str], scale: float) -> dict[str, dict[str, float]]:
        res: dict[str, dict[str, float]] = {}
        for model, convs in by_model.items():
            res[model] = {}
            for m in ms:
                vals = values.present(convs, m)
                res[model][m] = scale * sum(vals) / len(vals) if vals else math.nan
        return res

    out = []
    title = "Rubric means per model (1-5)"
    if radar(means(rubrics, 1.0), rubrics, d / FIGURES_DIR / RADAR_RUBRICS_PNG, title, rmax=5.0, rmin=1.0):
        out.append(("Radar: rubric means per model (Figs. 3-4)", f"{FIGURES_DIR}/{RADAR_RUBRICS_PNG}"))
    title = "Computational metrics per model (%)"
    if radar(means(comp, 100.0), comp, d / FIGURES_DIR / RADAR_COMPUTATIONAL_PNG, title, rmax=100.0):
        out.append(("Radar: computational metrics per model (%)", f"{FIGURES_DIR}/{RADAR_COMPUTATIONAL_PNG}"))
    return out


def _domain_bar_figure(
    d: Path,
    by_model: dict[str, list[int]],
    store: ConversationStore,
    values: MetricValues,
    bar_metrics: list[str],
    scale: float,
    unit: str,
) -> list[tuple[str, str]]:
    """The per-metric means per domain and model (Fig. 5), if any."""
    means: dict[str, dict[str, dict[str, float]]] = {}
    for m in bar_metrics:
        j = values.metrics.index(m)
        means[m] = {}
        for model, convs in by_model.items():
            per: dict[str, list[float]] = {}
            for i, v in zip(convs, values.matrix()[np.asarray(convs, dtype=np.int64), j].tolist(), strict=True):
                if not math.isnan(v):
                    per.setdefault(store.domain[i] or "(none)", []).append(v)
            means[m][model] = {k: scale * sum(v) / len(v) for k, v in per.items()}
    if domain_bars(means, bar_metrics, d / FIGURES_DIR / DOMAIN_BARS_PNG, unit):
        return [("Per-metric means per domain and model (Fig. 5)", f"{FIGURES_DIR}/{DOMAIN_BARS_PNG}")]
    return []


# ------------------------------------------------------------------------------------------------------
# HTML


# the overview's table of runs: (column head, key of `_overview_rows`), and which columns are numbers
OVERVIEW_COLUMNS = [
    ("Run", "run"),
    ("Model", "model"),
    ("Persona", "persona"),
    ("Conversations", "conversations"),
    ("Finished", "finished"),
    ("Cut", "cut"),
    ("Failed", "failed"),
    ("Tokens", "tokens"),
    ("Scored", "scored"),
    ("Judge", "evaluator"),
    ("Mode", "mode"),
    ("Judge scoring", "scoring"),
    ("Judge parse failures", "parse_failures"),
]
NUMERIC_COLUMNS = {"conversations", "finished", "cut", "failed", "tokens", "scored"}
PROBLEMS_SHOWN = 500  # lines of problems.txt on the page


def _index_html(
    runs: list[ReportRun],
    rows: list[dict[str, Any]],
    metrics: list[str],
    figures: list[tuple[str, str]],
    tables: str,
    align_html: str,
    cases_link: str,
    problems: Problems,
) -> str:
    nav = (
        "<nav><b>wikihowagent report</b> <a href='#overview'>Overview</a> <a href='#figures'>Figures</a> "
        "<a href='#browser'>Conversations</a>"
        + (" <a href='#alignment'>Alignment</a>" if align_html else "")
        + (f" {cases_link}" if cases_link else "")
        + (" <a href='#problems'>Missing</a>" if problems.lines else "")
        + "</nav>"
    )
    n = sum(r["conversations"] for r in rows)
    parts = [
        nav,
        "<main>",
        "<section id='overview'><h1>Runs</h1>",
        f"<p class='meta'>{len(runs)} run(s), {n} conversations, {len(metrics)} metrics.</p>",
        _runs_table(rows),
        reading_html(runs),
        metrics_trust_html(),
        evidence_html(runs),
        f"<div id='summary-tables'>{tables}</div></section>",
        _figures_html(figures),
    ]
    if align_html:
        parts.append(align_html)
    parts.append(browser_html())
    if problems.lines:
        parts.append(_problems_html(problems.lines))
    parts.append("</main>")
    return page("wikihowagent report", "\n".join(parts), [f"data/{REPORT_INDEX_JS}", f"assets/{REPORT_JS}"])


def _runs_table(rows: list[dict[str, Any]]) -> str:
    """The overview's table of runs (OVERVIEW_COLUMNS); data-label: a phone shows each run as a card of
    "head: value" lines (report.css)."""
    e = html.escape

    def num(k: str) -> str:
        return " class=num" if k in NUMERIC_COLUMNS else ""

    return (
        "<div class='scroll'><table id='runs' class='summary'><thead><tr>"
        + "".join(f"<th{num(k)}>{h}</th>" for h, k in OVERVIEW_COLUMNS)
        + "</tr></thead><tbody>"
        + "".join(
            "<tr>" + "".join(f"<td data-label='{h}'{num(k)}>{e(str(r[k]))}</td>" for h, k in OVERVIEW_COLUMNS) + "</tr>"
            for r in rows
        )
        + "</tbody></table></div>"
    )


def _figures_html(figures: list[tuple[str, str]]) -> str:
    e = html.escape
    parts = ["<section id='figures'><h2>Figures</h2>"]
    if figures:
        parts += [
            f"<figure><img src='{e(p)}' alt='{e(c)}'><figcaption>{e(c)}</figcaption></figure>" for c, p in figures
        ]
    else:
        parts.append("<p class='meta'>No figures: no run has scores.</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _problems_html(lines: list[str]) -> str:
    e = html.escape
    more = len(lines) - PROBLEMS_SHOWN
    return (
        "<section id='problems'><h2>What is missing</h2><ul class='problems'>"
        + "".join(f"<li>{e(p)}</li>" for p in lines[:PROBLEMS_SHOWN])
        + "</ul>"
        + (f"<p class='meta'>… and {more} more in problems.txt</p>" if more > 0 else "")
        + "</section>"
    )
