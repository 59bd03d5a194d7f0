"""`sweep slurm` + real `sbatch` on a single-node Slurm: a sharded cell completes; a killed array task,
resubmitted as it was, completes with no duplicate. The model is a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import slurm_cluster
from fake_servers import FakeOpenAI, scripted_reply
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.jsonlio import iter_jsonl

pytestmark = pytest.mark.skipif(slurm_cluster.available() is not None, reason=str(slurm_cluster.available()))
runner = CliRunner()


def flat(res) -> str:
    """The output with line wrapping undone (rich wraps at 80 columns without a terminal)."""
    return " ".join(res.output.split())


REPO = Path(__file__).resolve().parents[2]


def slow_reply(prompt: str) -> str:
    time.sleep(0.4)  # slow enough to kill a task mid-shard
    return scripted_reply(prompt)


def lines(path: Path) -> list[dict]:
    return [o for _, o in iter_jsonl(path)] if path.exists() else []


def test_sbatch_array_sharded_cell_kill_and_resubmit(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the array script cd's here and runs `python -m wikihowagent`
    with FakeOpenAI(reply=slow_reply) as srv, slurm_cluster.SlurmCluster(tmp_path / "slurm") as cluster:
        sweep_file = tmp_path / "exp.yaml"
        out = tmp_path / "sweep"
        sweep_file.write_text(
            "\n".join(
                [
                    "name: slurmtest",
                    "max_tutorials: 6",
                    f"out: {out}",
                    "shards: 2",
                    "concurrency: 1",
                    "models:",
                    f"  m: {{spec: 'openai:fake-model', base_url: '{srv.base_url}'}}",
                    "homogeneous: [m]",
                    "",
                ]
            )
        )
        res = runner.invoke(app, ["sweep", "slurm", str(sweep_file), "--out", str(tmp_path / "job")])
        assert res.exit_code == 0, res.output
        script = tmp_path / "job" / "sweep.sbatch"
        before = script.read_text()
        job = cluster.sbatch(script)
        shard1 = out / "T-m_L-m_E-m" / "shards" / "1-of-2" / "conversations.jsonl"
        deadline = time.monotonic() + 180
        while not lines(shard1) and time.monotonic() < deadline:  # task 1 is mid-shard: kill it
            time.sleep(0.2)
        assert lines(shard1), "task 1 never wrote a record"
        cluster.scancel(f"{job}_1")
        cluster.wait(job)
        done_before = len(lines(shard1))
        assert done_before < 3  # killed before the end of its shard
        cell = out / "T-m_L-m_E-m"
        assert not (cell / "conversations.jsonl").exists()  # not merged: a shard is incomplete
        res = runner.invoke(app, ["sweep", "status", str(sweep_file)])
        assert "0/1 cells complete" in flat(res) and "1 done" in flat(res)

        assert script.read_text() == before
        job2 = cluster.sbatch(script)  # resubmitted as it is
        cluster.wait(job2)
        logs = "\n".join(p.read_text() for p in sorted((tmp_path / "job" / "logs").glob("*.out")))
        recs = lines(cell / "conversations.jsonl")
        assert len(recs) == 6, logs
        assert len({r["tutorial_id"] for r in recs}) == 6 and all(r["finished"] for r in recs)
        shard_recs = lines(shard1)
        assert len(shard_recs) == 3 and len({r["tutorial_id"] for r in shard_recs}) == 3  # no duplicate
        assert json.loads((cell / "run.json").read_text())["status"] == "merged"
        res = runner.invoke(app, ["sweep", "status", str(sweep_file)])
        assert "1/1 cells complete" in flat(res), res.output
        assert "already done" in logs  # task 0 of the resubmission found its shard complete
    assert os.path.exists(tmp_path / "slurm" / "slurmctld.log")


def test_sbatch_reads_the_quoted_directives(tmp_path, monkeypatch):
    """The script's #SBATCH values are shlex-quoted: a real sbatch reads them as meant —
    the log lands in an --out directory with a space, a quote and `$(...)` in its name, the limits apply, and
    the array task calls Python with exactly the sweep-run arguments (a shim records them), nothing else."""
    from wikihowagent.sweep.core import load_sweep
    from wikihowagent.sweep.slurm import write_slurm

    monkeypatch.chdir(tmp_path)
    record = tmp_path / "argv.txt"
    shim = tmp_path / "shim-python"
    shim.write_text(f"#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > '{record}'\n")
    shim.chmod(0o755)
    f = tmp_path / "exp.yaml"
    f.write_text(
        "name: quoted\nhomogeneous: [m]\nmodels: {m: 'openai:fake-model'}\n"
        "slurm: {time: '0:05:00', cpus: 1, max_parallel: 1}\n"
    )
    out = tmp_path / "job 'x' $(touch MARK)"
    script, *_ = write_slurm(load_sweep(f, tmp_path / "runs"), out, python=str(shim))
    with slurm_cluster.SlurmCluster(tmp_path / "slurm") as cluster:
        job = cluster.sbatch(script)
        cluster.wait(job)
    assert (out / "logs" / f"{job}_0.out").is_file(), sorted(p.name for p in out.rglob("*"))
    assert record.read_text().splitlines() == ["-m", "wikihowagent", "sweep", "run", str(f.resolve()), "--task", "0"]
    assert not list(tmp_path.rglob("MARK"))


def test_evaluate_array_task_failing_once_is_resubmitted_and_merges_to_one_run(tmp_path):
    """The rehearsal of `python -m benchmarks paper_scale_slurm`, light: `evaluate --shard K/3` as an array on a
    real Slurm, task 1 killed on its first attempt (exit 1): `merge` refuses, naming the missing shard; the
    failed task alone resubmitted (`sbatch --array=1`), the merged scores equal one unsharded evaluation's."""
    import sys

    from benchmarks.paper_scale_slurm import array_script, make_runs, sbatch, scores_by_id
    from wikihowagent.records import ConversationRecord, Turn, TutorialRef

    source = tmp_path / "conversations.jsonl"
    with open(source, "w", encoding="utf-8") as fh:
        for i in range(150):  # 3 blocks of 64: one per shard
            turns = [Turn(role="teacher", text=f"Do part {i} then part {i + 1}."), Turn(role="learner", text="Ok.")]
            rec = ConversationRecord(
                conversation_id=f"c{i:03d}",
                tutorial_id=f"t{i:03d}",
                tutorial=TutorialRef(title=f"Method {i}", steps=[f"Do part {i}.", f"Then part {i + 1}."]),
                turns=turns,
                conversation=[f"Teacher: {turns[0].text}", "Learner: Ok."],
                finished=True,
                stop_reason="finished",
            )
            fh.write(rec.model_dump_json() + "\n")
    make_runs(source, tmp_path, 150)
    metrics = ("--no-judge", "--no-figures", "--metrics", "BLEU,ROUGE-L,Diversity")
    res = runner.invoke(app, ["evaluate", str(tmp_path / "single"), *metrics])
    assert res.exit_code == 0, res.output
    (tmp_path / "logs").mkdir()
    script = tmp_path / "evaluate.sbatch"
    fail = (1, tmp_path / "failed-once")
    script.write_text(array_script(tmp_path / "array", 3, sys.executable, tmp_path / "logs", fail, *metrics))
    with slurm_cluster.SlurmCluster(tmp_path / "slurm") as cluster:
        cluster.wait(sbatch(cluster.env, script))
        assert fail[1].exists()
        res = runner.invoke(app, ["merge", str(tmp_path / "array")])
        assert res.exit_code == 2 and "1 of 3 shards missing (1-of-3)" in flat(res), res.output
        cluster.wait(sbatch(cluster.env, script, "--array=1"))
    logs = "\n".join(p.read_text() for p in sorted((tmp_path / "logs").glob("*.out")))
    assert "task 1: killed before its shard was recorded" in logs
    res = runner.invoke(app, ["merge", str(tmp_path / "array")])
    assert res.exit_code == 0 and "merged 3 score shards into 150 score records" in flat(res), res.output + logs
    merged, single = (
        scores_by_id(tmp_path / "array" / "scores.jsonl"),
        scores_by_id(tmp_path / "single" / "scores.jsonl"),
    )
    assert len(merged) == 150 and merged == single
