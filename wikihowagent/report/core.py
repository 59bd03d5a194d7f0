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
from file:// may load scripts but not fetch files.
"""

from __future__ import annotations

import csv
import html
import importlib
import json
import math
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from wikihowagent.backends import is_embedded
from wikihowagent.errors import WikihowagentError
from wikihowagent.evaluation.calibrated import CalibrationMismatch, add_calibrated, calibrated_name, check, load
from wikihowagent.evaluation.judge import RubricError, load_rubrics
from wikihowagent.evaluation.metrics import COMPUTATIONAL_NAMES, WORDS, better
from wikihowagent.evaluation.significance import TableStats, best_runs
from wikihowagent.evaluation.summary import (
    PERCENT_METRICS,
    POSTTEST_METRICS,
    SHORT,
    RunScores,
    by_domain,
    cell,
    metric_order,
    summarize,
    write_figures,
)
from wikihowagent.evaluation.tables import paper_tables
from wikihowagent.records import ESTIMATE_NAME, Turn
from wikihowagent.runs import (
    BY_DOMAIN_PNG,
    CALIBRATION_CSV,
    CALIBRATION_JSON,
    CALIBRATION_PNG,
    CHECKLIST_WEIGHTS_JSON,
    COMPUTATIONAL_PNG,
    CONVERSATION_HTML,
    CONVERSATION_JS,
    CORRELATION_HEATMAP_PNG,
    CORRELATIONS_CSV,
    CORRELATIONS_MD,
    DOMAIN_BARS_PNG,
    FIGURES_DIR,
    INDEX_HTML,
    JUDGES_CSV,
    METRIC_ALIGNMENT_CSV,
    METRIC_ALIGNMENT_MD,
    METRIC_ALIGNMENT_PNG,
    METRIC_ALIGNMENT_WITHIN_PNG,
    PAGE_SUFFIX,
    PAIR_ORDER_CSV,
    PEOPLE_ESTIMATE_CSV,
    PPI_CSV,
    PROBLEMS_TXT,
    RADAR_COMPUTATIONAL_PNG,
    RADAR_RUBRICS_PNG,
    REPORT_ASSETS,
    REPORT_INDEX_JS,
    REPORT_JS,
    RUBRICS_PNG,
    SCORE_DISTRIBUTIONS_PNG,
    SUMMARY_MD,
    OutputReadError,
    read_people_rows,
)

from .figures import domain_bars, radar
from .head_to_head import CompareDirError, check_compare_dir, csv_table
from .measured import MeasuredError, load_measured
from .page import page
from .reading import reading_html
from .sources import Problems, ReportConversation, ReportRun, drop_out_of_range, load_inputs
from .validity import ValidityError, load_validity

CHUNK = 250
MARKER = ".wikihowagent-report"
ASSETS = REPORT_ASSETS
STATUSES = ("finished", "cut", "failed", "unknown")


class ReportError(WikihowagentError, ValueError):
    """The output cannot be written (e.g. the directory holds other files); one line."""


@dataclass
class ReportResult:
    out: Path
    runs: int
    conversations: int
    files: int
    bytes: int
    problems: list[str] = field(default_factory=list)


# The report's extra pages: modules of this package, each with `write_page(ctx: SiteContext) -> str` (writes its
# page(s) into ctx.d when its input was given, returns the overview's link to it, "" = no page). A new page is
# a module and its entry here.
PAGES: tuple[str, ...] = (".cases", ".head_to_head")


@dataclass
class SiteContext:
    """What a report page may use."""

    d: Path  # the site directory being written
    runs: list[ReportRun]
    convs: list[ReportConversation]
    chunk_of: dict[int, int]  # id(conversation) -> its data chunk (for links: conversation.html#chunk/id)
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
        return _short_number(x)


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
) -> ReportResult:
    """Read the runs and write the site to `out` (replaced as a whole; a directory that is not a previous
    report and holds files is refused). Raises ReportInputError / ReportError with one-line messages."""
    problems = problems or Problems()
    out = Path(out)
    _check_out(out)
    if alignment is not None:
        _check_alignment(Path(alignment))
    if compare is not None:
        try:
            check_compare_dir(Path(compare))
        except CompareDirError as exc:
            raise ReportError(str(exc)) from None
    cal = _load_calibration(calibration) if calibration is not None else None
    runs = load_inputs(paths, problems, on_record=on_record)
    if cal is not None and calibration is not None:  # cal is read from calibration
        _calibrate_runs(runs, cal, calibration, problems)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        n = _write_site(
            tmp,
            runs,
            problems,
            cases,
            Path(alignment) if alignment else None,
            on_chunk,
            Path(compare) if compare else None,
        )
        _swap_into_place(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    files = [p for p in out.rglob("*") if p.is_file()]
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


def _calibrate_runs(runs: list[ReportRun], cal: Any, path: Path, problems: Problems) -> None:
    """--calibration: each run's score table gains the `<rubric> (cal.)` columns (refused, as by `evaluate`,
    for scores of another judge or rubric file), range-checked as every stored score is."""

    for r in runs:
        try:
            check(cal, path, r.scores, f"run {r.name}")
        except CalibrationMismatch as exc:
            raise ReportError(str(exc)) from None
        r.scores = add_calibrated(r.scores, cal)
        drop_out_of_range(r.scores, problems, [calibrated_name(m) for m in cal.rubrics])
        ids = r.scores.meta["conversation_id"].tolist()
        for name in (calibrated_name(m) for m in cal.rubrics):
            if name not in r.scores.values:
                continue
            by_id = {cid: v for cid, v in zip(ids, r.scores.values[name].tolist(), strict=True) if math.isfinite(v)}
            for c in r.conversations:  # the browser and the conversation pages
                if c.conversation_id in by_id:
                    c.metrics[name] = round(by_id[c.conversation_id], 4)


def _check_out(out: Path) -> None:
    if not out.resolve().name or Path.cwd().is_relative_to(out.resolve()):  # it is replaced as a whole
        raise ReportError(
            f"--out {out}: the current directory (or one above it) cannot be the report directory; "
            "name a new one, e.g. --out report"
        )
    if out.exists() and not out.is_dir():
        raise ReportError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise ReportError(f"{out}: holds files that are not a wikihowagent report; choose another --out")


def _check_alignment(path: Path) -> None:
    if not path.is_dir():
        raise ReportError(f"{path}: no such alignment directory (an `wikihowagent align --out` directory)")
    if not (path / CORRELATIONS_CSV).is_file() and not list((path / FIGURES_DIR).glob("*.png")):
        raise ReportError(f"{path}: no correlations.csv and no figures/*.png (not an `align` output)")


def _swap_into_place(tmp: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------
# Metrics and the overview


def _metric_order(runs: list[ReportRun]) -> tuple[list[str], list[str]]:
    """(all metrics in display order, the rubric metrics among them)."""

    present = {k for r in runs for c in r.conversations for k in c.metrics}
    empty = {m for m in POSTTEST_METRICS if all(c.metrics.get(m) is None for r in runs for c in r.conversations)}
    try:  # the bundled rubric file's order (Table 5), then any other rubric by name
        known = list(load_rubrics())
    except (RubricError, OSError):  # only the column order depends on it
        known = []
    order = metric_order(present, known, empty)
    return order, [m for m in order if m not in PERCENT_METRICS]


def _run_scores(runs: list[ReportRun]) -> list[Any]:
    """The runs' rows of the score table, as `evaluate`'s summary reads them."""

    return [
        RunScores(
            name=r.name,
            label=r.model,
            path=r.path,
            table=r.scores,
            n_failed=sum(c.status == "failed" for c in r.conversations),
        )
        for r in runs
    ]


def _overview_rows(runs: list[ReportRun], rubrics: list[str]) -> list[dict[str, Any]]:
    rows = []
    for r in runs:
        cs = r.conversations
        judged = sum(r.scores.judged(rubrics))
        failed = sum(r.scores.failure_counts())
        rows.append(
            {
                "run": r.name,
                "model": r.model,
                "persona": r.persona or "–",
                "conversations": len(cs),
                **{s: sum(c.status == s for c in cs) for s in STATUSES},
                "tokens": sum(c.tokens for c in cs),
                "scored": sum(c.scored for c in cs),
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
    runs: list[ReportRun],
    problems: Problems,
    cases: int | None,
    alignment: Path | None,
    on_chunk: Callable[[], None] | None,
    compare: Path | None = None,
) -> int:
    (d / "assets").mkdir()
    (d / "data").mkdir()
    (d / FIGURES_DIR).mkdir()
    (d / MARKER).write_text("written by `wikihowagent report`; this directory is replaced as a whole\n")
    pkg = resources.files("wikihowagent.report") / "assets"
    for name in ASSETS:
        (d / "assets" / name).write_text(pkg.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    metrics, rubrics = _metric_order(runs)
    convs = [c for r in runs for c in r.conversations]
    chunk_of = {id(c): i // CHUNK for i, c in enumerate(convs)}
    n_chunks = _write_chunks(d, convs, chunk_of, metrics, on_chunk)
    _write_index_data(d, runs, convs, chunk_of, metrics, n_chunks)
    figures, tables = _write_figures(d, runs, metrics, rubrics, problems)
    align_html = _copy_alignment(d, alignment, problems) if alignment else ""
    ctx = SiteContext(d, runs, convs, chunk_of, metrics, rubrics, problems, cases=cases, compare=compare)
    links = [importlib.import_module(name, __package__).write_page(ctx) for name in PAGES]
    index = _index_html(runs, metrics, rubrics, figures, tables, align_html, " ".join(x for x in links if x), problems)
    (d / INDEX_HTML).write_text(index, encoding="utf-8")
    (d / CONVERSATION_HTML).write_text(_conversation_html(), encoding="utf-8")
    (d / PROBLEMS_TXT).write_text("".join(line + "\n" for line in problems.lines), encoding="utf-8")
    return len(convs)


def _write_chunks(
    d: Path,
    convs: list[ReportConversation],
    chunk_of: dict[int, int],
    metrics: list[str],
    on_chunk: Callable[[], None] | None,
) -> int:
    by_tutorial: dict[str, list[ReportConversation]] = {}
    for c in convs:
        if c.tutorial_id:
            by_tutorial.setdefault(c.tutorial_id, []).append(c)
    n_chunks = -(-len(convs) // CHUNK)
    for k in range(n_chunks):
        part = convs[k * CHUNK : (k + 1) * CHUNK]
        data = {}
        for c in part:
            others = [
                {"run": o.run, "id": o.conversation_id, "chunk": chunk_of[id(o)]}
                for o in by_tutorial.get(c.tutorial_id, [])
                if o is not c
            ]
            data[c.conversation_id] = _conversation_data(c, metrics, others)
        (d / "data" / f"conv-{k:04d}.js").write_text(
            f"reportChunk({k}, {json.dumps(data, ensure_ascii=False, separators=(',', ':'))});\n", encoding="utf-8"
        )
        if on_chunk:
            on_chunk()
    return n_chunks


_TURN_FIELDS = {"role", "text", "step", "kind", "prompt_tokens", "completion_tokens", "latency_s"}


def _turn_extra(t: Turn) -> dict[str, Any]:
    """A turn's other fields (e.g. the persona's intent, the manager's label, turn-check warnings), non-empty."""
    return {
        k: v
        for k, v in t.model_dump(mode="json").items()
        if k not in _TURN_FIELDS and v not in (None, "", [], {}, False)
    }


