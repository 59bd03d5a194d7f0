"""Reliability defects found by a hostile tester, each reproduced here (fake servers on 127.0.0.1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()
FIX = Path(__file__).resolve().parents[1] / "fixtures"
# Rich would read these as a closing tag, a style and an emoji code.
HOSTILE = "a[/b] [old] :100:"


def one_line(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ 1. outside text is printed literally


def test_error_paths_print_literally_and_never_raise_markup_errors(tmp_path):
    missing = tmp_path / "drafts [old]" / "a[/b]" / "c.json"
    res = runner.invoke(
        app, ["generate", "--teacher", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--tutorials", str(missing)]
    )
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert f"{missing}: " in res.output


def test_jsonl_line_number_is_not_an_emoji(tmp_path):
    bad = tmp_path / "t [x].jsonl"
    bad.write_text("".join(json.dumps({"title": "x", "methods": []}) + "\n" for _ in range(99)) + "{broken\n")
    res = runner.invoke(app, ["tutorials", "--tutorials", str(bad)])
    assert f"{bad}:" in res.output and "💯" not in res.output


def test_server_error_with_brackets_keeps_the_final_summary(tmp_path):
    out = tmp_path / "run [1]"
    message = "no route [/v1/chat/completions] :100:"
    with FakeOpenAI(fail_when=lambda p: "Step 2 of" in p, error_message=message) as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(out),
                "--max-tutorials",
                "2",
                "--retries",
                "0",
            ],
            env={"OPENAI_COMPATIBLE_API_KEY": "k"},
        )
    assert res.exit_code == 1, res.output
    assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit), res.exception
    assert "[/v1/chat/completions] :100:" in res.output  # the server's words, as sent
    assert f"{out / 'conversations.jsonl'}: 2 conversations" in one_line(res.output)  # the summary is printed


def test_console_labels_style_only_the_label():
    from wikihowagent.console import labeled, make_console

    console = make_console()
    with console.capture() as cap:
        console.print(labeled("error:", "red", HOSTILE))
        console.print(HOSTILE)
    assert cap.get() == f"error: {HOSTILE}\n{HOSTILE}\n"


# ------------------------------------------------------------------ 10. no wrapping of long lines on a pipe


def test_long_skipped_lines_are_not_wrapped_when_stderr_is_not_a_terminal(tmp_path):
    tutorials = tmp_path / "t.jsonl"
    long_title = "How to " + "Very " * 40 + "Long"
    good = {
        "title": "How to Be Good",
        "categories": ["Categories", "Education"],
        "methods": [{"title": "Method", "steps": ["Do one thing.", "Do another thing."]}],
    }
    tutorials.write_text(json.dumps({"title": long_title}) + "\n" + json.dumps(good) + "\n")
    res = runner.invoke(
        app,
        [
            "generate",
            "--teacher",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--tutorials",
            str(tutorials),
            "--skip-invalid",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    skipped = [line for line in res.output.splitlines() if line.startswith("skipped:")]
    assert skipped and len(skipped[0]) > 100, res.output
    assert f"{tutorials}:1:" in skipped[0]


def valid_records(path: Path) -> list[dict]:
    """The fixture's scorable records (it also holds deliberately broken lines)."""
    out = []
    for line in path.read_text().splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("tutorial") and not obj.get("error"):
            out.append(obj)
    return out


def test_evaluate_prints_bad_lines_and_run_names_literally(tmp_path):
    good = valid_records(FIX / "evaluation" / "run_small" / "conversations.jsonl")
    lines = []
    for i in range(99):
        lines.append(json.dumps({**good[0], "conversation_id": f"c{i}", "error": None}))
    bad = tmp_path / "runs [old] :100:.jsonl"
    bad.write_text("\n".join(lines) + "\n{broken\n")
    res = runner.invoke(
        app,
        ["evaluate", str(bad), "--no-judge", "--metrics", "BLEU", "--no-figures", "--out", str(tmp_path / "out [x]")],
    )
    assert res.exit_code == 0, res.output
    assert f"{bad}:100: malformed JSON" in res.output and "💯" not in res.output
    assert "runs [old] :100:" in res.output  # the run's name in the summary table


# ------------------------------------------------------------------ 10. evaluate lock before any model


