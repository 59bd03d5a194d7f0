"""align's tables as rows (correlations, descriptives, agreement, paired tests, automatic metrics, pair order) and
its summary.md.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from wikihowagent.markdown import markdown_table, markdown_text
from wikihowagent.stats.pair_order import GAP

from . import schema
from .agreement import (
    COEF_LABEL,
    COEFFICIENTS,
)
from .csv_dialect import stars
from .result import ALL, AlignResult, GroupResult


def pair_order_rows(res: AlignResult) -> tuple[list[str], list[list]]:
    cols = ["metric", "pairs", "tutorials", "accuracy", "ci_low", "ci_high", "ties", "gap"]
    return cols, [
        [m, o.pairs, o.groups, decimals(o.accuracy), decimals(o.ci_low), decimals(o.ci_high), o.ties, GAP]
        for m, o in res.pair_order.items()
    ]


def automatic_rows(res: AlignResult) -> tuple[list[str], list[list]]:
    cols = ["metric", "human_rubric", "n"]
    for c, short in zip(COEFFICIENTS, ("r", "rho", "tau"), strict=True):
        cols += [f"{c}_{short}", f"{c}_p", f"{c}_stars", f"{c}_ci_low", f"{c}_ci_high"]
    cols.append("note")
    rows = []
    for (name, rubric), cr in res.automatic.items():
        row = [name, rubric, cr.n]
        for c in COEFFICIENTS:
            v = cr.coefs[c]
            row += [v.value, v.p, stars(v.p), v.ci_low, v.ci_high]
        rows.append(row + ["; ".join(cr.notes)])
    return cols, rows


def decimals(v: float, nd: int = 3) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:.{nd}f}"


def _p(v: float) -> str:
    if v is None or not math.isfinite(v):
        return ""
    return f"{v:.2e}" if v < 0.001 else f"{v:.3f}"


def correlation_rows(res: AlignResult) -> tuple[list[str], list[list]]:
    cols = ["by", "group", "metric", "n"]
    for c, short in zip(COEFFICIENTS, ("r", "rho", "tau"), strict=True):
        cols += [f"{c}_{short}", f"{c}_p", f"{c}_stars", f"{c}_ci_low", f"{c}_ci_high"]
    cols.append("note")
    rows = []
    for g in res.groups:
        for metric in schema.row_names():
            cr = g.correlations[metric]
            row: list[str | int | float | None] = [res.by if g.group != ALL else ALL, g.group, metric, cr.n]
            for c in COEFFICIENTS:
                v = cr.coefs[c]
                row += [v.value, v.p, stars(v.p), v.ci_low, v.ci_high]
            row.append("; ".join(cr.notes))
            rows.append(row)
    return cols, rows


def descriptive_rows(res: AlignResult) -> tuple[list[str], list[list]]:
    cols = [
        "by",
        "group",
        "metric",
        "n",
        "human_mean",
        "human_std",
        "human_median",
        "llm_mean",
        "llm_std",
        "llm_median",
        "diff_mean_llm_minus_human",
        "share_llm_higher",
        "share_llm_lower",
        "wilcoxon_p",
        "human_judges_per_conversation",
    ]
    rows = []
    for g in res.groups:
        for metric in schema.row_names():
            d = g.descriptives[metric]
            rows.append(
                [
                    res.by if g.group != ALL else ALL,
                    g.group,
                    metric,
                    d.n,
                    d.human_mean,
                    d.human_std,
                    d.human_median,
                    d.llm_mean,
                    d.llm_std,
                    d.llm_median,
                    d.diff_mean,
                    d.llm_higher,
                    d.llm_lower,
                    d.wilcoxon_p,
                    g.judges_mean.get(metric, math.nan),
                ]
            )
    return cols, rows


AGREEMENT_COLUMNS = (  # agreement.csv: the judges' agreement per group and metric
    "by",
    "group",
    "metric",
    "n_judges",
    "n_conversations_rated_by_2plus",
    "krippendorff_alpha_ordinal",
    "cohen_kappa_quadratic_mean",
    "pearson_r_mean",
    "blank_cells",
    "note",
)
AGREEMENT_PAIR_COLUMNS = (  # agreement_pairs.csv: each pair of judges
    "by",
    "group",
    "metric",
    "judge_a",
    "judge_b",
    "n",
    "cohen_kappa_quadratic",
    "pearson_r",
    "pearson_p",
    "pearson_stars",
    "note",
)


def agreement_rows(res: AlignResult) -> tuple[list[str], list[list], list[str], list[list]]:
    """agreement.csv and agreement_pairs.csv: (columns, rows) of the judges' agreement, then of each pair."""
    cols, pcols = list(AGREEMENT_COLUMNS), list(AGREEMENT_PAIR_COLUMNS)
    rows, prows = [], []
    for g in res.groups:
        units = g.mask
        for k, metric in enumerate(schema.metrics()):
            a = g.agreement.get(metric)
            if a is None:
                continue
            by = res.by if g.group != ALL else ALL
            blanks = int(np.isnan(res.H[:, units, k]).sum())
            rows.append(
                [
                    by,
                    g.group,
                    metric,
                    a.n_judges,
                    a.n_units,
                    a.alpha,
                    a.kappa_mean,
                    a.pearson_mean,
                    blanks,
                    "; ".join(a.notes),
                ]
            )
            for p in a.pairs:
                prows.append(
                    [
                        by,
                        g.group,
                        metric,
                        p.judge_a,
                        p.judge_b,
                        p.n,
                        p.kappa,
                        p.pearson,
                        p.pearson_p,
                        stars(p.pearson_p),
                        "; ".join(p.notes),
                    ]
                )
    return cols, rows, pcols, prows