def _conversation_data(c: ReportConversation, metrics: list[str], others: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "run": c.run,
        "where": c.where,
        "tutorial_id": c.tutorial_id,
        "title": c.title,
        "method_title": c.method_title,
        "domain": c.domain,
        "steps": c.steps,
        "turns": [
            [
                t.role,
                t.text,
                t.step,
                t.kind,
                t.prompt_tokens,
                t.completion_tokens,
                round(t.latency_s, 3),
                _turn_extra(t),
            ]
            for t in c.turns
        ],
        "status": c.status,
        "error": c.error,
        "warnings": c.warnings,
        "teacher": c.teacher,
        "learner": c.learner,
        "persona": c.persona,
        "extra": c.extra,
        "missing": c.missing,
        "scored": c.scored,
        "metrics": [[m, c.metrics[m]] for m in metrics if m in c.metrics],
        "judge_raw": c.judge_raw,
        "judge_failures": c.judge_failures,
        "notes": c.notes,
        "score_extra": c.score_extra,
        "others": others,
        "checklist": c.checklist,
        "checklist_reading": c.checklist_reading,
        "posttest": c.posttest,
        "posttest_matches": c.posttest_matches,
    }


def _write_index_data(
    d: Path,
    runs: list[ReportRun],
    convs: list[ReportConversation],
    chunk_of: dict[int, int],
    metrics: list[str],
    n_chunks: int,
) -> None:

    run_names = [r.name for r in runs]
    models = sorted({r.model for r in runs})
    model_of = {r.name: r.model for r in runs}
    domains = sorted({c.domain or "(none)" for c in convs})
    personas = sorted({c.persona for c in convs if c.persona})
    ri, mi = {n: i for i, n in enumerate(run_names)}, {n: i for i, n in enumerate(models)}
    di, pi = {n: i for i, n in enumerate(domains)}, {n: i for i, n in enumerate(personas)}
    rows = []
    for c in convs:
        vals = []
        for m in metrics:
            v = c.metrics.get(m)
            vals.append(None if v is None or math.isnan(v) else round(v * (100.0 if m in PERCENT_METRICS else 1.0), 2))
        rows.append(
            [
                c.conversation_id,
                ri[c.run],
                mi[model_of[c.run]],
                di[c.domain or "(none)"],
                pi.get(c.persona, -1),
                STATUSES.index(c.status),
                c.title or c.method_title,
                chunk_of[id(c)],
                c.tokens,
                len(c.turns),
                vals,
            ]
        )
    data = {
        "runs": run_names,
        "models": models,
        "domains": domains,
        "personas": personas,
        "statuses": STATUSES,
        "metrics": metrics,
        "percent": [m in PERCENT_METRICS for m in metrics],
        "chunks": n_chunks,
        "rows": rows,
    }
    (d / "data" / REPORT_INDEX_JS).write_text(
        "window.REPORT_INDEX = " + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + ";\n", encoding="utf-8"
    )


