"""The lean OpenAI-compatible transport (backends/lean_openai.py over aiohttp) and the direct-call hot path
(backends/calls.py), against fake servers on 127.0.0.1: the same request bodies, replies, logprobs and errors
as ChatOpenAI through the openai SDK; retries; keep-alive and chunked responses; the key only to its host;
one session per event loop, closed with its loop."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import openai
import pytest
from fake_servers import FakeOpenAI, LocalServer
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI

from wikihowagent.backends import lean_openai, make_chat_model, resolve_spec
from wikihowagent.backends.calls import achat
from wikihowagent.backends.lean_openai import LeanChatOpenAI
from wikihowagent.backends.openai_compat import TRANSPORT_ENV
from wikihowagent.backends.replicas import is_connection_error, make_pooled_chat_model
from wikihowagent.config import LocalModelSettings, ModelSettings

KEY = "sk-compat-secret-123"
MSGS = [SystemMessage(content="You teach."), HumanMessage(content="Step 1 of 2: boil water.")]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for var in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
        TRANSPORT_ENV,
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    monkeypatch.setattr(lean_openai, "_backoff", lambda *a: 0.0)  # retries without waiting


def model(base_url: str, transport: str = "lean", monkeypatch=None, **settings):
    import os

    old = os.environ.get(TRANSPORT_ENV)
    os.environ[TRANSPORT_ENV] = transport
    try:
        return make_chat_model(
            "openai:fake-model",
            ModelSettings(**{"max_retries": 0, **settings}),
            LocalModelSettings(),
            base_url=base_url,
        )
    finally:
        if old is None:
            os.environ.pop(TRANSPORT_ENV, None)
        else:
            os.environ[TRANSPORT_ENV] = old


def test_openai_specs_get_the_lean_client_unless_sdk_is_asked_or_the_proxy_is_one_aiohttp_cannot_use(monkeypatch):
    with FakeOpenAI() as srv:
        assert type(model(srv.base_url)) is LeanChatOpenAI
        assert type(model(srv.base_url, "sdk")) is ChatOpenAI
        monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
        assert type(model(srv.base_url)) is LeanChatOpenAI  # aiohttp takes an http:// proxy
        monkeypatch.setenv("HTTP_PROXY", "socks5://proxy.invalid:1080")
        assert type(model(srv.base_url)) is ChatOpenAI  # the SDK's httpx handles the rest
        monkeypatch.delenv("HTTP_PROXY")
        monkeypatch.setenv("ALL_PROXY", "http://proxy.invalid:3128")
        assert type(model(srv.base_url)) is ChatOpenAI
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert type(model(srv.base_url)) is LeanChatOpenAI


def test_requests_go_through_the_proxy_from_the_environment_unless_no_proxy_says_otherwise(monkeypatch):
    """A forwarding HTTP proxy (absolute-form request line): the lean client sends through it, key included,
    as the SDK does for an http:// server; NO_PROXY bypasses it."""
    via_proxy = []

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            import urllib.request

            via_proxy.append(self.path)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            req = urllib.request.Request(
                self.path,
                data=body,
                method="POST",
                headers={k: v for k, v in self.headers.items() if k.lower() != "host"},
            )
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req) as up:
                data = up.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    proxy = LocalServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with FakeOpenAI() as srv:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
            m = model(srv.base_url)
            assert type(m) is LeanChatOpenAI and asyncio.run(m.ainvoke(MSGS)).content
            assert via_proxy == [srv.base_url + "/chat/completions"] and srv.auth == [f"Bearer {KEY}"]
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            assert asyncio.run(m.ainvoke(MSGS)).content  # a new loop: the session reads the environment again
            assert len(via_proxy) == 1 and len(srv.requests) == 2
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_same_request_body_and_reply_as_chatopenai():
    def logprobs(prompt):
        return [("4", {"4": 0.7, "3": 0.2, "5": 0.1})]

    with FakeOpenAI(logprobs=logprobs) as srv:
        calls = [
            lambda m: m.ainvoke(MSGS),
            lambda m: m.bind(logprobs=True, top_logprobs=5).ainvoke([HumanMessage(content="Score it")], stop=["\n"]),
        ]
        for call in calls:
            replies, bodies = [], []
            for transport in ("sdk", "lean"):
                m = model(srv.base_url, transport, temperature=0.3, seed=7, max_tokens=64)
                m.extra_body = {"cache_prompt": False}
                replies.append(asyncio.run(call(m)))
                bodies.append(srv.requests[-1])
            assert bodies[0] == bodies[1]
            assert bodies[1]["max_completion_tokens"] == 64 and bodies[1]["cache_prompt"] is False
            sdk, lean = replies
            assert lean.content == sdk.content and lean.usage_metadata == sdk.usage_metadata
            for k in ("finish_reason", "model_name", "id", "model_provider"):
                assert lean.response_metadata[k] == sdk.response_metadata[k]
            assert lean.response_metadata["logprobs"] == (
                None
                if sdk.response_metadata["logprobs"] is None
                else {"content": sdk.response_metadata["logprobs"]["content"]}
            )
        assert [e["token"] for e in lean.response_metadata["logprobs"]["content"][0]["top_logprobs"]] == ["4", "3", "5"]


