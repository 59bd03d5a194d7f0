"""`evaluate --shard K/N` + `merge`: merged scores equal the unsharded ones exactly; incomplete or mixed
score shards are refused in one line; merging holds the ids, not the records (score and conversation shards),
with the last line per id kept in the place of its first."""

from __future__ import annotations

import functools
import json
import tracemalloc

import pytest
from fake_servers import FakeOpenAI, scripted_reply
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.evaluation import core as eval_core
from wikihowagent.jsonlio import iter_jsonl, merge_lines
from wikihowagent.records import ConversationRecord, Turn, TutorialRef
from wikihowagent.runs import RunInfo, count_records, write_run_info
from wikihowagent.scores import runner as eval_runner
from wikihowagent.shards import merge_score_shards, merge_shards

runner = CliRunner()


def flat(res) -> str:
    """The output with line wrapping undone (rich wraps at 80 columns without a terminal)."""
    return " ".join(res.output.split())


RUBRICS = ["Clarity", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness", "Truthfulness"]


def reply(prompt: str) -> str:
    if "Clarity" in prompt or "Truthfulness" in prompt:  # the judge: a score per rubric it was asked about
        return json.dumps({r: 1 + len(prompt) % 5 for r in RUBRICS if r in prompt})
    return scripted_reply(prompt)


def scores(path):
    return {json.loads(line)["conversation_id"]: json.loads(line) for line in path.read_text().splitlines()}


@pytest.mark.slow  # loads the MiniLM embedding model
def test_sharded_scores_merged_equal_unsharded(tmp_path, monkeypatch):
    # blocks of 4 conversations instead of 64, so that 13 conversations make several blocks per shard
    monkeypatch.setattr(
        eval_core, "EvalOptions", functools.partial(eval_runner.EvalOptions, chunk=4)
    )  # where evaluate makes them
    run = tmp_path / "run"
    with FakeOpenAI(reply=reply) as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(run),
                "--max-tutorials",
                "13",
                "--concurrency",
                "4",
            ],
        )
        assert res.exit_code == 0, res.output
        common = [
            "--judge-scoring",
            "json",
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--no-figures",
        ]
        for k in range(3):
            res = runner.invoke(app, ["evaluate", str(run), "--shard", f"{k}/3", *common])
            assert res.exit_code == 0, res.output
        res = runner.invoke(app, ["evaluate", str(run), "--out", str(tmp_path / "whole"), *common])
        assert res.exit_code == 0, res.output
    parts = [scores(run / "score-shards" / f"{k}-of-3" / "scores.jsonl") for k in range(3)]
    assert all(parts) and sum(len(p) for p in parts) == 13
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 0 and "merged 3 score shards into 13 score records" in flat(res)
    merged, whole = scores(run / "scores.jsonl"), scores(tmp_path / "whole" / "run" / "scores.jsonl")
    assert merged == whole  # every metric, bit for bit, and the judge's replies
    assert all(r["metrics"]["Embedding Cosine"] is not None and r["metrics"]["Clarity"] for r in merged.values())


def generated(run, n: int):
    """A run of `n` conversations made against the scripted fake server."""
    with FakeOpenAI(reply=reply) as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(run),
                "--max-tutorials",
                str(n),
            ],
        )
        assert res.exit_code == 0, res.output
    return run