def _write_figures(
    d: Path, runs: list[ReportRun], metrics: list[str], rubrics: list[str], problems: Problems
) -> tuple[list[tuple[str, str]], str]:
    """([(caption, relative path)] of the figures written, the HTML of Tables 1/2)."""
    scored = [r for r in runs if any(c.scored for c in r.conversations)]
    if not scored:
        problems.add("no run has scores: no tables or figures (run `wikihowagent evaluate` on the runs)")
        return [], ""
    rs = _run_scores(scored)
    comp = [m for m in metrics if m in PERCENT_METRICS]
    by_model: dict[str, list[ReportConversation]] = {}
    for r in scored:
        by_model.setdefault(r.model, []).extend(c for c in r.conversations if c.scored)
    out = _radar_figures(d, by_model, rubrics, comp)
    for path in write_figures(summarize(rs, rubrics), rubrics, d, by_domain(rs, rubrics)):  # all runs' bars
        caption = {
            RUBRICS_PNG: "Rubric means ± std per run (Table 2)",
            COMPUTATIONAL_PNG: "Computational metrics ± std per run (Table 1)",
            BY_DOMAIN_PNG: "Per-domain heatmap (Fig. 5)",
        }.get(path.name, path.name)
        out.append((caption, f"figures/{path.name}"))
    out += _domain_bar_figure(d, by_model, rubrics or comp, 1.0 if rubrics else 100.0, "1-5" if rubrics else "%")
    setups = {r.name: (r.teacher or r.model, r.learner or r.teacher or r.model) for r in scored}
    # as `evaluate --tables`: CIs over tutorials and paired arrows; the paper's raw arrows for paper-mode scores
    stats = TableStats(paired=not any("paper" in (r.mode or "") for r in scored))
    tables = paper_tables(rs, setups, rubrics, stats)
    return out, _summary_tables([(title, t) for _, title, t in tables], {r.name: r.table for r in rs})


