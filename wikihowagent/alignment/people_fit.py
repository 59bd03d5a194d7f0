"""The people-calibrated estimate `align` writes (`people_estimate.json/.md/.csv`) and `evaluate --people-estimate`
applies: the people's Overall rating from a few cheap metrics (no model calls: the computational metrics of the
scores' mode, neither the post-test's nor conversation length), fitted as a non-negative ridge
(`stats.people_estimate`) on the human-rated conversations.

Its figures are out of fold: folds of whole tutorials (GroupKFold), the penalty chosen again inside each
training fold, so no conversation's prediction saw its own tutorial. They are set beside METEOR alone fitted
the same way (the baseline to beat) and the LLM judge's mean of rubrics (as it is, unfitted) on the same
conversations: pooled r, within-tutorial r (CIs resampling tutorials) and the share of the clear same-tutorial
pairs ordered as people did (paired difference from METEOR alone on the same resamples). The file holds the
model fitted on every rated conversation. Not fitted (one line in problems.txt, no file) when the scores lack
the metrics, do not say which metric mode computed them, or cover fewer than MIN_CONVERSATIONS conversations
of MIN_TUTORIALS tutorials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.evaluation.metrics import LIKELIHOOD_GAIN, METEOR, WORDS, better, metrics_of
from wikihowagent.markdown import markdown_table
from wikihowagent.records import ESTIMATE_NAME, EstimatePredictor, PeopleEstimate
from wikihowagent.runs import PEOPLE_ESTIMATE_JSON, PEOPLE_ESTIMATE_MD
from wikihowagent.stats import people_estimate as pe
from wikihowagent.stats.association import associate
from wikihowagent.stats.pair_order import GAP, PairDifference, PairOrder, pair_order

from . import schema
from .metric_table import JUDGE_MEAN, metric_columns, people_matrix

MIN_CONVERSATIONS = 20
MIN_TUTORIALS = 4
GOAL_WITHIN, GOAL_PAIRS = 0.55, 0.85  # what the estimate aims at out of fold on the development split
ESTIMATE = "estimate (out of fold)"
METEOR_ALONE = f"{METEOR} alone (out of fold)"


def cheap_metrics(mode: str) -> list[str]:
    """The metrics of `mode` that need no model call at scoring time besides the embedding model: not the
    post-test's (a learner model), not Likelihood Gain, not conversation length (a baseline, not a quality)."""
    return [m.name for m in metrics_of(mode) if m.batch != "posttest" and m.name not in (LIKELIHOOD_GAIN, WORDS)]


@dataclass
class Compared:
    name: str
    n: int
    pooled: Any  # stats.association.Estimate
    within: Any
    pairs: PairOrder
    vs_meteor: PairDifference | None = None


@dataclass
class PeopleFit:
    estimate: PeopleEstimate | None = None
    why_not: str = ""
    compared: list[Compared] = field(default_factory=list)

    @property
    def goal_met(self) -> bool | None:
        row = next((c for c in self.compared if c.name == ESTIMATE), None)
        if row is None or not math.isfinite(row.within.value) or not math.isfinite(row.pairs.accuracy):
            return None
        return row.within.value >= GOAL_WITHIN and row.pairs.accuracy >= GOAL_PAIRS


def _mode_of(res: Any, ids: list[str]) -> tuple[str, str]:
    modes = {res.llm.rows[c].mode for c in ids if c in res.llm.rows and res.llm.rows[c].metrics}
    if not modes:
        return "", "the scores hold no computational metric (run `wikihowagent evaluate --no-judge` on the runs)"
    if "" in modes:
        return "", "the scores do not say which metric mode computed them (a CSV or a paper file): use scores.jsonl"
    if len(modes) > 1:
        return "", f"the scores mix metric modes ({', '.join(sorted(modes))}): align one mode's scores"
    return modes.pop(), ""


def _predictors(names: list[str], final: Any) -> list[EstimatePredictor]:
    """The estimate's metrics with a weight above 0, as stored in people_estimate.json."""
    return [
        EstimatePredictor(name=m, better=better(m), mean=mu, sd=sd, weight=w)
        for m, mu, sd, w in zip(names, final.mean, final.sd, final.weight, strict=True)
        if w > 0
    ] or [  # every weight shrunk to 0: the estimate is the people's mean; METEOR kept so a run is still checked
        EstimatePredictor(name=names[0], better=better(names[0]), mean=final.mean[0], sd=final.sd[0], weight=0.0)
    ]


