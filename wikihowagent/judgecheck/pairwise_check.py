"""judge-check --pairwise: each original and its perturbed copy judged head to head in both orders; the pairwise
table, its summary and its comparison with the absolute mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.compare.engine import (
    PairJob,
    reading_note,
    verdict_rows,
)
from wikihowagent.compare.pairwise import (
    AGREE,
    AVERAGE,
    VERDICT_RULES,
    winner_score,
)
from wikihowagent.csvcells import people_csv
from wikihowagent.judge.modes import SCORING_MODES, modes_where
from wikihowagent.judge.prompt_variants import DEFAULT_PROMPT
from wikihowagent.layout import JUDGMENTS, PAIRWISE_SENSITIVITY_CSV, PAIRWISE_SENSITIVITY_PNG, PAIRWISE_SUMMARY_MD
from wikihowagent.markdown import frame_table
from wikihowagent.records import Conversation
from wikihowagent.stats.bootstrap import percentile_ci

from .accuracy import BOOTSTRAP, ORIGINAL, bootstrap_ci, mean_accuracy_samples
from .analysis import cell_wins, heatmap, mean_or_nan, round4, sensitivity_table
from .judgments import CheckStats, read_judgments
from .perturbations import Perturbation, perturb

PAIRWISE_SENSITIVITY = PAIRWISE_SENSITIVITY_CSV


PAIRWISE_SUMMARY = PAIRWISE_SUMMARY_MD


PAIRWISE_HEATMAP = PAIRWISE_SENSITIVITY_PNG


def plan_pairwise(
    convs: list[Conversation], perturbations: list[Perturbation], rubric_names: list[str], stats: CheckStats
) -> list[Any]:
    """Per conversation: (original, perturbed) for every perturbation, then (perturbed, original); each asked
    on the perturbation's target rubrics only. The first block shares the prompt prefix up to the original."""

    jobs: list[PairJob] = []
    for c in convs:
        pairs = []
        for p in perturbations:
            pc = perturb(p, c, convs)
            if pc is None:
                stats.not_applicable += 1
                continue
            pairs.append((p, pc))
        jobs += [
            PairJob(c.conversation_id, ORIGINAL, p.name, c, pc, [t for t in p.targets if t in rubric_names])
            for p, pc in pairs
        ]
        jobs += [
            PairJob(c.conversation_id, p.name, ORIGINAL, pc, c, [t for t in p.targets if t in rubric_names])
            for p, pc in pairs
        ]
    return jobs


