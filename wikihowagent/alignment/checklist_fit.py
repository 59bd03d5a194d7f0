"""Checklist item weights fitted on people (`align --fit-checklist`), out of fold, shrunk toward uniform.

The checklist judge (`--judge-scoring checklist`) scores a rubric as 1 + 4 x the weighted mean of its items'
P(good); by default every item (every step template, its steps averaged) weighs the same. Here, per rubric,
non-negative weights are fitted on the human-rated conversations:

    minimise  ||Xc v - yc||^2 + lambda ||v - t||^2   subject to v >= 0    (scipy.optimize.lsq_linear)

with X the conversations' item features (P(good) per rubric item; per step template, the mean over its
steps), centred (a missing item: the training mean), y the mean human rating, t the uniform weights at the
scale that best fits the uniform score (0 when the uniform score leans against the people), and
lambda = shrinkage x n x mean feature variance. The default shrinkage 1 is strong: with ~70 conversations
and 3-5 items a rubric, the issue's 13 free weights on 46 conversations overfitted (Overall r -0.37 out of
fold vs +0.04 uniform). Only the direction of v matters (the score normalises by the sum of the weights).

Every figure is out of fold: `GroupKFold` by tutorial (k = min(5, tutorials)), each conversation predicted
with weights fitted on other tutorials only; uniform vs fitted r, rho, MAE with bootstrap CIs and the paired
CI of the difference (`calibration.compare`). The weights file is fitted on all pairs and is valid for one
judge and one checklist (`<version>@<hash>`): `evaluate --checklist-weights` refuses any other.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wikihowagent.judge.checklist import WEIGHTS_KIND, ChecklistWeights, item_key
from wikihowagent.layout import CHECKLIST_FIT_CSV, CHECKLIST_FIT_MD, CHECKLIST_WEIGHTS_JSON
from wikihowagent.stats import folds

from . import calibration as cal_stats
from . import schema
from .csv_dialect import csv_text
from .estimates import tutorial_keys
from .problems import Problems

DEFAULT_SHRINKAGE = 1.0
UNIFORM, FITTED = "uniform", "fitted"


def features(items: list[dict[str, float | None]], keys: list[str]) -> np.ndarray:
    """conversations x keys: each key's P(good) (a step template's mean over its steps); NaN = not answered."""

    out = np.full((len(items), len(keys)), np.nan)
    col = {k: j for j, k in enumerate(keys)}
    for i, its in enumerate(items):
        acc: dict[str, list[float]] = {}
        for iid, good in its.items():
            k = item_key(iid)
            if k in col and good is not None:
                acc.setdefault(k, []).append(float(good))
        for k, vals in acc.items():
            out[i, col[k]] = float(np.mean(vals))
    return out


def predict(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """1 + 4 x the weighted mean of each row's answered features (NaN where none with weight is answered)."""
    ok = ~np.isnan(x)
    wm = np.where(ok, w[None, :], 0.0)
    num = np.where(ok, x, 0.0) @ w
    den = wm.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 1.0 + 4.0 * num / np.where(den > 0, den, 1.0), np.nan)


def fit_weights(x: np.ndarray, y: np.ndarray, shrinkage: float = DEFAULT_SHRINKAGE) -> np.ndarray:
    """Non-negative weights (mean 1; uniform = all 1) shrunk toward uniform (see the module docstring)."""
    from scipy.optimize import lsq_linear

    n, k = x.shape
    uniform = np.ones(k)
    if n < 3 or k == 0:
        return uniform
    mean = np.nanmean(np.where(np.isnan(x), np.nan, x), axis=0)
    mean = np.where(np.isnan(mean), 0.0, mean)
    xc = np.where(np.isnan(x), mean[None, :], x) - mean[None, :]
    yc = y - y.mean()
    u = xc.mean(axis=1)
    var_u = float(u @ u)
    scale = max(0.0, float(u @ yc) / var_u) if var_u > 0 else 0.0
    target = np.full(k, scale / k)
    var = float(np.mean(xc.var(axis=0))) or 1e-6
    lam = max(0.0, shrinkage) * n * var
    a = np.vstack([xc, np.sqrt(lam) * np.eye(k)])
    b = np.concatenate([yc, np.sqrt(lam) * target])
    v = lsq_linear(a, b, bounds=(0.0, np.inf)).x
    total = float(v.sum())
    if not np.isfinite(total) or total <= 1e-12:
        return uniform
    return v / total * k


