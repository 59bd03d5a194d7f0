"""Every automatic metric against people (`metric_alignment.csv/.md`, `figures/metric_alignment*.png`).

Each numeric metric in the scores (computational, Step Coverage, Echo Rate, the post-test's, any registered
metric) and the LLM judge (its score of the same rubric and the mean of its rubrics) against each human rubric
and the people's Overall (the mean of every rubric they rated): Pearson / Spearman / Kendall, the
within-tutorial r, the partial r controlling for log conversation length (`Words`), each with a 95 % CI that
resamples tutorials (`stats.association`), and the share of the same-tutorial pairs people clearly ordered that
the metric orders the same way (`stats.pair_order`). A metric where lower is better (the registry's `better`)
is negated first, so a positive number always means agreement with people. Conversation length itself is a
row: the trivial baseline every metric has to beat. Rows are sorted by the within-tutorial r.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wikihowagent.layout import METRIC_ALIGNMENT_MD
from wikihowagent.markdown import markdown_table, markdown_text
from wikihowagent.metrics.computational import WORDS, better
from wikihowagent.stats.association import Association, associate
from wikihowagent.stats.pair_order import GAP, PairOrder, pair_order

from . import schema
from .agreement import COEF_LABEL
from .csv_dialect import stars

JUDGE_SAME = "LLM judge (same rubric)"
JUDGE_MEAN = "LLM judge (mean of rubrics)"
LENGTH_LABEL = f"conversation length ({WORDS})"
COEF_HEADS = (
    *COEF_LABEL.items(),  # pearson, spearman, kendall: the labels of align's correlations
    ("within", "within-tutorial r"),
    ("partial", "partial r (length)"),
)


@dataclass
class MetricRow:
    metric: str  # the score's name, JUDGE_SAME / JUDGE_MEAN, or WORDS (the baseline)
    target: str  # a human rubric or Overall
    better: str  # "higher" | "lower" (lower: negated before every statistic)
    assoc: Association
    pairs: PairOrder
    baseline: bool = False

    @property
    def label(self) -> str:
        return self.shown(str)

    def shown(self, text: Callable[[str], str]) -> str:
        """The row's label, the metric's name written by `text` (`markdown_text` in metric_alignment.md)."""
        if self.baseline:
            return LENGTH_LABEL
        return f"{text(self.metric)} (↓, negated)" if self.better == "lower" else text(self.metric)

    @property
    def within(self) -> float:
        return self.assoc.coefs["within"].value


@dataclass
class MetricAlignment:
    targets: list[str]
    rows: dict[str, list[MetricRow]] = field(default_factory=dict)  # target -> rows sorted by within r
    conversations: int = 0
    tutorials: int = 0
    has_length: bool = False
    n_boot: int = 0

    def metrics(self) -> list[str]:
        """The metric rows' names in the order of the Overall table (the heatmap's rows)."""
        first = self.rows.get(schema.OVERALL) or next(iter(self.rows.values()), [])
        return [r.metric for r in first]


def _sort_key(r: MetricRow) -> tuple[int, float]:
    w = r.within
    return (0, -w) if math.isfinite(w) else (1, 0.0)


def people_matrix(human: np.ndarray) -> np.ndarray:
    """Human rubric means + the people's Overall (mean of every rubric rated; no LLM side to match here)."""
    k = schema.n_metrics()
    rubric = human[:, :k]
    rated = ~np.isnan(rubric)
    with np.errstate(invalid="ignore", divide="ignore"):
        overall = np.where(rated.any(1), np.where(rated, rubric, 0).sum(1) / np.maximum(rated.sum(1), 1), np.nan)
    return np.column_stack([rubric, overall]) if len(human) else np.empty((0, k + 1))


def metric_columns(res: Any, ids: list[str]) -> dict[str, np.ndarray]:
    """Every numeric non-rubric metric of the scores, one value per conversation of `ids` (NaN = none)."""
    names = sorted({m for c in ids if c in res.llm.rows for m in res.llm.rows[c].metrics}, key=str.lower)
    return {
        n: np.array([res.llm.rows[c].metrics.get(n, np.nan) if c in res.llm.rows else np.nan for c in ids])
        for n in names
    }


def _seed(seed: int, metric: str, target: str) -> list[int]:
    return [seed, zlib.crc32(metric.encode()), zlib.crc32(target.encode())]


