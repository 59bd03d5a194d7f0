"""What align computes: AlignResult (the people, the judge, every group's correlations, descriptives and agreement,
and the optional analyses) and the files its output directory may hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wikihowagent.stats.pair_order import PairOrder

from . import metric_table, people_fit
from .agreement import (
    Agreement,
    CorrelationResult,
    Descriptives,
)
from .annotations import JudgeRatings
from .estimates import CalibrationOutcome, PPIOutcome
from .judges import JudgesOutcome
from .problems import Problems
from .sources import LLMScores

BY_CHOICES = ("run", "model", "domain", "persona")


ALL = "all"


TOOL = "align"  # as the manifest of --out names the command (outdir.StagedDir)


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
