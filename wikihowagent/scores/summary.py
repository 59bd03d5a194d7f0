"""Summaries of scores.jsonl files: the paper's Table 1 / Table 2 views, the per-domain breakdown
(Figure 5) and figures (Figures 3/4/5). pandas and matplotlib are imported inside the functions."""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.csvcells import people_csv
from wikihowagent.judge.calibrated import calibrated_name
from wikihowagent.layout import (
    BY_DOMAIN_PNG,
    CALIBRATED_SCORES_CSV,
    COMPUTATIONAL_PNG,
    FIGURES_DIR,
    RUBRICS_PNG,
    SUMMARY_CSV,
    SUMMARY_MD,
)
from wikihowagent.markdown import markdown_table, markdown_text
from wikihowagent.metrics.computational import (
    BERTSCORE,
    BLEU,
    COMPLETION,
    DIVERSITY,
    ECHO_RATE,
    EMBEDDING_COSINE,
    METEOR,
    POSTTEST_METRICS,
    QUESTION,
    ROUGE,
    ROUGE1,
    ROUGE2,
    ROUGEL,
    STEP_COVERAGE,
    percent_metrics,
)
from wikihowagent.runs import read_score_table
from wikihowagent.scoretable import ScoreTable

from .significance import TableStats, cell_ci, qualify, values_ci

# Column order: the paper's Table 1 order first, then ours.
ORDER = [
    BERTSCORE,
    EMBEDDING_COSINE,
    BLEU,
    METEOR,
    ROUGE,
    ROUGE1,
    ROUGE2,
    ROUGEL,
    DIVERSITY,
    QUESTION,
    COMPLETION,
    STEP_COVERAGE,
    ECHO_RATE,
    *POSTTEST_METRICS,
]
SHORT = {QUESTION: "Question", EMBEDDING_COSINE: "Emb. Cosine"}


@dataclass
class RunScores:
    """One run's rows of the score table (`wikihowagent.scoretable`) and how the tables name it."""

    name: str
    label: str
    path: Path
    table: ScoreTable = field(default_factory=ScoreTable.empty)
    n_failed: int | None = None  # failed conversations skipped (known when scored in this process)
    n_invalid: int | None = None


def load_run_scores(name: str, label: str, path: Path, **kw: Any) -> RunScores:
    """A scores file (or run directory) as a RunScores, read by `wikihowagent.runs.read_score_table`."""
    return RunScores(name=name, label=label, path=path, table=read_score_table(path, run=name), **kw)


def write_calibrated(runs: list[RunScores], calibration: Any, out_dir: Path) -> Path:
    """Per conversation: run, id, tutorial, and each calibrated rubric's score and `<rubric> (cal.)`."""
    import pandas as pd

    cols = [c for m in calibration.rubrics for c in (m, calibrated_name(m))]
    frames = []
    for r in runs:
        t = r.table
        df = t.meta[["run", "conversation_id", "tutorial_id"]].copy()
        for c in cols:
            df[c] = t.values[c] if c in t.values else float("nan")
        frames.append(df)
    out = Path(out_dir) / CALIBRATED_SCORES_CSV  # evaluate --calibration: per conversation, raw and calibrated
    out.parent.mkdir(parents=True, exist_ok=True)
    return people_csv(
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run", "conversation_id", *cols]),
        out,
        float_format="%.4f",
    )


def metric_columns(runs: list[RunScores], rubric_names: list[str]) -> list[str]:
    present = {k for r in runs for k in r.table.metric_names()}
    empty = {m for m in POSTTEST_METRICS if all(math.isnan(v) for r in runs for v in r.table.column(m))}
    return metric_order(present, rubric_names, empty)


def metric_order(present: set[str], rubric_names: list[str], empty: AbstractSet[str] = frozenset()) -> list[str]:
    """The one column order of metrics (evaluate's tables, the report): the computational metrics in ORDER, the
    rubrics in `rubric_names`' order, their calibrated columns (`evaluate --calibration`), then any other by
    name. The post-test's columns only where some conversation took one (`empty`: those with no value at all)."""
    present = set(present) - {m for m in POSTTEST_METRICS if m in empty}
    cols = [m for m in ORDER if m in present]
    cols += [m for m in rubric_names if m in present]
    cols += [calibrated_name(m) for m in rubric_names if calibrated_name(m) in present]  # evaluate --calibration
    cols += sorted(present - set(cols))
    return cols


