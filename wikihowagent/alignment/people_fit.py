"""The people-calibrated estimate `align` writes (`people_estimate.json/.md/.csv`) and `evaluate --people-estimate`
applies: the people's Overall rating from a few cheap metrics (no model calls: the computational metrics of the
scores' mode, neither the post-test's nor conversation length), fitted as a non-negative ridge
(`stats.people_estimate`) on the human-rated conversations.

Its figures are out of fold: folds of whole tutorials (GroupKFold), the penalty chosen again inside each
training fold, so no conversation's prediction saw its own tutorial. They are set beside METEOR alone fitted
the same way (the baseline to beat) and the LLM judge's mean of rubrics (as it is, unfitted) on the same
conversations: pooled r, within-tutorial r (CIs resampling tutorials) and the share of the clear same-tutorial
pairs ordered as people did (paired difference from METEOR alone on the same resamples).

What is written (BEATS_RULE, TRACKS_RULE): the fit, when it beats METEOR alone out of fold; else METEOR alone,
fitted the same way (one line says so); and neither when what would be written does not track the people
(its within-tutorial r's CI reaches 0): no file, the reason in people_estimate.md and problems.txt. The file
holds the model fitted on every rated conversation, its out-of-fold figures and residual spread (per
conversation and between runs, for `evaluate`'s prediction intervals). Not fitted (one line in problems.txt,
no file) when the scores lack the metrics, do not say which metric mode computed them, or cover fewer than
MIN_CONVERSATIONS conversations of MIN_TUTORIALS tutorials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.layout import PEOPLE_ESTIMATE_JSON, PEOPLE_ESTIMATE_MD
from wikihowagent.markdown import markdown_table
from wikihowagent.metrics.computational import LIKELIHOOD_GAIN, METEOR, WORDS, better, metrics_of
from wikihowagent.metrics.people_estimate import spread_floor
from wikihowagent.records import ESTIMATE_NAME, EstimatePredictor, PeopleEstimate
from wikihowagent.runs import source_files
from wikihowagent.stats import people_estimate as pe
from wikihowagent.stats.association import associate
from wikihowagent.stats.pair_order import GAP, PairDifference, PairOrder, pair_order

from . import schema
from .metric_table import JUDGE_MEAN, metric_columns, people_matrix

MIN_CONVERSATIONS = 20
MIN_TUTORIALS = 4
ESTIMATE = "estimate (out of fold)"
METEOR_ALONE = f"{METEOR} alone (out of fold)"
BEATS_RULE = (
    f"the fit beats {METEOR} alone when its out-of-fold within-tutorial r and its share of clear pairs ordered as "
    f"the people did are both at least {METEOR} alone's (fitted the same way, on the same folds); otherwise "
    f"{METEOR} alone is written"
)
TRACKS_RULE = "nothing is written unless the 95 % CI of its out-of-fold within-tutorial r lies above 0"


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
    oof: Any = None  # the out-of-fold predictions (np.ndarray)


@dataclass
class PeopleFit:
    estimate: PeopleEstimate | None = None
    why_not: str = ""
    compared: list[Compared] = field(default_factory=list)
    basis_line: str = ""  # METEOR alone written: why, in one line
    study: str = ""  # facts of the study it was fitted on: conversations, tutorials, raters, their agreement


@dataclass
class _Design:
    mode: str
    ids: list[str]  # the conversations with every one of them and a people's Overall
    names: list[str]  # the cheap metrics used
    X: np.ndarray  # ids x names (negated where lower is better)
    y: np.ndarray
    groups: list[str]  # tutorials
    runs: list[str]


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


def _design(res: Any, tutorials: list[str]) -> _Design | str:
    """The conversations and cheap metrics a fit can use (a metric with too little spread left out), or why
    there are none to fit on."""
    ids = res.ids
    y = people_matrix(res.human)[:, -1] if len(ids) else np.empty(0)
    mode, why = _mode_of(res, ids)
    if not mode:
        return why
    columns = metric_columns(res, ids)
    names = [m for m in cheap_metrics(mode) if m in columns]
    if not names:
        return f"the scores hold none of the cheap metrics ({', '.join(cheap_metrics(mode))})"
    X = np.column_stack([-columns[m] if better(m) == "lower" else columns[m] for m in names])
    ok = np.isfinite(y) & np.all(np.isfinite(X), axis=1)
    groups = [t for t, k in zip(tutorials, ok, strict=True) if k]
    n, k = int(ok.sum()), len(set(groups))
    if n < MIN_CONVERSATIONS or k < MIN_TUTORIALS:
        return (
            f"{n} rated conversations of {k} tutorials have every one of {', '.join(names)}; the estimate "
            f"needs at least {MIN_CONVERSATIONS} of {MIN_TUTORIALS}"
        )
    spread = X[ok].std(axis=0)
    keep = [j for j, m in enumerate(names) if spread[j] >= spread_floor(m, mode)]
    if not keep:
        return f"none of {', '.join(names)} varies over the {n} rated conversations"
    used = [c for c, o in zip(ids, ok, strict=True) if o]
    runs = [res.group_meta(c)["run"] for c in used]
    return _Design(mode, used, [names[j] for j in keep], X[ok][:, keep], y[ok], groups, runs)


def _compare(res: Any, d: _Design, n_boot: int, seed: int) -> dict[str, Compared]:
    """Out of fold: the fit, METEOR alone fitted the same way, and the judge's mean as it is, against people."""
    series: dict[str, np.ndarray] = {ESTIMATE: pe.out_of_fold(d.X, d.y, d.groups)}
    if METEOR in d.names:
        series[METEOR_ALONE] = pe.out_of_fold(d.X[:, [d.names.index(METEOR)]], d.y, d.groups)
    where = {c: i for i, c in enumerate(res.ids)}
    judge = res.model[[where[c] for c in d.ids], : schema.n_metrics()]
    if np.any(~np.isnan(judge)):
        with np.errstate(invalid="ignore"):
            jm = np.nanmean(judge, axis=1)
        if np.all(np.isfinite(jm)):
            series[JUDGE_MEAN] = jm
    orders, diffs = pair_order(
        series, d.y, d.groups, n_boot=n_boot, seed=seed, baseline=METEOR_ALONE if METEOR_ALONE in series else None
    )
    out = {}
    for name, pred in series.items():
        a = associate(pred, d.y, d.groups, n_boot=n_boot, seed=seed)
        out[name] = Compared(name, a.n, a.coefs["pearson"], a.coefs["within"], orders[name], diffs.get(name), pred)
    return out


