"""`judge-check`: meta-evaluation of a rubric judge without human labels.

For each conversation: the original is judged twice (the second time with the rubric order reversed and
the seed + 1: self-consistency), and each perturbation of `wikihowagent/data/perturbations.json` is judged on its
target rubrics. Judgments are appended to `judgments.jsonl` as they finish (a rerun resumes); the
analysis reads that file:

- `sensitivity.csv`: per rubric x perturbation (targeted cells), how often the original scores higher
  than the perturbed copy (ties count half), with a bootstrap 95 % CI over conversations.
- `consistency.csv`: per rubric, Krippendorff's alpha (interval) between the two judgings of the
  originals, their mean absolute difference, and the mean and spread of scores across conversations.
- `summary.md` and `sensitivity.png` (heatmap).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wikihowagent.compare.engine import (
    PairJob,
    PassStats,
    pending,
    read_pair_judgments,
    reading_note,
    run_pair_jobs,
    verdict_rows,
)
from wikihowagent.compare.pairwise import (
    AGREE,
    AVERAGE,
    VERDICT_RULES,
    PairwiseJudge,
    check_tie_band,
    winner_score,
)
from wikihowagent.config import load_config
from wikihowagent.console import progress_bar
from wikihowagent.corpus.core import LoadReport, TutorialError, load_tutorials
from wikihowagent.corpus.counterfactual import ValiditySetError, check_steps
from wikihowagent.csvcells import people_csv
from wikihowagent.errors import WikihowagentError
from wikihowagent.evaluation.inputs import resolve_inputs
from wikihowagent.evaluation.judge import load_rubrics
from wikihowagent.evaluation.judge_prompts import DEFAULT_PROMPT, recorded_prompt
from wikihowagent.evaluation.metrics import resolve_device
from wikihowagent.evaluation.panel import judge_slug
from wikihowagent.evaluation.runner import EvalOptions, EvaluateError, Evaluation, gather_cancelling, judge_concurrency
from wikihowagent.evaluation.scoring import SCORING_MODES
from wikihowagent.evaluation.session import JudgeLoop, judge_endpoints, locked_out, resumable
from wikihowagent.figures import annotated_heatmap
from wikihowagent.markdown import frame_table
from wikihowagent.records import Conversation, JudgmentRecord
from wikihowagent.runs import (
    CONSISTENCY_CSV,
    JUDGE_CHECK_LOCK,
    JUDGMENTS,
    PAIR_JUDGMENTS,
    PAIRWISE_SENSITIVITY_CSV,
    PAIRWISE_SENSITIVITY_PNG,
    PAIRWISE_SUMMARY_MD,
    POSTTESTS,
    SENSITIVITY_CSV,
    SENSITIVITY_PNG,
    SUMMARY_MD,
    JsonlAppender,
    read_judgment_table,
)
from wikihowagent.workflow.likelihood import LikelihoodError, LikelihoodTaker, for_chat_model
from wikihowagent.workflow.posttest import post_tester, prompt_option

from . import metric_check, posttest_check
from .accuracy import (  # noqa: F401 (re-exported)
    BOOTSTRAP,
    ORIGINAL,
    ORIGINAL_2,
    bootstrap_ci,
    mean_accuracy_samples,
    paired_wins,
    percentile_ci,
    win,
)
from .panel import PANEL_DIR, combine_judgments
from .perturbations import Perturbation, load_perturbations, perturb


@dataclass
class CheckStats:
    judged: int = 0  # judge passes made in this invocation
    already: int = 0  # found in judgments.jsonl
    not_applicable: int = 0  # perturbations that cannot change a conversation (e.g. no numbers to alter)
    rubric_scores: int = 0
    failures: int = 0


@dataclass
class Job:
    conv: Conversation
    variant: str
    names: list[str]
    seed_variant: int = 0


@dataclass
class CheckResult:
    sensitivity: Any  # pandas DataFrame
    consistency: Any
    written: list[Path] = field(default_factory=list)
    mean_accuracy: float = math.nan


def plan(
    convs: list[Conversation], perturbations: list[Perturbation], rubric_names: list[str], stats: CheckStats
) -> list[Job]:
    jobs: list[Job] = []
    for c in convs:
        jobs.append(Job(c, ORIGINAL, list(rubric_names)))
        jobs.append(Job(c, ORIGINAL_2, list(rubric_names), seed_variant=1))
        for p in perturbations:
            pc = perturb(p, c, convs)
            if pc is None:
                stats.not_applicable += 1
                continue
            jobs.append(Job(pc, p.name, [t for t in p.targets if t in rubric_names]))
    return jobs


def read_judgments(path: Path, evaluator: str, scoring: str, prompt: str = "") -> dict[tuple[str, str], dict[str, Any]]:
    """{(conversation_id, variant): {"scores", "judge_failures"}} of this judge (evaluator + scoring mode + prompt
    variant; lines without a prompt were judged with the tutorial-first layout, or json's own), from the
    judgments' rows of the score table (`wikihowagent.runs.read_judgment_table`); later lines win."""

    t = read_judgment_table(path)
    meta = t.meta
    want = prompt if prompt else recorded_prompt(None, scoring)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for cid, variant, ev, sc, pr, failures, scores in zip(
        meta["conversation_id"],
        meta["variant"],
        meta["evaluator"],
        meta["scoring"],
        meta["prompt"],
        meta["failures"],
        t.iter_row_metrics(),
        strict=True,
    ):
        if ev == evaluator and sc == scoring and (pr or recorded_prompt(None, sc)) == want:
            out[(cid, variant)] = {"scores": scores, "judge_failures": list(failures)}
    return out


async def run_jobs(
    jobs: list[Job], judge: Any, evaluator: str, path: Path, progress: Callable[[int], None], stats: CheckStats
) -> None:

    done = read_judgments(path, evaluator, judge.label, judge.prompt_name)
    todo = []
    for j in jobs:
        old = done.get((j.conv.conversation_id, j.variant))
        if old is not None and set(j.names) <= {k for k, v in (old.get("scores") or {}).items() if v is not None}:
            stats.already += 1
            progress(1)
        else:
            todo.append(j)
    with JsonlAppender(path) as sink:

        async def one(j: Job) -> None:
            res = await judge.judge(j.conv, j.names, j.seed_variant)
            sink.append(
                JudgmentRecord(
                    conversation_id=j.conv.conversation_id,
                    run=j.conv.run,
                    variant=j.variant,
                    evaluator=evaluator,
                    judge_scoring=judge.label,
                    judge_prompt=judge.prompt_name,
                    scores=res.scores,
                    judge_failures=res.failures,
                    notes=res.notes,
                )
            )
            stats.judged += 1
            stats.rubric_scores += len(res.scores)
            stats.failures += len(res.failures)
            progress(1)

        await gather_cancelling(one(j) for j in todo)


# --------------------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------------------


def sensitivity_table(
    records: dict[tuple[str, str], dict[str, Any]], perturbations: list[Perturbation], rubric_names: list[str]
) -> Any:
    import pandas as pd

    rows = []
    for p in perturbations:
        for rubric in p.targets:
            if rubric not in rubric_names:
                continue
            wins, o_scores, p_scores, failed = paired_wins(_score_pairs(records, p, rubric).values())
            lo, hi = bootstrap_ci(wins)
            rows.append(
                {
                    "rubric": rubric,
                    "perturbation": p.name,
                    "n": len(wins),
                    "accuracy": _r(sum(wins) / len(wins)) if wins else None,
                    "ci_low": _r(lo),
                    "ci_high": _r(hi),
                    "mean_original": _r(_mean(o_scores)),
                    "mean_perturbed": _r(_mean(p_scores)),
                    "ties": sum(w == 0.5 for w in wins),
                    "failed": failed,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "rubric",
            "perturbation",
            "n",
            "accuracy",
            "ci_low",
            "ci_high",
            "mean_original",
            "mean_perturbed",
            "ties",
            "failed",
        ],
    )


def _score_pairs(
    records: dict[tuple[str, str], dict[str, Any]], p: Perturbation, rubric: str
) -> dict[str, tuple[float | None, float | None]]:
    """{conversation id: (original's score, perturbed copy's score)} on one cell."""
    originals = {cid: r for (cid, v), r in records.items() if v == ORIGINAL}
    return {
        cid: ((originals[cid].get("scores") or {}).get(rubric), (rec.get("scores") or {}).get(rubric))
        for (cid, v), rec in records.items()
        if v == p.name and cid in originals
    }


def cell_wins(
    records: dict[tuple[str, str], dict[str, Any]], perturbations: list[Perturbation], rubric_names: list[str]
) -> dict[tuple[str, str], dict[str, float]]:
    """{(rubric, perturbation): {conversation id: win}} of the absolute judge on every targeted cell."""
    return {
        (rubric, p.name): {
            cid: win(o, q)
            for cid, (o, q) in _score_pairs(records, p, rubric).items()
            if o is not None and q is not None
        }
        for p in perturbations
        for rubric in p.targets
        if rubric in rubric_names
    }


def consistency_table(records: dict[tuple[str, str], dict[str, Any]], rubric_names: list[str]) -> Any:
    import krippendorff
    import numpy as np
    import pandas as pd

    first = {cid: r.get("scores") or {} for (cid, v), r in records.items() if v == ORIGINAL}
    second = {cid: r.get("scores") or {} for (cid, v), r in records.items() if v == ORIGINAL_2}
    rows = []
    for rubric in rubric_names:
        both = [(first[c].get(rubric), second[c].get(rubric)) for c in first if c in second]
        pairs: list[tuple[float, float]] = [(a, b) for a, b in both if a is not None and b is not None]
        scores: list[float] = [v for s in first.values() if (v := s.get(rubric)) is not None]
        alpha = math.nan
        if len(pairs) >= 2:
            data = np.array(pairs, dtype=float).T
            if np.ptp(data) > 0:
                alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
        rows.append(
            {
                "rubric": rubric,
                "n": len(pairs),
                "alpha": _r(alpha),
                "mean_abs_diff": _r(_mean([abs(a - b) for a, b in pairs])),
                "mean": _r(_mean(scores)),
                "sd_across_conversations": _r(_sd(scores)),
                "distinct_scores": len({round(s, 4) for s in scores}),
            }
        )
    return pd.DataFrame(rows)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def _sd(xs: list[float]) -> float:
    if len(xs) < 2:
        return math.nan
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _r(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def heatmap(sens: Any, rubric_names: list[str], perturbations: list[Perturbation], path: Path, title: str) -> Path:
    import numpy as np

    rubrics = [r for r in rubric_names if r in set(sens["rubric"])]
    cols = [p.name for p in perturbations]
    grid = np.full((len(rubrics), len(cols)), np.nan)
    for _, row in sens.iterrows():
        if row["accuracy"] is not None and not (isinstance(row["accuracy"], float) and math.isnan(row["accuracy"])):
            grid[rubrics.index(row["rubric"]), cols.index(row["perturbation"])] = row["accuracy"]
    return annotated_heatmap(
        grid,
        cols,
        rubrics,
        path,
        title=title,
        colorbar="P(original scores higher)",
        figsize=(1.2 * len(cols) + 2.5, 0.55 * len(rubrics) + 1.8),
        xrotation=35,
    )


def markdown_summary(
    sens: Any, cons: Any, perturbations: list[Perturbation], judge_desc: str, stats: CheckStats, n_convs: int
) -> str:

    acc = [a for a in sens["accuracy"] if a is not None and not (isinstance(a, float) and math.isnan(a))]
    mean_acc = _mean(acc)
    lines = [
        f"# judge-check: {judge_desc}",
        "",
        f"{n_convs} conversations; mean accuracy over the {len(acc)} targeted rubric x perturbation cells: "
        f"**{mean_acc:.3f}** (1 = the judge always scores the original higher, 0.5 = chance).",
        "",
        f"Judge failures (calls, parse failures, rubrics below the digit-probability threshold): {stats.failures} "
        f"of {stats.rubric_scores} rubric scores asked in this invocation; {stats.not_applicable} perturbed "
        "copies not applicable (nothing to change).",
        "",
        "## Sensitivity",
        "",
    ]
    lines.append(frame_table(sens))
    lines += ["", "## Self-consistency (originals judged twice: rubric order reversed, seed + 1)", ""]
    lines.append(frame_table(cons))
    lines += ["", "## Perturbations", ""]
    lines += [f"- `{p.name}` ({', '.join(p.targets)}): {p.description}" for p in perturbations]
    return "\n".join(lines) + "\n"


def analyse(
    out_dir: Path,
    perturbations: list[Perturbation],
    rubric_names: list[str],
    evaluator: str,
    scoring: str,
    conv_ids: set[str],
    stats: CheckStats,
    figures: bool = True,
    prompt: str = "",
) -> CheckResult:
    records = {
        k: v for k, v in read_judgments(out_dir / JUDGMENTS, evaluator, scoring, prompt).items() if k[0] in conv_ids
    }
    sens = sensitivity_table(records, perturbations, rubric_names)
    cons = consistency_table(records, rubric_names)
    written = []
    written.append(people_csv(sens, out_dir / SENSITIVITY_CSV))
    written.append(people_csv(cons, out_dir / CONSISTENCY_CSV))
    desc = f"{evaluator} ({scoring}" + (f", prompt {prompt})" if prompt else ")")
    p = out_dir / SUMMARY_MD
    p.write_text(markdown_summary(sens, cons, perturbations, desc, stats, len(conv_ids)), encoding="utf-8")
    written.append(p)
    if figures and len(sens):
        written.append(heatmap(sens, rubric_names, perturbations, out_dir / SENSITIVITY_PNG, f"judge-check: {desc}"))
    acc = [a for a in sens["accuracy"] if a is not None and not (isinstance(a, float) and math.isnan(a))]
    return CheckResult(sensitivity=sens, consistency=cons, written=written, mean_accuracy=_mean(acc))


# --------------------------------------------------------------------------------------------------
# Pairwise: original vs perturbed copy, judged head to head in both orders
# --------------------------------------------------------------------------------------------------

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
    """{(rubric, perturbation): verdict rows (compare.core.verdict_rows: run_a = the original, so verdict "A" =
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
            "accuracy": _r(_mean(scores)),
            "ci_low": _r(lo),
            "ci_high": _r(hi),
            "accuracy_averaged": _r(_mean(avg)),
            "averaged_ci_low": _r(alo),
            "averaged_ci_high": _r(ahi),
            "position_consistency": _r(_mean([float(r["consistent"]) for r in sel])),
            "mean_p_original": _r(_mean([r["p_a"] for r in sel])),
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

    mode: str  # the scoring mode found first of weighted, json, sampled
    records: dict[tuple[str, str], dict[str, Any]]
    table: Any  # sensitivity_table of the records


def absolute_cells(
    out_dir: Path, evaluator: str, conv_ids: set[str], perturbations: list[Perturbation], rubric_names: list[str]
) -> AbsoluteCells | None:
    """The absolute judge `judge-check` runs by default, in the first scoring mode OUT's judgments.jsonl holds."""
    for scoring in ("weighted", "json", "sampled"):
        prompt = "" if scoring == "json" else DEFAULT_PROMPT
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
    res = PairwiseCheck(table, _mean([a for a in table["accuracy"] if _known(a)]), pooled_consistency(table))
    modes = mode_wins(agree, averaged, table, absolute, perturbations, rubric_names, tie_band)
    res.modes, res.recommendation = compare_modes(modes)
    if absolute is None:
        res.recommendation = res.recommendation.replace(
            "Recommendation:", "Recommendation among the pairwise rules (no absolute judgments of this judge here):", 1
        )
    elif "absolute_accuracy" in table:  # on the cells judged pairwise
        cells = zip(table["absolute_accuracy"], table["n"], strict=True)
        res.absolute_mean_accuracy = _mean([a for a, n in cells if n and _known(a)])
    p = out_dir / PAIRWISE_SUMMARY
    p.write_text(pairwise_summary(res, absolute, evaluator, reading, len(conv_ids), stats, tie_band), encoding="utf-8")
    res.written += [people_csv(table, out_dir / PAIRWISE_SENSITIVITY), p]
    if figures and len(table):
        title = f"judge-check --pairwise: {evaluator} ({reading})"
        res.written.append(heatmap(table, rubric_names, perturbations, out_dir / PAIRWISE_HEATMAP, title))
    return res


# --------------------------------------------------------------------------------------------------
# The stage: run_judge_check (the command parses, calls it, prints its one-line error)
# --------------------------------------------------------------------------------------------------


class JudgeCheckError(WikihowagentError, ValueError):
    """judge-check cannot run or measured nothing; one line."""


@dataclass(frozen=True)
class JudgeCheckRequest:
    """What `wikihowagent judge-check` was asked to do."""

    runs: tuple[Path, ...]
    out: Path
    evaluators: tuple[str, ...] = ()  # () = as `evaluate`; several = a panel
    judge_scoring: str | None = None
    judge_rationale: bool = False
    judge_prompt: str | None = None
    perturbations: Path | None = None
    rubrics: Path | None = None
    max_conversations: int | None = None
    config: Path | None = None
    base_url: str | None = None
    concurrency: int | None = None
    retries: int = 2
    figures: bool = True
    pairwise: bool = False
    pairwise_reading: str | None = None
    tie_band: float = 0.0  # --pairwise: the `average` verdict rule's tie band
    posttest_learner: str | None = None  # instead of judging: the post-test's validity with this learner
    posttest_prompt: str | None = None  # ... in this wording (workflow/posttest.py PROMPTS); None = the default
    posttest_tutorials: tuple[Path, ...] = ()  # ... split by these tutorial sets (e.g. the validity set)
    posttest_likelihood: bool = False  # ... and the likelihood post-test (workflow/likelihood.py)
    device: str = "auto"  # ... Step Recall's encoder on this torch device (evaluation.metrics.resolve_device)
    metrics: bool = False  # instead of judging: every computational metric against the perturbations (no model)


def run_judge_check(req: JudgeCheckRequest, console: Any) -> None:
    """Judge, resume, analyse and write; progress and results on `console`. Raises JudgeCheckError (one line)."""
    if req.posttest_tutorials and not req.posttest_learner:
        raise JudgeCheckError("--tutorials: give --posttest-learner (the tutorial sets split the post-test's validity)")
    if req.posttest_likelihood and not req.posttest_learner:
        raise JudgeCheckError(
            "--posttest-likelihood: give --posttest-learner (the model whose log-probabilities are read)"
        )
    if req.device != "auto" or req.posttest_learner or req.metrics:  # an absent --device: one line, before any work
        req = replace(req, device=resolve_device(req.device))
    specs = list(dict.fromkeys(req.evaluators))
    if req.metrics:
        if specs or req.pairwise or req.posttest_learner:
            raise JudgeCheckError(
                "--metrics checks the computational metrics and asks no model: give it without --evaluator, "
                "--pairwise or --posttest-learner"
            )
        inputs = read_inputs(console, req)
        metric_check.run_metric_check(
            console,
            inputs.convs,
            inputs.perts,
            Path(req.out),
            str(inputs.sources[0].path)
            if len(inputs.sources) == 1
            else f"{len(inputs.sources)} inputs, the first {inputs.sources[0].path}",
            req.figures,
            req.device,
        )
        return
    if len(specs) > 1 and req.posttest_learner:
        raise JudgeCheckError(
            "--posttest-learner measures the post-test's validity and asks no judge: give it without a panel of "
            "--evaluator (the post-test's table shows the judge-check accuracy already in --out)"
        )
    if len(specs) > 1:
        _judge_panel(console, req, specs)
    else:
        _judge_check(console, req, specs[0] if specs else None)


def _judge_panel(console: Any, req: JudgeCheckRequest, specs: list[str]) -> None:
    """Each judge into OUT/<judge>/, then the panel of their mean scores into OUT/panel/."""
    if req.pairwise:
        raise JudgeCheckError("--pairwise compares one judge's verdicts; give one --evaluator")
    out = Path(req.out)
    for spec in specs:
        console.print(f"panel judge {spec} -> {out / judge_slug(spec)}", highlight=False, markup=False)
        member = replace(  # one judge of the panel: the absolute judge only
            req,
            out=out / judge_slug(spec),
            evaluators=(spec,),
            pairwise_reading=None,
            tie_band=0.0,
            posttest_prompt=None,
        )
        _judge_check(console, member, spec)
    rubric_set = load_rubrics(req.rubrics)
    perts = load_perturbations(req.perturbations, list(rubric_set))
    name, label, ids, n = combine_judgments(out, specs)
    accuracy = {
        spec: analyse(
            out / judge_slug(spec),
            perts,
            list(rubric_set),
            spec,
            _scoring_of(out / judge_slug(spec), spec),
            ids,
            CheckStats(),
            figures=False,
        ).mean_accuracy
        for spec in specs
    }
    res = analyse(out / PANEL_DIR, perts, list(rubric_set), name, label, ids, CheckStats(), figures=req.figures)
    console.print(
        "mean accuracy over targeted cells: "
        + ", ".join(f"{s} {a:.3f}" for s, a in accuracy.items())
        + f"; panel (mean of {len(specs)}) {res.mean_accuracy:.3f}",
        highlight=False,
        markup=False,
    )
    console.print(f"panel: {n} judgments -> " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)


def _scoring_of(out: Path, spec: str) -> str:
    m = read_judgment_table(out / JUDGMENTS).meta
    found = [sc for ev, sc in zip(m["evaluator"], m["scoring"], strict=True) if ev == spec]
    return found[-1] if found else ""


@dataclass
class CheckInputs:
    """What every judge-check mode reads first (`read_inputs`)."""

    cfg: Any  # the Config
    rubric_set: dict[str, Any]
    perts: list[Perturbation]
    sources: list[Any]  # evaluation.inputs sources
    convs: list[Conversation]  # at most --max-conversations, at least 2
    test_prompt: Any  # the post-test's TestPrompt
    tutorial_sets: dict[str, list[Any]]  # --tutorials: {set name: its tutorials}


def read_inputs(console: Any, req: JudgeCheckRequest) -> CheckInputs:
    """The options checked and the inputs read, each bad one a one-line error before any judging."""
    if req.judge_scoring is not None and req.judge_scoring not in SCORING_MODES:
        raise JudgeCheckError(f"--judge-scoring: unknown mode {req.judge_scoring!r}; valid: {', '.join(SCORING_MODES)}")
    test_prompt = prompt_option(req.posttest_prompt, req.posttest_learner)  # a bad --posttest-prompt: one line, first
    tutorial_sets = load_tutorial_sets(req.posttest_tutorials, console)  # a bad --tutorials set: one line, first
    cfg = load_config(req.config)
    rubric_set = load_rubrics(req.rubrics)
    perts = load_perturbations(req.perturbations, list(rubric_set))
    sources = resolve_inputs(list(req.runs), Path(cfg.runs_dir))

    def warn(msg: str) -> None:
        console.print("warning: " + msg, highlight=False, soft_wrap=True, markup=False)

    convs = first_conversations(sources, req.max_conversations, warn)
    if len(convs) < 2:
        raise JudgeCheckError(
            f"{', '.join(str(s.path) for s in sources)}: judge-check needs at least 2 conversations "
            f"(found {len(convs)})"
        )
    return CheckInputs(cfg, rubric_set, perts, sources, convs, test_prompt, tutorial_sets)


def first_conversations(sources: list[Any], limit: int | None, warn: Callable[[str], None]) -> list[Conversation]:
    """The inputs' conversations in order, the first `limit` of them (all for None or 0)."""
    convs: list[Conversation] = []
    for src in sources:
        for c in src.conversations(on_error=warn):
            convs.append(c)
            if limit and len(convs) >= limit:
                return convs
    return convs


def _judge_check(console: Any, req: JudgeCheckRequest, evaluator: str | None) -> None:
    """One judge (`evaluator`, None = as `evaluate`): absolute (default), --pairwise, or the post-test's validity
    (--posttest-learner)."""
    inputs = read_inputs(console, req)
    endpoints = judge_endpoints(inputs.cfg, req.base_url)  # as `evaluate`: the run's evaluator and endpoint
    if req.posttest_learner:
        _posttest_validity(console, req, inputs, endpoints.learner_factory(inputs.cfg))
        return
    opts = EvalOptions(
        judge=True,
        evaluator=evaluator,
        base_url=req.base_url,
        concurrency=req.concurrency,
        default_concurrency=inputs.cfg.concurrency,
        retries=req.retries,
        scoring=req.judge_scoring,
        rationale=req.judge_rationale,
        prompt=req.judge_prompt,
    )  # as `evaluate`: the run's evaluator and endpoint, else --evaluator

    def warn(msg: str) -> None:
        console.print("warning: " + msg, highlight=False, soft_wrap=True, markup=False)

    ev = Evaluation(opts, [], list(inputs.rubric_set), inputs.rubric_set, endpoints.make_llm, warn)
    spec = endpoints.resolve_one(ev, inputs.sources, _different_evaluators)
    if req.pairwise:
        llm = endpoints.make_llm(spec)
        _pairwise(console, req, inputs, spec, llm, judge_concurrency(opts, llm))
    else:
        _absolute(console, req, inputs, spec, ev.judge_for(spec))


def _absolute(console: Any, req: JudgeCheckRequest, inputs: CheckInputs, spec: str, judge: Any) -> None:
    """judge-check: originals (twice) and perturbed copies scored by the absolute judge, then analysed."""
    out = Path(req.out)
    stats = CheckStats()
    rubric_names = list(inputs.rubric_set)
    jobs = plan(inputs.convs, inputs.perts, rubric_names, stats)
    desc = judge.label + (f", prompt {judge.prompt_name}" if judge.prompt_name else "")
    console.print(
        f"judge-check: {len(inputs.convs)} conversations, {len(inputs.perts)} perturbations, judge {spec} ({desc}): "
        f"{len(jobs)} judge passes",
        highlight=False,
        markup=False,
    )
    with (
        JudgeLoop() as loop,
        resumable(JudgeCheckError, out / JUDGMENTS),
        locked_out(out, "another 'wikihowagent judge-check'", JUDGE_CHECK_LOCK),
        progress_bar(console, len(jobs), "judging originals and perturbed copies") as advance,
    ):
        loop.run(run_jobs(jobs, judge, spec, out / JUDGMENTS, advance, stats))
    conv_ids = {c.conversation_id for c in inputs.convs}
    res = analyse(
        out, inputs.perts, rubric_names, spec, judge.label, conv_ids, stats, req.figures, prompt=judge.prompt_name
    )
    console.print(
        f"{stats.judged} judge passes made, {stats.already} already done; {stats.failures} of "
        f"{stats.rubric_scores} rubric scores failed (calls, parse, low digit mass); "
        f"mean accuracy over targeted cells: {res.mean_accuracy:.3f}",
        highlight=False,
        markup=False,
    )
    console.print("wrote " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    if stats.rubric_scores and stats.failures == stats.rubric_scores:
        raise JudgeCheckError("the judge failed on every rubric: no sensitivity could be measured")


def _different_evaluators(by_source: dict[str, str]) -> JudgeCheckError:
    return JudgeCheckError(
        f"the inputs name different evaluators ({', '.join(sorted(set(by_source.values())))}): pass --evaluator SPEC"
    )


def _pairwise(console: Any, req: JudgeCheckRequest, inputs: CheckInputs, spec: str, llm: Any, concurrency: int) -> None:
    """judge-check --pairwise: original vs perturbed copy, both orders, the perturbation's target rubrics."""
    out, rubric_set, convs, perts = Path(req.out), inputs.rubric_set, inputs.convs, inputs.perts
    try:
        check_tie_band(req.tie_band)
        judge = PairwiseJudge(
            llm,
            rubric_set,
            list(rubric_set),
            reading=req.pairwise_reading,
            retries=req.retries,
            concurrency=concurrency,
        )
    except ValueError as exc:
        raise JudgeCheckError(f"evaluator {spec!r}: {exc}") from None
    stats = CheckStats()
    jobs = plan_pairwise(convs, perts, list(rubric_set), stats)
    passes = PassStats()
    path = out / PAIR_JUDGMENTS
    with JudgeLoop() as loop, resumable(JudgeCheckError, path):
        loop.run(judge.probe())
        console.print(
            f"judge-check --pairwise: {len(convs)} conversations, {len(perts)} perturbations, judge {spec} "
            f"(pairwise, {judge.label}): {len(jobs)} judge passes (both orders), "
            f"{sum(len(j.names) for j in jobs)} verdicts",
            highlight=False,
            markup=False,
        )
        console.print(reading_note(judge.label), highlight=False, markup=False)
        with locked_out(out, "another 'wikihowagent judge-check'", JUDGE_CHECK_LOCK):
            todo = pending(jobs, read_pair_judgments([path], spec, judge.label))
            passes.already = len(jobs) - len(todo)
            with progress_bar(
                console, len(jobs), "judging originals against perturbed copies (both orders)"
            ) as advance:
                advance(passes.already)
                loop.run(run_pair_jobs(todo, judge, spec, path, advance, passes))
    stats.rubric_scores, stats.failures = passes.asked, passes.failures
    res = analyse_pairwise(
        out,
        read_pair_judgments([path], spec, judge.label),
        perts,
        list(rubric_set),
        spec,
        judge.label,
        {c.conversation_id for c in convs},
        stats,
        figures=req.figures,
        tie_band=req.tie_band,
    )
    console.print(
        f"{passes.judged} judge passes made, {passes.already} already done; {passes.failures} of {passes.asked} "
        f"verdicts unreadable; position consistency {res.position_consistency:.3f}; mean accuracy over "
        "targeted cells (95 % CI over conversations): " + "; ".join(m.text() for m in res.modes),
        highlight=False,
        markup=False,
    )
    console.print("wrote " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    console.print(res.recommendation, highlight=False, markup=False)
    if passes.asked and passes.failures == passes.asked:
        raise JudgeCheckError("the judge gave no readable verdict: no sensitivity could be measured")


def load_tutorial_sets(paths: tuple[Path, ...] | list[Path], console: Any) -> dict[str, list[Any]]:
    """`--tutorials PATH...` -> {set name: its tutorials}; the name is the folder's (or file's) name, the path
    when two share one. A tutorial outside 2..30 steps is a one-line error naming its file and method (a
    validity tutorial, corpus/counterfactual.py); methods the loader skips (one step) are said."""
    names = [Path(p).name or str(p) for p in paths]
    out: dict[str, list[Any]] = {}
    for p, name in zip(paths, names, strict=True):
        report = LoadReport()
        try:
            tuts = load_tutorials(Path(p), report=report)
            for t in tuts:
                check_steps(t.source_tutorial_path, t.method_title, len(t.steps))
        except (TutorialError, ValiditySetError) as exc:
            raise JudgeCheckError(f"--tutorials: {exc}") from None
        if report.skipped:
            console.print(f"--tutorials {p}: {report.summary()}", highlight=False, markup=False)
        out[str(p) if names.count(name) > 1 else name] = tuts
    return out


def _posttest_validity(
    console: Any, req: JudgeCheckRequest, inputs: CheckInputs, make_learner: Callable[[str], Any]
) -> None:
    """judge-check --posttest-learner: post-tests on originals and skip_steps / off_topic copies (per tutorial
    set with --tutorials)."""
    convs, perts, out, spec = inputs.convs, inputs.perts, Path(req.out), str(req.posttest_learner)
    check = posttest_check.PostTestCheck()
    sets = _tutorial_sets_taught(convs, inputs.tutorial_sets)
    jobs = posttest_check.variants(convs, perts, check, sets)
    if not any(v != "original" for v, _ in jobs):
        raise JudgeCheckError(
            "judge-check --posttest-learner: no skip_steps / off_topic perturbation applies "
            "(the perturbation file needs one of these kinds)"
        )
    console.print(
        f"judge-check --posttest-learner: {len(convs)} conversations, {len(jobs)} post-tests "
        f"(originals, skip_steps, off_topic), learner {spec}, prompt {inputs.test_prompt.name}",
        highlight=False,
        markup=False,
    )
    opts = EvalOptions(concurrency=req.concurrency, default_concurrency=inputs.cfg.concurrency)
    tests = _take_posttests(
        console, jobs, make_learner, spec, out, inputs.test_prompt, check, req.posttest_likelihood, opts
    )
    recalls = posttest_check.step_recalls(convs, tests, check, req.device)
    per_test = {"abstained": posttest_check.abstained_shares(tests), "coverage": posttest_check.coverages(jobs)}
    table = posttest_check.validity_table(recalls, perts, posttest_check.judge_accuracy(out), per_test)
    by_set = posttest_check.validity_by_set(recalls, perts, sets, per_test) if sets else None
    lik_table = lik_by_set = None
    if req.posttest_likelihood:
        gains = posttest_check.likelihood_gains(convs, tests)
        coverage = {"coverage": per_test["coverage"]}  # the same copies: did they remove teaching?
        lik_table = posttest_check.validity_table(gains, perts, None, coverage)
        lik_by_set = posttest_check.validity_by_set(gains, perts, sets, coverage) if sets else None
    written = posttest_check.write_validity(
        out,
        table,
        f"{spec}, post-test prompt {inputs.test_prompt.name}"
        + (f", Step Recall's encoder on {req.device}" if req.device not in ("cpu", "auto") else ""),
        len(convs),
        check,
        by_set,
        lik_table,
        lik_by_set,
    )
    _print_validity(console, table, by_set, lik_table if lik_by_set is None else lik_by_set, lik_by_set is not None)
    if req.posttest_likelihood:
        console.print(
            f"likelihood post-tests: {check.likelihoods} taken, {check.likelihood_failed} could not be read",
            highlight=False,
            markup=False,
        )
    console.print(
        f"post-tests: {check.taken} taken, {check.reused} reused, {check.failed} not a step list; wrote "
        + ", ".join(str(p) for p in written),
        highlight=False,
        markup=False,
    )


def _tutorial_sets_taught(convs: list[Conversation], tutorial_sets: dict[str, list[Any]]) -> dict[str, str] | None:
    """--tutorials: {conversation id: its tutorial set} (None without sets); a set no conversation teaches is a
    one-line error."""
    sets = posttest_check.tutorial_sets(convs, tutorial_sets) if tutorial_sets else None
    for name, tuts in tutorial_sets.items():
        if name not in (sets or {}).values():
            raise JudgeCheckError(
                f"--tutorials {name}: none of the {len(convs)} conversations teaches one of its "
                f"{len(tuts)} tutorials (generate --tutorials {name} makes some)"
            )
    return sets


def _take_posttests(
    console: Any,
    jobs: list[Any],
    make_learner: Callable[[str], Any],
    spec: str,
    out: Path,
    prompt: Any,
    check: Any,
    with_likelihood: bool,
    opts: EvalOptions,
) -> Any:
    """The post-tests of `jobs` (resumable, under OUT's lock), with the likelihood post-test when asked, as many
    at once as the learner takes (`judge_concurrency`'s rule: --concurrency, else the embedded model's slots)."""
    with JudgeLoop() as loop, resumable(JudgeCheckError, out / POSTTESTS, "post-tests", also=(EvaluateError,)):
        try:
            with (
                locked_out(out, "another 'wikihowagent judge-check'", JUDGE_CHECK_LOCK),
                post_tester(make_learner(spec), spec, out, prompt) as tester,
            ):
                taker = None
                if with_likelihood:
                    reader = for_chat_model(tester.model)
                    taker = LikelihoodTaker(reader)
                    console.print(
                        f"likelihood post-test: {reader.transport} on {reader.root}", highlight=False, markup=False
                    )
                with progress_bar(console, len(jobs), "post-tests of originals and perturbed copies") as advance:
                    take = posttest_check.take_posttests(
                        jobs,
                        tester,
                        spec,
                        out / POSTTESTS,
                        advance,
                        check,
                        taker,
                        judge_concurrency(opts, tester.model),
                    )
                    tests = loop.run(take)
        except LikelihoodError as exc:
            raise JudgeCheckError(f"--posttest-likelihood: {exc}") from None
    return tests


def _print_validity(console: Any, table: Any, by_set: Any, lik_rows: Any, lik_by_set: bool) -> None:
    """One line per perturbation (per tutorial set with --tutorials): the post-test's accuracy, and the
    Likelihood Gain's when measured."""
    import pandas as pd  # the tables are DataFrames: already loaded

    for row in (by_set if by_set is not None else table).itertuples(index=False):
        where = f"{row.tutorials}: " if by_set is not None else ""
        console.print(
            f"{where}{row.perturbation}: post-test recall lower than the original's in {row.lower} of "
            f"{row.n} pairs ({row.ties} ties), accuracy {row.accuracy} [{row.ci_low}, {row.ci_high}]"
            + (
                f"; teacher's Step Coverage {row.coverage_original:.2f} -> {row.coverage_perturbed:.2f}"
                if pd.notna(row.coverage_original)  # None or NaN: not recorded
                else ""
            ),
            highlight=False,
            markup=False,
        )
    for row in lik_rows.itertuples(index=False) if lik_rows is not None else ():
        where = f"{row.tutorials}: " if lik_by_set else ""
        console.print(
            f"{where}{row.perturbation}: Likelihood Gain lower than the original's in {row.lower} of "
            f"{row.n} pairs, accuracy {row.accuracy} [{row.ci_low}, {row.ci_high}]",
            highlight=False,
            markup=False,
        )