def _radar_figures(
    d: Path, by_model: dict[str, list[ReportConversation]], rubrics: list[str], comp: list[str]
) -> list[tuple[str, str]]:
    """The radars of the rubric means (1-5) and of the computational metrics (%) per model."""

    def means(ms: list[str], scale: float) -> dict[str, dict[str, float]]:
        res: dict[str, dict[str, float]] = {}
        for model, cs in by_model.items():
            res[model] = {}
            for m in ms:
                vals = [v for c in cs if (v := c.metrics.get(m)) is not None]
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
    d: Path, by_model: dict[str, list[ReportConversation]], bar_metrics: list[str], scale: float, unit: str
) -> list[tuple[str, str]]:
    """The per-metric means per domain and model (Fig. 5), if any."""
    values: dict[str, dict[str, dict[str, float]]] = {}
    for m in bar_metrics:
        values[m] = {}
        for model, cs in by_model.items():
            per: dict[str, list[float]] = {}
            for c in cs:
                if (v := c.metrics.get(m)) is not None:
                    per.setdefault(c.domain or "(none)", []).append(v)
            values[m][model] = {k: scale * sum(v) / len(v) for k, v in per.items()}
    if domain_bars(values, bar_metrics, d / FIGURES_DIR / DOMAIN_BARS_PNG, unit):
        return [("Per-metric means per domain and model (Fig. 5)", f"{FIGURES_DIR}/{DOMAIN_BARS_PNG}")]
    return []