def _at_least(a: float, b: float) -> bool:
    return not math.isfinite(b) or (math.isfinite(a) and a >= b)


def beats(fit: Compared, baseline: Compared) -> bool:
    """BEATS_RULE: the out-of-fold within-tutorial r and the clear-pair share both at least the baseline's."""
    return _at_least(fit.within.value, baseline.within.value) and _at_least(fit.pairs.accuracy, baseline.pairs.accuracy)


def tracks(row: Compared) -> bool:
    """TRACKS_RULE: the 95 % CI of the out-of-fold within-tutorial r lies above 0."""
    return math.isfinite(row.within.ci_low) and row.within.ci_low > 0


def between_runs_sd(resid: np.ndarray, runs: list[str]) -> float | None:
    """The sd of a run's mean residual beyond its conversations' own spread (method of moments over the runs:
    the variance of the runs' mean residuals less the within-run variance over each run's size, at least 0);
    None with fewer than 3 runs."""
    by: dict[str, list[float]] = {}
    for r, g in zip(resid, runs, strict=True):
        by.setdefault(g, []).append(float(r))
    if len(by) < 3:
        return None
    means = np.array([np.mean(v) for v in by.values()])
    sizes = np.array([len(v) for v in by.values()])
    within = sum(float(((np.array(v) - np.mean(v)) ** 2).sum()) for v in by.values()) / max(len(resid) - len(by), 1)
    return math.sqrt(max(float(np.var(means, ddof=1) - np.mean(within / sizes)), 0.0))


def study_facts(res: Any, d: _Design) -> str:
    """The user's study in one sentence: conversations, tutorials, raters, their agreement."""
    sheets = ", ".join(Path(j.source).name for j in res.judges)
    every = res.groups[0].agreement.values() if res.groups else []  # the first group: all conversations
    alphas = [a.alpha for a in every if math.isfinite(a.alpha)]
    agree = (
        f"their agreement, Krippendorff's α (ordinal) per rubric: {min(alphas):+.2f} to {max(alphas):+.2f} "
        f"({len(alphas)} rubrics)"
        if alphas
        else "agreement between raters not measurable here (it needs two raters of the same conversations)"
    )
    return (
        f"{len(d.y)} rated conversations of {len(set(d.groups))} tutorials with every metric used, rated by "
        f"{len(res.judges)} rater{'s' if len(res.judges) != 1 else ''} ({sheets}); {agree}"
    )