def _stats(values: list[float]) -> tuple[float, float, int]:
    """(mean, sample sd, n) of the numbers among `values` (None and NaN left out), added in their order."""
    import numpy as np

    arr = np.array(values, dtype=float)  # None -> NaN
    vals: list[float] = arr[~np.isnan(arr)].tolist()
    n = len(vals)
    if n == 0:
        return math.nan, math.nan, 0
    mean = sum(vals) / n
    std = math.sqrt(sum([(v - mean) ** 2 for v in vals]) / (n - 1)) if n > 1 else math.nan
    return mean, std, n


def _scale(metric: str) -> float:
    return 100.0 if metric in percent_metrics() else 1.0


def header(metric: str, text: Callable[[str], str] = str) -> str:
    """A metric's column head ("BLEU (%)"); `text` writes its name (`markdown_text` in summary.md)."""
    name = text(SHORT.get(metric, metric))
    return f"{name} (%)" if metric in percent_metrics() else name


@dataclass
class Summary:
    columns: list[str]
    table: list[dict[str, Any]]  # one dict per run (+ "Overall"): display strings and raw numbers
    baseline: str | None = None
    stats: Any = None  # significance.TableStats: CIs and paired arrows; None = neither (the paper's raw arrows)
    notes: list[str] = field(default_factory=list)  # more legend lines (e.g. the people estimate's intervals)


def summarize(
    runs: list[RunScores], rubric_names: list[str], baseline: str | None = None, stats: Any = None
) -> Summary:
    """Mean ± sd per run and metric (+ the Overall row over runs). With `stats` (significance.TableStats):
    a bootstrap CI per cell (resampling tutorials) and, against `baseline`, arrows from a paired test by
    tutorial (Holm across the metrics) unless `stats.paired` is False (the paper's raw arrows)."""
    opts = stats if stats is not None else TableStats(n_boot=0, paired=False)
    cols = metric_columns(runs, rubric_names)
    scales = {m: _scale(m) for m in cols}
    table: list[dict[str, Any]] = []
    base_row: dict[str, Any] | None = None
    base_run: RunScores | None = None
    for r in runs:
        row: dict[str, Any] = {
            "run": r.name,
            "label": r.label,
            "n": len(r.table),
            "failed": r.n_failed,
            "invalid": r.n_invalid,
            "ci": {},
        }
        judged = sum(r.table.judged(rubric_names))
        failed = sum(r.table.failure_counts())
        row["judge_failure_pct"] = 100.0 * failed / judged if judged else math.nan
        row["scoring"] = ",".join(r.table.scorings()) or "–"
        for m in cols:
            mean, std, n = _stats(r.table.column(m))
            row[m] = (mean * _scale(m), std * _scale(m), n)
            if opts.n_boot and n:
                row["ci"][m] = cell_ci([r.table], m, _scale(m), opts)
        table.append(row)
        if baseline is not None and r.name == baseline:
            base_row, base_run = row, r
    if len(runs) > 1:
        over: dict[str, Any] = {
            "run": "Overall",
            "label": "Overall (μ±δ over runs)",
            "n": sum(t["n"] for t in table),
            "failed": _sum_known([t["failed"] for t in table]),
            "invalid": _sum_known([t["invalid"] for t in table]),
            "ci": {},
        }
        judged = sum(sum(r.table.judged(rubric_names)) for r in runs)
        failed = sum(sum(r.table.failure_counts()) for r in runs)
        over["judge_failure_pct"] = 100.0 * failed / judged if judged else math.nan
        over["scoring"] = ",".join(sorted({m for t in table for m in t["scoring"].split(",") if m != "–"})) or "–"
        for m in cols:
            means = [t[m][0] for t in table if not math.isnan(t[m][0])]
            mean, std, n = _stats(means)
            over[m] = (mean, std, n)
            if opts.n_boot and n:
                over["ci"][m] = cell_ci([r.table for r in runs], m, _scale(m), opts)
        table.append(over)
    for row, run in zip(table, [*runs, None], strict=False):  # the Overall row (if any) has no run
        row["arrows"], row["paired"] = {}, {}
        if base_row is None or base_run is None or row is base_row or (run is None and opts.paired):
            continue  # paired: the Overall row (which holds the baseline itself) is not compared with it
        qualify(row, base_row, [run.table] if run else [], [base_run.table], cols, scales, opts)
    return Summary(columns=cols, table=table, baseline=baseline, stats=stats)


