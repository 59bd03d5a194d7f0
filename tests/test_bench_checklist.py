"""scripts/bench_checklist.py's table: weighted vs checklist (uniform, fitted out of fold) against people,
paired differences, on simulated scores with a known truth."""

from __future__ import annotations

import numpy as np
from helpers import load_script

from wikihowagent.records import ChecklistItemScore, JudgeProvenance, ScoreRecord

RUBRICS = ["Clarity", "Truthfulness", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness"]


def test_checklist_that_tracks_people_beats_a_noise_weighted_judge_with_a_paired_ci():
    b = load_script("bench_checklist")
    rng = np.random.default_rng(0)
    recs = {"tutorial-first": {}, "checklist": {}}
    humans = {}
    for i in range(60):
        cid, q = f"c{i}", rng.uniform(0, 1)
        humans[cid] = {m: 1 + 4 * q + rng.normal(0, 0.3) for m in RUBRICS}
        humans[cid]["Overall"] = float(np.mean([humans[cid][m] for m in RUBRICS]))
        items = []
        for m in RUBRICS:
            items += [
                ChecklistItemScore(
                    id=f"rubric:{m}:good",
                    rubrics=[m],
                    p_yes=float(np.clip(q + rng.normal(0, 0.1), 0, 1)),
                    mass=1.0,
                    good=float(np.clip(q + rng.normal(0, 0.1), 0, 1)),
                ),
                ChecklistItemScore(
                    id=f"rubric:{m}:noise", rubrics=[m], p_yes=0.5, mass=1.0, good=float(rng.uniform(0, 1))
                ),
            ]
        goods = {m: [it.good for it in items if m in it.rubrics] for m in RUBRICS}
        recs["checklist"][cid] = ScoreRecord(
            conversation_id=cid,
            tutorial_id=f"t{i % 10}",
            metrics={m: 1 + 4 * float(np.mean(goods[m])) for m in RUBRICS},
            judge=JudgeProvenance(evaluator="local", scoring="checklist", items=items),
        )
        recs["tutorial-first"][cid] = ScoreRecord(
            conversation_id=cid,
            tutorial_id=f"t{i % 10}",
            metrics={m: float(rng.uniform(3.9, 4.1)) for m in RUBRICS},
            judge=JudgeProvenance(evaluator="local", scoring="weighted"),
        )
    ids = sorted(humans)
    cmp = b.comparisons(b.predictions(recs, ids, humans), humans)
    overall = cmp["Overall"]
    assert overall.n == 60
    assert overall.predictors["uniform"]["r"].value > 0.6 and abs(overall.predictors["weighted"]["r"].value) < 0.35
    assert overall.deltas["uniform"]["r"].ci_low > 0  # paired CI of uniform − weighted above 0
    assert overall.predictors["fitted"]["r"].value > 0.6  # out of fold, shrunk toward uniform: not worse by much