def test_second_evaluate_is_refused_before_any_model_is_loaded(tmp_path, monkeypatch):
    import wikihowagent.backends as backends
    import wikihowagent.scores.runner as runner_mod
    from wikihowagent.jsonlio import dir_lock

    loaded = []
    monkeypatch.setattr(backends, "check_backend", lambda *a, **k: None)
    monkeypatch.setattr(backends, "make_chat_model", lambda *a, **k: loaded.append("judge"))
    real_scorers = runner_mod.make_scorers
    monkeypatch.setattr(runner_mod, "make_scorers", lambda *a, **k: loaded.append("scorers") or real_scorers(*a, **k))
    runs = []
    for name in ("A", "B"):
        shutil.copytree(FIX / "evaluation" / "run_small", tmp_path / name)
        info = json.loads((tmp_path / name / "run.json").read_text())
        (tmp_path / name / "run.json").write_text(json.dumps({**info, "name": name}))
        runs.append(str(tmp_path / name))
    with dir_lock(tmp_path / "B", name=".scores.jsonl.lock"):  # another evaluate is scoring run B
        res = runner.invoke(
            app, ["evaluate", "--judge-scoring", "json", *runs, "--metrics", "BLEU,Clarity", "--no-figures"]
        )
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert lines == [
        f"error: {tmp_path / 'B' / 'scores.jsonl'}: another evaluate is running on this scores file; "
        "wait for it to finish (or use another --out)"
    ], res.output
    assert loaded == [] and not (tmp_path / "A" / "scores.jsonl").exists()


# ------------------------------------------------------------------ 2. the judge asks the run's own server


def judge_or_teach(prompt: str) -> str:
    from fake_servers import scripted_reply

    from wikihowagent.judge.rubric_judge import load_rubrics

    if "Evaluate the following" in prompt:
        return json.dumps({name: 4 for name in load_rubrics()})
    return scripted_reply(prompt)


KEYS = {"OPENAI_API_KEY": "sk-real-openai-key", "OPENAI_COMPATIBLE_API_KEY": "compat", "OPENAI_BASE_URL": None}


def test_evaluate_uses_the_endpoint_recorded_in_run_json(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAI(reply=judge_or_teach, models=("fake-model", "judge-model")) as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--evaluator",
                "openai:judge-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(out),
                "--max-tutorials",
                "1",
            ],
            env=KEYS,
        )
        assert res.exit_code == 0, res.output
        info = json.loads((out / "run.json").read_text())
        assert info["resolved"]["evaluator"]["base_url"] == srv.base_url
        n = len(srv.requests)
        res = runner.invoke(
            app, ["evaluate", "--judge-scoring", "json", str(out), "--metrics", "rubric", "--no-figures"], env=KEYS
        )
        assert res.exit_code == 0, res.output
        judged = srv.requests[n:]
    assert judged and {r["model"] for r in judged} == {"judge-model"}
    assert "Bearer sk-real-openai-key" not in srv.auth  # the OpenAI key never reaches this server
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert scores[0]["metrics"]["Clarity"] == 4 and scores[0]["judge"]["evaluator"] == "openai:judge-model"


def test_evaluate_resolves_evaluator_aliases_from_the_config_models_file(tmp_path):
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    with FakeOpenAI(reply=judge_or_teach, models=("judge-model",)) as srv:
        models = tmp_path / "models.yaml"
        models.write_text(f"aliases:\n  myjudge:\n    spec: openai:judge-model\n    base_url: {srv.base_url}\n")
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(f"models: {models}\n")
        res = runner.invoke(
            app,
            [
                "evaluate",
                "--judge-scoring",
                "json",
                str(run),
                "--evaluator",
                "myjudge",
                "--config",
                str(cfg),
                "--metrics",
                "rubric",
                "--no-figures",
            ],
            env=KEYS,
        )
        assert res.exit_code == 0, res.output
        assert srv.requests and {r["model"] for r in srv.requests} == {"judge-model"}


