"""align's outputs: what goes in the output directory (tables, summary.md, figures), written all or nothing through
`outdir.StagedDir` (the one writer of output folders), and the summary printed in the terminal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wikihowagent.layout import (
    AGREEMENT_CSV,
    AGREEMENT_PAIRS_CSV,
    AUTOMATIC_CSV,
    CORRELATION_HEATMAP_PNG,
    CORRELATIONS_CSV,
    CORRELATIONS_MD,
    DESCRIPTIVES_CSV,
    FIGURES_DIR,
    METRIC_ALIGNMENT_CSV,
    METRIC_ALIGNMENT_MD,
    METRIC_ALIGNMENT_PNG,
    METRIC_ALIGNMENT_WITHIN_PNG,
    PAIR_ORDER_CSV,
    PAIRED_SCORES_CSV,
    PEOPLE_ESTIMATE_CSV,
    PEOPLE_ESTIMATE_JSON,
    PEOPLE_ESTIMATE_MD,
    PROBLEMS_TXT,
    SCORE_DISTRIBUTIONS_PNG,
)
from wikihowagent.outdir import StagedDir
from wikihowagent.records_io import people_estimate_text

from . import checklist_fit, estimates, metric_table, people_fit, schema
from . import figures as plots
from .agreement import (
    COEF_LABEL,
    COEFFICIENTS,
)
from .csv_dialect import csv_text
from .judges import render_judges, write_judges_outputs
from .result import TOOL, AlignResult
from .schema import OVERALL
from .summary import (
    agreement_rows,
    automatic_rows,
    coef_cell,
    correlation_rows,
    decimals,
    descriptive_rows,
    markdown,
    pair_order_rows,
    paired_rows,
)


def write_outputs(res: AlignResult, out_dir: Path, human_paths: list[Path], *, figures: bool = True) -> list[Path]:
    """Everything into `out_dir`, complete or not at all."""
    with StagedDir(out_dir, TOOL) as st:
        cols, rows = correlation_rows(res)
        st.write_text(CORRELATIONS_CSV, csv_text(cols, rows))
        cols, rows = descriptive_rows(res)
        st.write_text(DESCRIPTIVES_CSV, csv_text(cols, rows))
        if res.automatic:
            cols, rows = automatic_rows(res)
            st.write_text(AUTOMATIC_CSV, csv_text(cols, rows))
        if len(res.judges) >= 2:
            cols, rows, pcols, prows = agreement_rows(res)
            st.write_text(AGREEMENT_CSV, csv_text(cols, rows))
            st.write_text(AGREEMENT_PAIRS_CSV, csv_text(pcols, prows))
        cols, rows = paired_rows(res)
        st.write_text(PAIRED_SCORES_CSV, csv_text(cols, rows))
        if any(o.pairs for o in res.pair_order.values()):
            cols, rows = pair_order_rows(res)
            st.write_text(PAIR_ORDER_CSV, csv_text(cols, rows))
        st.write_text(CORRELATIONS_MD, markdown(res, human_paths, res.llm.sources))
        if res.metric_alignment is not None:
            cols, rows = metric_table.rows_csv(res.metric_alignment)
            st.write_text(METRIC_ALIGNMENT_CSV, csv_text(cols, rows))
            st.write_text(METRIC_ALIGNMENT_MD, metric_table.markdown(res.metric_alignment))
        if res.people_fit is not None:
            st.write_text(PEOPLE_ESTIMATE_MD, people_fit.markdown(res.people_fit))
            if res.people_fit.estimate is not None:
                st.write_text(PEOPLE_ESTIMATE_JSON, people_estimate_text(res.people_fit.estimate))
            if res.people_fit.compared:
                cols, rows = people_fit.rows_csv(res.people_fit)
                st.write_text(PEOPLE_ESTIMATE_CSV, csv_text(cols, rows))
        st.write_text(PROBLEMS_TXT, "\n".join(res.problems.lines()) + "\n" if len(res.problems) else "no problems\n")
        if figures:
            write_figures(res, st)
        if res.calibration is not None:
            estimates.write_calibration_outputs(res.calibration, st)
            if figures:
                estimates.write_calibration_figure(res.calibration, st)
        if res.ppi is not None:
            estimates.write_ppi_outputs(res.ppi, st, figures)
        if res.checklist_fit is not None:
            checklist_fit.write_outputs(res.checklist_fit, st)
        if res.raters is not None:
            write_judges_outputs(res.raters, st)
        return st.commit()


def write_figures(res: AlignResult, st: StagedDir) -> None:

    g = res.groups[0]
    series = []
    for k, metric in enumerate(schema.row_names()):
        ok = ~np.isnan(res.human[:, k]) & ~np.isnan(res.model[:, k])
        series.append((metric, res.human[ok, k], res.model[ok, k]))
    plots.score_distributions(st.path(f"{FIGURES_DIR}/{SCORE_DISTRIBUTIONS_PNG}"), series)
    vals = np.array([[g.correlations[m].coefs[c].value for c in COEFFICIENTS] for m in schema.row_names()])
    ps = np.array([[g.correlations[m].coefs[c].p for c in COEFFICIENTS] for m in schema.row_names()])
    labels = [f"{m} (n={g.correlations[m].n})" for m in schema.row_names()]
    plots.correlation_heatmap(
        st.path(f"{FIGURES_DIR}/{CORRELATION_HEATMAP_PNG}"), labels, vals, ps, [COEF_LABEL[c] for c in COEFFICIENTS]
    )
    if res.metric_alignment is not None and res.metric_alignment.rows:
        for coef, name, what in (
            ("pearson", METRIC_ALIGNMENT_PNG, "Pearson r"),
            ("within", METRIC_ALIGNMENT_WITHIN_PNG, "within-tutorial r"),
        ):
            labels, cols, vals, ps = metric_table.heatmap_data(res.metric_alignment, coef)
            plots.correlation_heatmap(
                st.path(f"{FIGURES_DIR}/{name}"),
                labels,
                vals,
                ps,
                cols,
                title=f"Every metric vs people: {what} (* p<0.05, ** p<0.01)",
            )
    if res.by and len(res.groups) > 1:
        gs = res.groups[1:]
        vals = np.array(
            [[[g.correlations[m].coefs[c].value for g in gs] for m in schema.row_names()] for c in COEFFICIENTS]
        )
        ps = np.array([[[g.correlations[m].coefs[c].p for g in gs] for m in schema.row_names()] for c in COEFFICIENTS])
        plots.group_heatmap(
            st.path(f"figures/correlation_heatmap_by_{res.by}.png"),
            schema.row_names(),
            [g.group for g in gs],
            vals,
            ps,
            [COEF_LABEL[c] for c in COEFFICIENTS],
            res.by,
        )


def render(res: AlignResult, console) -> None:
    from rich.table import Table

    multi = len(res.groups) > 1
    t = Table(title="Human (mean of judges) vs LLM judge  (* p<0.05, ** p<0.01; CIs in correlations.md)")
    if multi:
        t.add_column(res.by or "group", no_wrap=True, overflow="ellipsis", max_width=24)
    t.add_column("Metric", no_wrap=True)
    for name in ("n", *(COEF_LABEL[c] for c in COEFFICIENTS), "Human", "LLM"):
        t.add_column(name, justify="right", no_wrap=True)
    for g in res.groups:
        for metric in schema.row_names():
            cr = g.correlations[metric]
            d = g.descriptives[metric]
            cells = [
                metric,
                str(cr.n),
                *(coef_cell(cr.coefs[c], with_ci=False) for c in COEFFICIENTS),
                decimals(d.human_mean, 2),
                decimals(d.llm_mean, 2),
            ]
            t.add_row(*([g.group] if multi else []), *cells, end_section=metric == OVERALL)
    console.print(t)
    g = res.groups[0]
    if g.agreement:
        a = Table(title=f"Agreement between the {len(res.judges)} human judges")
        for name in ("Metric", "n", "Krippendorff α (ord.)", "Cohen κ (quadr.)", "Pearson r"):
            a.add_column(name, justify="left" if name == "Metric" else "right")
        for metric in schema.metrics():
            ag = g.agreement[metric]
            a.add_row(metric, str(ag.n_units), decimals(ag.alpha), decimals(ag.kappa_mean), decimals(ag.pearson_mean))
        console.print(a)
    o = res.pair_order.get(OVERALL)
    if o is not None and o.pairs:
        console.print(
            f"Head to head: the judge's Overall orders {decimals(o.accuracy)} [{decimals(o.ci_low)}, {decimals(o.ci_high)}] of the "
            f"{o.pairs} pairs of one tutorial the people clearly ordered ({o.groups} tutorials; per rubric: "
            f"{PAIR_ORDER_CSV})",
            highlight=False,
            markup=False,
        )
    if res.metric_alignment is not None:
        metric_table.render(res.metric_alignment, console)
    if res.people_fit is not None:
        people_fit.render(res.people_fit, console)
    if res.raters is not None:
        render_judges(res.raters, console)
    if res.calibration is not None:
        estimates.render_calibration(res.calibration, console)
    if res.ppi is not None:
        estimates.render_ppi(res.ppi, console)
    if res.checklist_fit is not None:
        checklist_fit.render(res.checklist_fit, console)
    if len(res.problems):
        p = Table(title="Left out (details: problems.txt)")
        p.add_column("Problem")
        p.add_column("Count", justify="right")
        for k, v in res.problems.counts().most_common():
            p.add_row(k, str(v))
        console.print(p)