def test_the_judges_weighted_scoring_reads_the_lean_clients_logprobs():
    from wikihowagent.backends import capabilities

    with FakeOpenAI() as srv:
        assert capabilities(model(srv.base_url)).logprobs


def test_server_errors_are_the_same_one_line_errors_as_through_the_sdk():
    msg = "no route [/v1/chat/completions] :100:"
    with FakeOpenAI(fail_when=lambda p: True, error_message=msg) as srv:
        errors = []
        for transport in ("sdk", "lean"):
            with pytest.raises(Exception) as info:
                asyncio.run(model(srv.base_url, transport).ainvoke(MSGS))
            errors.append(info.value)
    sdk, lean = errors
    assert type(lean) is type(sdk) and str(lean) == str(sdk) and "\n" not in str(lean)
    assert lean.status_code == 500 and msg in str(lean) and not is_connection_error(lean)


def _status_server(script):
    """An OpenAI-compatible server answering POSTs from `script`: a list of (status, body dict, headers)."""
    seen: list[dict] = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status, body, headers = script[min(len(seen), len(script)) - 1]
            data = json.dumps(body).encode()
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    srv = LocalServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/v1", seen


OK = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "fake-model",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def test_retries_follow_the_sdk_rules():
    busy = (503, {"error": {"message": "busy"}}, {})
    srv, url, seen = _status_server([busy, (429, {"error": {"message": "slow down"}}, {}), (200, OK, {})])
    try:
        assert asyncio.run(model(url, max_retries=2).ainvoke(MSGS)).content == "fine" and len(seen) == 3
        seen.clear()
        with pytest.raises(Exception) as info:  # one retry is not enough
            asyncio.run(model(url, max_retries=1).ainvoke(MSGS))
        assert info.value.status_code == 429 and len(seen) == 2
    finally:
        srv.shutdown()
        srv.server_close()
    srv, url, seen = _status_server([(503, {"error": {"message": "busy"}}, {"x-should-retry": "false"}), (200, OK, {})])
    try:  # the server says not to retry
        with pytest.raises(openai.APIStatusError):
            asyncio.run(model(url, max_retries=3).ainvoke(MSGS))
        assert len(seen) == 1
    finally:
        srv.shutdown()
        srv.server_close()


def test_context_overflow_is_a_400_the_judge_recognises():
    from wikihowagent.judge.rubric_judge import _is_context_error, is_request_error

    text = "This model's maximum context length is 8192 tokens; your prompt is too long (context_length_exceeded)"
    srv, url, _ = _status_server([(400, {"error": {"message": text, "code": "context_length_exceeded"}}, {})])
    try:
        errors = []
        for transport in ("sdk", "lean"):
            with pytest.raises(Exception) as info:
                asyncio.run(model(url, transport, max_retries=3).ainvoke(MSGS))
            errors.append(info.value)
    finally:
        srv.shutdown()
        srv.server_close()
    sdk, lean = errors
    assert type(lean) is type(sdk) and str(lean) == str(sdk)
    assert lean.status_code == 400 and is_request_error(lean) and _is_context_error(lean)


