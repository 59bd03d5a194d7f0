"""wikihowagent.backends: spec resolution, Ollama/OpenAI-compatible backends against fake local servers,
the embedded model's file assembly, and (marked slow) the real embedded llama.cpp server.

All network traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from fake_servers import LocalServer
from helpers import cli_with_permissions, one_line_error

from wikihowagent.backends import (
    BackendError,
    check_backend,
    make_chat_model,
    model_files,
    ollama,
    resolve_spec,
    shutdown_local_servers,
)
from wikihowagent.backends import spec as spec_mod
from wikihowagent.config import LocalModelSettings, ModelSettings

SECRET = "sk-test-SECRET-0123456789"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for var in (
        "OLLAMA_HOST",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_COMPATIBLE_API_KEY",
        "WIKIHOWAGENT_LLAMA_LOG",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(ollama, "_backoff", lambda attempt: 0.0)


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text.strip() == text and text
    return text


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --------------------------------------------------------------------------- fake servers


class FakeServer:
    """A tiny threaded HTTP server on 127.0.0.1; `routes` maps (method, path) -> handler(req) -> (status, body, ctype)."""

    def __init__(self, routes):
        self.routes = routes
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep pytest output clean
                pass

            def _handle(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                req = {
                    "method": method,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "json": json.loads(raw) if raw else None,
                }
                outer.requests.append(req)
                fn = outer.routes.get((method, self.path.split("?")[0]))
                status, body, ctype = fn(req) if fn else (404, {"error": "not found"}, "application/json")
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

        self.httpd = LocalServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def ollama_routes(tags=("openchat:7b", "llama3:8b"), fail_first_chat: int = 0):
    state = {"fails": fail_first_chat}

    def api_tags(req):
        return 200, {"models": [{"name": t, "model": t, "size": 1} for t in tags]}, "application/json"

    def api_chat(req):
        if state["fails"] > 0:
            state["fails"] -= 1
            return 503, {"error": "server busy"}, "application/json"
        model = req["json"]["model"]
        base = {"model": model, "created_at": "2026-01-01T00:00:00Z"}
        if req["json"].get("stream", True):
            lines = [
                {**base, "message": {"role": "assistant", "content": "Hello"}, "done": False},
                {**base, "message": {"role": "assistant", "content": " learner"}, "done": False},
                {
                    **base,
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                    "total_duration": 1000,
                    "prompt_eval_count": 11,
                    "eval_count": 5,
                },
            ]
            return 200, "".join(json.dumps(x) + "\n" for x in lines).encode(), "application/x-ndjson"
        return (
            200,
            {
                **base,
                "message": {"role": "assistant", "content": "Hello learner"},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": 11,
                "eval_count": 5,
            },
            "application/json",
        )

    return {("GET", "/api/tags"): api_tags, ("POST", "/api/chat"): api_chat}


def openai_routes(models=("test-model",), reply="Hi there", status_models=200):
    def list_models(req):
        if status_models != 200:
            return status_models, {"error": {"message": "nope"}}, "application/json"
        return (
            200,
            {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "me"} for m in models]},
            "application/json",
        )

    def chat(req):
        body = req["json"]
        return (
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
            },
            "application/json",
        )

    return {("GET", "/v1/models"): list_models, ("POST", "/v1/chat/completions"): chat}


@pytest.fixture
def fake():
    servers = []

    def start(routes):
        s = FakeServer(routes)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


# --------------------------------------------------------------------------- resolution


@pytest.mark.parametrize(
    "spec,provider,model",
    [
        ("local", "local", model_files.MODEL_NAME),
        ("local:" + model_files.MODEL_NAME, "local", model_files.MODEL_NAME),
        ("openchat", "ollama", "openchat:7b"),
        ("qwen2", "ollama", "qwen2:7b"),
        ("deepseek", "ollama", "deepseek-llm:7b"),
        ("gemma", "ollama", "gemma:7b"),
        ("olmo2", "ollama", "olmo2:7b"),
        ("llama3", "ollama", "llama3:8b"),
        ("phi4", "ollama", "phi4:14b"),
        ("gpt-4", "openai", "gpt-4"),
        ("ollama:mistral:7b-instruct", "ollama", "mistral:7b-instruct"),
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("  OLLAMA:phi4:14b ", "ollama", "phi4:14b"),
    ],
)
def test_resolve_shipped_aliases(spec, provider, model):
    r = resolve_spec(spec)
    assert (r.provider, r.model) == (provider, model)
    assert r.spec == spec.strip()
    assert r.canonical == f"{provider}:{model}"
    assert r.canonical in r.display and r.spec in r.display
    if provider == "ollama":
        assert r.base_url == "http://127.0.0.1:11434"
    else:
        assert r.base_url is None


def test_builtin_aliases_match_the_shipped_file():
    shipped = spec_mod.load_aliases(None).aliases
    assert shipped == spec_mod.BUILTIN_ALIASES


def test_missing_default_alias_file_falls_back(monkeypatch, tmp_path):
    monkeypatch.setattr(spec_mod, "default_aliases_path", lambda: tmp_path / "nope.yaml")
    assert resolve_spec("openchat").model == "openchat:7b"


def test_custom_alias_file(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "tiny.gguf").write_bytes(b"GGUF")
    f = tmp_path / "models.yaml"
    f.write_text(
        "aliases:\n"
        "  teacher: ollama:qwen2:7b\n"
        "  t2: teacher\n"
        "  vllm: {spec: 'openai:meta/llama', base_url: 'http://127.0.0.1:9/v1'}\n"
        "local_models:\n"
        "  tiny: m/tiny.gguf\n"
    )
    assert resolve_spec("t2", f).model == "qwen2:7b"
    v = resolve_spec("vllm", f)
    assert (v.provider, v.model, v.base_url) == ("openai", "meta/llama", "http://127.0.0.1:9/v1")
    t = resolve_spec("local:tiny", f)
    assert t.provider == "local" and t.path == str(tmp_path / "m" / "tiny.gguf")
    with pytest.raises(BackendError) as ei:
        resolve_spec("openchat", f)  # not in this file
    assert "teacher" in one_line(ei.value)


def test_alias_file_errors(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.write_text("aliases:\n  a: b\n  b: a\n")
    with pytest.raises(BackendError, match="alias loop"):
        resolve_spec("a", loop)
    bad = tmp_path / "bad.yaml"
    bad.write_text("aliases: [unclosed\n")
    with pytest.raises(BackendError) as ei:
        resolve_spec("local", bad)
    assert "invalid YAML" in one_line(ei.value)
    with pytest.raises(BackendError, match="not found"):
        resolve_spec("local", tmp_path / "missing.yaml")


@pytest.mark.parametrize("spec", ["gpt4all", "foo:bar", "ollama:", "openai:", "", "local:nope"])
def test_unknown_spec(spec):
    with pytest.raises(BackendError) as ei:
        resolve_spec(spec)
    msg = one_line(ei.value)
    if spec != "local:nope":
        assert "ollama:<tag>" in msg and "openai:<model>" in msg and "local" in msg
        assert "openchat" in msg and "phi4" in msg and "gpt-4" in msg
    else:
        assert model_files.MODEL_NAME in msg


def test_unknown_provider_suggests_ollama():
    with pytest.raises(BackendError) as ei:
        resolve_spec("openchat:7b")
    assert "did you mean ollama:openchat:7b" in one_line(ei.value)


@pytest.mark.parametrize(
    "value,expected",
    [
        ("", "http://127.0.0.1:11434"),
        ("127.0.0.1", "http://127.0.0.1:11434"),
        ("0.0.0.0:1234", "http://127.0.0.1:1234"),
        ("http://gpu-box:8080", "http://gpu-box:8080"),
        ("https://ollama.example.org", "https://ollama.example.org:443"),
        (":5000", "http://127.0.0.1:5000"),
    ],
)
def test_ollama_host_forms(monkeypatch, value, expected):
    monkeypatch.setenv("OLLAMA_HOST", value)
    assert ollama.normalize_ollama_host() == expected
    assert resolve_spec("openchat").base_url == expected


def test_key_never_in_resolved_spec(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    for spec in ("gpt-4", "openai:gpt-4o", "openchat", "local"):
        r = resolve_spec(spec)
        for text in (repr(r), str(r), r.model_dump_json(), json.dumps(r.model_dump()), r.display):
            assert SECRET not in text
    model = make_chat_model("gpt-4", ModelSettings(), LocalModelSettings())
    assert SECRET not in repr(model)


def test_import_has_no_side_effects():
    code = (
        "import sys, wikihowagent.backends as b\n"
        "heavy = [m for m in ('xllamacpp', 'langchain_openai', 'langchain_ollama') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert 'wikihowagent.backends.local' not in sys.modules\n"
        "b.shutdown_local_servers()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=30)


# --------------------------------------------------------------------------- Ollama


def test_ollama_chat_against_fake_server(fake):
    srv = fake(ollama_routes())
    r = resolve_spec("openchat")
    check_backend(r, base_url=srv.url)
    settings = ModelSettings(temperature=0.0, seed=7, max_tokens=99, timeout_s=5, max_retries=0)
    model = make_chat_model("openchat", settings, LocalModelSettings(), base_url=srv.url)
    msg = model.invoke("Teach me to boil an egg.")
    assert msg.content == "Hello learner"
    assert msg.usage_metadata["input_tokens"] == 11 and msg.usage_metadata["output_tokens"] == 5
    body = [q for q in srv.requests if q["path"] == "/api/chat"][-1]["json"]
    assert body["model"] == "openchat:7b"
    assert (
        body["options"]["temperature"] == 0.0 and body["options"]["seed"] == 7 and body["options"]["num_predict"] == 99
    )
    out = asyncio.run(model.abatch(["a", "b"]))
    assert [m.content for m in out] == ["Hello learner"] * 2
    assert hasattr(model, "with_structured_output")


def test_ollama_host_env_is_honoured(fake, monkeypatch):
    srv = fake(ollama_routes())
    monkeypatch.setenv("OLLAMA_HOST", srv.url.removeprefix("http://"))
    r = resolve_spec("llama3")
    assert r.base_url == srv.url
    check_backend(r)
    model = make_chat_model("llama3", ModelSettings(max_retries=0), LocalModelSettings())
    assert asyncio.run(model.ainvoke("hi")).usage_metadata["total_tokens"] == 16


def test_ollama_retries_server_errors(fake):
    import ollama

    srv = fake(ollama_routes(fail_first_chat=1))
    model = make_chat_model("openchat", ModelSettings(max_retries=1), LocalModelSettings(), base_url=srv.url)
    assert model.invoke("hi").content == "Hello learner"
    assert sum(q["path"] == "/api/chat" for q in srv.requests) == 2
    srv2 = fake(ollama_routes(fail_first_chat=5))
    model = make_chat_model("openchat", ModelSettings(max_retries=1), LocalModelSettings(), base_url=srv2.url)
    with pytest.raises(ollama.ResponseError):
        asyncio.run(model.ainvoke("hi"))
    assert sum(q["path"] == "/api/chat" for q in srv2.requests) == 2


def test_ollama_unreachable_is_one_line():
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(BackendError) as ei:
        check_backend(resolve_spec("openchat"), base_url=url)
    msg = one_line(ei.value)
    assert "not reachable" in msg and url in msg
    assert "ollama serve" in msg and "ollama pull openchat:7b" in msg and "--teacher local" in msg
    assert "'openchat' = ollama:openchat:7b" in msg


def test_ollama_model_not_pulled(fake):
    srv = fake(ollama_routes(tags=("openchat:7b",)))
    with pytest.raises(BackendError) as ei:
        check_backend(resolve_spec("phi4"), base_url=srv.url)
    assert "ollama pull phi4:14b" in one_line(ei.value)
    srv2 = fake(ollama_routes(tags=("mistral:latest",)))
    check_backend(resolve_spec("ollama:mistral"), base_url=srv2.url)  # untagged = :latest


# --------------------------------------------------------------------------- OpenAI-compatible


def test_openai_compatible_base_url_override(fake):
    srv = fake(openai_routes())
    base = srv.url + "/v1"
    r = resolve_spec("openai:test-model")
    check_backend(r, base_url=base)  # no key needed for a custom server
    settings = ModelSettings(temperature=0.0, seed=3, max_tokens=21, timeout_s=5, max_retries=0)
    model = make_chat_model("openai:test-model", settings, LocalModelSettings(), base_url=base)
    msg = model.invoke("hello")
    assert msg.content == "Hi there"
    assert msg.usage_metadata["input_tokens"] == 7 and msg.usage_metadata["output_tokens"] == 3
    req = [q for q in srv.requests if q["path"] == "/v1/chat/completions"][-1]
    assert req["json"]["seed"] == 3 and req["json"]["temperature"] == 0.0
    assert req["json"].get("max_tokens", req["json"].get("max_completion_tokens")) == 21
    assert req["headers"]["authorization"] == "Bearer EMPTY"


def test_openai_base_url_env_and_key(fake, monkeypatch):
    srv = fake(openai_routes())
    monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    r = resolve_spec("openai:test-model")
    assert r.base_url == srv.url + "/v1"
    check_backend(r)
    msg = asyncio.run(
        make_chat_model("openai:test-model", ModelSettings(max_retries=0), LocalModelSettings()).ainvoke("x")
    )
    assert msg.usage_metadata["total_tokens"] == 10
    assert all(q["headers"].get("authorization") == f"Bearer {SECRET}" for q in srv.requests)


def test_openai_key_never_sent_to_another_host(fake, monkeypatch):
    """--base-url to a third-party server: OPENAI_API_KEY stays home; OPENAI_COMPATIBLE_API_KEY is used."""
    srv = fake(openai_routes())
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    r = resolve_spec("openai:test-model")
    check_backend(r, srv.url + "/v1")
    asyncio.run(
        make_chat_model(
            "openai:test-model", ModelSettings(max_retries=0), LocalModelSettings(), base_url=srv.url + "/v1"
        ).ainvoke("x")
    )
    assert srv.requests and all(SECRET not in str(q["headers"]) for q in srv.requests)
    chats = [q for q in srv.requests if q["path"] == "/v1/chat/completions"]
    assert chats and all(q["headers"].get("authorization") == "Bearer EMPTY" for q in chats)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "vllm-key")
    asyncio.run(
        make_chat_model(
            "openai:test-model", ModelSettings(max_retries=0), LocalModelSettings(), base_url=srv.url + "/v1"
        ).ainvoke("x")
    )
    assert srv.requests[-1]["headers"]["authorization"] == "Bearer vllm-key"


def test_openai_missing_key():
    r = resolve_spec("gpt-4")
    with pytest.raises(BackendError) as ei:
        check_backend(r)
    msg = one_line(ei.value)
    assert "OPENAI_API_KEY" in msg and "gpt-4" in msg
    with pytest.raises(BackendError) as ei:
        make_chat_model("gpt-4", ModelSettings(), LocalModelSettings())
    assert "OPENAI_API_KEY" in one_line(ei.value)


def test_openai_compatible_unreachable_and_wrong_model(fake):
    base = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(BackendError) as ei:
        check_backend(resolve_spec("openai:test-model"), base_url=base)
    msg = one_line(ei.value)
    assert "not reachable" in msg and base in msg
    srv = fake(openai_routes(models=("other-model",)))
    with pytest.raises(BackendError) as ei:
        check_backend(resolve_spec("openai:test-model"), base_url=srv.url + "/v1")
    assert "other-model" in one_line(ei.value)
    srv401 = fake(openai_routes(status_models=401))
    with pytest.raises(BackendError) as ei:
        check_backend(resolve_spec("openai:test-model"), base_url=srv401.url + "/v1")
    assert "API key" in one_line(ei.value)


# --------------------------------------------------------------------------- model file


@pytest.fixture
def fake_chunks(tmp_path, monkeypatch):
    """Three fake chunk packages on sys.path + pinned size/hash patched to match them."""
    root = tmp_path / "site"
    chunks = [os.urandom(1000 + 37 * i) for i in range(3)]
    for n, data in enumerate(chunks, 1):
        pkg = root / f"fakechunk_part{n}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{n:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(root))
    blob = b"".join(chunks)
    monkeypatch.setattr(model_files, "N_CHUNKS", 3)
    monkeypatch.setattr(model_files, "CHUNK_MODULE", "fakechunk_part{n}")
    monkeypatch.setattr(model_files, "CHUNK_DIST", "fakechunk-part{n}")
    monkeypatch.setattr(model_files, "MODEL_SIZE", len(blob))
    monkeypatch.setattr(model_files, "MODEL_SHA256", hashlib.sha256(blob).hexdigest())
    monkeypatch.setenv("WIKIHOWAGENT_HOME", str(tmp_path / "home"))
    return blob


def test_assemble_verify_and_stamp(fake_chunks, tmp_path, monkeypatch):
    path = model_files.ensure_local_model()
    assert path == tmp_path / "home" / "models" / model_files.MODEL_FILENAME
    assert path.read_bytes() == fake_chunks
    assert [p.name for p in path.parent.iterdir() if "partial" in p.name] == []
    check_backend(resolve_spec("local"))  # verified file: ok

    calls = []
    real_sha = model_files.sha256_file
    monkeypatch.setattr(model_files, "sha256_file", lambda p, progress=None: calls.append(p) or real_sha(p))
    monkeypatch.setattr(model_files, "assemble", lambda *a, **k: pytest.fail("re-assembled"))
    assert model_files.ensure_local_model() == path
    assert calls == []  # the stamp avoids rehashing
    os.utime(path, ns=(1, 1))  # the file changed (mtime): hash again, once
    assert model_files.ensure_local_model() == path
    assert len(calls) == 1
    assert model_files.ensure_local_model() == path
    assert len(calls) == 1


def test_corrupt_cached_file_is_rebuilt(fake_chunks):
    path = model_files.ensure_local_model()
    path.write_bytes(b"x" * len(fake_chunks))  # same size, wrong bytes, new mtime
    assert model_files.ensure_local_model().read_bytes() == fake_chunks


def test_sha_mismatch(fake_chunks, monkeypatch):
    monkeypatch.setattr(model_files, "MODEL_SHA256", "0" * 64)
    with pytest.raises(BackendError) as ei:
        model_files.ensure_local_model()
    msg = one_line(ei.value)
    assert "sha256" in msg and "pip install" in msg
    assert not model_files.model_path().exists()


def test_missing_chunk_package(fake_chunks, monkeypatch):
    monkeypatch.setattr(model_files, "N_CHUNKS", 4)
    with pytest.raises(BackendError) as ei:
        model_files.ensure_local_model()
    msg = one_line(ei.value)
    assert "fakechunk-part4" in msg and "make install" in msg and "pip install" in msg
    with pytest.raises(BackendError):
        check_backend(resolve_spec("local"))


def test_model_cache_location_env_then_config_then_user_cache(tmp_path, monkeypatch):
    """The GGUF's folder: WIKIHOWAGENT_MODELS, WIKIHOWAGENT_HOME/models, the config key local.model_dir, else
    platformdirs' user cache (XDG_CACHE_HOME on Linux); never the package's folder."""
    for name in ("WIKIHOWAGENT_MODELS", "WIKIHOWAGENT_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_files.models_dir() == tmp_path / "xdg" / "wikihowagent" / "models"
    assert model_files.models_dir(str(tmp_path / "cfg")) == tmp_path / "cfg"
    monkeypatch.setenv("WIKIHOWAGENT_HOME", str(tmp_path / "home"))
    assert model_files.models_dir(str(tmp_path / "cfg")) == tmp_path / "home" / "models"
    monkeypatch.setenv("WIKIHOWAGENT_MODELS", str(tmp_path / "store"))
    assert model_files.model_path(str(tmp_path / "cfg")) == tmp_path / "store" / model_files.MODEL_FILENAME


def test_model_commands_prepare_path_remove(fake_chunks, tmp_path):
    """`wikihowagent model prepare | path | remove` on fake chunk packages, the folder from a --config file's
    local.model_dir (WIKIHOWAGENT_HOME unset)."""
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    os.environ.pop("WIKIHOWAGENT_HOME")  # the fixture's; monkeypatch restores it
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"local:\n  model_dir: {tmp_path / 'cache'}\n")
    runner = CliRunner()
    res = runner.invoke(app, ["model", "path", "--config", str(cfg)])
    assert res.exit_code == 0 and str(tmp_path / "cache" / model_files.MODEL_FILENAME) in res.output
    assert "not prepared yet" in res.output
    res = runner.invoke(app, ["model", "prepare", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cache" / model_files.MODEL_FILENAME).read_bytes() == fake_chunks
    assert "not prepared" not in runner.invoke(app, ["model", "path", "--config", str(cfg)]).output
    res = runner.invoke(app, ["model", "remove", "--config", str(cfg)])
    assert res.exit_code == 0 and res.output.count("removed ") == 2  # the GGUF and its stamp
    assert not (tmp_path / "cache" / model_files.MODEL_FILENAME).exists()
    assert "nothing to remove" in runner.invoke(app, ["model", "remove", "--config", str(cfg)]).output


def test_model_prepare_without_the_extra_is_one_line_naming_it(fake_chunks, monkeypatch):
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    monkeypatch.setattr(model_files, "N_CHUNKS", 4)  # a chunk package missing
    res = CliRunner().invoke(app, ["model", "prepare"])
    assert res.exit_code == 1
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "pip install 'wikihowagent[embedded]'" in lines[0], res.output


MODELS = model_files.MODELS_ENV


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [x for x in stderr.splitlines() if x.strip()]


def test_model_commands_on_a_read_only_cache_are_one_line_and_touch_nothing(tmp_path):
    """A cache folder this user cannot write (root ignores permissions, so the CLI runs with them enforced):
    `prepare` and `remove` of a model there are one line and exit 2, nothing removed; `remove` with nothing to
    remove says so without making a lock; `path` says the folder is not writable."""
    empty, full = tmp_path / "empty", tmp_path / "full"
    empty.mkdir()
    full.mkdir()
    gguf = full / model_files.MODEL_FILENAME
    gguf.write_bytes(b"gguf")
    (full / (gguf.name + ".verified")).write_text("{}")
    for d in (empty, full):
        d.chmod(0o555)
    try:
        for cache in (empty, full):
            env: dict[str, str | None] = {"WIKIHOWAGENT_MODELS": str(cache), "WIKIHOWAGENT_HOME": None}
            before = sorted(os.listdir(cache))
            res = cli_with_permissions("model", "prepare", env=env)
            lines = _error_lines(res.stderr)
            assert res.returncode == 2 and len(lines) == 1, res.stderr
            assert f"Cannot write to the model cache {cache}: Permission denied" in lines[0]
            assert "WIKIHOWAGENT_MODELS" in lines[0]
            res = cli_with_permissions("model", "remove", env=env)
            if cache == empty:
                assert res.returncode == 0 and res.stdout == f"nothing to remove: no model in {cache}\n", res
                assert res.stderr == ""
            else:
                lines = _error_lines(res.stderr)
                assert res.returncode == 2 and len(lines) == 1 and str(cache) in lines[0], res.stderr
                assert "removed" not in res.stdout
            res = cli_with_permissions("model", "path", env=env)
            assert res.returncode == 0 and res.stdout == f"{cache / model_files.MODEL_FILENAME}\n"
            assert _error_lines(res.stderr) == [
                f"not prepared yet, and {cache} is not writable: set WIKIHOWAGENT_MODELS or local.model_dir to a "
                "folder you can write, then: wikihowagent model prepare"
            ]
            assert sorted(os.listdir(cache)) == before  # no lock, nothing removed
    finally:
        for d in (empty, full):
            d.chmod(0o755)


def test_model_remove_leaves_a_folder_named_like_a_partial_file_and_removes_the_rest(fake_chunks, tmp_path):
    """A folder under a partial file's name (no assembly writes one) is left and named; everything else is
    removed and listed, the run does not stop halfway; with only that folder there, no lock is made."""
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    path = model_files.ensure_local_model()
    cache = path.parent
    partial = cache / f".{path.name}.partial12345"
    partial.write_bytes(b"half")
    folder = cache / f".{path.name}.partial999"
    (folder / "keep.txt").parent.mkdir()
    (folder / "keep.txt").write_text("mine")
    res = CliRunner().invoke(app, ["model", "remove"])
    assert res.exit_code == 0, res.output
    removed = sorted(x for x in res.output.splitlines() if x.startswith("removed "))
    assert removed == sorted(f"removed {p}" for p in (path, cache / (path.name + ".verified"), partial))
    assert f"warning: left {folder}: not a file this tool writes (remove it yourself)" in res.output
    assert (folder / "keep.txt").read_text() == "mine" and not path.exists() and not partial.exists()

    other = tmp_path / "other"
    (other / folder.name).mkdir(parents=True)
    res = CliRunner().invoke(app, ["model", "remove"], env={"WIKIHOWAGENT_HOME": None, MODELS: str(other)})
    assert res.exit_code == 0 and f"nothing to remove: no model in {other}" in res.output, res.output
    assert f"left {other / folder.name}" in res.output
    assert sorted(os.listdir(other)) == [folder.name]  # no lock


@pytest.mark.parametrize("inside", [False, True])
@pytest.mark.parametrize("command", ["path", "prepare", "remove"])
def test_models_variable_naming_a_file_is_one_line_for_every_model_command(tmp_path, command, inside):
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    f = tmp_path / "models.txt"
    f.write_text("not a folder")
    named = f / "sub" if inside else f
    res = CliRunner().invoke(app, ["model", command], env={"WIKIHOWAGENT_HOME": None, MODELS: str(named)})
    assert res.exit_code == 2, res.output
    where = f"{named}, inside {f}, which is a file" if inside else f"{f}, which is a file"
    one_line_error(res, f"WIKIHOWAGENT_MODELS names {where}, not a folder")
    assert "not prepared" not in res.output and model_files.MODEL_FILENAME not in res.output
    assert f.read_text() == "not a folder" and os.listdir(tmp_path) == ["models.txt"]


def test_local_without_xllamacpp_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import fails
    with pytest.raises(BackendError) as ei:
        check_backend(resolve_spec("local"))
    assert "pip install 'wikihowagent[embedded]'" in one_line(ei.value)


def test_missing_local_gguf_path(tmp_path):
    with pytest.raises(BackendError, match="not found"):
        check_backend(resolve_spec(f"local:{tmp_path}/none.gguf"))


# --------------------------------------------------------------------------- local wiring (no real model)


def test_local_model_wiring_with_fake_server(fake, monkeypatch, tmp_path):
    from wikihowagent.backends import local

    srv = fake(openai_routes(models=(model_files.MODEL_NAME,)))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    started = []
    monkeypatch.setattr(local, "ensure_with_bar", lambda **kw: gguf)
    monkeypatch.setattr(local, "_start", lambda *a: started.append(a) or (object(), srv.url, 0.01))
    try:
        settings = ModelSettings(max_tokens=512, seed=9, temperature=0.0, max_retries=0)
        lset = LocalModelSettings(max_tokens=40, n_parallel=2, n_threads=0, n_ctx=2048)
        teacher = make_chat_model("local", settings, lset)
        learner = make_chat_model("local", settings, lset)
        assert len(started) == 1  # one server shared by the roles
        assert teacher.http_async_client is learner.http_async_client  # and its one client
        _, alias, n_ctx, n_parallel, n_threads, n_batch = started[0]
        assert (alias, n_ctx, n_parallel, n_batch) == (model_files.MODEL_NAME, 2048, 2, 64) and n_threads >= 1
        msg = teacher.invoke("hi")
        assert msg.usage_metadata["output_tokens"] == 3
        asyncio.run(learner.abatch(["a", "b"]))
        body = [q for q in srv.requests if q["path"] == "/v1/chat/completions"][0]["json"]
        assert body["cache_prompt"] is False and body["seed"] == 9 and body["temperature"] == 0.0
        assert body.get("max_tokens", body.get("max_completion_tokens")) == 40  # min(model, local)
        assert local.running_servers()
    finally:
        shutdown_local_servers()
    assert local.running_servers() == []
    shutdown_local_servers()  # idempotent


def test_local_cache_prompt_setting_goes_in_every_request_body(fake, monkeypatch, tmp_path):
    from wikihowagent.backends import local

    srv = fake(openai_routes(models=(model_files.MODEL_NAME,)))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "ensure_with_bar", lambda **kw: gguf)
    monkeypatch.setattr(local, "_start", lambda *a: (object(), srv.url, 0.01))
    try:
        model = make_chat_model("local", ModelSettings(max_retries=0), LocalModelSettings(cache_prompt=True))
        model.invoke("hi")
        asyncio.run(model.ainvoke("again"))
        bodies = [q["json"] for q in srv.requests if q["path"] == "/v1/chat/completions"]
        assert len(bodies) == 2 and all(b["cache_prompt"] is True for b in bodies)
    finally:
        shutdown_local_servers()
    assert LocalModelSettings().cache_prompt is False  # reproducible by default


def test_the_shipped_prompt_cache_config_keeps_one_slot_per_role_and_requests_sequential():
    from wikihowagent.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "local-prompt-cache.yaml")
    assert (cfg.local.cache_prompt, cfg.local.n_parallel, cfg.concurrency) == (True, 2, 1)
    assert load_config().local.cache_prompt is False  # wikihowagent/configs/default.yaml leaves it off


# --------------------------------------------------------------------------- the real embedded model


@pytest.mark.slow
def test_real_embedded_server_replies():
    from wikihowagent.backends import local

    try:
        model = make_chat_model("local", ModelSettings(max_tokens=16), LocalModelSettings(n_parallel=1, n_ctx=1024))
        msg = model.invoke("Reply with one short greeting.")
        assert isinstance(msg.content, str) and msg.content.strip()
        assert "<|im_start|>" not in msg.content  # the GGUF's chat template was applied
        u = msg.usage_metadata
        assert u and 0 < u["output_tokens"] <= 16 and u["input_tokens"] > 5
    finally:
        shutdown_local_servers()
    assert local.running_servers() == []


def test_embedded_server_decodes_prompts_in_small_steps(monkeypatch, tmp_path):
    """Ctrl-C: llama.cpp drops a closed request only between decode steps; with its default
    n_batch (2048) a whole prompt was one step and Ctrl-C waited for it. The server gets local.n_batch."""
    import xllamacpp

    from wikihowagent.backends import local
    from wikihowagent.config import LocalModelSettings

    seen = {}

    class FakeServer:
        def __init__(self, params):
            seen.update(n_batch=params.n_batch, n_ubatch=params.n_ubatch)
            self.listening_address = "http://127.0.0.1:1"

    monkeypatch.setattr(xllamacpp, "Server", FakeServer)
    monkeypatch.setattr(local, "_SERVERS", {})
    model = tmp_path / "m.gguf"
    model.write_bytes(b"")
    srv = local.get_local_server(LocalModelSettings(), model)
    assert seen == {"n_batch": 64, "n_ubatch": 64} and srv.n_batch == 64
    local.get_local_server(LocalModelSettings(n_batch=128), model)
    assert seen == {"n_batch": 128, "n_ubatch": 128}
    monkeypatch.setattr(local, "_SERVERS", {})


def test_shutdown_hangs_up_the_requests_still_in_flight_to_the_embedded_server(monkeypatch):
    """After a Ctrl-C a request's connection can outlive its cancelled task; llama.cpp would then finish the
    whole reply before its destructor returns. The backend sends every request through the server's own client
    (`LocalServer.client`), and shutdown_local_servers closes it: the connection still open is hung up (the
    server sees the close and cancels the request, the waiting request fails at once); other connections of the
    process are left alone."""
    import httpx

    from wikihowagent.backends import local

    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    other = socket.create_connection(listeners[1].getsockname())
    port = listeners[0].getsockname()[1]
    srv = local.LocalServer(("test",), Path("m.gguf"), "m", f"http://127.0.0.1:{port}", 1, 1, 1, 0.0, object())
    monkeypatch.setattr(local, "_SERVERS", {("test",): srv})
    client = srv.client(60.0)
    assert srv.client(60.0) is client  # one client per server (and request timeout), shared by every model
    outcome: dict[str, BaseException] = {}

    async def ask() -> None:
        try:
            await client.http_async_client.post(f"{srv.base_url}/chat/completions", json={"messages": []})
        except httpx.HTTPError as exc:
            outcome["error"] = exc

    asker = threading.Thread(target=lambda: asyncio.run(ask()))
    asker.start()
    accepted = [lst.accept()[0] for lst in listeners]
    for conn in accepted:
        conn.settimeout(5)
    seen = b""
    while b"messages" not in seen:  # the whole request has arrived; no reply is ever sent
        seen += accepted[0].recv(4096)
    try:
        local.shutdown_local_servers()
        assert accepted[0].recv(16) == b""  # the server side sees the hang-up at once
        asker.join(5)
        assert not asker.is_alive() and isinstance(outcome.get("error"), httpx.HTTPError)
        assert srv._server is None and srv.clients == {}
        other.sendall(b"x")  # the other connection still works both ways
        assert accepted[1].recv(16) == b"x"
    finally:
        for s in (*listeners, *accepted, other):
            s.close()


def test_the_embedded_servers_client_serves_several_event_loops_and_both_apis(fake):
    """The server's one client is used by every model, from each `asyncio.run` in turn and synchronously; a
    finished request leaves no connection open (no keep-alive), so nothing is left to hang up."""
    from wikihowagent.backends import local

    srv = fake(openai_routes(models=(model_files.MODEL_NAME,)))
    client = local.ServerClient(30.0)
    try:
        for _ in range(2):
            reply = asyncio.run(client.http_async_client.get(f"{srv.url}/v1/models"))
            assert reply.status_code == 200
        assert client.http_client.get(f"{srv.url}/v1/models").status_code == 200
        assert client.hang_up() == 0
    finally:
        client.close()