def test_score_merge_refuses_missing_and_mixed_shards(tmp_path):
    run = generated(tmp_path / "run", 3)
    common = ["--no-judge", "--no-figures", "--metrics", "BLEU,Completion"]
    assert runner.invoke(app, ["evaluate", str(run), "--shard", "0/2", *common]).exit_code == 0
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 2 and "1 of 2 shards missing (1-of-2)" in flat(res)
    assert not (run / "scores.jsonl").exists()
    res = runner.invoke(
        app, ["evaluate", str(run), "--shard", "1/2", "--no-judge", "--no-figures", "--metrics", "BLEU"]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 2 and "shard 1-of-2 was made with other settings" in flat(res)
    res = runner.invoke(app, ["evaluate", str(run), "--shard", "2/2", *common])
    assert res.exit_code == 2 and "need 0 <= K < N" in flat(res)


def test_score_merge_refuses_shards_of_another_state_of_the_conversations(tmp_path, monkeypatch):
    # shard 0 scored 3 conversations, generate added 2, shard 1 scored the 5: merging would
    # leave the new conversations of shard 0's blocks unscored without a word
    monkeypatch.setattr(eval_core, "EvalOptions", functools.partial(eval_runner.EvalOptions, chunk=1))
    run = tmp_path / "run"
    common = ["--no-judge", "--no-figures", "--metrics", "BLEU,Completion"]
    with FakeOpenAI(reply=reply) as srv:
        gen = ["generate", "--teacher", "openai:fake-model", "--base-url", srv.base_url, "--out", str(run)]
        assert runner.invoke(app, [*gen, "--max-tutorials", "3"]).exit_code == 0
        assert runner.invoke(app, ["evaluate", str(run), "--shard", "0/2", *common]).exit_code == 0
        res = runner.invoke(app, [*gen, "--max-tutorials", "5"])
        assert res.exit_code == 0, res.output
    assert len((run / "conversations.jsonl").read_text().splitlines()) == 5
    assert runner.invoke(app, ["evaluate", str(run), "--shard", "1/2", *common]).exit_code == 0
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 2, res.output
    out = flat(res)
    assert "score shard 0-of-2 scored another state of" in out and "(3 records then, 5 now)" in out, out
    assert "--shard 0/2" in out and "1-of-2" not in out
    assert not (run / "scores.jsonl").exists()
    assert runner.invoke(app, ["evaluate", str(run), "--shard", "0/2", *common]).exit_code == 0
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 0 and "merged 2 score shards into 5 score records" in flat(res), res.output


def test_score_merge_after_moving_the_run_directory(tmp_path):
    # shards scored on a cluster path, the run directory copied elsewhere, merged there: not stale
    run = generated(tmp_path / "run", 3)
    for k in range(2):
        assert (
            runner.invoke(
                app, ["evaluate", str(run), "--shard", f"{k}/2", "--no-judge", "--no-figures", "--metrics", "BLEU"]
            ).exit_code
            == 0
        )
    moved = tmp_path / "elsewhere" / "run"
    moved.parent.mkdir()
    run.rename(moved)
    res = runner.invoke(app, ["merge", str(moved)])
    assert res.exit_code == 0 and "merged 2 score shards into 3 score records" in flat(res), res.output


def _peak_bytes(fn, *args):
    """What `fn(*args)` allocated at its peak, in bytes (tracemalloc: Python's own allocations)."""
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _score_line(cid: str, version: int, pad: int) -> dict:
    return {"conversation_id": cid, "run": "run", "metrics": {"BLEU": version / 10}, "notes": ["x" * pad]}


def test_score_merge_holds_the_ids_not_the_records(tmp_path):
    """400 shards' worth of big score lines merge in a small fraction of their size in memory (before: every
    record and the whole output held at once), one line per id: the last one, in the place of the first."""
    run = tmp_path / "run"
    n, shards, pad = 400, 8, 20_000
    older = [_score_line(f"c{i:03d}", 0, pad) for i in range(0, n, 7)] + [_score_line("gone", 0, 10)]
    run.mkdir()
    (run / "scores.jsonl").write_text("".join(json.dumps(o) + "\n" for o in older))
    for k in range(shards):
        d = run / "score-shards" / f"{k}-of-{shards}"
        d.mkdir(parents=True)
        (d / "shard.json").write_text(json.dumps({"shard": [k, shards], "fingerprint": {"mode": "default"}}))
        lines = [_score_line(f"c{i:03d}", 1, pad) for i in range(k, n, shards)]
        lines.insert(1, _score_line(f"c{k:03d}", 2, pad))  # a later line for the same id wins
        (d / "scores.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines) + "{torn")
    peak = _peak_bytes(merge_score_shards, run)
    merged = [o for _, o in iter_jsonl(run / "scores.jsonl")]
    size = (run / "scores.jsonl").stat().st_size
    assert size > 8_000_000 and peak < size / 10, (peak, size)
    first_seen = [o["conversation_id"] for o in older] + [
        f"c{i:03d}" for k in range(shards) for i in range(k, n, shards) if i % 7
    ]
    assert [o["conversation_id"] for o in merged] == first_seen
    versions = {o["conversation_id"]: o["metrics"]["BLEU"] for o in merged}
    assert versions["gone"] == 0.0 and versions["c014"] == 0.1 and versions["c003"] == 0.2


def _conversation(tid: str, error: str | None, pad: int) -> ConversationRecord:
    turns = [Turn(role="teacher", text="y" * pad), Turn(role="learner", text="Next?", warnings=["w"])]
    return ConversationRecord(
        conversation_id=f"id-{tid}",
        tutorial_id=tid,
        tutorial=TutorialRef(title="T", steps=["a", "b"]),
        turns=turns,
        error=error,
        stop_reason="error" if error else "finished",
    )


def test_conversation_merge_holds_the_ids_not_the_records(tmp_path):
    """Conversation shards (`generate --shard`) merge one record at a time too: a success beats a failure
    whichever came first, else the later record wins; run.json's counts are those of the records kept."""
    run, shards, n, pad = tmp_path / "run", 4, 200, 40_000
    written: list[str] = []
    for k in range(shards):
        d = run / "shards" / f"{k}-of-{shards}"
        d.mkdir(parents=True)
        write_run_info(d, RunInfo(name="run", fingerprint={"teacher": "t"}, status="complete"))
        recs = [_conversation(f"t{i:03d}", None if i % 5 else "timeout", pad) for i in range(k, n, shards)]
        recs += [_conversation(f"t{k:03d}", "later failure", 10), _conversation(f"t{k + 5:03d}", None, 10)]
        written += [r.tutorial_id for r in recs]
        (d / "conversations.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))
    peak = _peak_bytes(merge_shards, run)
    size = (run / "conversations.jsonl").stat().st_size
    assert size > 7_000_000 and peak < size / 10, (peak, size)
    kept = [ConversationRecord.model_validate(o) for _, o in iter_jsonl(run / "conversations.jsonl")]
    assert [r.tutorial_id for r in kept] == list(dict.fromkeys(written))  # in the order they first came
    by_id = {r.tutorial_id: r for r in kept}
    assert by_id["t001"].error is None and len(by_id["t001"].turns[0].text) == pad  # not the later failure
    assert by_id["t000"].error == "later failure"  # a failure after a failure: the later one
    assert by_id["t005"].error is None and len(by_id["t005"].turns[0].text) == 10  # a success after a failure
    info = json.loads((run / "run.json").read_text())
    assert info["counts"] == count_records(kept) and info["counts"]["turn_warnings"] == n


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 2)), max_size=30))
def test_merge_lines_keeps_the_best_rank_the_later_on_a_tie_in_the_first_place(tmp_path_factory, items):
    """merge_lines, whatever the order of keys and ranks, writes what holding every line in a dict would."""
    path = tmp_path_factory.mktemp("m") / "out.jsonl"
    lines = [
        (key, json.dumps({"k": key, "i": i, "r": rank}).encode() + b"\n", rank) for i, (key, rank) in enumerate(items)
    ]
    expected: dict[str, tuple[bytes, int]] = {}
    for key, line, rank in lines:
        if key not in expected or rank >= expected[key][1]:
            expected[key] = (line, rank)
    kept = merge_lines(path, ((key, line, rank, i) for i, (key, line, rank) in enumerate(lines)))
    assert path.read_bytes() == b"".join(line for line, _ in expected.values())
    assert list(kept) == list(expected) and [lines[i][1] for i in kept.values()] == [v[0] for v in expected.values()]
    assert [p.name for p in path.parent.iterdir()] == ["out.jsonl"]  # no temporary file left