def paired_rows(res: AlignResult) -> tuple[list[str], list[list]]:
    cols = [
        "conversation_id",
        "run",
        "model",
        "domain",
        *(f"human_{m}" for m in schema.row_names()),
        *(f"judges_{m}" for m in schema.metrics()),
        *(f"llm_{m}" for m in schema.row_names()),
    ]
    rows = []
    for i, cid in enumerate(res.ids):
        meta = res.group_meta(cid)
        rows.append(
            [
                cid,
                meta["run"],
                meta["model"],
                meta["domain"],
                *res.human[i].tolist(),
                *res.human_counts[i].tolist(),
                *res.model[i].tolist(),
            ]
        )
    return cols, rows


def coef_cell(v, with_ci: bool = True) -> str:
    if not math.isfinite(v.value):
        return "n/a"
    s = f"{v.value:.3f}{stars(v.p)}"
    if with_ci and math.isfinite(v.ci_low):
        s += f" [{v.ci_low:.2f}, {v.ci_high:.2f}]"
    return s


def _group_section(res: AlignResult, g: GroupResult) -> list[str]:
    """One group's part of summary.md: human vs judge correlations, scores side by side, the people's agreement."""
    out: list[str] = []
    title = "All conversations" if g.group == ALL else f"{res.by}: {markdown_text(g.group)}"  # a name from a file
    out.append(f"\n## {title}\n\n### Correlation human (mean of judges) vs LLM judge\n")
    rows = []
    for metric in schema.row_names():
        cr = g.correlations[metric]
        rows.append([metric, str(cr.n), *(coef_cell(cr.coefs[c]) for c in COEFFICIENTS), "; ".join(cr.notes)])
    out.append(markdown_table(["Metric", "n", *(COEF_LABEL[c] for c in COEFFICIENTS), "Note"], rows))
    out.append("\n### Scores: human vs LLM (same conversations)\n")
    rows = []
    for metric in schema.row_names():
        d = g.descriptives[metric]
        rows.append(
            [
                metric,
                str(d.n),
                f"{decimals(d.human_mean, 2)} ± {decimals(d.human_std, 2)}",
                f"{decimals(d.llm_mean, 2)} ± {decimals(d.llm_std, 2)}",
                decimals(d.diff_mean, 2),
                decimals(d.llm_higher * 100 if math.isfinite(d.llm_higher) else math.nan, 0),
                _p(d.wilcoxon_p),
            ]
        )
    out.append(
        markdown_table(
            ["Metric", "n", "Human mean ± sd", "LLM mean ± sd", "LLM − human", "% LLM higher", "Wilcoxon p"], rows
        )
    )
    if g.agreement:
        out.append("\n### Agreement between the human judges\n")
        rows = []
        for metric in schema.metrics():
            a = g.agreement[metric]
            rows.append(
                [
                    metric,
                    str(a.n_units),
                    decimals(a.alpha),
                    decimals(a.kappa_mean),
                    decimals(a.pearson_mean),
                    "; ".join(a.notes),
                ]
            )
        out.append(
            markdown_table(
                ["Metric", "n (≥2 judges)", "Krippendorff α (ordinal)", "Cohen κ (quadratic)", "Pearson r", "Note"],
                rows,
            )
        )
    return out