def out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, shrinkage: float) -> np.ndarray:
    """Each conversation's prediction with weights fitted without its tutorial (GroupKFold); the caller checks
    there are 2 tutorials (fewer: TooFewGroups)."""
    return folds.out_of_fold(
        lambda train, test: predict(x[test], fit_weights(x[train], y[train], shrinkage)),
        groups,
        n_splits=cal_stats.K_FOLDS,
        on_too_few="raise",
    )


@dataclass
class RubricFit:
    metric: str
    keys: list[str]
    n: int
    tutorials: int
    weights: dict[str, float]  # fitted on all pairs
    comparison: Any = None  # calibration.Comparison of uniform vs fitted (out of fold)
    notes: list[str] = field(default_factory=list)


@dataclass
class ChecklistFit:
    shrinkage: float
    n_boot: int
    rubrics: dict[str, RubricFit] = field(default_factory=dict)
    overall: Any = None  # Comparison on the Overall (mean of the rubrics' scores)
    judge: str = ""
    checklist: str = ""
    why_no_file: str = ""


def fit_checklist(res: Any, *, shrinkage: float, n_boot: int, seed: int, problems: Problems) -> ChecklistFit:
    """Per rubric the uniform vs fitted out-of-fold agreement with the mean human rating, and the weights
    fitted on all pairs; `res` is align's AlignResult (its rows carry the checklist items)."""

    out = ChecklistFit(shrinkage=shrinkage, n_boot=n_boot)
    rows = res.llm.rows
    with_items = [c for c in res.ids if c in rows and rows[c].items]
    if not with_items:
        out.why_no_file = (
            "no paired conversation has checklist items: fit on the scores of `evaluate --judge-scoring checklist`"
        )
        problems.add("checklist fit", f"checklist fit: {out.why_no_file}")
        return out
    idents = sorted({(rows[c].judge, rows[c].checklist) for c in with_items})
    if len(idents) > 1:
        out.why_no_file = (
            f"the paired scores come from {len(idents)} judge/checklist pairs "
            f"({', '.join(f'{j} {c}' for j, c in idents)}): fit one judge's checklist scores"
        )
        problems.add("checklist fit", f"checklist fit: {out.why_no_file}")
        return out
    out.judge, out.checklist = idents[0]

    ids_all = with_items
    index = {c: i for i, c in enumerate(res.ids)}
    preds_u: dict[str, dict[str, float]] = {}
    preds_f: dict[str, dict[str, float]] = {}
    for k, metric in enumerate(schema.metrics()):
        fit = _fit_rubric(
            res, k, metric, ids_all, index, shrinkage=shrinkage, n_boot=n_boot, seed=seed, problems=problems
        )
        if fit is not None:
            out.rubrics[metric], preds_u[metric], preds_f[metric] = fit
    if out.rubrics:
        out.overall = _overall_fit(res, list(out.rubrics), ids_all, index, preds_u, preds_f, n_boot=n_boot, seed=seed)
    else:
        out.why_no_file = "no rubric could be fitted"
    return out