def _out_of_fold_figures(est_row: Compared) -> dict[str, float | None]:
    """The estimate's out-of-fold figures against people, as stored in people_estimate.json."""
    return {
        "pooled_r": _num(est_row.pooled.value),
        "within_r": _num(est_row.within.value),
        "within_r_ci_low": _num(est_row.within.ci_low),
        "within_r_ci_high": _num(est_row.within.ci_high),
        "pair_share": _num(est_row.pairs.accuracy),
        "pair_share_ci_low": _num(est_row.pairs.ci_low),
        "pair_share_ci_high": _num(est_row.pairs.ci_high),
        "pairs": float(est_row.pairs.pairs),
    }


def fit_people(
    res: Any, tutorials: list[str], n_boot: int, seed: int, human_paths: list[Path] | None = None
) -> PeopleFit:
    """The people-calibrated estimate: a ridge of the cheap metrics fitted on the people's Overall, compared out
    of fold (by tutorial) with METEOR alone and the judge's mean; `why_not` says why there is none."""
    ids = res.ids
    y = people_matrix(res.human)[:, -1] if len(ids) else np.empty(0)
    mode, why = _mode_of(res, ids)
    if not mode:
        return PeopleFit(why_not=why)
    columns = metric_columns(res, ids)
    names = [m for m in cheap_metrics(mode) if m in columns]
    if not names:
        return PeopleFit(why_not=f"the scores hold none of the cheap metrics ({', '.join(cheap_metrics(mode))})")
    X = np.column_stack([-columns[m] if better(m) == "lower" else columns[m] for m in names])
    ok = np.isfinite(y) & np.all(np.isfinite(X), axis=1)
    groups = [t for t, k in zip(tutorials, ok, strict=True) if k]
    n, k = int(ok.sum()), len(set(groups))
    if n < MIN_CONVERSATIONS or k < MIN_TUTORIALS:
        return PeopleFit(
            why_not=f"{n} rated conversations of {k} tutorials have every one of {', '.join(names)}; the estimate "
            f"needs at least {MIN_CONVERSATIONS} of {MIN_TUTORIALS}"
        )
    X, yy = X[ok], y[ok]
    final = pe.fit_chosen(X, yy, groups)
    oof = pe.out_of_fold(X, yy, groups)
    result = PeopleFit()
    series: dict[str, np.ndarray] = {ESTIMATE: oof}
    if METEOR in names:
        series[METEOR_ALONE] = pe.out_of_fold(X[:, [names.index(METEOR)]], yy, groups)
    judge = res.model[ok, : schema.n_metrics()]
    if np.any(~np.isnan(judge)):
        with np.errstate(invalid="ignore"):
            jm = np.nanmean(judge, axis=1)
        if np.all(np.isfinite(jm)):
            series[JUDGE_MEAN] = jm
    orders, diffs = pair_order(
        series, yy, groups, n_boot=n_boot, seed=seed, baseline=METEOR_ALONE if METEOR_ALONE in series else None
    )
    for name, pred in series.items():
        a = associate(pred, yy, groups, n_boot=n_boot, seed=seed)
        result.compared.append(
            Compared(name, a.n, a.coefs["pearson"], a.coefs["within"], orders[name], diffs.get(name))
        )
    est_row = result.compared[0]
    resid = oof - yy
    result.estimate = PeopleEstimate(
        mode="paper" if mode == "paper" else "default",
        intercept=final.intercept,
        predictors=_predictors(names, final),
        shrinkage=final.shrinkage,
        conversations=n,
        tutorials=k,
        residual_sd=float(np.sqrt(np.mean(resid**2))) if n else None,
        human_files=[str(p) for p in human_paths or []],
        score_sources=list(res.llm.sources),
        out_of_fold=_out_of_fold_figures(est_row),
    )
    return result


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _f(v: float, nd: int = 2) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:+.{nd}f}"


def _ci(e: Any) -> str:
    return _f(e.value) + (f" [{_f(e.ci_low)}, {_f(e.ci_high)}]" if math.isfinite(e.ci_low) else "")


def _pairs(o: PairOrder) -> str:
    if not o.pairs:
        return "—"
    return f"{o.accuracy:.3f}" + (f" [{o.ci_low:.2f}, {o.ci_high:.2f}]" if math.isfinite(o.ci_low) else "")