def _automatic_section(res: AlignResult) -> list[str]:
    """The post-test's metrics against each human rubric."""
    out: list[str] = []
    out.append(
        "\n## Automatic metrics vs the human ratings (all conversations)\n\n"
        "The post-test's metrics (what the learner model could write down afterwards) against each "
        "human rubric's mean; also in `automatic.csv`.\n"
    )
    rows = [
        [name, rubric, str(cr.n), *(coef_cell(cr.coefs[c]) for c in COEFFICIENTS), "; ".join(cr.notes)]
        for (name, rubric), cr in res.automatic.items()
    ]
    out.append(markdown_table(["Metric", "Human rubric", "n", *(COEF_LABEL[c] for c in COEFFICIENTS), "Note"], rows))
    return out


def _pair_order_section(res: AlignResult) -> list[str]:
    """Head to head against people: same-tutorial pairs the people clearly ordered, as the judge orders them."""
    out: list[str] = []
    out.append(
        "\n## Head to head against people (all conversations)\n\n"
        f"Pairs of conversations of one tutorial whose people's means differ by at least {GAP:g} point: the "
        "share the judge's scores order the same way (a tie half; 0.5 = no better than a coin), 95 % CI "
        "resampling tutorials. What a head-to-head verdict from these scores (`compare`) would get right; "
        "also in `pair_order.csv`.\n"
    )
    rows = [
        [
            m,
            str(o.pairs),
            str(o.groups),
            f"{decimals(o.accuracy)} [{decimals(o.ci_low)}, {decimals(o.ci_high)}]",
            str(o.ties),
        ]
        for m, o in res.pair_order.items()
    ]
    out.append(markdown_table(["Metric", "pairs", "tutorials", "ordered as the people did", "ties"], rows))
    return out


def markdown(res: AlignResult, human_paths: list[Path], score_sources: list[str]) -> str:
    """summary.md: the inputs, each group's tables, the automatic metrics, head to head, what was left out."""
    out = ["# Human alignment of the LLM judge\n"]
    out.append(
        f"Human files: {', '.join(f'`{p}`' for p in human_paths)} "
        f"({len(res.judges)} judge(s): {', '.join(j.judge for j in res.judges)}).  "
    )
    out.append(
        f"LLM scores: {', '.join(f'`{s}`' for s in score_sources) or '(none)'}"
        + (f"; judge: {', '.join(res.llm.judges)}" if res.llm.judges else "")
        + ".  "
    )
    out.append(f"Conversations rated by humans: {len(res.ids)}; with an LLM score: {int(res.matched.sum())}.  ")
    out.append(
        f"Bootstrap: {res.n_boot} resamples of conversation pairs, seed {res.seed}; 95 % percentile CIs "
        "in brackets. Stars: * p<0.05, ** p<0.01.\n"
    )
    for g in res.groups:
        out += _group_section(res, g)
    if res.automatic:
        out += _automatic_section(res)
    if any(o.pairs for o in res.pair_order.values()):
        out += _pair_order_section(res)
    out.append("\n## Left out\n\n")
    if len(res.problems):
        counts = res.problems.counts()
        out.append(markdown_table(["Problem", "Count"], [[k, str(v)] for k, v in counts.most_common()]))
        out.append("\nEvery line is in `problems.txt`.\n")
    else:
        out.append("Nothing: every row and cell was used.\n")
    return "".join(x if x.endswith("\n") else x + "\n" for x in out)
