"""Out-of-fold predictions by group: every item predicted by a model fitted without its group (tutorial).

Conversations of one tutorial share it, so a model fitted on some of them and tested on the others would look
better than it is on a new tutorial. The folds here are scikit-learn's `GroupKFold` over the groups
(k = min(n_splits, groups)): each group is in exactly one test fold, never in its own training fold. With fewer
than 2 groups there is no fold; what a caller wants then is its parameter (`on_too_few`).
scikit-learn and numpy are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from wikihowagent.errors import WikihowagentError

FOLDS = 5
MIN_GROUPS = 2  # GroupKFold needs at least 2 folds, so at least 2 groups


class TooFewGroups(WikihowagentError, ValueError):
    """Out-of-fold predictions asked for items of fewer than MIN_GROUPS groups."""


def group_folds(groups: Sequence[Any] | Any, n_splits: int = FOLDS) -> list[tuple[Any, Any]]:
    """The (train, test) index arrays of `GroupKFold(min(n_splits, groups))` over the items' `groups`; []
    when there are fewer than MIN_GROUPS groups (or n_splits < 2)."""
    import numpy as np
    from sklearn.model_selection import GroupKFold

    labels = np.asarray(groups)
    splits = min(n_splits, len(np.unique(labels)))
    if splits < MIN_GROUPS:
        return []
    return list(GroupKFold(n_splits=splits).split(np.zeros(len(labels)), groups=labels))


def out_of_fold(
    fit_predict: Callable[[Any, Any], Any],
    groups: Sequence[Any] | Any,
    *,
    n_splits: int = FOLDS,
    on_too_few: Literal["nan", "raise"],
) -> Any:
    """Each item's prediction from `fit_predict(train, test)` (index arrays: fit on the train items, return the
    test items' predictions) over `group_folds`. With fewer than MIN_GROUPS groups: every prediction NaN
    (`on_too_few="nan"`) or TooFewGroups (`"raise"`)."""
    import numpy as np

    n = len(groups)
    folds = group_folds(groups, n_splits)
    if not folds and on_too_few == "raise":
        raise TooFewGroups(
            f"all {n} items belong to fewer than {MIN_GROUPS} groups; out of fold needs at least {MIN_GROUPS}"
        )
    out = np.full(n, np.nan)
    for train, test in folds:
        out[test] = fit_predict(train, test)
    return out