def test_evaluate_refuses_a_judge_that_now_resolves_to_another_provider(tmp_path, monkeypatch):
    import wikihowagent.backends as backends

    monkeypatch.setattr(backends, "make_chat_model", lambda *a, **k: pytest.fail("no judge may be built"))
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    info = json.loads((run / "run.json").read_text())
    info.update(
        evaluator="judge",
        resolved={
            "evaluator": {"spec": "judge", "provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
        },
    )
    (run / "run.json").write_text(json.dumps(info))
    models = tmp_path / "models.yaml"
    models.write_text("aliases:\n  judge: ollama:other:7b\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"models: {models}\n")
    res = runner.invoke(
        app, ["evaluate", "--judge-scoring", "json", str(run), "--config", str(cfg), "--metrics", "rubric"], env=KEYS
    )
    assert res.exit_code == 2
    assert (
        "evaluator 'judge' was openai:m at http://127.0.0.1:9/v1 when it was generated but now resolves to "
        "ollama:other:7b"
    ) in one_line(res.output)


# ------------------------------------------------------------------ 6. judge-server failure: one line, no noise


def test_judge_server_failure_is_one_line_without_event_loop_noise(tmp_path):
    import subprocess
    import sys

    run = tmp_path / "run"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    good = valid_records(run / "conversations.jsonl")
    (run / "conversations.jsonl").write_text(
        "".join(json.dumps({**good[i % len(good)], "conversation_id": f"c{i}"}) + "\n" for i in range(16))
    )
    repo = Path(__file__).resolve().parents[2]
    code = "import sys; from wikihowagent.cli import main; sys.argv[0] = 'wikihowagent'; main()"
    with FakeOpenAI(fail_when=lambda p: True) as srv:  # every judge call: HTTP 500 (after the client's retries)
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "evaluate",
                "--judge-scoring",
                "json",
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--metrics",
                "rubric",
                "--no-figures",
                "--concurrency",
                "8",
            ],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=300,
            env={**__import__("os").environ, "OPENAI_COMPATIBLE_API_KEY": "k", "COLUMNS": "200"},
        )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and "scripted server error" in errors[0], proc.stderr
    noise = [line for line in lines if not line.startswith(("error:", "warning:", "scoring "))]
    assert noise == [], proc.stderr


def test_a_judge_failure_leaves_no_task_running_when_the_loop_closes(tmp_path):
    """The deterministic core of the noise above: a conversation's other rubric group is still waiting on
    the server when its reference group fails; closing must cancel and await it."""
    import asyncio

    from wikihowagent.judge.request import ScoringRequest
    from wikihowagent.judge.rubric_judge import JudgeBackendError, load_rubrics
    from wikihowagent.scores.inputs import resolve_inputs
    from wikihowagent.scores.runner import EvalOptions, Evaluation
    from wikihowagent.testing import ScriptedChatModel

    class HalfBroken(ScriptedChatModel):
        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
            if "Reference tutorial:" in "\n".join(str(m.content) for m in messages):
                raise ConnectionError("judge server went away")
            await asyncio.sleep(60)  # cancelled by the shutdown long before
            return self._reply(messages)

    rubrics = load_rubrics()
    [src] = resolve_inputs([FIX / "evaluation" / "run_small"], tmp_path)
    opts = EvalOptions(judge=True, chunk=4, asked=ScoringRequest(evaluator="x", retries=0, concurrency=4))
    ev = Evaluation(
        opts, [], list(rubrics), rubrics, lambda spec: HalfBroken(script=str, prompts=[]), warn=lambda m: None
    )
    with pytest.raises(JudgeBackendError):
        ev.run_source(src, tmp_path / "scores.jsonl")
    assert ev.loop is not None
    loop = ev.loop.loop
    ev.close()
    assert loop.is_closed() and [t for t in asyncio.all_tasks(loop) if not t.done()] == []


# ------------------------------------------------------------------ 8. disk full


def full_disk(monkeypatch, names: tuple[str, ...], after: int = 0):
    """Make fsync of files whose name matches one of the glob patterns `names` fail with ENOSPC after `after`
    good calls (the data was written, as when the disk fills up mid-line: the writer must cut it off)."""
    import errno
    import fnmatch
    import os

    real = os.fsync
    calls = {"n": 0}

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        if any(fnmatch.fnmatch(os.path.basename(path), pattern) for pattern in names):
            calls["n"] += 1
            if calls["n"] > after:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to map file descriptors to paths")
    monkeypatch.setattr(os, "fsync", fsync)


