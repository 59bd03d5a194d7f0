"""The `align` stage: read human and LLM scores, compute, render and write the results (`run_alignment`).

Definitions:
- human score of a conversation and metric = mean of the judges' available scores (blanks ignored); the
  number of judges behind each mean is kept (`paired_scores.csv`, `descriptives.csv`);
- `Overall` = per conversation, the mean of the metrics available on *both* sides (human mean and LLM
  score present), computed separately for the human and the LLM side, so both means cover the same metrics;
- a metric is correlated over the conversations that have both a human and an LLM score for it; fewer
  than 3 such pairs -> left out (reported);
- with `by`, everything is also computed per run / model / domain of the conversation (taken from the LLM
  scores); inter-annotator agreement for the whole set uses every human-rated conversation.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.config import load_config
from wikihowagent.errors import WikihowagentError, kind_of
from wikihowagent.markdown import markdown_table
from wikihowagent.records import ESTIMATE_NAME
from wikihowagent.runs import (
    AGREEMENT_CSV,
    AGREEMENT_PAIRS_CSV,
    AUTOMATIC_CSV,
    CHECKLIST_FIT_CSV,
    CHECKLIST_FIT_MD,
    CHECKLIST_WEIGHTS_JSON,
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
    evaluated_runs,
    people_estimate_text,
    run_name,
)
from wikihowagent.stats.pair_order import GAP, PairOrder, pair_order

from . import checklist_fit, estimates, metric_table, people_fit, schema
from . import figures as plots
from .annotations import JudgeRatings, average_judges, human_matrix, read_human_files
from .blind import unblind
from .calibration import METHODS
from .estimates import CALIBRATION_FILES, PPI_FILES, CalibrationOutcome, PPIOutcome
from .judges import JUDGES_FILES, JudgesOutcome, compare_judges, render_judges, write_judges_outputs
from .named import unused_inputs
from .output import StagedOutput, foreign_entries
from .problems import AlignInputError, Problems
from .schema import OVERALL
from .sources import LLMScores, llm_matrix, read_llm_scores
from .stats import (
    COEF_LABEL,
    COEFFICIENTS,
    TOO_FEW,
    UNDEFINED,
    Agreement,
    CorrelationResult,
    Descriptives,
    agreement,
    correlate,
    describe,
)
from .tables import csv_text, stars

BY_CHOICES = ("run", "model", "domain", "persona")
ALL = "all"
OUTPUT_FILES = (
    CORRELATIONS_CSV,
    AUTOMATIC_CSV,
    CORRELATIONS_MD,
    DESCRIPTIVES_CSV,
    AGREEMENT_CSV,
    AGREEMENT_PAIRS_CSV,
    PAIRED_SCORES_CSV,
    PAIR_ORDER_CSV,
    METRIC_ALIGNMENT_CSV,
    METRIC_ALIGNMENT_MD,
    PEOPLE_ESTIMATE_JSON,
    PEOPLE_ESTIMATE_MD,
    PEOPLE_ESTIMATE_CSV,
    PROBLEMS_TXT,
    f"{FIGURES_DIR}/{SCORE_DISTRIBUTIONS_PNG}",
    f"{FIGURES_DIR}/{METRIC_ALIGNMENT_PNG}",
    f"{FIGURES_DIR}/{METRIC_ALIGNMENT_WITHIN_PNG}",
    f"{FIGURES_DIR}/{CORRELATION_HEATMAP_PNG}",
    *(f"figures/correlation_heatmap_by_{b}.png" for b in BY_CHOICES),
    *CALIBRATION_FILES,
    CHECKLIST_FIT_CSV,
    CHECKLIST_FIT_MD,
    CHECKLIST_WEIGHTS_JSON,  # --fit-checklist (checklist_fit.py)
    *PPI_FILES,
    *JUDGES_FILES,
)


@dataclass
class GroupResult:
    group: str
    mask: np.ndarray  # over the human conversation ids
    correlations: dict[str, CorrelationResult] = field(default_factory=dict)
    descriptives: dict[str, Descriptives] = field(default_factory=dict)
    judges_mean: dict[str, float] = field(default_factory=dict)
    agreement: dict[str, Agreement] = field(default_factory=dict)


@dataclass
class AlignResult:
    judges: list[JudgeRatings]
    llm: LLMScores
    ids: list[str]
    H: np.ndarray  # judges x conversations x metrics
    human: np.ndarray  # conversations x (metrics + Overall)
    human_counts: np.ndarray  # conversations x metrics: judges behind each mean
    model: np.ndarray  # conversations x (metrics + Overall) LLM scores (NaN = none)
    matched: np.ndarray
    groups: list[GroupResult]
    by: str | None
    n_boot: int
    seed: int
    problems: Problems
    # (automatic metric, human rubric or Overall) -> correlation over all conversations (the post-test's metrics)
    automatic: dict[tuple[str, str], CorrelationResult] = field(default_factory=dict)
    calibration: CalibrationOutcome | None = None  # --calibrate
    checklist_fit: Any = None  # --fit-checklist: checklist_fit.ChecklistFit
    ppi: PPIOutcome | None = None  # --ppi
    raters: JudgesOutcome | None = None  # every judge (a panel's too) and alpha with the judge as a rater
    # metric (8 rubrics, Overall) -> the judge's share of the same-tutorial pairs people clearly ordered (stats.pair_order)
    pair_order: dict[str, PairOrder] = field(default_factory=dict)
    metric_alignment: metric_table.MetricAlignment | None = None  # every metric against people
    people_fit: people_fit.PeopleFit | None = None  # the people-calibrated estimate (people_estimate.json)

    @property
    def metrics_computed(self) -> bool:
        """Some metric's correlation with people (metric_alignment.csv) could be computed."""
        ma = self.metric_alignment
        return ma is not None and any(
            math.isfinite(r.assoc.coefs["pearson"].value) for rows in ma.rows.values() for r in rows
        )

    @property
    def computed(self) -> bool:
        """Anything at all to report (a correlation, an agreement statistic, a metric against people)."""
        if self.metrics_computed:
            return True
        for g in self.groups:
            for c in g.correlations.values():
                if any(math.isfinite(v.value) for v in c.coefs.values()):
                    return True
            for a in g.agreement.values():
                if math.isfinite(a.alpha) or any(math.isfinite(p.kappa) or math.isfinite(p.pearson) for p in a.pairs):
                    return True
        return False

    @property
    def any_correlation(self) -> bool:
        return any(
            math.isfinite(v.value) for g in self.groups for c in g.correlations.values() for v in c.coefs.values()
        )

    def group_meta(self, cid: str) -> dict[str, str]:
        r = self.llm.rows.get(cid)
        return (
            {"run": r.run, "model": r.model, "domain": r.domain, "persona": r.persona}
            if r
            else {"run": "", "model": "", "domain": "", "persona": ""}
        )