def test_unreachable_and_timeout_are_connection_errors():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    errors = []
    for transport in ("sdk", "lean"):
        with pytest.raises(Exception) as info:
            asyncio.run(model(f"http://127.0.0.1:{port}/v1", transport).ainvoke(MSGS))
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0]) and str(errors[1]) == str(errors[0])
    assert is_connection_error(errors[1])

    gate = threading.Event()
    with FakeOpenAI(reply=lambda p: (gate.wait(5), "late")[1]) as srv:
        with pytest.raises(Exception) as info:
            asyncio.run(model(srv.base_url, timeout_s=0.2).ainvoke(MSGS))
        gate.set()
    assert type(info.value).__name__ == "OpenAITimeoutError" and is_connection_error(info.value)


def test_the_key_goes_to_the_named_host_only_and_never_into_repr_or_errors():
    other = FakeOpenAI()
    with other, FakeOpenAI() as srv:
        redirect = (307, {"error": {"message": "moved"}}, {"Location": other.base_url + "/chat/completions"})
        rsrv, url, seen = _status_server([redirect])
        try:
            m = model(url)
            with pytest.raises(Exception) as info:  # a redirect is not followed: the key stays with `url`
                asyncio.run(m.ainvoke(MSGS))
        finally:
            rsrv.shutdown()
            rsrv.server_close()
        assert len(seen) == 1 and other.requests == [] and other.auth == []
        assert KEY not in str(info.value) and KEY not in repr(m) and m._http is not None and KEY not in repr(m._http)
        asyncio.run(model(srv.base_url).ainvoke(MSGS))
        assert srv.auth == [f"Bearer {KEY}"]


class _RawServer:
    """A keep-alive HTTP/1.1 server on a raw socket: counts connections; answers chunked when asked."""

    def __init__(self, chunked: bool, drop_second_request: bool = False):
        self.drop_second_request = drop_second_request
        self.requests = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.connections = 0
        self.chunked = chunked
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                length = int(
                    [h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0].split(b":")[1]
                )
                while len(buf) < length:
                    buf += conn.recv(65536)
                buf = buf[length:]
                self.requests += 1
                if self.drop_second_request and self.requests == 2:
                    return  # closes the connection without a word
                body = json.dumps(OK).encode()
                if self.chunked:  # in two chunks, with a chunk extension and a trailer
                    half = len(body) // 2
                    payload = (
                        f"{half:x};ext=1\r\n".encode()
                        + body[:half]
                        + b"\r\n"
                        + f"{len(body) - half:x}\r\n".encode()
                        + body[half:]
                        + b"\r\n0\r\nX-Trailer: 1\r\n\r\n"
                    )
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n" + payload
                    )
                else:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                        + str(len(body)).encode()
                        + b"\r\n\r\n"
                        + body
                    )

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("chunked", [False, True])
def test_keep_alive_connections_are_reused_and_chunked_replies_parsed(chunked):
    srv = _RawServer(chunked)
    try:
        m = model(srv.url)

        async def run():
            for _ in range(5):  # one after the other: one connection
                assert (await m.ainvoke(MSGS)).content == "fine"
            replies = await asyncio.gather(*(m.ainvoke(MSGS) for _ in range(4)))
            return [r.content for r in replies]

        assert asyncio.run(run()) == ["fine"] * 4
        assert 1 <= srv.connections <= 4  # the sequential calls shared one; concurrent ones need their own
        assert asyncio.run(m.ainvoke(MSGS)).content == "fine"  # a new event loop: fresh connections
    finally:
        srv.close()


def test_a_server_that_hangs_up_mid_reply_is_a_connection_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    served = []

    def hang_up():
        while True:
            try:
                conn, _ = s.accept()
            except OSError:
                return
            served.append(1)
            conn.recv(65536)
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial')
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    m = model(f"http://127.0.0.1:{s.getsockname()[1]}/v1", timeout_s=5)
    with pytest.raises(Exception) as info:
        asyncio.run(m.ainvoke(MSGS))
    s.close()
    assert type(info.value).__name__ == "OpenAIConnectionError" and is_connection_error(info.value)
    assert len(served) == 1  # a cut-off reply is not sent again beyond max_retries (0 here)
    assert KEY not in str(info.value) and KEY not in repr(m._http)