def test_disk_full_during_generate_is_one_line_and_the_run_resumes(tmp_path, monkeypatch):
    out = tmp_path / "run"
    args = [
        "generate",
        "--teacher",
        "openai:fake-model",
        "--out",
        str(out),
        "--max-tutorials",
        "3",
        "--concurrency",
        "1",
        "--retries",
        "0",
    ]
    with FakeOpenAI() as srv:
        with monkeypatch.context() as m:
            # The second conversation does not fit, nor does a temp file for run.json.
            full_disk(m, ("conversations.jsonl",), after=1)
            full_disk(m, ("run.json.*.tmp",), after=1)
            res = runner.invoke(app, [*args, "--base-url", srv.base_url], env=KEYS)
        assert res.exit_code == 1, res.output
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        errors = [line for line in res.output.splitlines() if line.startswith("error:")]
        assert errors == [line for line in res.output.splitlines() if line.startswith(("error", "Traceback"))]
        assert len(errors) == 1 and f"{out / 'conversations.jsonl'}: no space left on device" in errors[0]
        assert "more free space needed" in errors[0]
        assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
        assert not list(out.glob("*.tmp"))
        kept = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
        assert len(kept) == 1 and kept[0]["finished"]  # the record written before survives, whole
        res = runner.invoke(app, [*args, "--base-url", srv.base_url], env=KEYS)  # space freed: resume
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert len(records) == 3 and len({r["tutorial_id"] for r in records}) == 3
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_writers_replacing_one_file_at_once_do_not_collide(tmp_path):
    """A Slurm array's tasks all write the sweep's sweep.json/config at start: with one shared temp name, a
    writer's rename found its temp file already renamed away by another (FileNotFoundError, CI)."""
    from concurrent.futures import ThreadPoolExecutor

    from wikihowagent.jsonlio import write_json_atomic, write_text_atomic

    target = tmp_path / "sweep.json"

    def write(i: int) -> None:
        for j in range(25):
            if j % 2:
                write_text_atomic(target, json.dumps({"writer": i, "n": j}))
            else:
                write_json_atomic(target, {"writer": i, "n": j})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))  # re-raises any writer's error
    assert set(json.loads(target.read_text())) == {"writer", "n"}  # whole, one writer's content
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.json"]  # no temp file left


def test_disk_full_leaves_no_temp_file_and_the_old_file_intact(tmp_path, monkeypatch):
    from wikihowagent.jsonlio import DiskFullError, write_json_atomic

    target = tmp_path / "run.json"
    write_json_atomic(target, {"status": "running"})
    full_disk(monkeypatch, ("run.json.*.tmp",))
    with pytest.raises(DiskFullError, match=r"run\.json: no space left on device: .* more free space needed"):
        write_json_atomic(target, {"status": "complete", "counts": {"conversations": 10**6}})
    assert json.loads(target.read_text()) == {"status": "running"} and not list(tmp_path.glob("*.tmp"))


def test_disk_full_during_evaluate_is_one_line(tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    full_disk(monkeypatch, ("scores.jsonl",), after=1)
    res = runner.invoke(app, ["evaluate", str(run), "--no-judge", "--metrics", "BLEU", "--no-figures"])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    errors = [line for line in res.output.splitlines() if line.startswith(("error", "Traceback"))]
    assert len(errors) == 1 and f"{run / 'scores.jsonl'}: no space left on device" in errors[0]
    lines = (run / "scores.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["metrics"]["BLEU"] is not None


def test_runs_recorded_before_the_evaluator_endpoint_use_their_openai_server(tmp_path):
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    with FakeOpenAI(reply=judge_or_teach, models=("fake-model", "judge-model")) as srv:
        info = json.loads((run / "run.json").read_text())
        teacher = {"spec": "openai:fake-model", "provider": "openai", "model": "fake-model", "base_url": srv.base_url}
        info.update(
            teacher="openai:fake-model",
            learner="openai:fake-model",
            evaluator="openai:judge-model",
            resolved={"teacher": teacher, "learner": teacher},
        )
        (run / "run.json").write_text(json.dumps(info))
        res = runner.invoke(
            app, ["evaluate", "--judge-scoring", "json", str(run), "--metrics", "rubric", "--no-figures"], env=KEYS
        )
        assert res.exit_code == 0, res.output
        assert srv.requests and {r["model"] for r in srv.requests} == {"judge-model"}


def test_disk_full_writing_a_summary_is_one_line(tmp_path):
    import subprocess
    import sys

    # A full disk in any other write (here: the summary CSV) ends the process in one line, via cli.main.
    code = (
        "import errno, sys, pandas\n"
        "def full(self, path, *a, **k): raise OSError(errno.ENOSPC, 'No space left on device', str(path))\n"
        "pandas.DataFrame.to_csv = full\n"
        "from wikihowagent.cli import main; sys.argv[0] = 'wikihowagent'; main()\n"
    )
    run = tmp_path / "run"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    proc = subprocess.run(
        [sys.executable, "-c", code, "evaluate", str(run), "--no-judge", "--metrics", "BLEU", "--no-figures"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith(("error", "Traceback"))]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"error: {run / 'summary.csv'}: no space left on device: more free space needed (")
    assert len((run / "scores.jsonl").read_text().splitlines()) == 3  # the scores are kept
