"""Prediction-powered estimates of the human mean rating (`align --ppi`; Angelopoulos et al., Science 2023).

For a group of conversations (a model or run) and a rubric: humans rated a random subset (n), the judge
scored all of them. The prediction-powered mean of the human rating is the judge's mean over the
conversations nobody rated, corrected by the judge's mean error on the rated ones; `ppi_py.ppi_mean_ci`
(power-tuned, PPI++: the judge's scores are scaled by the lambda that minimises the variance, so a judge
on another scale or with a bias still helps, and one that does not is ignored, lambda -> 0) gives it with
its 95 % CI. Beside it: the human-only mean of the rated conversations with its CI (`classical_mean_ci`,
the same normal approximation) and the judge-only mean over all conversations (what one would report
without people; its distance from the human mean is the judge's bias).

Valid only when the rated subset is a random sample of the group's conversations (`annotate export
--select stratified`); conversations chosen for being uncertain (`--select uncertain`) are not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05


@dataclass
class PPIEstimate:
    n_labeled: int  # human-rated conversations with a judge score
    n_unlabeled: int  # judge-scored conversations nobody rated
    human_mean: float
    human_low: float
    human_high: float
    judge_mean: float  # over all judge-scored conversations (rated and not)
    judge_low: float
    judge_high: float
    ppi_mean: float
    ppi_low: float
    ppi_high: float
    lam: float  # the power-tuning parameter used (1 = plain PPI, 0 = human-only)

    @property
    def width_ratio(self) -> float:
        """PPI CI width / human-only CI width (< 1: the judge narrowed the interval)."""
        hw = self.human_high - self.human_low
        return (self.ppi_high - self.ppi_low) / hw if hw > 0 else math.nan

    @property
    def judge_bias(self) -> float:
        """Judge-only mean minus the PPI estimate of the human mean."""
        return self.judge_mean - self.ppi_mean


def _tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """The lambda `ppi_mean_ci(lam=None)` chooses (PPI++), for the report only (NaN if this ppi_py version
    keeps it elsewhere: the estimates do not depend on it)."""
    try:
        from ppi_py.ppi import _calc_lam_glm, ppi_mean_pointestimate

        y2, yh2, yu2 = y[:, None], yhat[:, None], yhat_unlabeled[:, None]
        est = ppi_mean_pointestimate(y2, yh2, yu2, lam=1)
        lam = _calc_lam_glm(y2 - est, yh2 - est, yu2 - est, np.eye(1), coord=None, clip=True)
        return float(np.asarray(lam).ravel()[0])
    except (ImportError, TypeError, ValueError):  # pragma: no cover - another ppi_py layout
        return math.nan


def estimate(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, alpha: float = ALPHA) -> PPIEstimate:
    """`y`: human means of the rated conversations, `yhat`: the judge on the same ones, `yhat_unlabeled`: the
    judge on the others. Needs at least 2 rated and 1 unrated conversation."""
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    y, yhat, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    if len(y) < 2 or len(yu) < 1:
        raise ValueError("PPI needs at least 2 rated and 1 unrated conversation")
    everything = np.concatenate([yhat, yu])
    # lam=None: power-tuned (PPI++). A judge that gives every conversation the same score carries nothing
    # (its tuned lambda would be 0/0): lambda 0, the human-only mean.
    lam = 0.0 if np.ptp(everything) == 0 else None
    lo, hi = ppi_mean_ci(y, yhat, yu, alpha=alpha, lam=lam)
    point = float(np.ravel(ppi_mean_pointestimate(y, yhat, yu, lam=lam))[0])
    hlo, hhi = classical_mean_ci(y, alpha=alpha)
    jlo, jhi = classical_mean_ci(everything, alpha=alpha)
    return PPIEstimate(
        len(y),
        len(yu),
        float(y.mean()),
        float(np.ravel(hlo)[0]),
        float(np.ravel(hhi)[0]),
        float(everything.mean()),
        float(np.ravel(jlo)[0]),
        float(np.ravel(jhi)[0]),
        point,
        float(np.ravel(lo)[0]),
        float(np.ravel(hi)[0]),
        0.0 if lam == 0.0 else _tuned_lambda(y, yhat, yu),
    )
