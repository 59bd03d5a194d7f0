"""Statistics of the alignment study.

- `correlate(x, y)`: Pearson r, Spearman rho, Kendall tau-b (scipy.stats, two-sided p-values) and
  percentile bootstrap 95 % CIs from resampling conversation pairs.
- `describe(x, y)`: human vs LLM means/stds/medians, the mean difference and a Wilcoxon signed-rank test.
- `agreement(R)`: inter-annotator agreement of the human judges on one metric: Krippendorff's alpha
  (ordinal), quadratic-weighted Cohen's kappa (same formula as scikit-learn's, computed here to avoid a 1 s
  import) and Pearson r for each pair of judges.

The bootstrap is exact-equivalent and fast for rating data: resampling n pairs with replacement is the same
as drawing multinomial counts over the distinct (x, y) cells, so each resample is a weighted contingency
table and all three coefficients are computed from it, vectorised over the resamples (cost grows with the
number of distinct values, not with n). With too many distinct values (continuous data) it falls back to a
loop over index resamples.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from wikihowagent.errors import Note
from wikihowagent.stats.association import Estimate  # a coefficient: value, p, CI
from wikihowagent.stats.bootstrap import CHUNK_ELEMENTS, percentile_ci  # CHUNK: resamples x cells held at once
from wikihowagent.stats.correlation import weighted_pearson

# The kinds of a correlation's notes that leave the correlation out (a Note's kind; other notes are informational).
TOO_FEW, UNDEFINED = "too few", "undefined"

COEFFICIENTS = ("pearson", "spearman", "kendall")
COEF_LABEL = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ"}
MAX_TABLE_CELLS = 200_000  # distinct-x x distinct-y above which the bootstrap loops instead


@dataclass
class CorrelationResult:
    n: int
    coefs: dict[str, Estimate] = field(default_factory=lambda: {c: Estimate() for c in COEFFICIENTS})
    notes: list[str] = field(default_factory=list)


def _is_constant(a: np.ndarray) -> bool:
    return a.size == 0 or bool(np.all(a == a[0]))


def correlate(x, y, *, n_boot: int = 2000, seed: int | np.random.SeedSequence | list[int] = 0) -> CorrelationResult:
    """Correlations of paired values (NaN pairs must already be removed). n < 3 or a constant side gives
    NaN coefficients with a note, never an exception."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    res = CorrelationResult(n=int(x.size))
    if x.size < 3:
        res.notes.append(Note(f"fewer than 3 paired values (n={x.size})", TOO_FEW))
        return res
    const = [side for side, a in (("human", x), ("LLM", y)) if _is_constant(a)]
    if const:
        res.notes.append(
            Note(
                f"{' and '.join(const)} scores are constant (all {x[0] if const[0] == 'human' else y[0]:g}); "
                "correlation undefined",
                UNDEFINED,
            )
        )
        return res
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = stats.pearsonr(x, y)
        rho = stats.spearmanr(x, y)
        tau = stats.kendalltau(x, y)
    for name, est in (("pearson", r), ("spearman", rho), ("kendall", tau)):
        res.coefs[name].value = float(est.statistic)
        res.coefs[name].p = float(est.pvalue)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        reps = bootstrap(x, y, n_boot, rng)
        bad = 0
        for name in COEFFICIENTS:
            vals = reps[name]
            bad = max(bad, int((~np.isfinite(vals)).sum()))
            lo, hi = percentile_ci(vals, min_count=max(10, vals.size // 2))
            if math.isfinite(lo):
                res.coefs[name].ci_low, res.coefs[name].ci_high = lo, hi
        if bad:
            res.notes.append(f"{bad} of {n_boot} bootstrap resamples had a constant side and were dropped")
    return res


def bootstrap(x: np.ndarray, y: np.ndarray, n_boot: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Bootstrap replicates of the three coefficients (NaN where a resample is constant)."""
    ux, xi = np.unique(x, return_inverse=True)
    uy, yi = np.unique(y, return_inverse=True)
    l, m = ux.size, uy.size  # noqa: E741 - the table's l x m, as in the formula
    if l * m > MAX_TABLE_CELLS:
        return _bootstrap_loop(x, y, n_boot, rng)
    n = x.size
    cell = xi * m + yi
    counts = np.bincount(cell, minlength=l * m)
    cells = np.flatnonzero(counts)
    p = counts[cells] / n
    # Drawing the counts: multinomial over the K occupied cells costs ~K binomial draws per resample;
    # resampling n indices and counting costs ~n cheap operations. Use whichever is cheaper.
    by_index = cells.size * 15 > n
    cell32 = cell.astype(np.int32) if by_index and l * m * min(n_boot, CHUNK_ELEMENTS) < 2**31 else cell
    chunk = max(1, CHUNK_ELEMENTS // max(l * m, n if by_index else 1))
    out = {c: np.empty(n_boot) for c in COEFFICIENTS}
    # centre the values for numerical stability (coefficients are shift-invariant)
    cx = ux - x.mean()
    cy = uy - y.mean()
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        if by_index:
            drawn = cell32[rng.integers(0, n, size=(b, n), dtype=np.int32)]
            drawn += (np.arange(b, dtype=drawn.dtype) * (l * m))[:, None]
            W = np.bincount(drawn.ravel(), minlength=b * l * m).astype(float).reshape(b, l, m)
        else:
            W = np.zeros((b, l * m))
            W[:, cells] = rng.multinomial(n, p, size=b)
            W = W.reshape(b, l, m)
        r, rho, tau = _table_coefficients(W, cx, cy, n)
        out["pearson"][start : start + b] = r
        out["spearman"][start : start + b] = rho
        out["kendall"][start : start + b] = tau
    return out


def _table_pearson(W: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """Pearson r per resample of a table: W (b, l, m) counts, vx (b, l) / (l,) values of the x levels, vy likewise;
    the table's cells are the items of `weighted_pearson`."""
    b, l, m = W.shape  # noqa: E741 - the table's l x m, as in the formula
    x = np.repeat(np.broadcast_to(vx, (b, l)), m, axis=1)  # cell (a, c) has x value vx[a] ...
    y = np.tile(np.broadcast_to(vy, (b, m)), (1, l))  # ... and y value vy[c]
    return weighted_pearson(W.reshape(b, l * m), x, y)


def _table_coefficients(W: np.ndarray, cx: np.ndarray, cy: np.ndarray, n: int):
    rx = W.sum(axis=2)  # (b, l) row totals
    ry = W.sum(axis=1)  # (b, m) column totals
    r = _table_pearson(W, cx, cy)
    # Spearman: Pearson of mid-ranks (ties get the average rank, as scipy)
    rank_x = np.cumsum(rx, axis=1) - (rx - 1) / 2
    rank_y = np.cumsum(ry, axis=1) - (ry - 1) / 2
    rho = _table_pearson(W, rank_x - (n + 1) / 2, rank_y - (n + 1) / 2)
    # Kendall tau-b: S = sum over cells of W * (concordant - discordant cells strictly above-right/below-right)
    G = np.cumsum(W[:, ::-1, :], axis=1)[:, ::-1, :] - W  # sum over rows a' > a
    C = np.cumsum(G[:, :, ::-1], axis=2)[:, :, ::-1] - G  # ... and columns b' > b
    D = np.cumsum(G, axis=2) - G  # ... and columns b' < b
    S = (W * (C - D)).sum(axis=(1, 2))
    n0 = n * (n - 1) / 2
    n1 = (rx * (rx - 1) / 2).sum(1)
    n2 = (ry * (ry - 1) / 2).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = S / np.sqrt((n0 - n1) * (n0 - n2))
    tau[(n0 - n1 <= 0) | (n0 - n2 <= 0)] = np.nan
    return r, rho, np.clip(tau, -1.0, 1.0)


def _bootstrap_loop(x: np.ndarray, y: np.ndarray, n_boot: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    from scipy import stats

    out = {c: np.full(n_boot, np.nan) for c in COEFFICIENTS}
    n = x.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in range(n_boot):
            idx = rng.integers(0, n, n)
            xs, ys = x[idx], y[idx]
            if _is_constant(xs) or _is_constant(ys):
                continue
            out["pearson"][b] = np.corrcoef(xs, ys)[0, 1]
            rx, ry = stats.rankdata(xs), stats.rankdata(ys)
            out["spearman"][b] = np.corrcoef(rx, ry)[0, 1]
            out["kendall"][b] = stats.kendalltau(xs, ys).statistic
    return out


# ---------------------------------------------------------------------------------------------------------


@dataclass
class Descriptives:
    n: int
    human_mean: float
    human_std: float
    human_median: float
    llm_mean: float
    llm_std: float
    llm_median: float
    diff_mean: float  # LLM - human
    llm_higher: float  # share of pairs where the LLM score is higher
    llm_lower: float
    wilcoxon_p: float


def describe(x, y) -> Descriptives:
    """Human (x) vs LLM (y) on the same paired conversations."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = int(x.size)
    if n == 0:
        nan = math.nan
        return Descriptives(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    sd = lambda a: float(np.std(a, ddof=1)) if a.size > 1 else math.nan  # noqa: E731
    p = math.nan
    d = y - x
    if n >= 3 and np.any(d != 0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                p = float(stats.wilcoxon(y, x).pvalue)
            except ValueError:
                p = math.nan
    return Descriptives(
        n=n,
        human_mean=float(x.mean()),
        human_std=sd(x),
        human_median=float(np.median(x)),
        llm_mean=float(y.mean()),
        llm_std=sd(y),
        llm_median=float(np.median(y)),
        diff_mean=float(d.mean()),
        llm_higher=float((d > 0).mean()),
        llm_lower=float((d < 0).mean()),
        wilcoxon_p=p,
    )


# ---------------------------------------------------------------------------------------------------------


@dataclass
class PairAgreement:
    judge_a: str
    judge_b: str
    n: int  # conversations rated by both
    kappa: float = math.nan  # quadratic-weighted Cohen's kappa
    pearson: float = math.nan
    pearson_p: float = math.nan
    notes: list[str] = field(default_factory=list)


@dataclass
class Agreement:
    n_judges: int
    n_units: int  # conversations rated by >= 2 judges
    alpha: float = math.nan  # Krippendorff's alpha, ordinal
    pairs: list[PairAgreement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def kappa_mean(self) -> float:
        v = [p.kappa for p in self.pairs if math.isfinite(p.kappa)]
        return float(np.mean(v)) if v else math.nan

    @property
    def pearson_mean(self) -> float:
        v = [p.pearson for p in self.pairs if math.isfinite(p.pearson)]
        return float(np.mean(v)) if v else math.nan


def _kappa_codes(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, list, str | None]:
    """Integer codes whose differences are proportional to the score differences where possible, so that
    quadratic weights over label positions are quadratic in the score."""
    both = np.concatenate([a, b])
    for factor in (1, 2, 4):
        scaled = both * factor
        if np.allclose(scaled, np.round(scaled)):
            lo, hi = int(round(scaled.min())), int(round(scaled.max()))
            lo, hi = min(lo, int(factor * 1)), max(hi, int(factor * 5))
            return (np.round(a * factor).astype(int), np.round(b * factor).astype(int), list(range(lo, hi + 1)), None)
    values = np.unique(both)
    return (
        np.searchsorted(values, a),
        np.searchsorted(values, b),
        list(range(values.size)),
        "non-integer ratings: kappa weights by rank of the distinct values",
    )


def weighted_kappa(a: np.ndarray, b: np.ndarray, labels: list[int]) -> float:
    """Quadratic-weighted Cohen's kappa of two integer label arrays over `labels` (consecutive integers);
    the same formula as sklearn.metrics.cohen_kappa_score(weights="quadratic") (tested against it), without
    importing scikit-learn (>1 s)."""
    k = len(labels)
    ia = np.asarray(a) - labels[0]
    ib = np.asarray(b) - labels[0]
    O = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k).astype(float)  # noqa: E741 - observed (O), as in the formula
    E = np.outer(O.sum(1), O.sum(0)) / O.sum()
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2
    den = (w * E).sum()
    return float(1 - (w * O).sum() / den) if den > 0 else math.nan


def agreement(R: np.ndarray, judges: list[str]) -> Agreement:
    """R: judges x conversations ratings of one metric (NaN = not rated)."""
    import krippendorff
    from scipy import stats

    rated = ~np.isnan(R)
    units = rated.sum(axis=0) >= 2
    res = Agreement(n_judges=len(judges), n_units=int(units.sum()))
    if res.n_units == 0:
        res.notes.append("no conversation rated by two judges")
    else:
        data = R[:, units]
        if np.unique(data[~np.isnan(data)]).size < 2:
            res.notes.append("all ratings identical; alpha undefined")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    res.alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
                except (ValueError, ZeroDivisionError) as exc:
                    res.notes.append(f"alpha not computable ({exc})")
    for i, j in combinations(range(len(judges)), 2):
        both = rated[i] & rated[j]
        a, b = R[i, both], R[j, both]
        pair = PairAgreement(judges[i], judges[j], int(both.sum()))
        res.pairs.append(pair)
        if pair.n < 2:
            pair.notes.append(f"only {pair.n} conversation(s) rated by both")
            continue
        ca, cb, labels, note = _kappa_codes(a, b)
        if note:
            pair.notes.append(note)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k = weighted_kappa(ca, cb, labels)
            pair.kappa = float(k) if np.isfinite(k) else math.nan
            if not np.isfinite(k):
                pair.notes.append("kappa undefined (no variation in the ratings)")
            if pair.n >= 3 and not (_is_constant(a) or _is_constant(b)):
                pr = stats.pearsonr(a, b)
                pair.pearson, pair.pearson_p = float(pr.statistic), float(pr.pvalue)
            else:
                pair.notes.append("Pearson undefined (n < 3 or a judge's ratings are constant)")
    return res