RUNS_AS_COLUMNS = 8  # up to this many columns (runs + Overall): a column per run and a row per metric


def _summary_tables(tables: list[tuple[str, Any]], run_tables: dict[str, Any]) -> str:
    """The paper's Table 1 (homogeneous runs) / Table 2 (heterogeneous, ↑/↓ against the teacher's homogeneous
    run) as `evaluate --tables` computes them, laid out to read at a glance: with few runs (the terminal's
    layout) a row per metric and a column per run, else a row per run; the metrics grouped by scale (% or
    1-5) with their better direction; each cell the mean (2 decimals, right-aligned), a small ± sd and, on
    a second small line, the 95 % bootstrap CI (the whole cell as a tooltip). Without a baseline (Table 1),
    the best run on a metric is marked where a paired test says it beats every other run
    (significance.best_runs). `run_tables`: run name -> its ScoreTable."""

    e = html.escape
    parts = []
    for title, summary in tables:
        parts.append(f"<h3>{e(title)}</h3>")
        groups = [
            (name, scale, ms)
            for name, scale, ms in (
                ("Computational metrics", "%", [m for m in summary.columns if m in PERCENT_METRICS]),
                (
                    "Other computational metrics",
                    "as stored (words, nats)",
                    [m for m in summary.columns if m in COMPUTATIONAL_NAMES and m not in PERCENT_METRICS],
                ),
                ("Predicted from metrics", "1–5", [m for m in summary.columns if m == ESTIMATE_NAME]),
                (
                    "Rubric scores (LLM judge)",
                    "1–5",
                    [
                        m
                        for m in summary.columns
                        if m not in PERCENT_METRICS and m not in COMPUTATIONAL_NAMES and m != ESTIMATE_NAME
                    ],
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


def _short_number(x: str) -> str:
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
        v = _short_number(r[col[c]]) if col[c] < len(r) else ""
        if ci and all(x in col and col[x] < len(r) and r[col[x]] for x in ci):
            v += f" [{_short_number(r[col[ci[0]]])}, {_short_number(r[col[ci[1]]])}]"
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


def _copy_alignment(d: Path, alignment: Path, problems: Problems) -> str:

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
                parts.append(f"<h3>{e(title)}</h3>" + csv_table(rows, _short_number))
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
    metrics: list[str],
    rubrics: list[str],
    figures: list[tuple[str, str]],
    tables: str,
    align_html: str,
    cases_link: str,
    problems: Problems,
) -> str:
    rows = _overview_rows(runs, rubrics)
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
        _metrics_trust_html(),
        _evidence_html(runs),
        f"<div id='summary-tables'>{tables}</div></section>",
        _figures_html(figures),
    ]
    if align_html:
        parts.append(align_html)
    parts.append(_browser_html())
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


def _pair_order_note(path: Path) -> str:
    """ "; head to head: ..." from `align`'s pair_order.csv beside correlations.csv ("" without one); its numbers
    are range-checked (a share in [0, 1], a count >= 1), else left out."""
    if not path.is_file():
        return ""
    with path.open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("metric") == "Overall"]
    if not rows:
        return ""
    acc, lo, hi, n = (float(rows[0][k]) for k in ("accuracy", "ci_low", "ci_high", "pairs"))
    if not (0.0 <= acc <= 1.0 and n >= 1 and n == int(n)):
        raise ValueError(f"{path}: Overall accuracy {acc} / pairs {n} out of range")
    ci = f" [{lo:.2f}, {hi:.2f}]" if 0.0 <= lo <= hi <= 1.0 else ""
    return f"; head to head: orders {acc:.2f}{ci} of the {int(n)} same-tutorial pairs the people clearly ordered"