def _sum_known(xs: list[int | None]) -> int | None:
    known = [x for x in xs if x is not None]
    return sum(known) if known else None


def cell(row: dict[str, Any], m: str) -> str:
    mean, std, n = row[m]
    if n == 0 or math.isnan(mean):
        return "–"
    digits = 2
    s = f"{mean:.{digits}f}"
    if not math.isnan(std):
        s += f" ± {std:.{digits}f}"
    lo, hi = row.get("ci", {}).get(m, (math.nan, math.nan))
    if not (math.isnan(lo) or math.isnan(hi)):
        s += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return s + (f" {row['arrows'][m]}" if m in row.get("arrows", {}) else "")


def _count(x: int | None) -> str:
    return "?" if x is None else str(x)


def display_rows(s: Summary) -> tuple[list[str], list[list[str]]]:
    heads = ["Run", "n", "Failed"] + [header(m, markdown_text) for m in s.columns] + ["Judge parse failures (%)"]
    rows = []
    for row in s.table:
        jf = row["judge_failure_pct"]
        rows.append(
            [
                row["label"] if row["run"] in ("Overall", row["label"]) else f"{row['label']} [{row['run']}]",
                str(row["n"]),
                _count(row["failed"]),
            ]
            + [cell(row, m) for m in s.columns]
            + ["–" if math.isnan(jf) else f"{jf:.2f}"]
        )
    return heads, rows


