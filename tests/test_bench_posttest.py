"""scripts/bench_posttest.py's statistics, with known truth."""

from __future__ import annotations

import numpy as np
from helpers import load_script


def bench():
    return load_script("bench_posttest")


def test_cluster_ci_covers_the_true_mean_of_clustered_data():
    """10 tutorials x 7 conversations with a tutorial effect (what the paper's study looks like): the CI that
    resamples tutorials covers the true mean about 95 % of the time; one that ignores the clusters would not."""
    b = bench()
    rng = np.random.default_rng(0)
    clusters = [f"t{k}" for k in range(10) for _ in range(7)]
    hits, naive_hits = 0, 0
    for sim in range(300):
        effect = rng.normal(0, 0.2, 10)  # between tutorials
        values = [0.1 + effect[k] + rng.normal(0, 0.1) for k in range(10) for _ in range(7)]
        lo, hi = b.cluster_ci(values, clusters, seed=sim, boot=400)
        hits += lo <= 0.1 <= hi
        nlo, nhi = b.boot_ci(values, seed=sim)  # conversations as if independent
        naive_hits += nlo <= 0.1 <= nhi
    assert 0.85 <= hits / 300 <= 0.99
    assert naive_hits / 300 < 0.7  # far too narrow for clustered data
    assert np.isnan(b.cluster_ci([0.1, 0.2], ["t0", "t0"])[0])  # one tutorial: no CI


def test_wording_bench_pairs_conversations_and_counts_abstentions(tmp_path):
    """scripts/bench_posttest_wording.py on two evaluate outputs with known scores and answers."""
    import json

    from wikihowagent.records import PostTest, PreTestRecord, ScoreRecord, TestAnswer

    w = load_script("bench_posttest_wording")
    gains = {"v2": [0.1, 0.2, 0.0], "v3": [0.3, 0.5, 0.1]}
    dirs = {}
    for label, lg in gains.items():
        run = tmp_path / label / "run"
        run.mkdir(parents=True)
        lines = [
            ScoreRecord(conversation_id=f"c{i}", metrics={"Learning Gain": g, "Step Recall": 0.5 + g})
            for i, g in enumerate(lg)
        ]
        (run / "scores.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in lines))
        if label == "v3":  # 1 of 4 lines abstained in each post-test; 2 of 4 in the pre-test
            post = PostTest(model="m", post=TestAnswer(steps=["a", "b", "c"], abstained=1))
            (run / "posttests.jsonl").write_text(
                "".join(
                    json.dumps({"conversation_id": f"c{i}", "posttest": post.model_dump(mode="json")}) + "\n"
                    for i in range(3)
                )
            )
            pre = PreTestRecord(learner="m", tutorial_key="t", answer=TestAnswer(steps=["a", "b"], abstained=2))
            (run / "pretests.jsonl").write_text(pre.model_dump_json() + "\n")
        dirs[label] = w.scores_of(tmp_path / label)
    (row2, row3) = w.wording_rows(dirs)
    assert row3[0] == "v3" and row3[1] == "3" and row3[-2:] == ["25.0", "50.0"] and row2[-2:] == ["–", "–"]
    assert row3[-3] == "50.0"  # pre-test Step Recall = Step Recall - Learning Gain
    paired = {r[1]: r for r in w.paired_rows(dirs)}
    assert paired["Learning Gain"][0] == "v3 − v2" and paired["Learning Gain"][2] == "3"
    assert paired["Learning Gain"][3].startswith("20.0 [")  # mean of +0.2, +0.3, +0.1