def test_a_stale_keep_alive_connection_is_sent_again_once():
    """The server closes a kept-alive connection without answering (as when its idle timeout strikes just as
    the request goes out): sent once more at once, without using up max_retries."""
    srv = _RawServer(chunked=False, drop_second_request=True)
    try:
        m = model(srv.url)

        async def run():
            return [(await m.ainvoke(MSGS)).content for _ in range(2)]

        assert asyncio.run(run()) == ["fine", "fine"]
        assert srv.connections == 2
    finally:
        srv.close()


def test_one_session_per_event_loop_closed_with_its_loop(recwarn):
    import gc

    with FakeOpenAI() as srv:
        m = model(srv.base_url)
        sessions = []
        for _ in range(3):  # as the CLI and the tests do: several asyncio.run() with one model
            assert asyncio.run(m.ainvoke(MSGS)).content
            sessions.append(m._http.session)
            assert m._http.session.closed  # closed by the loop's shutdown_asyncgens()
        assert len({id(x) for x in sessions}) == 3

        async def explicit():
            await m.ainvoke(MSGS)
            first = m._http.session
            await m.aclose()
            assert first.closed and m._http is None
            await m.ainvoke(MSGS)  # a new session in the same loop
            return m._http.session

        assert asyncio.run(explicit()).closed
        loop = asyncio.new_event_loop()  # a loop run by hand (the evaluation runner, chat, judge-check)
        try:
            loop.run_until_complete(m.ainvoke(MSGS))
            session = m._http.session
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        assert session.closed
        del sessions, session
        gc.collect()
    assert not [w for w in recwarn if "Unclosed" in str(w.message)]


def test_retry_after_and_backoff_rules():
    assert lean_openai._retry_after({"retry-after-ms": "1500"}) == 1.5
    assert lean_openai._retry_after({"retry-after": "3"}) == 3.0
    assert lean_openai._retry_after({}) is None

    class R:
        def __init__(self, status, headers=None):
            self.status, self.headers = status, headers or {}

    assert all(lean_openai._should_retry(R(s), None) for s in (408, 409, 429, 500, 503))
    assert not any(lean_openai._should_retry(R(s), None) for s in (400, 401, 404, 422))
    assert not lean_openai._should_retry(R(503), 600.0)  # the server asks for more than 2 minutes
    assert lean_openai._should_retry(R(400, {"x-should-retry": "true"}), None)


def test_backoff_grows_and_honours_retry_after():
    from importlib import reload

    fresh = reload(lean_openai)  # the autouse fixture replaced _backoff in the module object
    try:
        assert fresh._backoff(3, 3, 2.5) == 2.5
        first, third = fresh._backoff(3, 3, None), fresh._backoff(3, 1, None)
        assert 0.375 <= first <= 0.5 and 1.5 <= third <= 2.0
        assert fresh._backoff(20, 1, None) <= 8.0
    finally:
        reload(lean_openai)


class _Recorder(AsyncCallbackHandler):
    def __init__(self):
        self.starts = 0

    async def on_chat_model_start(self, *a, **k):
        self.starts += 1


def test_direct_calls_give_the_same_reply_and_step_aside_for_callbacks():
    with FakeOpenAI() as srv:
        resolved = resolve_spec("openai:fake-model")
        pooled = make_pooled_chat_model(resolved, ModelSettings(max_retries=0), LocalModelSettings(), [srv.base_url])
        direct = asyncio.run(achat(pooled, MSGS))
        full = asyncio.run(pooled.ainvoke(MSGS))
        assert isinstance(direct, AIMessage) and direct.content == full.content
        assert direct.usage_metadata == full.usage_metadata
        assert {k: direct.response_metadata[k] for k in ("finish_reason", "model_name", "token_usage")} == {
            k: full.response_metadata[k] for k in ("finish_reason", "model_name", "token_usage")
        }
        rec = _Recorder()
        observed = pooled.model_copy(update={"callbacks": [rec]})
        asyncio.run(achat(observed, MSGS))
        assert rec.starts == 1  # a model with callbacks goes through ainvoke