def _fit_rubric(
    res: Any,
    k: int,
    metric: str,
    ids_all: list[str],
    index: dict[str, int],
    *,
    shrinkage: float,
    n_boot: int,
    seed: int,
    problems: Problems,
) -> tuple[RubricFit, dict[str, float], dict[str, float]] | None:
    """One rubric: its items' weights fitted on all pairs, and the uniform vs fitted out-of-fold predictions
    (conversation -> prediction) compared with the mean human rating; None (said in `problems`, except for a
    rubric without items) when it cannot be fitted."""
    rows = res.llm.rows
    keys = sorted(
        {
            item_key(iid)
            for c in ids_all
            for iid, _ in rows[c].items.items()
            if metric in rows[c].item_rubrics.get(iid, ())
        }
    )
    if not keys:
        return None
    ids = [c for c in ids_all if not np.isnan(res.human[index[c], k])]
    if len(ids) < cal_stats.MIN_PAIRS:
        problems.add(
            "checklist fit",
            f"checklist fit: {metric}: {len(ids)} paired conversations, fitting needs at least {cal_stats.MIN_PAIRS}",
        )
        return None
    y = np.array([res.human[index[c], k] for c in ids])
    x = features([rows[c].items for c in ids], keys)
    groups, _unknown = tutorial_keys(res, ids)
    n_tut = len(set(groups.tolist()))
    if n_tut < 2:
        problems.add("checklist fit", f"checklist fit: {metric}: one tutorial only; out of fold needs 2")
        return None
    uni = predict(x, np.ones(len(keys)))
    fitted = out_of_fold(x, y, groups, shrinkage)
    ok = ~np.isnan(uni) & ~np.isnan(fitted)
    rf = RubricFit(
        metric,
        keys,
        int(ok.sum()),
        n_tut,
        {kk: round(float(w), 4) for kk, w in zip(keys, fit_weights(x, y, shrinkage), strict=True)},
    )
    rf.comparison = cal_stats.compare(
        y[ok],
        {UNIFORM: uni[ok], FITTED: fitted[ok]},
        n_boot=n_boot,
        seed=zlib.crc32(f"{seed}/{metric}".encode()),
        baseline=UNIFORM,
    )
    return (
        rf,
        {c: float(v) for c, v in zip(ids, uni, strict=True)},
        {c: float(v) for c, v in zip(ids, fitted, strict=True)},
    )


def _overall_fit(
    res: Any,
    rubrics: list[str],
    ids_all: list[str],
    index: dict[str, int],
    preds_u: dict[str, dict[str, float]],
    preds_f: dict[str, dict[str, float]],
    *,
    n_boot: int,
    seed: int,
) -> Any:
    """The mean of the fitted rubrics, uniform vs fitted, against the people's mean rating (None with too few
    conversations rated on every rubric)."""
    overall = [
        c
        for c in ids_all
        if all(c in preds_u[m] for m in rubrics) and not np.isnan(res.human[index[c], : len(schema.metrics())]).any()
    ]
    if len(overall) < cal_stats.MIN_PAIRS:
        return None
    hum = np.array([np.nanmean(res.human[index[c], : len(schema.metrics())]) for c in overall])
    u = np.array([np.mean([preds_u[m][c] for m in rubrics]) for c in overall])
    f = np.array([np.mean([preds_f[m][c] for m in rubrics]) for c in overall])
    ok = ~np.isnan(u) & ~np.isnan(f)
    return cal_stats.compare(
        hum[ok],
        {UNIFORM: u[ok], FITTED: f[ok]},
        n_boot=n_boot,
        seed=zlib.crc32(f"{seed}/Overall".encode()),
        baseline=UNIFORM,
    )


def _cell(e: Any) -> str:
    if e is None or not np.isfinite(e.value):
        return "–"
    ci = f" [{e.ci_low:+.2f}, {e.ci_high:+.2f}]" if np.isfinite(e.ci_low) else ""
    return f"{e.value:+.3f}{ci}"


def table_rows(fit: ChecklistFit) -> tuple[list[str], list[list[Any]]]:
    cols = [
        "rubric",
        "n",
        "tutorials",
        "uniform_r",
        "uniform_r_low",
        "uniform_r_high",
        "fitted_r",
        "fitted_r_low",
        "fitted_r_high",
        "delta_r",
        "delta_r_low",
        "delta_r_high",
        "weights",
    ]
    rows = []
    items: list[tuple[str, Any, RubricFit | None]] = [(m, rf.comparison, rf) for m, rf in fit.rubrics.items()]
    if fit.overall is not None:
        items.append(("Overall", fit.overall, None))
    for m, cmp, rf in items:
        u, f, d = cmp.predictors[UNIFORM]["r"], cmp.predictors[FITTED]["r"], cmp.deltas[FITTED]["r"]
        w = "; ".join(f"{k}={v:g}" for k, v in rf.weights.items()) if rf else ""
        rows.append(
            [
                m,
                cmp.n,
                rf.tutorials if rf else "",
                *(
                    round(v, 4)
                    for v in (u.value, u.ci_low, u.ci_high, f.value, f.ci_low, f.ci_high, d.value, d.ci_low, d.ci_high)
                ),
                w,
            ]
        )
    return cols, rows