def _diff(d: PairDifference | None) -> str:
    if d is None:
        return ""
    return _f(d.diff, 3) + (f" [{_f(d.ci_low)}, {_f(d.ci_high)}]" if math.isfinite(d.ci_low) else "")


def rows_csv(fit: PeopleFit) -> tuple[list[str], list[list[Any]]]:
    cols = ["score", "n", "pooled_r", "pooled_ci_low", "pooled_ci_high", "within_r", "within_ci_low"]
    cols += ["within_ci_high", "pairs", "pair_share", "pair_ci_low", "pair_ci_high", "vs_meteor", "vs_low", "vs_high"]
    rows = []
    for c in fit.compared:
        d = c.vs_meteor
        rows.append(
            [c.name, c.n, c.pooled.value, c.pooled.ci_low, c.pooled.ci_high, c.within.value, c.within.ci_low]
            + [c.within.ci_high, c.pairs.pairs, c.pairs.accuracy, c.pairs.ci_low, c.pairs.ci_high]
            + ([d.diff, d.ci_low, d.ci_high] if d else [None, None, None])
        )
    return cols, rows


def markdown(fit: PeopleFit) -> str:
    est = fit.estimate
    if est is None:
        return f"# {ESTIMATE_NAME}\n\nNot fitted: {fit.why_not}.\n"
    weights = ", ".join(
        f"{p.name}{' (negated)' if p.better == 'lower' else ''} {p.weight:.3f}" for p in est.predictors if p.weight
    )
    goal = fit.goal_met
    goal_text = (
        "not measurable here"
        if goal is None
        else ("met" if goal else "not met")
        + f" (within-tutorial r ≥ {GOAL_WITHIN} and clear-pair share ≥ {GOAL_PAIRS} out of fold)"
    )
    body = [[c.name, str(c.n), _ci(c.pooled), _ci(c.within), _pairs(c.pairs), _diff(c.vs_meteor)] for c in fit.compared]
    return (
        f"# {ESTIMATE_NAME}\n\n"
        f"The people's Overall rating predicted from {len(est.predictors)} cheap metric(s) of evaluate's "
        f"{est.mode} mode: a non-negative ridge on standardised metrics (penalty {est.shrinkage:g}, chosen by "
        f"folds of whole tutorials), fitted on {est.conversations} rated conversations of {est.tutorials} "
        f"tutorials. Intercept {est.intercept:.3f}; weights per standard deviation: {weights or 'none (all shrunk to 0)'}. "
        f"Apply it to any run scored in {est.mode} mode: `wikihowagent evaluate RUN --people-estimate "
        f"{PEOPLE_ESTIMATE_JSON}`.\n\n"
        "Out of fold (folds of whole tutorials; the penalty chosen again inside each training fold), beside "
        "METEOR alone fitted the same way and the LLM judge as it is, on the same conversations. 95 % CIs "
        f"resample tutorials; clear pairs: same-tutorial pairs whose people's means differ by ≥ {GAP:g}. "
        f"Out-of-fold residual sd: {est.residual_sd:.2f} points.\n\n"
        + markdown_table(
            ["score", "n", "pooled r", "within-tutorial r", "clear pairs ordered", "pair share − METEOR alone"], body
        )
        + f"\nGoal: {goal_text}.\n\n"
        "Caveat: one study, two raters who were told to rate with the tutorial as the reference (what METEOR and "
        "Step Coverage measure); fit it again on your own human study before trusting it elsewhere.\n"
    )


def render(fit: PeopleFit, console: Any) -> None:
    if fit.estimate is None:
        return
    row = next((c for c in fit.compared if c.name == ESTIMATE), None)
    base = next((c for c in fit.compared if c.name == METEOR_ALONE), None)
    if row is None:
        return
    line = (
        f"{ESTIMATE_NAME}: out of fold within-tutorial r {_ci(row.within)}, clear pairs {_pairs(row.pairs)}"
        + (f"; {METEOR} alone {_f(base.within.value)}, {_pairs(base.pairs)}" if base else "")
        + f" ({PEOPLE_ESTIMATE_MD}; apply with evaluate --people-estimate)"
    )
    console.print(line, highlight=False, markup=False, soft_wrap=True)