EVIDENCE_DEPTH = 3  # how deep below a run directory judge-check / align outputs are looked for


def judge_evidence(run: ReportRun) -> list[str]:
    """What the run directory holds about its judge, one line each: judge-check results (summary.md of
    `judge-check --out`), alignment with people (correlations.csv of `align --out`), a calibration
    (calibration.json) and fitted checklist weights (checklist_weights.json) — each named by where it is."""
    root = Path(run.path)
    if not root.is_dir():
        return []
    found: list[str] = []
    files = sorted(p for p in root.rglob("*") if p.is_file() and len(p.relative_to(root).parts) <= EVIDENCE_DEPTH + 1)
    for p in files:
        rel = p.relative_to(root)
        try:
            if p.name == SUMMARY_MD:
                text = p.read_text(encoding="utf-8", errors="replace")
                if text.startswith("# judge-check: "):
                    title = text.splitlines()[0][len("# judge-check: ") :]
                    m = re.search(
                        r"(\d+) conversations; mean accuracy over the (\d+) targeted .*?\*\*([0-9.]+)\*\*", text
                    )
                    acc = (
                        f"mean accuracy {m.group(3)} over {m.group(2)} targeted cells, {m.group(1)} conversations"
                        if m
                        else "no accuracy line"
                    )
                    found.append(
                        f"judge-check ({rel.parent}/): {title}: {acc} (1 = always scores the original "
                        "above its damaged copy, 0.5 = chance)"
                    )
            elif p.name == CORRELATIONS_CSV and (p.parent / CORRELATIONS_MD).exists():
                with p.open(encoding="utf-8") as fh:
                    rows = [r for r in csv.DictReader(fh) if r.get("metric") == "Overall" and r.get("by") == "all"]
                if rows and rows[0].get("pearson_r") not in (None, ""):
                    r = rows[0]
                    ci = (
                        f" [{float(r['pearson_ci_low']):+.2f}, {float(r['pearson_ci_high']):+.2f}]"
                        if r.get("pearson_ci_low") not in (None, "")
                        else ""
                    )
                    found.append(
                        f"align ({rel.parent}/): Overall Pearson r with the people {float(r['pearson_r']):+.2f}"
                        f"{ci}, n {r.get('n', '?')}" + _pair_order_note(p.parent / PAIR_ORDER_CSV)
                    )
            elif p.name == CALIBRATION_JSON:
                cal = json.loads(p.read_text(encoding="utf-8"))
                oof = cal.get("out_of_fold") or {}
                parts = [
                    f"{m} r {v.get('raw_r', float('nan')):+.2f} -> {v.get('calibrated_r', float('nan')):+.2f}"
                    for m, v in oof.items()
                    if isinstance(v, dict)
                ]
                found.append(
                    f"calibration ({rel}): {cal.get('method', '?')} for judge {cal.get('judge') or '?'} "
                    f"({cal.get('scoring') or 'json'}); out of fold: " + ("; ".join(parts) or "–")
                )
            elif p.name == CHECKLIST_WEIGHTS_JSON:
                w = json.loads(p.read_text(encoding="utf-8"))
                found.append(
                    f"checklist weights ({rel}): fitted for judge {w.get('judge', '?')}, checklist "
                    f"{w.get('checklist', '?')}"
                )
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            found.append(f"{rel}: unreadable, left out")
    return found


