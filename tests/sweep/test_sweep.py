"""`wikihowagent sweep` against scripted OpenAI-compatible servers on loopback; shard merges; Tables 1/2."""

from __future__ import annotations

import json
from pathlib import Path

from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.jsonlio import iter_jsonl

runner = CliRunner()


def flat(res) -> str:
    """The output with line wrapping undone (rich wraps at 80 columns without a terminal)."""
    return " ".join(res.output.split())


FAST_METRICS = "BLEU,ROUGE-1,Diversity,Completion"


def write_sweep(tmp_path, url_a, url_b, shards=2, **extra):
    lines = [
        "name: grid",
        "max_tutorials: 3",
        f"out: {tmp_path / 'sweep'}",
        f"shards: {shards}",
        "concurrency: 2",
        "models:",
        f"  a: {{spec: 'openai:fake-model', base_url: '{url_a}'}}",
        f"  b: {{spec: 'openai:fake-model', base_url: '{url_b}'}}",
        "grid:",
        "  teachers: [a, b]",
        *[f"{k}: {v}" for k, v in extra.items()],
    ]
    path = tmp_path / "grid.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def records(path):
    return [o for _, o in iter_jsonl(path)]


def test_sweep_2x2_grid_runs_resumes_and_gives_tables(tmp_path):
    with FakeOpenAI() as a, FakeOpenAI() as b:
        f = write_sweep(tmp_path, a.base_url, b.base_url)
        res = runner.invoke(app, ["sweep", "plan", str(f), "--estimate"])
        assert res.exit_code == 0, res.output
        assert "4 cells x 2 shards = 8 tasks" in flat(res) and "12 conversations" in flat(res)
        res = runner.invoke(app, ["sweep", "run", str(f)], env={"OPENAI_COMPATIBLE_API_KEY": ""})
        assert res.exit_code == 0, res.output
        # each model's requests went to its own endpoint: both servers served teachers and learners
        assert a.requests and b.requests
        n = len(a.requests) + len(b.requests)
        res = runner.invoke(app, ["sweep", "run", str(f)])  # resumable: nothing is redone
        assert res.exit_code == 0 and len(a.requests) + len(b.requests) == n
        assert res.output.count("already done") == 8
    sweep = tmp_path / "sweep"
    for cell in ("T-a_L-a_E-a", "T-a_L-b_E-a", "T-b_L-a_E-b", "T-b_L-b_E-b"):
        recs = records(sweep / cell / "conversations.jsonl")
        assert len(recs) == 3 and len({r["tutorial_id"] for r in recs}) == 3 and all(r["finished"] for r in recs)
        info = json.loads((sweep / cell / "run.json").read_text())
        assert info["status"] == "merged" and info["learner"] in ("a", "b")
    res = runner.invoke(app, ["sweep", "status", str(f)])
    assert res.exit_code == 0 and "8 tasks: 8 done; 4/4 cells complete" in flat(res)
    res = runner.invoke(app, ["evaluate", str(sweep), "--no-judge", "--no-figures", "--metrics", FAST_METRICS])
    assert res.exit_code == 0, res.output
    assert "Table 1: homogeneous" in flat(res) and "Table 2: heterogeneous" in flat(res)
    t1 = (sweep / "table1" / "summary.md").read_text()
    t2 = (sweep / "table2" / "summary.md").read_text()
    assert "T-a L-a" in t1 and "T-b L-b" in t1 and "Overall" in t1 and "T-a L-b" not in t1
    assert "T-a L-b" in t2 and "T-b L-a" in t2 and "Overall" in t2 and "T-a L-a" not in t2
    # Table 2 compares each heterogeneous run with its teacher's homogeneous run: identical scripted
    # replies give identical means, so every comparison is "="
    t2csv = (sweep / "table2" / "summary.csv").read_text()
    assert (
        "Completion (%) vs baseline" in t2csv and ",≈" in t2csv and ",↑" not in t2csv and ",↓" not in t2csv
    )  # paired: p = 1


