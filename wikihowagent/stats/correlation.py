"""Pooled and within-group correlation, for a measure whose baseline is per group (docs: Methodology > Metrics, "Likelihood Gain" and "The validity set").

Learning Gain's pre-test is taken once per tutorial, so a pooled correlation of the gain with people's ratings
over conversations can come from *which tutorials* people liked rather than from the lessons. The within-
tutorial correlation removes that: both variables are centred on their tutorial's mean (the fixed-effects,
"within" estimator) before Pearson's r; a tutorial with one conversation contributes nothing. A mixed model
with the tutorial as a random-intercept group is given beside it as a check (statsmodels MixedLM, both
variables standardised, y ~ x_within + x_tutorial_mean: the within slope. A random intercept alone, y ~ x,
would still mix in the between-tutorial association whenever x differs between tutorials — the test's
simulation shows it). CIs: a cluster bootstrap resampling whole tutorials (pooled and within), so the
dependence of conversations of one tutorial is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BOOTSTRAP = 2000


@dataclass(frozen=True)
class GroupedR:
    n: int  # pairs with both values
    groups: int  # groups (tutorials) among them
    pooled: float
    pooled_ci: tuple[float, float]
    within: float
    within_ci: tuple[float, float]
    between: float  # r of the group means (what the pooled r can borrow from)
    mixed_slope: float  # standardised within slope of y on x, tutorial as random intercept (nan if not fitted)
    mixed_ci: tuple[float, float]


def weighted_pearson(W: Any, x: Any, y: Any) -> Any:
    """Pearson r per row of W (resamples x items: weights, e.g. how often a bootstrap resample drew each item)
    of x and y (items, or resamples x items): the r of the data with each item repeated its weight's times.
    NaN where a side is constant (its weighted variance is 0 up to rounding)."""
    import numpy as np

    sw = W.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (W * x).sum(1) / sw
        my = (W * y).sum(1) / sw
        xc = x - mx[:, None]
        yc = y - my[:, None]
        cov = (W * xc * yc).sum(1)
        vx = (W * xc * xc).sum(1)
        vy = (W * yc * yc).sum(1)
        r = cov / np.sqrt(vx * vy)
    r[~(vx > 1e-12 * np.maximum(1.0, (W * x * x).sum(1))) | ~(vy > 1e-12 * np.maximum(1.0, (W * y * y).sum(1)))] = (
        np.nan
    )
    return np.clip(r, -1.0, 1.0)


def _r(x: Any, y: Any) -> float:  # numpy arrays (numpy is imported lazily)
    import numpy as np

    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def group_codes(groups: Sequence[str]) -> tuple[Any, int]:
    """Each item's group as an integer code (the groups in sorted order), and the number of groups."""
    import numpy as np

    keys = sorted(set(groups))
    return np.array([keys.index(g) for g in groups], dtype=int), len(keys)


def centred(x: Any, codes: Any, k: int) -> Any:
    """x minus the mean of its item's group (`codes` from `group_codes`, `k` groups)."""
    import numpy as np

    sums = np.bincount(codes, weights=x, minlength=k)
    counts = np.bincount(codes, minlength=k)
    return x - (sums / np.maximum(counts, 1))[codes]


def within_r(x: Any, y: Any, groups: Sequence[str]) -> float:
    """Pearson r of x and y, each centred on its group's mean."""
    import numpy as np

    codes, k = group_codes(groups)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return _r(centred(x, codes, k), centred(y, codes, k))


def _mixed(x: Any, y: Any, groups: Any) -> tuple[float, tuple[float, float]]:
    import warnings

    import numpy as np

    try:
        import pandas as pd
        import statsmodels.formula.api as smf

        zx, zy = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()
        frame = pd.DataFrame({"x": zx, "y": zy, "g": list(groups)})
        frame["xm"] = frame.groupby("g")["x"].transform("mean")
        frame["xc"] = frame["x"] - frame["xm"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = smf.mixedlm("y ~ xc + xm", frame, groups=frame["g"]).fit(reml=True)
        lo, hi = fit.conf_int().loc["xc"].tolist()
        return float(fit.params["xc"]), (float(lo), float(hi))
    except (ValueError, np.linalg.LinAlgError, KeyError):
        return math.nan, (math.nan, math.nan)


def grouped_r(
    x: Sequence[float | None],
    y: Sequence[float | None],
    groups: Sequence[str],
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
    mixed: bool = True,
) -> GroupedR:
    """Pooled, within-group and between-group r of x and y (pairs with both values), cluster-bootstrap CIs."""
    import numpy as np

    pairs = [
        (i, float(xi), float(yi))
        for i, (xi, yi) in enumerate(zip(x, y, strict=True))
        if xi is not None and yi is not None
    ]
    kept = [(i, xi, yi) for i, xi, yi in pairs if math.isfinite(xi) and math.isfinite(yi)]
    keep = [i for i, _, _ in kept]
    xs = np.array([xi for _, xi, _ in kept])
    ys = np.array([yi for _, _, yi in kept])
    gs = [groups[i] for i in keep]
    codes, k = group_codes(gs)
    pooled = _r(xs, ys)
    within = _r(centred(xs, codes, k), centred(ys, codes, k)) if k else math.nan
    means = [(xs[codes == j].mean(), ys[codes == j].mean()) for j in range(k)]
    between = _r([m[0] for m in means], [m[1] for m in means]) if k >= 3 else math.nan
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(codes == j) for j in range(k)]
    boot_p, boot_w = [], []
    for _ in range(n_boot if k >= 2 else 0):
        pick = rng.integers(0, k, k)
        idx = np.concatenate([members[j] for j in pick])
        new_codes = np.concatenate([np.full(len(members[j]), i) for i, j in enumerate(pick)])
        bx, by = xs[idx], ys[idx]
        boot_p.append(_r(bx, by))
        boot_w.append(_r(centred(bx, new_codes, k), centred(by, new_codes, k)))

    def ci(vals: list[float]) -> tuple[float, float]:
        vals = [v for v in vals if v == v]
        if len(vals) < 10:
            return math.nan, math.nan
        lo, hi = np.percentile(vals, [2.5, 97.5])
        return float(lo), float(hi)

    slope, slope_ci = _mixed(xs, ys, gs) if mixed and k >= 2 and len(xs) > k + 2 else (math.nan, (math.nan, math.nan))
    return GroupedR(len(xs), k, pooled, ci(boot_p), within, ci(boot_w), between, slope, slope_ci)
