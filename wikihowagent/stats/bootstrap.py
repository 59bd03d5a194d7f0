"""The percentile bootstrap shared by every CI of the package.

- `resamples(rng, n, n_boot)`: the index arrays of the resamples (n draws with replacement each), in chunks
  so that memory does not grow with the number of resamples; the chunks are the draws of one `rng.integers`.
- `percentile_ci(values)`: the percentile CI of bootstrap replicates (the finite ones; numpy's linear
  percentiles), NaN when too few are defined.
- `bootstrap_ci(statistic, n, n_boot, seed)`: both, for a statistic computed from the resampled indices. The
  last seed's resamples are kept (up to CACHE_ELEMENTS indices and CACHE_RESAMPLES resamples, so memory does not
  grow with the resamples asked for): a table's cells resample the same tutorials with the same seed, so they
  draw them once.
- `bootstrap_counts_ci(statistic, n, n_boot, seed)`: the same resamples given as counts (`multiplicities`: how
  many times each item is drawn), for a statistic that is a sum over the drawn items: one matrix product
  (`counts @ values`, several columns at once) instead of a gather per column. The counts are kept as the draws
  are, within the same bounds. Sums taken this way equal the gathered ones up to floating-point rounding
  (relative 1e-15), not to the last bit.

numpy is imported inside the functions (the package's commands start without it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

CHUNK_ELEMENTS = 1_000_000  # resampled indices (resamples x items) held at once: memory does not grow with N
CACHE_ELEMENTS = 16_000_000  # the most resampled indices kept for the next CI (128 MB: 1,000 x 16,000 items)
CACHE_RESAMPLES = 2_000  # ... and of at most this many resamples: more (`--bootstrap N`) are drawn chunk by chunk
ALPHA = 0.05  # a 95 % CI: alpha / 2 outside it on each side


def resamples(rng: Any, n: int, n_boot: int, width: int = 1) -> Iterator[Any]:
    """The index arrays of `n_boot` bootstrap resamples of `n` items (one row per resample: n draws with
    replacement), in chunks of at most CHUNK_ELEMENTS indices times `width` (what the caller expands one index
    to, e.g. one value per run): memory does not grow with `n_boot`. The rows are the same draws as one
    `rng.integers(0, n, size=(n_boot, n))`, so results do not depend on the chunk size."""
    chunk = _chunk(n, width)
    for start in range(0, n_boot, chunk):
        yield rng.integers(0, n, size=(min(chunk, n_boot - start), n))


def _chunk(n: int, width: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(1, n * width))


def _kept(n: int, n_boot: int) -> bool:
    """Whether the resamples of `n` items are within the cache's bounds (then kept for the next CI)."""
    return n * n_boot <= CACHE_ELEMENTS and n_boot <= CACHE_RESAMPLES


def _key(seed: int | list[int]) -> int | tuple[int, ...]:
    """`seed` as a cache key (a list of ints as a tuple)."""
    return tuple(seed) if isinstance(seed, list) else seed


def _rng(key: int | tuple[int, ...]) -> Any:
    """numpy's default generator of a seed given as its cache key."""
    import numpy as np

    return np.random.default_rng(list(key) if isinstance(key, tuple) else key)


@functools.lru_cache(maxsize=1)
def _draws(seed: int | tuple[int, ...], n: int, n_boot: int) -> Any:
    """All `n_boot` resamples of `n` items from `seed` at once (the rows `resamples` yields), read-only."""
    out = _rng(seed).integers(0, n, size=(n_boot, n))
    out.setflags(write=False)
    return out