def markdown(fit: ChecklistFit) -> str:
    lines = [
        f"# Checklist item weights fitted on people: {fit.judge} (checklist {fit.checklist})",
        "",
        f"Non-negative weights per rubric, shrunk toward uniform (shrinkage {fit.shrinkage:g}); every figure out "
        f"of fold (GroupKFold by tutorial): Pearson r with the mean human rating, 95 % bootstrap CIs "
        f"({fit.n_boot} resamples), the difference fitted − uniform with its paired CI. Overall = the mean of "
        "the fitted rubrics' scores against the mean human rating.",
        "",
        "| rubric | n | uniform r | fitted r | fitted − uniform | weights (fitted on all) |",
        "|---|---|---|---|---|---|",
    ]
    items: list[tuple[str, Any, RubricFit | None]] = [(m, rf.comparison, rf) for m, rf in fit.rubrics.items()]
    if fit.overall is not None:
        items.append(("**Overall**", fit.overall, None))
    for m, cmp, rf in items:
        w = ", ".join(f"{k} {v:.2f}" for k, v in rf.weights.items()) if rf else ""
        lines.append(
            f"| {m} | {cmp.n} | {_cell(cmp.predictors[UNIFORM]['r'])} | {_cell(cmp.predictors[FITTED]['r'])} "
            f"| {_cell(cmp.deltas[FITTED]['r'])} | {w} |"
        )
    if fit.why_no_file:
        lines += ["", f"No weights file: {fit.why_no_file}."]
    return "\n".join(lines) + "\n"


def weights_object(fit: ChecklistFit) -> Any:

    return ChecklistWeights(
        judge=fit.judge, checklist=fit.checklist, weights={m: rf.weights for m, rf in fit.rubrics.items()}
    )


def write_outputs(fit: ChecklistFit, st: Any) -> None:
    """checklist_fit.csv/.md and (when fitted) checklist_weights.json into align's staged output."""

    if fit.rubrics:
        cols, rows = table_rows(fit)
        st.write_text(CHECKLIST_FIT_CSV, csv_text(cols, rows))
    st.write_text(CHECKLIST_FIT_MD, markdown(fit))
    if fit.rubrics and not fit.why_no_file:
        w = weights_object(fit)
        obj = {
            "kind": WEIGHTS_KIND,
            "version": 1,
            "judge": w.judge,
            "checklist": w.checklist,
            "weights": w.weights,
            "shrinkage": fit.shrinkage,
            "out_of_fold_r": {
                m: {
                    "uniform": rf.comparison.predictors[UNIFORM]["r"].value,
                    "fitted": rf.comparison.predictors[FITTED]["r"].value,
                }
                for m, rf in fit.rubrics.items()
            },
        }
        st.write_text(CHECKLIST_WEIGHTS_JSON, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def render(fit: ChecklistFit, console: Any) -> None:
    from rich.table import Table

    t = Table(title=f"Checklist weights, out of fold by tutorial (shrinkage {fit.shrinkage:g}): {fit.judge}")
    for c in ("rubric", "n", "uniform r", "fitted r", "fitted − uniform"):
        t.add_column(c, justify="left" if c == "rubric" else "right")
    items = [(m, rf.comparison) for m, rf in fit.rubrics.items()]
    if fit.overall is not None:
        items.append(("Overall", fit.overall))
    for m, cmp in items:
        t.add_row(
            m,
            str(cmp.n),
            _cell(cmp.predictors[UNIFORM]["r"]),
            _cell(cmp.predictors[FITTED]["r"]),
            _cell(cmp.deltas[FITTED]["r"]),
        )
    console.print(t)
    if fit.why_no_file:
        console.print(f"no checklist weights file: {fit.why_no_file}", highlight=False, markup=False)