def print_summary(s: Summary, console: Any, title: str = "Evaluation summary") -> None:
    """Terminal view: one column per run (the paper's rows), one row per metric, so many metrics fit."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title + (f" (↑/↓ against {s.baseline})" if s.baseline else ""))
    t.add_column("Metric", no_wrap=True)
    labels = [row["label"] for row in s.table]
    for row in s.table:
        plain = row["run"] == "Overall" or row["label"] == row["run"] or labels.count(row["label"]) == 1
        t.add_column(row["label"] if plain else f"{row['label']}\n[{row['run']}]", justify="right", overflow="fold")
    t.add_row("Conversations", *[str(r["n"]) for r in s.table])
    t.add_row("Failed (skipped)", *[_count(r["failed"]) for r in s.table], end_section=True)
    for m in s.columns:
        cells: list[Text | str] = []
        for r in s.table:
            c = cell(r, m)
            if c.endswith((" ↑", " ↓")):  # a styled arrow; run names and values stay literal text
                cells.append(Text.assemble(c[:-1], (c[-1], "green" if c[-1] == "↑" else "red")))
            else:
                cells.append(c)
        t.add_row(header(m), *cells)
    t.add_row(
        "Judge parse failures (%)",
        *["–" if math.isnan(r["judge_failure_pct"]) else f"{r['judge_failure_pct']:.2f}" for r in s.table],
    )
    t.add_row("Judge scoring", *[r.get("scoring", "–") for r in s.table], end_section=True)
    console.print(t)


def write_summary(s: Summary, out_dir: Path) -> list[Path]:
    import pandas as pd

    out_dir.mkdir(parents=True, exist_ok=True)
    recs = []
    for row in s.table:
        r: dict[str, Any] = {
            "run": row["run"],
            "label": row["label"],
            "n": row["n"],
            "failed": row["failed"],
            "invalid": row["invalid"],
            "judge_parse_failures_pct": _round(row["judge_failure_pct"]),
            "judge_scoring": row.get("scoring", "–"),
        }
        for m in s.columns:
            mean, std, n = row[m]
            r[f"{header(m)} mean"] = _round(mean)
            r[f"{header(m)} std"] = _round(std)
            r[f"{header(m)} n"] = n
            if s.stats is not None and s.stats.n_boot:
                lo, hi = row.get("ci", {}).get(m, (math.nan, math.nan))
                r[f"{header(m)} ci_low"], r[f"{header(m)} ci_high"] = _round(lo), _round(hi)
            if m in row["arrows"]:
                r[f"{header(m)} vs baseline"] = row["arrows"][m]
            p = row.get("paired", {}).get(m)
            if p is not None:  # the effect size and the test behind the arrow
                r[f"{header(m)} diff"] = _round(p.diff)
                r[f"{header(m)} diff ci_low"], r[f"{header(m)} diff ci_high"] = _round(p.ci_low), _round(p.ci_high)
                r[f"{header(m)} p"], r[f"{header(m)} p_holm"] = _round6(p.p), _round6(p.p_holm)
                r[f"{header(m)} pairs"] = p.n
        recs.append(r)
    csv_path = out_dir / SUMMARY_CSV
    people_csv(pd.DataFrame(recs), csv_path)  # run, label and rubric names: OWASP-neutralised
    heads, rows = display_rows(s)
    md_path = out_dir / SUMMARY_MD
    md_path.write_text(markdown_table(heads, rows) + _legend(s), encoding="utf-8")
    return [csv_path, md_path]


def _round(x: float) -> float | None:
    return None if x is None or math.isnan(x) else round(x, 4)


def _round6(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(f"{x:.6g}")


def _legend(s: Summary) -> str:
    lines = [
        "",
        "Computational metrics in %, rubric metrics on 1-5: mean ± sample std over conversations; "
        "the Overall row is the mean ± std of the run means (as the paper's tables). "
        "Failed = failed conversations skipped. Judge parse failures = rubric cells without a readable 1-5 score.",
    ]
    if s.stats is not None and s.stats.n_boot:
        lines.append(
            f"[lo, hi]: 95 % bootstrap CI of the mean, resampling tutorials ({s.stats.n_boot} resamples, "
            f"seed {s.stats.seed}); the Overall row's resamples tutorials across every run."
        )
    if s.baseline and (s.stats is None or not s.stats.paired):
        lines.append(
            f"↑/↓: higher/lower mean than the baseline run {s.baseline} (the raw difference of the means, "
            "as the paper's tables)."
        )
    elif s.baseline:
        lines.append(
            f"↑/↓ against the baseline run {s.baseline}: paired by tutorial (the tutorials both runs have), "
            "Wilcoxon signed-rank, Holm-corrected across the row's metrics, p < 0.05; ≈ = no significant "
            "difference; – = no shared tutorial. The CSV has the mean paired difference with its CI, p and "
            "the Holm-corrected p."
        )
    return "\n".join(lines + s.notes) + "\n"


# --------------------------------------------------------------------------------------------------
# Per domain (Figure 5)
# --------------------------------------------------------------------------------------------------


def by_domain(runs: list[RunScores], rubric_names: list[str], key: str = "domain", stats: Any = None) -> Any:
    """DataFrame: one row per (run, domain) with n and the mean of every metric (% / 1-5) and of the rubrics.

    `key="persona"` groups by the learner persona instead (`evaluate --by persona`). With `stats`
    (significance.TableStats, n_boot > 0) every mean gets `<metric> ci_low` / `ci_high` columns: a bootstrap
    CI resampling the group's tutorials."""
    import pandas as pd

    with_ci = stats is not None and stats.n_boot > 0

    cols = metric_columns(runs, rubric_names)
    recs = []
    for r in runs:
        t = r.table
        labels = t.labels(key)
        rub_cols = [m for m in rubric_names if m in t.values]
        for dom in sorted(set(labels)):
            mask = [lab == dom for lab in labels]
            g = t.select(mask)
            rec: dict[str, Any] = {"run": r.name, "label": r.label, key: dom, "n": len(g)}
            for m in cols:
                rec[header(m)] = _round(_stats(g.column(m))[0] * _scale(m))
                if with_ci:
                    lo, hi = cell_ci([g], m, _scale(m), stats)
                    rec[f"{header(m)} ci_low"], rec[f"{header(m)} ci_high"] = _round(lo), _round(hi)
            rub = _conv_rubric_means(g, rub_cols)
            rec["Rubric mean"] = _round(_stats([v for v in rub if v is not None])[0])
            if with_ci:
                lo, hi = values_ci(g, rub, stats)
                rec["Rubric mean ci_low"], rec["Rubric mean ci_high"] = _round(lo), _round(hi)
            recs.append(rec)
    return pd.DataFrame(recs)


def _conv_rubric_means(t: ScoreTable, rubric_cols: list[str]) -> list[float | None]:
    """Per row: the mean of its rubric scores (None without any)."""
    out = []
    rows = t.values[rubric_cols].to_numpy(dtype=float).tolist() if rubric_cols else [[] for _ in range(len(t))]
    for row in rows:  # one pass over a list of rows (`.at` per cell costs as much as the rest of the summary)
        vals = [v for v in row if not math.isnan(v)]
        out.append(sum(vals) / len(vals) if vals else None)
    return out