def overall_scores(human: np.ndarray, model: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    both = ~np.isnan(human) & ~np.isnan(model)
    k = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(k > 0, np.where(both, human, 0).sum(1) / np.maximum(k, 1), np.nan)
        m = np.where(k > 0, np.where(both, model, 0).sum(1) / np.maximum(k, 1), np.nan)
    return h, m


def default_score_paths(judges: list[JudgeRatings], runs_dir: Path, problems: Problems) -> list[Path]:
    """Without --scores: the evaluated runs under `runs_dir` named in the sheets' `filename` column, or else
    every evaluated run there (see `runs.evaluated_runs`: also scores-paper.jsonl and runs_dir/rescored/)."""
    found = evaluated_runs(runs_dir)
    if not found:
        problems.add(
            "unusable file", f"{runs_dir}: no evaluated runs found and no --scores given; no LLM scores to compare with"
        )
        return []
    runs: dict[str, list[Path]] = {}  # a run and a re-scored paper file may share a name: keep both
    for d in found:
        runs.setdefault(run_name(d), []).append(d)
    wanted = {r for j in judges for r in j.runs.values() if r}
    chosen = [d for n in sorted(wanted) if n in runs for d in runs[n]]
    return chosen or found


def _seed(seed: int, group: str, metric: str) -> list[int]:
    return [seed, zlib.crc32(group.encode()), zlib.crc32(metric.encode())]


def compute(
    human_paths: list[Path],
    score_paths: list[Path],
    *,
    by: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    problems: Problems | None = None,
    runs_dir: Path | None = None,
    keys: list[Path] | None = None,
) -> AlignResult:
    """`runs_dir` (for the default score paths): None = the project config's runs_dir. `keys`: key files of
    blind sheets (default: the `*.key.csv` beside each human file that knows its ids)."""
    problems = problems if problems is not None else Problems()
    if by is not None and by not in BY_CHOICES:
        raise ValueError(f"--by must be one of {', '.join(BY_CHOICES)}")
    judges, llm = read_inputs(human_paths, score_paths, problems, runs_dir, keys)
    ids, H = human_matrix(judges)
    human8, counts = (
        average_judges(H)
        if len(judges)
        else (np.empty((0, schema.n_metrics())), np.empty((0, schema.n_metrics()), int))
    )
    model8 = llm_matrix(llm, ids)
    matched = np.fromiter((cid in llm.rows for cid in ids), dtype=bool, count=len(ids))
    if llm.sources:
        report_unmatched(judges, llm, ids, matched, problems)
    if len(judges) >= 2:
        report_judge_coverage(judges, ids, problems)
    hum_overall, mod_overall = overall_scores(human8, model8)
    human = np.column_stack([human8, hum_overall]) if len(ids) else np.empty((0, schema.n_metrics() + 1))
    model = np.column_stack([model8, mod_overall]) if len(ids) else np.empty((0, schema.n_metrics() + 1))
    groups = make_groups(by, ids, llm, matched)
    judged = bool(np.any(~np.isnan(model8)))
    if len(ids) and llm.rows and not judged:
        problems.add(
            "no judge score",
            "the scores hold no LLM judge score for the rated conversations (evaluated with --no-judge?): "
            f"only the metrics are compared with people ({METRIC_ALIGNMENT_MD})",
        )
    for g in groups:
        where_g = f"{by} {g.group}: " if g.group != ALL or by else ""
        correlate_group(g, human, model, counts, n_boot, seed, where_g, problems if judged else Problems())
        if len(judges) >= 2:
            agree_group(g, H, judges, where_g, problems)
    res = AlignResult(judges, llm, ids, H, human, counts, model, matched, groups, by, n_boot, seed, problems)
    res.automatic = automatic_correlations(llm, ids, human, n_boot, seed)
    res.pair_order = head_to_head(llm, ids, human, model, n_boot, seed)
    if len(ids):
        tutorials, _ = estimates.tutorial_keys(res, ids)
        tutorial_ids = [str(t) for t in tutorials]
        res.metric_alignment = metric_table.metric_alignment(res, tutorial_ids, n_boot, seed)
        if metric_table.metric_columns(res, ids):
            res.people_fit = people_fit.fit_people(res, tutorial_ids, n_boot, seed, human_paths)
            if res.people_fit.estimate is None:
                problems.add("no estimate", f"{ESTIMATE_NAME} not fitted: {res.people_fit.why_not}")
    return res


def head_to_head(
    llm: LLMScores, ids: list[str], human: np.ndarray, model: np.ndarray, n_boot: int, seed: int
) -> dict[str, PairOrder]:
    """Per metric: the share of the pairs of conversations of one tutorial whose people's means differ by at least
    stats.pair_order.GAP that the judge's scores order the same way (ties half; what `compare`'s verdicts from
    absolute scores give), 95 % CI resampling tutorials. Only conversations with a score take part."""
    tutorial = [(llm.rows[c].tutorial_id or llm.rows[c].title) if c in llm.rows else "" for c in ids]
    out = {}
    for k, metric in enumerate(schema.row_names()):
        res, _ = pair_order({metric: model[:, k]}, human[:, k], tutorial, n_boot=n_boot, seed=seed)
        out[metric] = res[metric]
    return out


def pair_order_rows(res: AlignResult) -> tuple[list[str], list[list]]:
    cols = ["metric", "pairs", "tutorials", "accuracy", "ci_low", "ci_high", "ties", "gap"]
    return cols, [
        [m, o.pairs, o.groups, _f(o.accuracy), _f(o.ci_low), _f(o.ci_high), o.ties, GAP]
        for m, o in res.pair_order.items()
    ]


def read_inputs(
    human_paths: list[Path], score_paths: list[Path], problems: Problems, runs_dir: Path | None, keys: list[Path] | None
) -> tuple[list[JudgeRatings], LLMScores]:
    """The human judges (blind sheets unblinded) and the LLM scores (default: the runs under `runs_dir` the
    sheets name; None = the project config's runs_dir). An unusable score path is a problem, not an error."""
    judges = read_human_files(human_paths, problems)
    unblind(judges, list(keys or []), problems)
    if not score_paths:
        if runs_dir is None:
            runs_dir = Path(load_config().runs_dir)
        score_paths = default_score_paths(judges, runs_dir, problems)
    try:
        llm = read_llm_scores(score_paths, problems)
    except AlignInputError as exc:
        problems.add("unusable file", str(exc))
        llm = LLMScores()
    return judges, llm


def report_unmatched(
    judges: list[JudgeRatings], llm: LLMScores, ids: list[str], matched: np.ndarray, problems: Problems
) -> None:
    """Matching problems, both directions: rated conversations without an LLM score, LLM-scored ones without
    a human rating."""
    first_loc: dict[str, tuple[str, int]] = {}
    for j in judges:
        for cid, row in j.rows.items():
            first_loc.setdefault(cid, (str(j.source), row))
    for i in np.flatnonzero(~matched):  # a judge run still in progress: many, one line per file on screen
        cid = ids[i]
        src, row = first_loc[cid]
        problems.add(
            "no llm score",
            f"{src}:{row}: column 'conversation_id': {cid} has no LLM score; left out",
            group=src,
            label=cid,
            group_text="{n} rated conversations have no LLM score (the first: {first}); left out",
        )
    human_ids = set(ids)
    for src, src_ids in llm.by_source.items():
        extra = [c for c in src_ids if c not in human_ids]
        if extra:
            listed = ", ".join(extra[:5]) + (", ..." if len(extra) > 5 else "")
            problems.add(
                "not annotated",
                f"{src}: {len(extra)} of {len(src_ids)} LLM-scored conversations have "
                f"no human rating ({listed}); not in the correlations (--ppi uses them)",
            )


def report_judge_coverage(judges: list[JudgeRatings], ids: list[str], problems: Problems) -> None:
    """Each judge's conversations the others rated and it did not (counted as blank)."""
    present = np.zeros((len(judges), len(ids)), dtype=bool)
    index = {c: i for i, c in enumerate(ids)}
    for a, j in enumerate(judges):
        present[a, [index[c] for c in j.scores]] = True
        absent = int((~present[a]).sum())
        if absent:
            problems.add(
                "judge coverage",
                f"{j.source}: judge '{j.judge}' has no row for {absent} of the "
                f"{len(ids)} conversations the other judges rated; counted as blank",
            )


def make_groups(by: str | None, ids: list[str], llm: LLMScores, matched: np.ndarray) -> list[GroupResult]:
    """All conversations, then (`--by`) one group per value of the field, sorted."""
    groups = [GroupResult(ALL, np.ones(len(ids), dtype=bool))]
    if by:
        labels = np.array(
            [(getattr(llm.rows[c], by) or "(none)") if m else "" for c, m in zip(ids, matched, strict=True)],
            dtype=object,
        )
        for g in sorted({lab for lab in labels if lab}):
            groups.append(GroupResult(g, labels == g))
    return groups


def correlate_group(
    g: GroupResult,
    human: np.ndarray,
    model: np.ndarray,
    counts: np.ndarray,
    n_boot: int,
    seed: int,
    where_g: str,
    problems: Problems,
) -> None:
    """Human vs LLM per metric (and Overall) over the group: correlations, descriptives, judges per mean."""
    for k, metric in enumerate(schema.row_names()):
        ok = g.mask & ~np.isnan(human[:, k]) & ~np.isnan(model[:, k])
        x, y = human[ok, k], model[ok, k]
        res = correlate(x, y, n_boot=n_boot, seed=_seed(seed, g.group, metric))
        g.correlations[metric] = res
        g.descriptives[metric] = describe(x, y)
        if k < len(schema.metrics()):
            g.judges_mean[metric] = float(counts[ok, k].mean()) if ok.any() else math.nan
        for note in res.notes:  # bootstrap notes are informational: in the note column, not problems
            kind = kind_of(note, "")
            if kind in (TOO_FEW, UNDEFINED):
                problems.add(kind, f"{where_g}{metric}: {note}; correlations left out")


def agree_group(g: GroupResult, H: np.ndarray, judges: list[JudgeRatings], where_g: str, problems: Problems) -> None:
    """Inter-annotator agreement per metric over the group (two or more judges)."""
    judge_names = [j.judge for j in judges]
    units = g.mask if g.group != ALL else np.ones(len(g.mask), dtype=bool)
    for k, metric in enumerate(schema.metrics()):
        ag = agreement(H[:, units, k], judge_names)
        g.agreement[metric] = ag
        for note in ag.notes:
            problems.add("agreement", f"{where_g}{metric}: inter-annotator agreement: {note}")
        for p in ag.pairs:
            for note in p.notes:
                problems.add("agreement", f"{where_g}{metric}: {p.judge_a} vs {p.judge_b}: {note}")


def automatic_correlations(
    llm: LLMScores, ids: list[str], human: np.ndarray, n_boot: int, seed: int
) -> dict[tuple[str, str], CorrelationResult]:
    """Each automatic metric (the post-test's: what the learner recalled) against each human rubric mean and
    the human Overall; that Overall is the mean of every rubric the humans rated (no LLM side to match here,
    unlike the judge's Overall, which covers the rubrics both sides have)."""
    names = sorted({m for r in llm.rows.values() for m in r.automatic}, key=str)
    out: dict[tuple[str, str], CorrelationResult] = {}
    n_metrics = len(schema.metrics())
    people = human.copy()
    if len(ids):
        rated = ~np.isnan(human[:, :n_metrics])
        sums = np.where(rated, human[:, :n_metrics], 0.0).sum(axis=1)
        counts = rated.sum(axis=1)
        people[:, n_metrics] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    for name in names:
        auto = np.array([llm.rows[c].automatic.get(name, np.nan) if c in llm.rows else np.nan for c in ids])
        for k, rubric in enumerate(schema.row_names()):
            ok = ~np.isnan(people[:, k]) & ~np.isnan(auto) if len(ids) else np.zeros(0, dtype=bool)
            out[(name, rubric)] = correlate(people[ok, k], auto[ok], n_boot=n_boot, seed=_seed(seed, name, rubric))
    return out


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


# ---------------------------------------------------------------------------------------------------------
# Tables


def _f(v: float, nd: int = 3) -> str:
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


def agreement_rows(res: AlignResult) -> tuple[list[str], list[list], list[str], list[list]]:
    cols = [
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
    ]
    pcols = [
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
    ]
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


def _coef_cell(v, with_ci: bool = True) -> str:
    if not math.isfinite(v.value):
        return "n/a"
    s = f"{v.value:.3f}{stars(v.p)}"
    if with_ci and math.isfinite(v.ci_low):
        s += f" [{v.ci_low:.2f}, {v.ci_high:.2f}]"
    return s


def markdown(res: AlignResult, human_paths: list[Path], score_sources: list[str]) -> str:
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
        title = "All conversations" if g.group == ALL else f"{res.by}: {g.group}"
        out.append(f"\n## {title}\n\n### Correlation human (mean of judges) vs LLM judge\n")
        rows = []
        for metric in schema.row_names():
            cr = g.correlations[metric]
            rows.append([metric, str(cr.n), *(_coef_cell(cr.coefs[c]) for c in COEFFICIENTS), "; ".join(cr.notes)])
        out.append(markdown_table(["Metric", "n", *(COEF_LABEL[c] for c in COEFFICIENTS), "Note"], rows))
        out.append("\n### Scores: human vs LLM (same conversations)\n")
        rows = []
        for metric in schema.row_names():
            d = g.descriptives[metric]
            rows.append(
                [
                    metric,
                    str(d.n),
                    f"{_f(d.human_mean, 2)} ± {_f(d.human_std, 2)}",
                    f"{_f(d.llm_mean, 2)} ± {_f(d.llm_std, 2)}",
                    _f(d.diff_mean, 2),
                    _f(d.llm_higher * 100 if math.isfinite(d.llm_higher) else math.nan, 0),
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
                    [metric, str(a.n_units), _f(a.alpha), _f(a.kappa_mean), _f(a.pearson_mean), "; ".join(a.notes)]
                )
            out.append(
                markdown_table(
                    ["Metric", "n (≥2 judges)", "Krippendorff α (ordinal)", "Cohen κ (quadratic)", "Pearson r", "Note"],
                    rows,
                )
            )
    if res.automatic:
        out.append(
            "\n## Automatic metrics vs the human ratings (all conversations)\n\n"
            "The post-test's metrics (what the learner model could write down afterwards) against each "
            "human rubric's mean; also in `automatic.csv`.\n"
        )
        rows = [
            [name, rubric, str(cr.n), *(_coef_cell(cr.coefs[c]) for c in COEFFICIENTS), "; ".join(cr.notes)]
            for (name, rubric), cr in res.automatic.items()
        ]
        out.append(
            markdown_table(["Metric", "Human rubric", "n", *(COEF_LABEL[c] for c in COEFFICIENTS), "Note"], rows)
        )
    if any(o.pairs for o in res.pair_order.values()):
        out.append(
            "\n## Head to head against people (all conversations)\n\n"
            f"Pairs of conversations of one tutorial whose people's means differ by at least {GAP:g} point: the "
            "share the judge's scores order the same way (a tie half; 0.5 = no better than a coin), 95 % CI "
            "resampling tutorials. What a head-to-head verdict from these scores (`compare`) would get right; "
            "also in `pair_order.csv`.\n"
        )
        rows = [
            [m, str(o.pairs), str(o.groups), f"{_f(o.accuracy)} [{_f(o.ci_low)}, {_f(o.ci_high)}]", str(o.ties)]
            for m, o in res.pair_order.items()
        ]
        out.append(markdown_table(["Metric", "pairs", "tutorials", "ordered as the people did", "ties"], rows))
    out.append("\n## Left out\n\n")
    if len(res.problems):
        counts = res.problems.counts()
        out.append(markdown_table(["Problem", "Count"], [[k, str(v)] for k, v in counts.most_common()]))
        out.append("\nEvery line is in `problems.txt`.\n")
    else:
        out.append("Nothing: every row and cell was used.\n")
    return "".join(x if x.endswith("\n") else x + "\n" for x in out)


# ---------------------------------------------------------------------------------------------------------
# Writing


def write_outputs(res: AlignResult, out_dir: Path, human_paths: list[Path], *, figures: bool = True) -> list[Path]:
    """Everything into `out_dir`, complete or not at all."""
    with StagedOutput(out_dir, owned=OUTPUT_FILES) as st:
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


def write_figures(res: AlignResult, st: StagedOutput) -> None:

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


# ---------------------------------------------------------------------------------------------------------
# Terminal


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
                *(_coef_cell(cr.coefs[c], with_ci=False) for c in COEFFICIENTS),
                _f(d.human_mean, 2),
                _f(d.llm_mean, 2),
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
            a.add_row(metric, str(ag.n_units), _f(ag.alpha), _f(ag.kappa_mean), _f(ag.pearson_mean))
        console.print(a)
    o = res.pair_order.get(OVERALL)
    if o is not None and o.pairs:
        console.print(
            f"Head to head: the judge's Overall orders {_f(o.accuracy)} [{_f(o.ci_low)}, {_f(o.ci_high)}] of the "
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


# --------------------------------------------------------------------------- the stage


@dataclass(frozen=True)
class AlignRequest:
    """What `wikihowagent align` was asked to do (paths already resolved by the command)."""

    human: tuple[Path, ...]
    out_dir: Path
    runs_dir: Path
    scores: tuple[Path, ...] = ()  # () = the runs under runs_dir named in the sheets
    by: str | None = None
    bootstrap: int = 2000
    seed: int = 0
    figures: bool = True
    keys: tuple[Path, ...] = ()  # key files of blind sheets (`annotate export --blind`)
    calibrate: str | None = None  # --calibrate: the method of calibration.json ("isotonic" | "ridge"); None = off
    ppi: bool = False  # --ppi: prediction-powered means per --by group (default: model)
    fit_checklist: float | None = None  # --fit-checklist: the shrinkage toward uniform; None = off


class AlignUsageError(WikihowagentError, ValueError):
    """A bad `align` option, found before any work (exit 2); `option` names it ("" when the message names it)."""

    def __init__(self, message: str, option: str = "") -> None:
        super().__init__(message)
        self.option = option


def check_options(by: str | None, calibration_method: str) -> None:
    """--by and --calibration-method are among the choices; AlignUsageError naming the option if not."""
    if by is not None and by not in BY_CHOICES:
        raise AlignUsageError(f"must be one of: {', '.join(BY_CHOICES)}", "--by")
    if calibration_method not in METHODS:
        raise AlignUsageError(f"must be one of: {', '.join(METHODS)}", "--calibration-method")


def check_out_dir(out_dir: Path) -> None:
    """--out is a directory (or not there yet) holding only files align writes: it is replaced as a whole.
    Checked again when writing; here so that nothing is computed in vain."""
    if out_dir.exists() and not out_dir.is_dir():
        raise AlignUsageError(f"{out_dir} exists and is not a directory", "--out")
    foreign = foreign_entries(out_dir, OUTPUT_FILES)
    if foreign:
        listed = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise AlignUsageError(
            f"--out {out_dir} holds files align did not write ({listed}); it would be "
            "replaced as a whole: choose another directory or empty it"
        )


@dataclass
class AlignOutcome:
    result: AlignResult
    written: list[Path] = field(default_factory=list)  # empty: nothing could be computed, nothing written
    unused: list[str] = field(default_factory=list)  # named files that contributed nothing, one line each


def run_alignment(req: AlignRequest, problems: Problems) -> AlignOutcome:
    """Read, compute and write all-or-nothing; what was left out goes to `problems`. Raises OutputDirError if
    --out changed under us (nothing written); nothing is written either when nothing could be computed."""
    res = compute(
        list(req.human),
        list(req.scores),
        by=req.by,
        n_boot=req.bootstrap,
        seed=req.seed,
        problems=problems,
        runs_dir=req.runs_dir,
        keys=list(req.keys),
    )
    unused = unused_inputs(list(req.human), list(req.scores), res.judges, res.llm, res.problems)
    if res.any_correlation:
        res.raters = compare_judges(res, [Path(p) for p in res.llm.sources], n_boot=req.bootstrap, seed=req.seed)
    if res.computed and req.calibrate:
        res.calibration = estimates.calibrate(
            res, req.calibrate, n_boot=req.bootstrap, seed=req.seed, problems=problems, human_paths=list(req.human)
        )
    if res.computed and req.fit_checklist is not None:
        res.checklist_fit = checklist_fit.fit_checklist(
            res, shrinkage=req.fit_checklist, n_boot=req.bootstrap, seed=req.seed, problems=problems
        )
    if res.computed and req.ppi:
        res.ppi = estimates.ppi_estimates(res, req.by or "model", problems)
    if not res.computed:
        return AlignOutcome(res, unused=unused)
    return AlignOutcome(res, write_outputs(res, req.out_dir, list(req.human), figures=req.figures), unused)