def metric_alignment(res: Any, tutorials: list[str], n_boot: int, seed: int) -> MetricAlignment | None:
    """The table over the human-rated conversations (`res`: an AlignResult); None when the scores hold no
    metric besides the judge's rubric scores for them (those are correlations.csv)."""
    ids = res.ids
    people = people_matrix(res.human)
    columns = metric_columns(res, ids)
    judge = res.model[:, : schema.n_metrics()] if len(ids) else np.empty((0, schema.n_metrics()))
    has_judge = bool(np.any(~np.isnan(judge)))
    if not columns:  # the judge alone is align's correlations.csv
        return None
    length = columns.get(WORDS)
    control = np.log1p(length) if length is not None else None
    targets = schema.row_names()
    out = MetricAlignment(targets, has_length=length is not None, n_boot=n_boot)
    scored = np.zeros(len(ids), dtype=bool)
    for v in columns.values():
        scored |= ~np.isnan(v)
    scored |= np.any(~np.isnan(judge), axis=1) if len(ids) else scored
    out.conversations = int(scored.sum())
    out.tutorials = len({t for t, s in zip(tutorials, scored, strict=True) if s})
    with np.errstate(invalid="ignore"):
        judge_mean = np.nanmean(np.where(np.isnan(judge), np.nan, judge), axis=1) if has_judge else None
    for k, target in enumerate(targets):
        y = people[:, k]
        series: list[tuple[str, np.ndarray]] = [(n, v) for n, v in columns.items()]
        if has_judge:
            if k < schema.n_metrics():
                series.append((JUDGE_SAME, judge[:, k]))
            series.append((JUDGE_MEAN, judge_mean))  # type: ignore[arg-type]  # set when has_judge
        rows = []
        for name, values in series:
            direction = better(name) if name not in (JUDGE_SAME, JUDGE_MEAN) else "higher"
            x = -values if direction == "lower" else values
            base = name == WORDS
            assoc = associate(x, y, tutorials, None if base else control, n_boot=n_boot, seed=_seed(seed, name, target))
            po, _ = pair_order({name: x}, y, tutorials, n_boot=n_boot, seed=seed)
            rows.append(MetricRow(name, target, direction, assoc, po[name], baseline=base))
        rows.sort(key=_sort_key)
        out.rows[target] = rows
    return out


def uncompared(ma: MetricAlignment) -> list[str]:
    """One line per human rubric (and Overall) that no metric could be compared with, and why (e.g. the people's
    ratings are all equal): the table's notes say it per row, but when nothing else is computed no table is written."""
    out = []
    for target in ma.targets:
        rows = ma.rows.get(target, [])
        if rows and not any(math.isfinite(r.assoc.coefs["pearson"].value) for r in rows):
            why = "; ".join(dict.fromkeys(r.assoc.note for r in rows if r.assoc.note)) or "no correlation"
            out.append(f"{target}: {why} for any metric; left out of {METRIC_ALIGNMENT_MD}")
    return out


# --------------------------------------------------------------------------- output


def _f(v: float, nd: int = 3) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:.{nd}f}"


def _cell(e: Any) -> str:
    if not math.isfinite(e.value):
        return "—"
    s = f"{e.value:+.2f}{stars(e.p)}"
    return s + (f" [{e.ci_low:+.2f}, {e.ci_high:+.2f}]" if math.isfinite(e.ci_low) else "")


def _share(o: PairOrder) -> str:
    if not o.pairs:
        return "—"
    s = f"{o.accuracy:.2f} ({o.pairs})"
    return s + (f" [{o.ci_low:.2f}, {o.ci_high:.2f}]" if math.isfinite(o.ci_low) else "")


def _note(r: MetricRow, ma: MetricAlignment) -> str:
    notes = [r.assoc.note] if r.assoc.note else []
    if r.baseline:
        notes.append("the baseline (partial r: it is the control)")
    elif not ma.has_length:
        notes.append(f"no {WORDS} in the scores: no partial r")
    return "; ".join(notes)