def print_by_domain(df: Any, console: Any, key: str = "domain") -> None:
    from rich.table import Table

    if df.empty:
        return
    value = "Rubric mean" if df["Rubric mean"].notna().any() else None
    what = "mean rubric score (1-5)"
    if value is None and key == "persona" and "Question (%)" in df and df["Question (%)"].notna().any():
        value, what = "Question (%)", "Question Ratio (%)"  # what a persona changes first
    runs = list(dict.fromkeys(df["run"]))
    t = Table(title=f"Per {key}: " + (what if value else "conversations"))
    t.add_column(key.capitalize())
    for r in runs:
        t.add_column(r, justify="right", overflow="fold")
    for dom in sorted(set(df[key])):
        cells = []
        for r in runs:
            sel = df[(df["run"] == r) & (df[key] == dom)]
            if sel.empty:
                cells.append("–")
            elif value:
                v = sel.iloc[0][value]
                lo, hi = (sel.iloc[0].get(f"{value} ci_low"), sel.iloc[0].get(f"{value} ci_high"))
                ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None and lo == lo and hi == hi else ""
                cells.append(
                    "–"
                    if v is None or (isinstance(v, float) and math.isnan(v))
                    else f"{v:.2f}{ci} (n={sel.iloc[0]['n']})"
                )
            else:
                cells.append(str(sel.iloc[0]["n"]))
        t.add_row(dom, *cells)
    console.print(t)


# --------------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------------


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _bars(plt: Any, s: Summary, metrics: list[str], ylabel: str, path: Path, ylim: tuple[float, float] | None) -> Path:
    rows = [r for r in s.table if r["run"] != "Overall"]
    fig, ax = plt.subplots(figsize=(min(14, max(6, 0.9 * len(metrics) + 0.25 * len(metrics) * len(rows) + 2)), 4.5))
    width = 0.8 / max(1, len(rows))
    for i, r in enumerate(rows):
        xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(metrics))]
        means = [r[m][0] for m in metrics]
        stds = [0 if math.isnan(r[m][1]) else r[m][1] for m in metrics]
        ax.bar(xs, means, width, yerr=stds, capsize=2, label=r["label"])
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels([SHORT.get(m, m) for m in metrics], rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=min(4, len(rows)))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_figures(s: Summary, rubric_names: list[str], out_dir: Path, domain_df: Any | None = None) -> list[Path]:
    plt = _plt()
    fig_dir = out_dir / FIGURES_DIR
    fig_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    rub = [m for m in s.columns if m in rubric_names]
    comp = [m for m in s.columns if m in percent_metrics()]
    if rub:  # Figures 3/4
        paths.append(_bars(plt, s, rub, "score (1-5), mean ± std", fig_dir / RUBRICS_PNG, (0, 5.5)))
    if comp:
        paths.append(_bars(plt, s, comp, "%, mean ± std", fig_dir / COMPUTATIONAL_PNG, (0, 110)))
    if domain_df is not None and not domain_df.empty:  # Figure 5
        value = "Rubric mean" if domain_df["Rubric mean"].notna().any() else None
        if value is None and comp:
            value = header(comp[0])
        if value:
            pivot = domain_df.pivot_table(index="domain", columns="run", values=value, aggfunc="first")
            order = [r for r in dict.fromkeys(domain_df["run"]) if r in pivot.columns]
            pivot = pivot[order]
            fig, ax = plt.subplots(figsize=(max(5, 1.3 * pivot.shape[1] + 3), max(3, 0.45 * pivot.shape[0] + 1.5)))
            import numpy as np

            vals = pivot.values.astype(float)
            im = ax.imshow(vals, cmap="viridis", aspect="auto")
            ax.set_xticks(range(pivot.shape[1]))
            ax.set_xticklabels(pivot.columns, rotation=30, ha="right", fontsize=7)
            ax.set_yticks(range(pivot.shape[0]))
            ax.set_yticklabels(pivot.index, fontsize=8)
            for i in range(pivot.shape[0]):
                for j in range(pivot.shape[1]):
                    v = pivot.values[i, j]
                    if v is not None and not (isinstance(v, float) and math.isnan(v)):
                        lo, hi = np.nanmin(vals), np.nanmax(vals)
                        light = hi > lo and (v - lo) / (hi - lo) > 0.6
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="k" if light else "w")
            fig.colorbar(im, ax=ax, label=value)
            ax.set_title(f"{value} per domain")
            fig.tight_layout()
            p = fig_dir / BY_DOMAIN_PNG
            fig.savefig(p, dpi=120)
            plt.close(fig)
            paths.append(p)
    return paths