def multiplicities(idx: Any, n: int) -> Any:
    """Resamples as counts: row b, column i = how many times item i (of `n`) is in the index row `idx[b]`
    (floats, for matrix products)."""
    import numpy as np

    rows = idx.shape[0]
    flat = (idx + (np.arange(rows, dtype=idx.dtype) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(float)


def drawn_sums(drawn: Any, values: Any) -> Any:
    """Each resample's sum of `values` (items, or items x columns) over the items it drew, `drawn` being the
    resamples' `multiplicities`: one matrix product. A value that is not finite (inf, nan) counts only in the
    resamples that draw it, as in a sum of the gathered values."""
    import numpy as np

    bad = ~np.isfinite(values) if values.ndim == 1 else ~np.isfinite(values).all(axis=1)
    if not bad.any():
        return drawn @ values
    out = drawn @ np.where(np.isfinite(values), values, 0.0)
    some = drawn[:, bad]  # resamples x the items with a value that is not finite
    vals = values[bad]
    with np.errstate(invalid="ignore", over="ignore"):
        if values.ndim == 1:
            return out + np.where(some > 0, some * vals, 0.0).sum(axis=1)
        return out + np.where(some[..., None] > 0, some[..., None] * vals, 0.0).sum(axis=1)


@functools.lru_cache(maxsize=1)
def _counts(seed: int | tuple[int, ...], n: int, n_boot: int) -> Any:
    """`multiplicities` of all `n_boot` resamples of `n` items from `seed` (the draws of `_draws`, counted chunk
    by chunk: the indices are never all held), read-only."""
    import numpy as np

    out = np.empty((n_boot, n))
    start = 0
    for idx in resamples(_rng(seed), n, n_boot):
        out[start : start + len(idx)] = multiplicities(idx, n)
        start += len(idx)
    out.setflags(write=False)
    return out


def _seeded(seed: int | list[int], n: int, n_boot: int, width: int) -> Iterator[Any]:
    """`resamples` of `numpy.random.default_rng(seed)`, from the kept draws when they fit the cache's bounds."""
    import numpy as np

    if not _kept(n, n_boot):
        yield from resamples(np.random.default_rng(seed), n, n_boot, width)
        return
    draws = _draws(_key(seed), n, n_boot)
    chunk = _chunk(n, width)
    for start in range(0, n_boot, chunk):
        yield draws[start : start + chunk]


def percentile_ci(values: Any, alpha: float = ALPHA, min_count: float = 1) -> tuple[float, float]:
    """The (alpha/2, 1 - alpha/2) percentiles of the finite `values` (bootstrap replicates); (nan, nan) when
    fewer than `min_count` (and at least 1) of them are finite. `alpha` = 1 - the CI's level: pass 0.05 for
    the percentiles 2.5 and 97.5 exactly (1 - 0.95 is not 0.05 in floating point)."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    ok = values[np.isfinite(values)]
    if ok.size == 0 or ok.size < min_count:
        return math.nan, math.nan
    lo, hi = np.percentile(ok, [50 * alpha, 100 - 50 * alpha])
    return float(lo), float(hi)


def bootstrap_ci(
    statistic: Callable[[Any], Any],
    n: int,
    n_boot: int,
    seed: int | list[int] = 0,
    *,
    alpha: float = ALPHA,
    width: int = 1,
) -> tuple[float, float]:
    """The percentile bootstrap CI of `statistic` over `n` items: `statistic(idx)` gets a chunk of resamples
    (an index array, one row per resample: `resamples`' rows from `numpy.random.default_rng(seed)`) and
    returns the statistic of each row. (nan, nan) when there is nothing to resample, `n_boot` is 0 or no
    resample gives a finite value."""
    import numpy as np

    if n <= 0 or n_boot <= 0:
        return math.nan, math.nan
    stat = np.concatenate([np.asarray(statistic(idx), dtype=float) for idx in _seeded(seed, n, n_boot, width)])
    return percentile_ci(stat, alpha)


def bootstrap_counts_ci(
    statistic: Callable[[Any], Any],
    n: int,
    n_boot: int,
    seed: int | list[int] = 0,
    *,
    alpha: float = ALPHA,
    width: int = 1,
) -> tuple[float, float]:
    """`bootstrap_ci` of a statistic of the resamples' counts: `statistic(counts)` gets the resamples as
    `multiplicities` (all of them at once when they are kept, else a chunk at a time) and returns the statistic
    of each row; the resamples are `bootstrap_ci`'s."""
    import numpy as np

    if n <= 0 or n_boot <= 0:
        return math.nan, math.nan
    chunks: Iterable[Any]
    if _kept(n, n_boot):
        chunks = [_counts(_key(seed), n, n_boot)]
    else:
        chunks = (multiplicities(idx, n) for idx in resamples(np.random.default_rng(seed), n, n_boot, width))
    stat = np.concatenate([np.asarray(statistic(c), dtype=float) for c in chunks])
    return percentile_ci(stat, alpha)
