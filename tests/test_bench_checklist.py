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


def test_paired_judge_check_accuracy_on_a_known_truth():
    """Two judges on the same 40 conversations, 3 cells: one right with P 0.9, one with P 0.6; the paired
    difference's CI excludes 0 and covers the true 0.3; a row nobody judged is left out; per-cell values."""
    b = load_script("bench_checklist")
    rng = np.random.default_rng(1)
    good = (rng.uniform(size=(40, 3)) < 0.9).astype(float)
    poor = (rng.uniform(size=(40, 3)) < 0.6).astype(float)
    good[5], poor[5] = np.nan, np.nan
    poor[7, 1] = np.nan
    acc = b.paired_accuracy({"w": poor, "c": good}, n_boot=500)
    assert acc.n == 39
    assert abs(acc.accuracy["c"][0] - np.nanmean(np.nanmean(good, axis=0))) < 1e-12
    d, lo, hi = acc.difference
    assert lo > 0 and lo < 0.3 < hi and abs(d - (acc.accuracy["c"][0] - acc.accuracy["w"][0])) < 1e-12
    assert len(acc.per_cell["w"]) == 3 and abs(acc.per_cell["w"][1] - np.nanmean(poor[:, 1])) < 1e-12
    same = b.paired_accuracy({"w": good, "c": good}, n_boot=200)
    assert same.difference == (0.0, 0.0, 0.0)
    empty = b.paired_accuracy({"w": np.full((3, 2), np.nan), "c": np.full((3, 2), np.nan)})
    assert empty.n == 0 and all(np.isnan(v) for v in empty.difference)


def test_item_diagnostics_find_the_item_that_tracks_people():
    """An item whose P(good) follows the people's Clarity has r near 1, a constant one has no r; a yes-bad
    item's P(yes) is reported as asked; step items are pooled by template (mean over steps)."""
    b = load_script("bench_checklist")
    rng = np.random.default_rng(2)
    recs, humans = {}, {}
    for i in range(30):
        cid, q = f"c{i}", float(rng.uniform(0, 1))
        humans[cid] = {"Clarity": 1 + 4 * q, "Progress": 3.0 + rng.normal(0, 0.5)}
        items = [
            ChecklistItemScore(id="rubric:Clarity:tracks", rubrics=["Clarity"], p_yes=q, good=q),
            ChecklistItemScore(id="rubric:Clarity:flat", rubrics=["Clarity"], p_yes=0.9, good=0.9),
            ChecklistItemScore(id="rubric:Clarity:bad", rubrics=["Clarity"], polarity="yes-bad", p_yes=1 - q, good=q),
            ChecklistItemScore(id="rubric:Clarity:failed", rubrics=["Clarity"], failure="no answer"),
        ] + [
            ChecklistItemScore(id=f"step:{k}:taught", rubrics=["Progress"], p_yes=0.5, good=0.2 * k) for k in (1, 2, 3)
        ]
        recs[cid] = ScoreRecord(
            conversation_id=cid, judge=JudgeProvenance(evaluator="local", scoring="checklist", items=items)
        )
    rows = {r.key: r for r in b.item_diagnostics(recs, sorted(recs), humans)}
    assert set(rows) == {"rubric:Clarity:tracks", "rubric:Clarity:flat", "rubric:Clarity:bad", "step:taught"}
    assert rows["rubric:Clarity:tracks"].r > 0.99 and rows["rubric:Clarity:tracks"].n == 30
    assert np.isnan(rows["rubric:Clarity:flat"].r) and rows["rubric:Clarity:flat"].sd_good < 1e-9
    bad = rows["rubric:Clarity:bad"]
    assert bad.polarity == "yes-bad" and bad.r > 0.99 and 0 < bad.p_yes < 1
    assert abs(rows["step:taught"].p_yes - 0.5) < 1e-12 and rows["step:taught"].sd_good < 1e-12
    text = "\n".join(b.item_lines(list(rows.values())))
    assert "| rubric:Clarity:flat | Clarity | yes-good | 30 | 0.90 | 0.000 | – |" in text
    assert "yes-bad items: 1" in text


def test_head_to_head_table_on_the_conversations_every_judge_scored():
    """stats.pair_order (tested with known truth in test_pair_order.py) on the judges' Overall per conversation:
    only conversations every judge scored; the table says the pairs, each judge's share and its difference."""
    b = load_script("bench_checklist")
    people = {f"t{t}c{k}": float(k) for t in range(4) for k in range(3)}
    tutorial = {c: c.split("c")[0] for c in people}
    scores = {"weighted": {c: -v for c, v in people.items()}, "uniform": dict(people), "paper": dict(people)}
    del scores["paper"]["t0c0"]  # not scored by one judge: t0's pairs with it leave for every judge
    res = b.head_to_head(scores, people, tutorial)
    assert res[0]["uniform"].pairs == 4 * 3 - 2 and res[0]["weighted"].accuracy == 0.0
    lines = b.pair_order_lines(res, 0.5, {"uniform": "checklist (uniform)"})
    assert (
        "the 10 pairs" in lines[0] and "| checklist (uniform) | 1.000 [1.00, 1.00] | +1.000 [+1.00, +1.00] |" in lines
    )
    none = b.head_to_head({"weighted": {"a": 1.0, "b": 2.0}}, {"a": 1.0, "b": 1.2}, {"a": "t", "b": "t"})
    assert b.pair_order_lines(none, 0.5, {})[0].startswith("No pair")


def test_failure_note_names_what_each_judge_could_not_score_and_why():
    """The longest human-study conversation overflows the embedded model's context: the weighted judge loses
    every rubric, the checklist judge two items; the section says so, and nothing when all was scored."""
    b = load_script("bench_checklist")
    overflow = "request (8331 tokens) exceeds the available context size (8192 tokens), try increasing it"

    def weighted(cid, scored):
        return ScoreRecord(
            conversation_id=cid,
            metrics={m: (3.0 if scored else None) for m in RUBRICS},
            judge=JudgeProvenance(
                evaluator="local", scoring="weighted", notes=[] if scored else [f"{m}: {overflow}" for m in RUBRICS]
            ),
        )

    def checklist(cid, failed):
        items = [ChecklistItemScore(id=f"rubric:{m}:a", rubrics=[m], p_yes=0.7, good=0.7) for m in RUBRICS]
        items += [
            ChecklistItemScore(id=f"rubric:Truthfulness:f{k}", rubrics=["Truthfulness"], failure=overflow)
            for k in range(failed)
        ]
        return ScoreRecord(
            conversation_id=cid,
            metrics={m: 3.8 for m in RUBRICS},
            judge=JudgeProvenance(evaluator="local", scoring="checklist", items=items),
        )

    recs = {"tutorial-first": {"a": weighted("a", True)}, "checklist": {"a": checklist("a", 0)}}
    assert b.failure_note(recs, ["a"]) == ""
    recs["tutorial-first"]["b"] = weighted("b", False)
    recs["checklist"]["b"] = checklist("b", 2)
    note = b.failure_note(recs, ["a", "b"])
    assert "the weighted judge scored no rubric on 1" in note
    assert "the checklist judge lost 2 item answers on 1" in note
    assert "the prompt exceeded the model's context" in note
    recs["checklist"]["b"].judge.items[-1].failure = "no answer"  # another reason: not blamed on the context
    assert "reasons recorded in scores.jsonl" in b.failure_note(recs, ["a", "b"])