def _measured_html(runs: list[ReportRun]) -> list[str]:
    """Per run (in order): for the embedded judge its measured figures (wikihowagent/data/embedded_judge.json, from
    BENCHMARKS.md, read once when any run was judged by it), this run's scoring mode first; "" for another judge.
    An unreadable figures file: one line saying so."""
    embedded = [bool(r.evaluator) and is_embedded(r.evaluator) for r in runs]
    if not any(embedded):
        return [""] * len(runs)
    try:
        figures = load_measured()
        lines = [figures.lines(r.scoring) if emb else [] for r, emb in zip(runs, embedded, strict=True)]
    except MeasuredError as exc:
        lines = [[f"the embedded judge's measured figures are not available: {exc}"]] * len(runs)
    return [
        "<ul class='measured'>" + "".join(f"<li>{html.escape(x)}</li>" for x in ls) + "</ul>" if emb else ""
        for emb, ls in zip(embedded, lines, strict=True)
    ]


def _metrics_trust_html() -> str:
    """ "How far to trust the metrics": the metrics measured to track people first (their within-tutorial r
    and clear-pair share on the human study, and how often they prefer an original to a damaged copy), then
    those that did not, with the study's caveat (data/metric_validity.json)."""
    e = html.escape
    try:
        val = load_validity()
    except ValidityError as exc:
        return (
            "<h2 id='trust-metrics'>How far to trust the metrics</h2>"
            f"<p class='meta'>The metrics' measured validity is not available: {e(str(exc))}</p>"
        )
    ranked = [(m, v) for m, v in val.ranked() if m != WORDS]
    tracked = [(m, v) for m, v in ranked if v.tracked]
    others = [m for m, v in ranked if not v.tracked and v.within_r is not None]
    items = "".join(f"<li><b>{e(m)}</b>: {e(v.short())}</li>" for m, v in tracked)
    base = val.metrics.get(WORDS)
    if base is not None:
        items += f"<li>the baseline, conversation length ({e(WORDS)}): {e(base.short())}</li>"
    return (
        "<h2 id='trust-metrics'>How far to trust the metrics</h2>"
        f"<p>Measured against people on {e(val.study)} ({e(val.measured)}), the people's {e(val.target)} rating: "
        "the within-tutorial r (which of one tutorial's conversations is better; 95 % CI resampling tutorials) "
        "and the share of the clear same-tutorial pairs ordered as the people did. These tracked people "
        "(the CI of r above 0), best first:</p>"
        f"<ul class='evidence'>{items or '<li>none</li>'}</ul>"
        + (f"<p>Not clearly: {e(', '.join(others))}.</p>" if others else "")
        + f"<p class='meta'>Caveat: {e(val.caveat)}. Measure your own: <code>wikihowagent align</code> "
        f"on your human study writes {METRIC_ALIGNMENT_MD}.</p>"
    )