def rows_csv(ma: MetricAlignment) -> tuple[list[str], list[list[Any]]]:
    cols = ["human_rubric", "metric", "better", "baseline", "n", "tutorials"]
    for c, _ in COEF_HEADS:
        cols += [c, f"{c}_p", f"{c}_stars", f"{c}_ci_low", f"{c}_ci_high"]
    cols += ["pairs", "pair_tutorials", "pair_share", "pair_ci_low", "pair_ci_high", "pair_ties", "gap", "note"]
    rows = []
    for target in ma.targets:
        for r in ma.rows.get(target, []):
            row: list[Any] = [target, r.metric, r.better, int(r.baseline), r.assoc.n, r.assoc.groups]
            for c, _ in COEF_HEADS:
                e = r.assoc.coefs[c]
                row += [e.value, e.p, stars(e.p), e.ci_low, e.ci_high]
            o = r.pairs
            row += [o.pairs, o.groups, o.accuracy, o.ci_low, o.ci_high, o.ties, GAP, _note(r, ma)]
            rows.append(row)
    return cols, rows


def markdown(ma: MetricAlignment) -> str:
    out = [
        "# Every metric against people\n\n",
        f"{ma.conversations} human-rated conversations with scores, {ma.tutorials} tutorials. Each metric (a "
        "metric where lower is better negated, so + means agreement) against each human rubric's mean and the "
        "people's Overall (the mean of every rubric they rated). Pearson r, Spearman ρ, Kendall τ over all "
        "conversations; within-tutorial r: both sides centred on their tutorial's mean (only which of one "
        "tutorial's conversations is better counts); partial r: controlling for log conversation length "
        f"({WORDS}). Stars: * p<0.05, ** p<0.01. 95 % CIs in brackets resample tutorials ({ma.n_boot} "
        f"resamples). Clear pairs: the share of the pairs of one tutorial whose people's means differ by at "
        f"least {GAP:g} point that the metric orders the same way (ties half; 0.5 = a coin), their number in "
        "parentheses. Sorted by the within-tutorial r; the conversation-length row is the baseline a metric "
        "has to beat. — = no correlation (the note says why).\n",
    ]
    for target in ma.targets:
        rows = ma.rows.get(target, [])
        if not rows:
            continue
        out.append(f"\n## {markdown_text(target)}\n\n")
        body = [
            [
                r.shown(markdown_text),  # a metric's name comes from a scores file
                str(r.assoc.n),
                *(_cell(r.assoc.coefs[c]) for c, _ in COEF_HEADS),
                _share(r.pairs),
                _note(r, ma),
            ]
            for r in rows
        ]
        out.append(markdown_table(["Metric", "n", *(h for _, h in COEF_HEADS), "clear pairs ordered", "note"], body))
    return "".join(x if x.endswith("\n") else x + "\n" for x in out)


def heatmap_data(ma: MetricAlignment, coef: str) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(row labels, column labels, values, p-values): metrics (Overall's order) x human rubrics + Overall."""
    names = ma.metrics()
    index = {t: {r.metric: r for r in ma.rows.get(t, [])} for t in ma.targets}
    labels = []
    for n in names:
        r = index[schema.OVERALL].get(n) if schema.OVERALL in index else None
        labels.append(r.label if r else n)
    vals = np.full((len(names), len(ma.targets)), np.nan)
    ps = np.full_like(vals, np.nan)
    for j, t in enumerate(ma.targets):
        for i, n in enumerate(names):
            r = index[t].get(n)
            if r is not None:
                vals[i, j] = r.assoc.coefs[coef].value
                ps[i, j] = r.assoc.coefs[coef].p
    return labels, list(ma.targets), vals, ps


def render(ma: MetricAlignment, console: Any, top: int = 8) -> None:
    """The Overall table's first rows on the terminal (every row: metric_alignment.md)."""
    from rich.table import Table
    from rich.text import Text

    rows = ma.rows.get(schema.OVERALL, [])
    if not rows:
        return
    t = Table(title=f"Every metric vs the people's Overall (first {min(top, len(rows))}; all in {METRIC_ALIGNMENT_MD})")
    for name in ("Metric", "n", "r", "within r", "partial r", "clear pairs"):
        t.add_column(name, justify="left" if name == "Metric" else "right", no_wrap=name != "Metric")
    shown = rows[:top]
    base = next((r for r in rows if r.baseline), None)
    if base is not None and base not in shown:
        shown.append(base)
    for r in shown:
        c = r.assoc.coefs
        t.add_row(
            Text(r.label),  # a metric's name comes from a file: never read as markup
            str(r.assoc.n),
            _f(c["pearson"].value, 2) or "—",
            _f(c["within"].value, 2) or "—",
            _f(c["partial"].value, 2) or "—",
            _f(r.pairs.accuracy, 2) or "—",
        )
    console.print(t)