def pairwise_cells(
    records: dict[tuple[str, ...], Any],
    perturbations: list[Perturbation],
    rubric_names: list[str],
    rule: str | None = None,
    tie_band: float = 0.0,
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """{(rubric, perturbation): verdict rows (compare.engine.verdict_rows: run_a = the original, so verdict "A" =
    the original preferred)} of every targeted cell, under one verdict rule."""

    out = {}
    for p in perturbations:
        targets = [t for t in p.targets if t in rubric_names]
        vrows, _ = verdict_rows(records, [(ORIGINAL, p.name)], targets, rule, tie_band)
        for rubric in targets:
            out[(rubric, p.name)] = [r for r in vrows if r["rubric"] == rubric]
    return out


def verdict_wins(rows: list[dict[str, Any]]) -> dict[str, float]:
    """{conversation id: 1 the original preferred, 0.5 a tie, 0 the perturbed copy} of one cell's rows."""

    return {r["tutorial_id"]: winner_score(r["verdict"]) for r in rows}


def pairwise_table(
    records: dict[tuple[str, ...], Any],
    agree: dict[tuple[str, str], list[dict[str, Any]]],
    averaged: dict[tuple[str, str], list[dict[str, Any]]],
    absolute: Any | None = None,
) -> Any:
    """Per targeted rubric x perturbation: accuracy under the `agree` rule (the original preferred in both
    orders = 1, a tie 0.5, the perturbed copy = 0) and under the `average` rule (the order-averaged P(original
    better) outside 0.5 ± tie_band), each with a bootstrap CI over conversations; position consistency, mean
    P(original better) over the two orders; and the absolute judge's accuracy on the same cell where known.
    `agree`, `averaged`: `pairwise_cells` of `records` under each rule."""
    import pandas as pd

    rows = []
    for (rubric, pert), sel in agree.items():
        scores = list(verdict_wins(sel).values())
        avg = list(verdict_wins(averaged[(rubric, pert)]).values())
        asked = {k[0] for k in records if k[1:3] in ((ORIGINAL, pert), (pert, ORIGINAL))}
        lo, hi = bootstrap_ci(scores)
        alo, ahi = bootstrap_ci(avg)
        row = {
            "rubric": rubric,
            "perturbation": pert,
            "n": len(sel),
            "accuracy": round4(mean_or_nan(scores)),
            "ci_low": round4(lo),
            "ci_high": round4(hi),
            "accuracy_averaged": round4(mean_or_nan(avg)),
            "averaged_ci_low": round4(alo),
            "averaged_ci_high": round4(ahi),
            "position_consistency": round4(mean_or_nan([float(r["consistent"]) for r in sel])),
            "mean_p_original": round4(mean_or_nan([r["p_a"] for r in sel])),
            "ties": sum(x == 0.5 for x in scores),
            "ties_averaged": sum(x == 0.5 for x in avg),
            "failed": len(asked) - len(sel),
        }
        if absolute is not None:
            hit = absolute[(absolute["rubric"] == rubric) & (absolute["perturbation"] == pert)]
            row["absolute_accuracy"] = None if hit.empty else hit.iloc[0]["accuracy"]
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class ModeAccuracy:
    """One judging mode's mean accuracy over the targeted cells, with a 95 % bootstrap CI over conversations."""

    mode: str
    mean: float
    ci_low: float
    ci_high: float

    def text(self) -> str:
        return f"{self.mode} {self.mean:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}]"


def compare_modes(
    modes: dict[str, list[dict[str, float]]], n_boot: int = BOOTSTRAP, seed: int = 0
) -> tuple[list[ModeAccuracy], str]:
    """Each mode's mean accuracy with its CI (the same resampled conversations for all), and a one-line
    recommendation: the most accurate mode when it is above chance and its paired difference from the
    runner-up excludes 0; else what the data do not support."""

    means, samples = mean_accuracy_samples(modes, n_boot, seed)
    accs = [ModeAccuracy(m, means[m], *percentile_ci(samples[m])) for m in modes if means[m] == means[m]]
    if not accs:
        return accs, "Recommendation: nothing measured yet."
    ranked = sorted(accs, key=lambda a: -a.mean)
    best = ranked[0]
    n = len({c for cells in modes.values() for cell in cells for c in cell})
    if not best.ci_low > 0.5:
        advice = "no mode is reliably above chance (0.5) for this judge; use a stronger judge"
    elif len(ranked) == 1:
        advice = f"{best.mode} (the only mode measured)"
    else:
        second = ranked[1]
        lo, hi = percentile_ci(samples[best.mode] - samples[second.mode])
        diff = f"{best.mean - second.mean:.3f} [{lo:.3f}, {hi:.3f}]"
        advice = (
            f"use {best.mode}: more accurate than {second.mode} by {diff}"
            if lo > 0
            else f"no reliable difference between {best.mode} and {second.mode} ({diff}); measure more conversations "
            "before preferring either"
        )
    return accs, f"Recommendation: {advice} ({'; '.join(a.text() for a in ranked)}; n = {n} conversations)."


@dataclass
class PairwiseCheck:
    table: Any
    mean_accuracy: float  # the agree rule's
    position_consistency: float
    absolute_mean_accuracy: float = math.nan
    modes: list[ModeAccuracy] = field(default_factory=list)  # agree, averaged[, absolute]: means with CIs
    recommendation: str = ""
    written: list[Path] = field(default_factory=list)


@dataclass
class AbsoluteCells:
    """This evaluator's absolute judgments of the same conversations (`judge-check` without --pairwise into the
    same --out), beside its pairwise verdicts."""

    mode: str  # the scoring mode found first of the rating modes (weighted, json, sampled)
    records: dict[tuple[str, str], dict[str, Any]]
    table: Any  # sensitivity_table of the records


def absolute_cells(
    out_dir: Path, evaluator: str, conv_ids: set[str], perturbations: list[Perturbation], rubric_names: list[str]
) -> AbsoluteCells | None:
    """The absolute judge `judge-check` runs by default, in the first scoring mode OUT's judgments.jsonl holds."""
    for scoring in modes_where("checklist", False):
        prompt = DEFAULT_PROMPT if SCORING_MODES.get(scoring).prompt_variants else ""
        found = read_judgments(out_dir / JUDGMENTS, evaluator, scoring, prompt)
        records = {k: v for k, v in found.items() if k[0] in conv_ids}
        if records:
            return AbsoluteCells(scoring, records, sensitivity_table(records, perturbations, rubric_names))
    return None


def _known(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def pooled_consistency(table: Any) -> float:
    """Position consistency pooled over the cells (weighted by each cell's number of verdicts)."""
    weights = [(n, c) for n, c in zip(table["n"], table["position_consistency"], strict=True) if _known(c)]
    total = sum(n for n, _ in weights)
    return sum(n * c for n, c in weights) / total if weights and total else math.nan


def mode_wins(
    agree: dict[tuple[str, str], list[dict[str, Any]]],
    averaged: dict[tuple[str, str], list[dict[str, Any]]],
    table: Any,
    absolute: AbsoluteCells | None,
    perturbations: list[Perturbation],
    rubric_names: list[str],
    tie_band: float,
) -> dict[str, list[dict[str, float]]]:
    """{mode label: each cell's {conversation id: win}}: the two pairwise verdict rules, and the absolute judge
    on the cells judged pairwise."""
    agree_label, avg_label = VERDICT_RULES[AGREE].label(tie_band), VERDICT_RULES[AVERAGE].label(tie_band)
    modes = {
        f"pairwise, {agree_label}": [verdict_wins(v) for v in agree.values()],
        f"pairwise, {avg_label}": [verdict_wins(v) for v in averaged.values()],
    }
    if absolute is not None:
        cells = {(r, p) for r, p, n in zip(table["rubric"], table["perturbation"], table["n"], strict=True) if n}
        modes[f"absolute, {absolute.mode}"] = [
            w for k, w in cell_wins(absolute.records, perturbations, rubric_names).items() if k in cells
        ]
    return modes


def pairwise_summary(
    res: PairwiseCheck,
    absolute: AbsoluteCells | None,
    evaluator: str,
    reading: str,
    n_convs: int,
    stats: CheckStats,
    tie_band: float,
) -> str:
    """pairwise_summary.md's text."""
    table = res.table
    n_cells = sum(_known(a) for a in table["accuracy"])
    lines = [
        f"# judge-check --pairwise: {evaluator} (pairwise, {reading})",
        "",
        reading_note(reading),
        "",
        f"{n_convs} conversations; each perturbed copy judged against its original in both orders on the "
        "perturbation's target rubrics only. accuracy: verdict rule `agree` (the original preferred in both "
        "orders = 1, a tie (the orders disagree) = 0.5, the perturbed copy = 0); accuracy_averaged: verdict "
        f"rule `{VERDICT_RULES[AVERAGE].label(tie_band)}` (P(original better) averaged over the two orders; a "
        "constant position bias cancels); 95 % bootstrap CIs over conversations.",
        "",
        f"Mean accuracy over the {n_cells} targeted cells: **{res.mean_accuracy:.3f}**; position consistency "
        f"(both orders agree), pooled: **{res.position_consistency:.3f}**.",
    ]
    if absolute is not None and "absolute_accuracy" in table:
        lines.append(f"The absolute judge ({absolute.mode}) on the same cells: **{res.absolute_mean_accuracy:.3f}**.")
    lines += [
        "",
        "Mean accuracy over the targeted cells, 95 % CI (bootstrap over conversations): "
        + "; ".join(m.text() for m in res.modes)
        + ".",
        "",
        f"Unreadable verdicts (not one letter, low letter probability, refused calls): {stats.failures} of "
        f"{stats.rubric_scores} asked in this invocation.",
        "",
        frame_table(table),
        "",
    ]
    if absolute is None:
        lines.append(
            "(No absolute judgments of this judge in this directory: run judge-check without --pairwise into "
            "the same --out to compare the modes.)"
        )
    lines += [res.recommendation, ""]
    return "\n".join(lines)


def analyse_pairwise(
    out_dir: Path,
    records: dict[tuple[str, ...], Any],
    perturbations: list[Perturbation],
    rubric_names: list[str],
    evaluator: str,
    reading: str,
    conv_ids: set[str],
    stats: CheckStats,
    figures: bool = True,
    tie_band: float = 0.0,
) -> PairwiseCheck:
    """pairwise_sensitivity.csv / pairwise_summary.md / pairwise_sensitivity.png: accuracy under both verdict
    rules with CIs and position consistency; next to the absolute judge's accuracy when `judgments.jsonl`
    holds this evaluator's absolute judgments of the same conversations; a one-line recommendation last."""
    records = {k: r for k, r in records.items() if k[0] in conv_ids}
    absolute = absolute_cells(out_dir, evaluator, conv_ids, perturbations, rubric_names)
    agree = pairwise_cells(records, perturbations, rubric_names, AGREE)
    averaged = pairwise_cells(records, perturbations, rubric_names, AVERAGE, tie_band)
    table = pairwise_table(records, agree, averaged, None if absolute is None else absolute.table)
    res = PairwiseCheck(table, mean_or_nan([a for a in table["accuracy"] if _known(a)]), pooled_consistency(table))
    modes = mode_wins(agree, averaged, table, absolute, perturbations, rubric_names, tie_band)
    res.modes, res.recommendation = compare_modes(modes)
    if absolute is None:
        res.recommendation = res.recommendation.replace(
            "Recommendation:", "Recommendation among the pairwise rules (no absolute judgments of this judge here):", 1
        )
    elif "absolute_accuracy" in table:  # on the cells judged pairwise
        cells = zip(table["absolute_accuracy"], table["n"], strict=True)
        res.absolute_mean_accuracy = mean_or_nan([a for a, n in cells if n and _known(a)])
    p = out_dir / PAIRWISE_SUMMARY
    p.write_text(pairwise_summary(res, absolute, evaluator, reading, len(conv_ids), stats, tie_band), encoding="utf-8")
    res.written += [people_csv(table, out_dir / PAIRWISE_SENSITIVITY), p]
    if figures and len(table):
        title = f"judge-check --pairwise: {evaluator} ({reading})"
        res.written.append(heatmap(table, rubric_names, perturbations, out_dir / PAIRWISE_HEATMAP, title))
    return res
