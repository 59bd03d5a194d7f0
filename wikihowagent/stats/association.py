"""How far a metric tracks people: pooled, within-tutorial and length-controlled correlations with cluster CIs.

`associate(x, y, groups, control)` gives, for one metric `x` and one human rating `y` over the same items:

- Pearson r, Spearman rho and Kendall tau-b over all items (scipy's two-sided p-values);
- the within-group r: both sides centred on their group's (tutorial's) mean, then Pearson r, so that which
  tutorials people liked more does not count, only which of one tutorial's conversations (p: a t test with
  n - groups - 1 degrees of freedom);
- the partial r controlling for `control` (e.g. log conversation length): Pearson r of what is left of `x`
  and of `y` after a least-squares line on `control` (p: n - 3 degrees of freedom);
- 95 % percentile CIs of all five from one cluster bootstrap: groups (tutorials) are resampled with
  replacement, so each item is weighted by how often its group was drawn, and every coefficient is computed
  from those weights exactly as on the resampled data (mid-ranks and tau-b's ties included), vectorised
  over the resamples. Above MATRIX_ITEMS items the rank coefficients (whose weighted form needs items x items
  matrices) are computed on the first LOOP_RESAMPLES resamples' data instead, one resample at a time.

A metric constant over the items has no correlation: the coefficients are NaN and `note` says so (a table
prints the note, never "nan"). Fewer than 3 items: the same, with its note.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .bootstrap import multiplicities, resamples
from .correlation import centred, group_codes, weighted_pearson
from .paired import LEVEL

COEFFICIENTS = ("pearson", "spearman", "kendall", "within", "partial")
MIN_ITEMS = 3
MATRIX_ITEMS = 150  # up to this many items the rank coefficients' resamples use items x items matrices ...
LOOP_RESAMPLES = 300  # ... above it, the first this many resamples give their CIs, computed on the data


@dataclass
class Estimate:
    """One correlation coefficient: its value, two-sided p and 95 % CI (NaN where not defined)."""

    value: float = math.nan
    p: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan


@dataclass
class Association:
    """One metric against one human rating: the coefficients of COEFFICIENTS, n items from `groups` groups."""

    n: int
    groups: int
    coefs: dict[str, Estimate] = field(default_factory=lambda: {c: Estimate() for c in COEFFICIENTS})
    note: str = ""  # why the coefficients are missing ("constant ...", "fewer than 3 ..."), else ""


def _t_p(r: float, df: int) -> float:
    from scipy import stats

    if not math.isfinite(r) or df < 1:
        return math.nan
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt(df / (1.0 - r * r))
    return float(2 * stats.t.sf(abs(t), df))


def _pearson(x: Any, y: Any) -> float:

    xc, yc = x - x.mean(), y - y.mean()
    den = math.sqrt(float((xc * xc).sum() * (yc * yc).sum()))
    return float((xc * yc).sum() / den) if den > 1e-300 else math.nan


def _residual(a: Any, z: Any) -> Any:
    import numpy as np

    A = np.column_stack([np.ones_like(z), z])
    coef, *_ = np.linalg.lstsq(A, a, rcond=None)
    return a - A @ coef


def _wranks(W: Any, less: Any, equal: Any) -> Any:
    """Mid-ranks of each item within each weighted resample: less[i, j] = value_j < value_i."""
    return W @ less.T + (W @ equal.T + 1.0) / 2.0


def _wkendall(W: Any, sxy: Any, ex: Any, ey: Any) -> Any:
    """Kendall's tau-b per weighted resample: sxy[i, j] = sign(x_j - x_i) * sign(y_j - y_i); ex, ey: equality."""
    import numpy as np

    N = W.sum(1)
    s = 0.5 * ((W @ sxy) * W).sum(1)
    n0 = N * (N - 1) / 2
    n1 = 0.5 * (((W @ ex) * W).sum(1) - N)
    n2 = 0.5 * (((W @ ey) * W).sum(1) - N)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt((n0 - n1) * (n0 - n2))
    tau[(n0 - n1 <= 0) | (n0 - n2 <= 0)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def _constant(a: Any) -> bool:
    return bool(a.size == 0 or (a.max() - a.min()) <= 1e-12 * max(1.0, abs(float(a.max()))))


def associate(
    x: Sequence[float] | Any,
    y: Sequence[float] | Any,
    groups: Sequence[str],
    control: Sequence[float] | Any | None = None,
    *,
    n_boot: int = 2000,
    seed: int | list[int] = 0,
) -> Association:
    """The association of `x` (a metric) with `y` (people) over the items where both are finite (and `control`,
    when given, too); see the module docstring. CIs need n_boot > 0 and at least 2 groups."""
    import numpy as np
    from scipy import stats

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    z = None if control is None else np.asarray(control, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    xs, ys = x[ok], y[ok]
    gs = [g for g, keep in zip(groups, ok, strict=True) if keep]
    codes, k = group_codes(gs)
    res = Association(n=int(xs.size), groups=k)
    if xs.size < MIN_ITEMS:
        res.note = f"fewer than {MIN_ITEMS} conversations with both values (n={xs.size})"
        return res
    if _constant(xs):
        res.note = f"constant over these conversations (all {xs[0]:g}): no correlation"
        return res
    if _constant(ys):
        res.note = f"the people's ratings are constant (all {ys[0]:g}): no correlation"
        return res
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr, sr, kt = stats.pearsonr(xs, ys), stats.spearmanr(xs, ys), stats.kendalltau(xs, ys)
    point = {
        "pearson": (float(pr.statistic), float(pr.pvalue)),
        "spearman": (float(sr.statistic), float(sr.pvalue)),
        "kendall": (float(kt.statistic), float(kt.pvalue)),
    }
    xw, yw = centred(xs, codes, k), centred(ys, codes, k)
    within = _pearson(xw, yw) if k < xs.size else math.nan
    point["within"] = (within, _t_p(within, xs.size - k - 1))
    zs = None
    if z is not None:
        zs = z[ok]
        if np.all(np.isfinite(zs)) and not _constant(zs):
            partial = _pearson(_residual(xs, zs), _residual(ys, zs))
            point["partial"] = (partial, _t_p(partial, xs.size - 3))
        else:
            zs = None
    cis: dict[str, tuple[float, float]] = {}
    if n_boot > 0 and k >= 2:
        cis = _cluster_cis(xs, ys, zs, xw, yw, codes, k, n_boot, seed)
    for c, (v, p) in point.items():
        lo, hi = cis.get(c, (math.nan, math.nan))
        res.coefs[c] = Estimate(v, p, lo, hi)
    return res


def _sign(a: Any) -> Any:
    """s[i, j] = sign(a_j - a_i)."""
    import numpy as np

    return np.sign(a[None, :] - a[:, None])


def _rank_loop(xs: Any, ys: Any, members: list[Any], idx: Any) -> tuple[Any, Any]:
    """Spearman's rho and Kendall's tau-b of each resample (a row of `idx`: the groups drawn), from its data."""
    import numpy as np
    from scipy import stats

    rho, tau = np.full(len(idx), np.nan), np.full(len(idx), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b, row in enumerate(idx):
            items = np.concatenate([members[j] for j in row])
            bx, by = xs[items], ys[items]
            if _constant(bx) or _constant(by):
                continue
            rho[b] = stats.spearmanr(bx, by).statistic
            tau[b] = stats.kendalltau(bx, by).statistic
    return rho, tau


def _cluster_cis(
    xs: Any, ys: Any, zs: Any, xw: Any, yw: Any, codes: Any, k: int, n_boot: int, seed: int | list[int]
) -> dict[str, tuple[float, float]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    small = xs.size <= MATRIX_ITEMS  # else the rank coefficients are computed on each resample's data
    if small:
        sxy = _sign(xs) * _sign(ys)
        ex = (xs[None, :] == xs[:, None]).astype(float)
        ey = (ys[None, :] == ys[:, None]).astype(float)
        lx = (xs[None, :] < xs[:, None]).astype(float)  # lx[i, j]: x_j < x_i
        ly = (ys[None, :] < ys[:, None]).astype(float)
    members = [np.flatnonzero(codes == j) for j in range(k)]
    out: dict[str, list[Any]] = {c: [] for c in COEFFICIENTS}
    for idx in resamples(rng, k, n_boot, width=max(1, xs.size // max(k, 1)) * 8):
        counts = multiplicities(idx, k)  # resamples x groups
        W = counts[:, codes]  # resamples x items
        out["pearson"].append(weighted_pearson(W, xs, ys))
        out["within"].append(weighted_pearson(W, xw, yw))
        if small:
            out["spearman"].append(weighted_pearson(W, _wranks(W, lx, ex), _wranks(W, ly, ey)))
            out["kendall"].append(_wkendall(W, sxy, ex, ey))
        else:
            done = sum(len(r) for r in out["spearman"])
            if done < LOOP_RESAMPLES:
                rho, tau = _rank_loop(xs, ys, members, idx[: LOOP_RESAMPLES - done])
                out["spearman"].append(rho)
                out["kendall"].append(tau)
        if zs is not None:
            rxy = out["pearson"][-1]
            rxz, ryz = weighted_pearson(W, xs, zs), weighted_pearson(W, ys, zs)
            with np.errstate(invalid="ignore", divide="ignore"):
                out["partial"].append(np.clip((rxy - rxz * ryz) / np.sqrt((1 - rxz**2) * (1 - ryz**2)), -1, 1))
    q = [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2]
    cis = {}
    for c, parts in out.items():
        if not parts:
            continue
        vals = np.concatenate(parts)
        vals = vals[np.isfinite(vals)]
        if vals.size >= max(10, min(n_boot, LOOP_RESAMPLES if c in ("spearman", "kendall") else n_boot) // 2):
            lo, hi = np.percentile(vals, q)
            cis[c] = (float(lo), float(hi))
    return cis