def _evidence_html(runs: list[ReportRun]) -> str:
    """The overview's "How far to trust the judge": per run its judge and scoring mode, and the evidence the
    run directory holds about that judge, or that none was measured and how to measure it."""
    e = html.escape
    items = []
    for r, measured in zip(runs, _measured_html(runs), strict=True):
        judge = r.evaluator or "–"
        head = f"<b>{e(r.name)}</b>: judge {e(judge)}, scoring {e(r.scoring or '–')}"
        ev = judge_evidence(r)
        if ev:
            items.append(f"<li>{head}<ul>" + "".join(f"<li>{e(x)}</li>" for x in ev) + "</ul>" + measured + "</li>")
            continue
        # a paper run file's outputs go beside it (FILE's stem as a folder), a run directory's inside it
        beside = r.path if r.path.is_dir() else r.path.parent / r.path.stem
        q = shlex.quote
        how = (
            f"wikihowagent judge-check {q(str(r.path))} --out {q(str(beside / 'judge-check'))}"
            + (f" --judge-scoring {r.scoring.split('+')[0]}" if r.scoring and "," not in r.scoring else "")
            + f"; with human ratings: wikihowagent align -H SHEET.csv --scores {q(str(r.path))}"
            f" --out {q(str(beside / 'alignment'))}"
        )
        items.append(
            f"<li>{head}: no evidence about this judge was measured in this run directory. Measure it: "
            f"<code>{e(how)}</code>.{measured}</li>"
        )
    if not items:
        return ""
    return "<h2 id='trust'>How far to trust the judge</h2><ul class='evidence'>" + "".join(items) + "</ul>"


def _browser_html() -> str:
    return """<section id='browser'><h2>Conversations</h2>
<form id='filters' onsubmit='return false'>
<label>Run <select id='f-run'><option value=''>all</option></select></label>
<label>Model <select id='f-model'><option value=''>all</option></select></label>
<label>Domain <select id='f-domain'><option value=''>all</option></select></label>
<label id='l-persona'>Persona <select id='f-persona'><option value=''>all</option></select></label>
<label>Status <select id='f-status'><option value=''>all</option></select></label>
<label>Metric <select id='f-metric'><option value=''>–</option></select></label>
<label>min <input id='f-min' type='number' step='any' size='5'></label>
<label>max <input id='f-max' type='number' step='any' size='5'></label>
<label>Search <input id='f-text' type='search' placeholder='title, domain or id'></label>
</form>
<p id='count' class='meta'></p>
<div class='scroll'><table id='conv-table'><thead></thead><tbody></tbody></table></div>
<p id='pager'><button id='prev' type='button'>‹ previous</button> <span id='page'></span>
<button id='next' type='button'>next ›</button></p>
<p class='meta'>Click a column head to sort (again to reverse). Computational metrics in %, rubric metrics 1-5;
– = not computable or not judged.</p>
</section>"""


def _conversation_html() -> str:
    body = """<nav><b>wikihowagent report</b> <a href='index.html#browser'>‹ all conversations</a></nav>
<main id='conversation'><p class='meta' id='loading'>Loading…</p></main>"""
    return page("Conversation", body, [f"assets/{CONVERSATION_JS}"])