def test_sweep_status_counts_failures_and_missing(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model: {max_retries: 0}\n")
    with FakeOpenAI(fail_when=lambda p: True) as a, FakeOpenAI() as b:
        f = write_sweep(tmp_path, a.base_url, b.base_url, shards=1, config=str(cfg))
        res = runner.invoke(app, ["sweep", "run", str(f), "--task", "3"])  # only T-b_L-b_E-b
        assert res.exit_code == 0, res.output
        res = runner.invoke(app, ["sweep", "run", str(f), "--task", "0"])  # T-a_L-a: every request fails
        assert res.exit_code == 1
    res = runner.invoke(app, ["sweep", "status", str(f)])
    assert "1 done, 1 failed, 2 not started" in flat(res) and "1/4 cells complete" in flat(res)


def test_sweep_bad_files_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad [x].yaml"
    bad.write_text("name: x\ngrid: {teachers: [a]}\nshardz: 2\n")
    res = runner.invoke(app, ["sweep", "plan", str(bad)])
    assert res.exit_code == 2 and "bad [x].yaml: shardz: Extra inputs are not permitted" in flat(res)
    empty = tmp_path / "empty.yaml"
    empty.write_text("name: x\n")
    res = runner.invoke(app, ["sweep", "plan", str(empty)])
    assert res.exit_code == 2 and "no cells" in flat(res)
    res = runner.invoke(app, ["sweep", "run", str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2 and "experiment file not found" in flat(res)


def test_paper_sweep_file_lists_the_papers_runs():
    from wikihowagent.sweep.core import load_sweep

    sweep = load_sweep(Path(__file__).resolve().parents[2] / "configs" / "paper-sweep.yaml")
    homo = [c.teacher for c in sweep.cells if c.homogeneous]
    hetero = [(c.teacher, c.learner, c.evaluator) for c in sweep.cells if not c.homogeneous]
    assert sorted(homo) == sorted(["deepseek", "qwen2", "gemma", "olmo2", "openchat", "llama3", "phi4", "gpt-4"])
    assert hetero == [("openchat", m, "openchat") for m in ("deepseek", "qwen2", "gemma", "olmo2")]


def test_sweep_slurm_writes_a_resubmittable_array_script(tmp_path):
    f = write_sweep(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", slurm="{partition: gpu, server: vllm}")
    res = runner.invoke(app, ["sweep", "slurm", str(f), "--out", str(tmp_path / "slurm"), "--preset", "paper"])
    assert res.exit_code == 0, res.output
    assert '--preset paper --task "$SLURM_ARRAY_TASK_ID"' in (tmp_path / "slurm" / "sweep.sbatch").read_text()
    res = runner.invoke(app, ["sweep", "run", str(f), "--preset", "nope"])
    assert res.exit_code == 2 and "unknown preset" in flat(res)
    script = (tmp_path / "slurm" / "sweep.sbatch").read_text()
    assert "#SBATCH --array=0-7" in script and "#SBATCH --partition=gpu" in script
    assert "sweep run" in script and '--task "$SLURM_ARRAY_TASK_ID"' in script and "start-vllm.sh" in script
    assert (tmp_path / "slurm" / "start-ollama-singularity.sh").read_text().count("singularity exec") == 1


def test_merge_refuses_missing_or_mixed_shards(tmp_path):
    from test_cli_generate import generate

    out = tmp_path / "run"
    with FakeOpenAI() as srv:
        assert generate(out, srv.base_url, "--shard", "0/3").exit_code == 0
        assert generate(out, srv.base_url, "--shard", "2/3").exit_code == 0
        res = runner.invoke(app, ["merge", str(out)])
        assert res.exit_code == 2 and "1 of 3 shards missing (1-of-3)" in flat(res)
        assert not (out / "conversations.jsonl").exists()
        assert generate(out, srv.base_url, "--shard", "1/3", "--max-interactions", "6").exit_code in (0, 1)
        res = runner.invoke(app, ["merge", str(out)])
        assert res.exit_code == 2 and "shard 1-of-3 was made with other settings" in flat(res)
