"""`wikihowagent generate` through the CLI against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import socket

from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.jsonlio import iter_jsonl

runner = CliRunner()
SECRET = "sk-test-SECRET-never-written-0123456789"


def generate(out, base_url, *extra, env=None):
    args = [
        "generate",
        "--teacher",
        "openai:fake-model",
        "--base-url",
        base_url,
        "--out",
        str(out),
        "--max-tutorials",
        "3",
        "--concurrency",
        "2",
        "--retries",
        "0",
        *extra,
    ]
    # A key for the compatible server, and a real OpenAI key that must never be sent to it.
    return runner.invoke(
        app, args, env={"OPENAI_COMPATIBLE_API_KEY": SECRET, "OPENAI_API_KEY": "sk-real-openai", **(env or {})}
    )


def test_generate_writes_run_dir_and_resumes(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAI() as srv:
        res = generate(out, srv.base_url)
        assert res.exit_code == 0, res.output
        n_requests = len(srv.requests)
        # Temperature 0 and the seed reach the server.
        assert srv.requests[0]["temperature"] == 0 and srv.requests[0]["seed"] == 42
        res2 = generate(out, srv.base_url)
        assert res2.exit_code == 0, res2.output
        assert len(srv.requests) == n_requests  # nothing redone
        assert "3 already done" in res2.output
    records = [o for _, o in iter_jsonl(out / "conversations.jsonl")]
    assert len(records) == 3 and all(r["finished"] and r["stop_reason"] == "finished" for r in records)
    assert records[0]["conversation"][0].startswith("Teacher: Let's begin:")
    info = json.loads((out / "run.json").read_text())
    assert info["teacher"] == "openai:fake-model" and info["learner"] == "openai:fake-model"
    assert info["counts"]["conversations"] == 3 and info["status"] == "complete"
    assert info["resolved"]["teacher"]["base_url"] == srv.base_url
    assert "langgraph" in info["versions"]
    # The key is used for requests but written nowhere; the OpenAI key is not sent to this server.
    assert set(srv.auth) == {f"Bearer {SECRET}"}
    for f in out.iterdir():
        assert SECRET not in f.read_text(), f
    assert SECRET not in res.output


def test_one_failed_conversation_is_recorded_and_counted(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAI(fail_when=lambda p: "Step 2 of" in p and "jump" in p.lower()) as srv:
        res = generate(out, srv.base_url, "--domain", "Automobiles & Vehicles", "--domain", "Home & Garden")
    assert res.exit_code == 1
    records = {o["title"]: o for _, o in iter_jsonl(out / "conversations.jsonl")}
    failed = [r for r in records.values() if r["error"]]
    assert len(failed) >= 1 and all(r["stop_reason"] == "error" for r in failed)
    assert any(r["finished"] for r in records.values())
    assert "failed" in res.output


def test_heterogeneous_setup_uses_two_models(tmp_path):
    with FakeOpenAI(models=("teacher-model", "learner-model")) as teacher_srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:teacher-model",
                "--learner",
                "openai:learner-model",
                "--base-url",
                teacher_srv.base_url,
                "--out",
                str(tmp_path / "het"),
                "--max-tutorials",
                "1",
            ],
        )
        assert res.exit_code == 0, res.output
        models = {r["model"] for r in teacher_srv.requests}
    assert models == {"teacher-model", "learner-model"}


def test_missing_ollama_is_one_clear_line(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = runner.invoke(
        app,
        ["generate", "--teacher", "openchat", "--learner", "qwen2", "--out", str(tmp_path / "r")],
        env={"OLLAMA_HOST": f"127.0.0.1:{port}"},
    )
    assert res.exit_code == 2
    lines = [ln for ln in res.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    assert "ollama serve" in lines[0] and "--teacher local" in lines[0]
    assert "Traceback" not in res.output


def test_bad_tutorial_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "How to X", "methods": []}\n{nope\n')
    res = runner.invoke(
        app, ["generate", "--teacher", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--tutorials", str(bad)]
    )
    assert res.exit_code == 2
    assert f"{bad}:2: malformed JSON" in res.output.replace("\n", "")


def test_shards_then_merge(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAI() as srv:
        for k in range(2):
            res = generate(out, srv.base_url, "--shard", f"{k}/2")
            assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["merge", str(out)])
    assert res.exit_code == 0, res.output
    records = [o for _, o in iter_jsonl(out / "conversations.jsonl")]
    assert len(records) == 3 and len({r["tutorial_id"] for r in records}) == 3
    # Ids are those of an unsharded run of the same name.
    single = tmp_path / "single" / "run"
    with FakeOpenAI() as srv:
        generate(single, srv.base_url)
    assert {r["conversation_id"] for r in records} == {
        o["conversation_id"] for _, o in iter_jsonl(single / "conversations.jsonl")
    }


def test_graph_command_prints_mermaid():
    res = runner.invoke(app, ["graph"])
    assert res.exit_code == 0 and "graph TD" in res.output and "manager" in res.output


def test_base_url_applies_to_openai_roles_only(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with FakeOpenAI() as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--learner",
                "qwen2",
                "--base-url",
                srv.base_url,
                "--out",
                str(tmp_path / "r"),
            ],
            env={"OLLAMA_HOST": f"127.0.0.1:{port}"},
        )
    assert res.exit_code == 2
    # The learner is checked against Ollama, not against the OpenAI-compatible URL.
    assert f"Ollama is not reachable at http://127.0.0.1:{port}" in res.output.replace("\n", "")


def test_second_generate_on_the_same_run_dir_is_refused(tmp_path):
    from wikihowagent.jsonlio import dir_lock

    out = tmp_path / "run"
    with FakeOpenAI() as srv, dir_lock(out):  # as if another generate held the directory
        res = generate(out, srv.base_url)
        assert not srv.requests[1:]  # at most the /models check, no conversation
    assert res.exit_code == 2 and "in use by another 'wikihowagent generate'" in res.output.replace("\n", " ")
    assert not (out / "conversations.jsonl").exists()


def test_run_json_says_interrupted_after_ctrl_c(tmp_path, monkeypatch):
    import wikihowagent.generation.core as gen

    async def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gen, "run_conversations", interrupted)
    with FakeOpenAI() as srv:
        res = generate(tmp_path / "run", srv.base_url)
    assert res.exit_code == 130
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "interrupted"


def test_resume_with_a_longer_timeout_is_allowed_but_other_settings_are_refused(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAI() as srv:
        assert generate(out, srv.base_url).exit_code == 0
        assert generate(out, srv.base_url, "--timeout", "900", "--retries", "3").exit_code == 0
        res = generate(out, srv.base_url, "--max-interactions", "10")
    assert res.exit_code == 2 and "different workflow" in res.output.replace("\n", " ")


def test_local_cache_prompt_is_in_the_fingerprint_only_when_on(tmp_path, monkeypatch):
    """Prompt-cache reuse changes the embedded model's replies: a run does not resume under the other setting,
    and a run made before the setting existed (fingerprint without it) resumes with it off."""
    from wikihowagent.backends import local

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    cached = tmp_path / "cached.yaml"
    cached.write_text("local:\n  cache_prompt: true\n", encoding="utf-8")
    with FakeOpenAI() as srv:
        monkeypatch.setattr(local, "_start", lambda *a: (object(), srv.base_url.removesuffix("/v1"), 0.01))

        def run(out, *extra):
            args = ["generate", "--teacher", f"local:{gguf}", "--out", str(out), "--max-tutorials", "1"]
            return runner.invoke(app, [*args, "--retries", "0", *extra])

        try:
            plain, fast = tmp_path / "plain", tmp_path / "fast"
            assert run(plain).exit_code == 0
            assert srv.requests and all(body["cache_prompt"] is False for body in srv.requests)
            srv.requests.clear()
            info = json.loads((plain / "run.json").read_text(encoding="utf-8"))
            assert info["fingerprint"]["local"] == {"max_tokens": 320, "n_ctx": 8192}  # as before the setting
            assert run(fast, "--config", str(cached)).exit_code == 0
            info = json.loads((fast / "run.json").read_text(encoding="utf-8"))
            assert info["fingerprint"]["local"]["cache_prompt"] is True
            assert srv.requests and all(body["cache_prompt"] is True for body in srv.requests)
            res = run(plain, "--config", str(cached))
            assert res.exit_code == 2 and "different local" in res.output.replace("\n", " ")
            res = run(fast)
            assert res.exit_code == 2 and "different local" in res.output.replace("\n", " ")
        finally:
            local.shutdown_local_servers()