def fit_people(
    res: Any, tutorials: list[str], n_boot: int, seed: int, human_paths: list[Path] | None = None
) -> PeopleFit:
    """The people-calibrated estimate: a ridge of the cheap metrics fitted on the people's Overall, compared out
    of fold (by tutorial) with METEOR alone and the judge's mean; METEOR alone written when the fit does not
    beat it (BEATS_RULE), nothing when what would be written does not track people (TRACKS_RULE); `why_not`
    says why there is no estimate."""
    d = _design(res, tutorials)
    if isinstance(d, str):
        return PeopleFit(why_not=d)
    rows = _compare(res, d, n_boot, seed)
    result = PeopleFit(compared=list(rows.values()), study=study_facts(res, d))
    use, cols = ESTIMATE, d.names
    if METEOR_ALONE in rows and not beats(rows[ESTIMATE], rows[METEOR_ALONE]):
        use, cols = METEOR_ALONE, [METEOR]
        fit, base = rows[ESTIMATE], rows[METEOR_ALONE]
        result.basis_line = (
            f"The fit of {len(d.names)} metrics did not beat {METEOR} alone out of fold (within-tutorial r "
            f"{_f(fit.within.value)} against {_f(base.within.value)}, clear pairs {_share(fit.pairs)} against "
            f"{_share(base.pairs)}): {PEOPLE_ESTIMATE_JSON} holds {METEOR} alone, fitted the same way."
        )
    row = rows[use]
    if not tracks(row):
        ci = "includes 0" if math.isfinite(row.within.ci_low) else "could not be computed (no bootstrap)"
        result.why_not = (
            f"nothing here tracks the people: out of fold, {'METEOR alone' if use == METEOR_ALONE else 'the fit'}'s "
            f"within-tutorial r is {_ci(row.within)} and its 95 % CI {ci}; an estimate that does not order "
            "conversations as these people did would only look like their rating"
        )
        return result
    final = pe.fit_chosen(d.X[:, [d.names.index(c) for c in cols]], d.y, d.groups)
    resid = row.oof - d.y
    result.estimate = PeopleEstimate(
        mode="paper" if d.mode == "paper" else "default",
        basis="cheap metrics" if use == ESTIMATE else "METEOR alone",
        intercept=final.intercept,
        predictors=_predictors(cols, final),
        shrinkage=final.shrinkage,
        conversations=len(d.y),
        tutorials=len(set(d.groups)),
        residual_sd=float(np.sqrt(np.mean(resid**2))),
        residual_sd_between_runs=between_runs_sd(resid, d.runs),
        human_files=source_files(human_paths or []),
        score_sources=source_files(res.llm.sources),
        out_of_fold=_out_of_fold_figures(row),
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


def _share(o: PairOrder) -> str:
    return f"{o.accuracy:.3f}" if o.pairs and math.isfinite(o.accuracy) else "—"


def _written(est: PeopleEstimate) -> str:
    weights = ", ".join(
        f"{p.name}{' (negated)' if p.better == 'lower' else ''} {p.weight:.3f}" for p in est.predictors if p.weight
    )
    spread = f"Out-of-fold residual sd: {est.residual_sd:.2f} points per conversation" + (
        f", {est.residual_sd_between_runs:.2f} between runs" if est.residual_sd_between_runs is not None else ""
    )
    return (
        f"The people's Overall rating predicted from {len(est.predictors)} cheap metric(s) of evaluate's "
        f"{est.mode} mode: a non-negative ridge on standardised metrics (penalty {est.shrinkage:g}, chosen by "
        f"folds of whole tutorials). Intercept {est.intercept:.3f}; weights per standard deviation: "
        f"{weights or 'none (all shrunk to 0)'}. {spread} (`evaluate --people-estimate` widens its intervals "
        f"by them). Apply it to any run scored in {est.mode} mode: `wikihowagent evaluate RUN --people-estimate "
        f"{PEOPLE_ESTIMATE_JSON}`.\n\n"
    )


def markdown(fit: PeopleFit) -> str:
    """people_estimate.md: facts of the user's study, what was written and why, the out-of-fold comparison."""
    if not fit.compared:
        return f"# {ESTIMATE_NAME}\n\nNot fitted: {fit.why_not}.\n"
    head = f"# {ESTIMATE_NAME}\n\nThe study: {fit.study}.\n\n"
    if fit.estimate is None:
        head += f"No {PEOPLE_ESTIMATE_JSON} written: {fit.why_not}.\n\n"
    else:
        head += (f"{fit.basis_line}\n\n" if fit.basis_line else "") + _written(fit.estimate)
    body = [[c.name, str(c.n), _ci(c.pooled), _ci(c.within), _pairs(c.pairs), _diff(c.vs_meteor)] for c in fit.compared]
    return (
        head + "Out of fold (folds of whole tutorials; the penalty chosen again inside each training fold), beside "
        "METEOR alone fitted the same way and the LLM judge as it is, on the same conversations. 95 % CIs "
        f"resample tutorials; clear pairs: same-tutorial pairs whose people's means differ by ≥ {GAP:g}.\n\n"
        + markdown_table(
            ["score", "n", "pooled r", "within-tutorial r", "clear pairs ordered", "pair share − METEOR alone"], body
        )
        + f"\nWhat is written: {BEATS_RULE}; {TRACKS_RULE}.\n"
    )


def render(fit: PeopleFit, console: Any) -> None:
    """One line: what was written with its out-of-fold figures (and why METEOR alone)."""
    if fit.estimate is None:  # why: a warning line of its own (problems.txt)
        return
    row = next(c for c in fit.compared if c.name == (METEOR_ALONE if fit.basis_line else ESTIMATE))
    line = (
        (fit.basis_line + " " if fit.basis_line else "")
        + f"{ESTIMATE_NAME}: out of fold within-tutorial r {_ci(row.within)}, clear pairs {_pairs(row.pairs)} "
        f"({PEOPLE_ESTIMATE_MD}; apply with evaluate --people-estimate)"
    )
    console.print(line, highlight=False, markup=False, soft_wrap=True)