def test_generate_writes_the_same_conversations_with_either_transport(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    runs = {}
    with FakeOpenAI() as srv:
        for transport in ("sdk", "lean"):
            monkeypatch.setenv(TRANSPORT_ENV, transport)
            out = tmp_path / transport
            res = CliRunner().invoke(
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
                    "3",
                    "--retries",
                    "0",
                ],
            )
            assert res.exit_code == 0, res.output
            runs[transport] = sorted(
                (json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()),
                key=lambda r: r["tutorial_id"],
            )
    keep = ("tutorial_id", "conversation", "finished", "stop_reason", "error", "warnings")
    assert [{k: r[k] for k in keep} for r in runs["sdk"]] == [{k: r[k] for k in keep} for r in runs["lean"]]
    tokens = [[(t["prompt_tokens"], t["completion_tokens"]) for t in r["turns"]] for r in runs["sdk"]]
    assert tokens == [[(t["prompt_tokens"], t["completion_tokens"]) for t in r["turns"]] for r in runs["lean"]]


def test_https_verifies_the_server_against_ssl_cert_file_else_certifi(tmp_path, monkeypatch):
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    srv = FakeOpenAI()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.server.socket = ctx.wrap_socket(srv.server.socket, server_side=True)
    url = srv.base_url.replace("http://", "https://")
    with srv:
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        assert asyncio.run(model(url).ainvoke(MSGS)).content
        assert srv.auth == [f"Bearer {KEY}"]
        monkeypatch.delenv("SSL_CERT_FILE")
        with pytest.raises(Exception) as info:  # certifi's CAs do not know this self-signed certificate
            asyncio.run(model(url).ainvoke(MSGS))
        assert is_connection_error(info.value) and len(srv.requests) == 1


@pytest.fixture()
def private_api_cache():
    from wikihowagent.backends.private_api import private_api_ok

    private_api_ok.cache_clear()
    yield private_api_ok
    private_api_ok.cache_clear()


def test_without_the_private_api_generate_takes_the_public_path(tmp_path, monkeypatch, private_api_cache):
    """A LangChain release that drops a private name the hot path uses: `generate` still works, through
    `ainvoke` and ChatOpenAI's own transport."""
    import langchain_openai.chat_models.base as openai_base
    from typer.testing import CliRunner

    from wikihowagent.backends.calls import achat
    from wikihowagent.backends.openai_compat import lean_transport
    from wikihowagent.backends.private_api import problems
    from wikihowagent.cli import app

    assert private_api_cache() and lean_transport(None)  # the pinned versions: the private path
    monkeypatch.delattr(openai_base, "_handle_openai_bad_request")  # (langchain-openai needs it only on errors)
    private_api_cache.cache_clear()
    assert problems() == ["langchain_openai.chat_models.base._handle_openai_bad_request is missing"]
    assert not private_api_cache() and not lean_transport(None)

    class Direct(BaseChatModel):  # a direct-call model whose _agenerate must not be reached
        direct_calls: ClassVar[bool] = True
        calls: ClassVar[list[str]] = []

        @property
        def _llm_type(self) -> str:
            return "direct"

        def _generate(self, messages, stop=None, run_manager=None, **kw):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="ok"))])

        async def _agenerate(self, messages, stop=None, run_manager=None, **kw):
            Direct.calls.append("direct" if run_manager is None else "public")  # ainvoke passes a run manager
            return self._generate(messages)

    assert asyncio.run(achat(Direct(), MSGS)).content == "ok" and Direct.calls == ["public"]
    with FakeOpenAI() as srv:
        res = CliRunner().invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(tmp_path / "run"),
                "--max-tutorials",
                "2",
                "--retries",
                "0",
            ],
        )
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in (tmp_path / "run" / "conversations.jsonl").read_text().splitlines()]
    assert len(recs) == 2 and all(r["error"] is None and len(r["turns"]) > 2 for r in recs)


def test_another_version_takes_the_public_path(monkeypatch, private_api_cache):
    from wikihowagent.backends import private_api

    monkeypatch.setitem(private_api.TESTED, "langchain-openai", "0.0.1")
    assert any(p.startswith("langchain-openai 1.") and "0.0.1" in p for p in private_api.problems())
    assert not private_api_cache()
