"""The `local` backend: llama.cpp in this process via xllamacpp's embedded OpenAI-compatible server.

`xllamacpp.Server(CommonParams)` loads the GGUF and serves /v1/chat/completions on 127.0.0.1 from a
background thread (port 0 = a free port, read back from `listening_address`); `n_parallel` slots
serve concurrent requests with continuous batching. Agents reach it through
`langchain_openai.ChatOpenAI`, so token usage, retries and `.with_structured_output` (llama.cpp
honours `response_format` json_schema) work as with any OpenAI-compatible server.

One server per (model file, n_ctx, n_parallel, n_threads) per process, started lazily on the first
`make_chat_model('local', ...)`, shared by every role, stopped by `shutdown_local_servers()`
(registered with atexit when the first server starts). Nothing happens at import.

Reproducibility: temperature, seed and `cache_prompt: false` go in every request body (with prompt
cache reuse the text drifts after a few dozen words). With several slots busy at once outputs can
still differ from a one-slot run (batched matmuls); use n_parallel=1 for bit-exact reruns.

llama.cpp logs: silenced (verbosity 1 = errors only). WIKIHOWAGENT_LLAMA_LOG=1 shows the info log
and timings; a larger number (e.g. 4) is passed as the verbosity itself.

    python -m wikihowagent.backends.local --prepare   # assemble + verify the weights once (make install)
    python -m wikihowagent.backends.local --smoke     # start the server, one short reply, tokens/s
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .factory import BackendError, ResolvedSpec
from .model_files import MODEL_NAME, ensure_local_model

if TYPE_CHECKING:  # pragma: no cover
    from langchain_openai import ChatOpenAI

    from wikihowagent.config import LocalModelSettings, ModelSettings

LOG_ENV = "WIKIHOWAGENT_LLAMA_LOG"


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

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"


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


def _start(model_path: Path, alias: str, n_ctx: int, n_parallel: int, n_threads: int) -> tuple[Any, str, float]:
    try:
        import xllamacpp
    except ImportError as exc:
        raise BackendError(f"The embedded backend needs xllamacpp: run 'make install' ({exc}).") from None
    verbosity, verbose = _log_verbosity()
    p = xllamacpp.CommonParams()
    p.model.path = str(model_path)
    p.model_alias = {alias}
    p.n_ctx = n_ctx
    p.n_parallel = n_parallel
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
    path = Path(model_path) if model_path is not None else ensure_local_model()
    n_threads = local.n_threads if local.n_threads > 0 else _cpu_count()
    n_parallel = max(1, local.n_parallel)
    key = (str(path.resolve()), local.n_ctx, n_parallel, n_threads)
    with _LOCK:
        srv = _SERVERS.get(key)
        if srv is not None:
            return srv
        server, url, secs = _start(path, alias, local.n_ctx, n_parallel, n_threads)
        srv = LocalServer(key, path, alias, url, local.n_ctx, n_parallel, n_threads, secs, server)
        _SERVERS[key] = srv
        if not _ATEXIT_REGISTERED:
            atexit.register(shutdown_local_servers)
            _ATEXIT_REGISTERED = True
        return srv


def running_servers() -> list[LocalServer]:
    with _LOCK:
        return list(_SERVERS.values())


def shutdown_local_servers() -> None:
    """Stop every embedded server (the C++ destructor joins the server threads). Idempotent."""
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for srv in servers:
        srv._server = None  # drops the last reference: ~Server stops the HTTP and inference loops
    del servers
    gc.collect()


def make_local_chat_model(resolved: ResolvedSpec, settings: ModelSettings, local: LocalModelSettings) -> ChatOpenAI:
    from langchain_openai import ChatOpenAI

    path = Path(resolved.path) if resolved.path else None
    if path is not None and not path.is_file():
        raise BackendError(f"Local model file not found: {path} (needed for '{resolved.display}').")
    srv = get_local_server(local, path, alias=resolved.model)
    import httpx

    # No keep-alive: an idle pooled connection (e.g. left by a closed event loop) would make the server's
    # shutdown wait for it to time out. A fresh loopback connection per request costs nothing next to a
    # multi-second generation, and a client with no pooled connections is usable from any event loop.
    no_keepalive = httpx.Limits(max_keepalive_connections=0)
    return ChatOpenAI(
        http_client=httpx.Client(limits=no_keepalive, timeout=settings.timeout_s),
        http_async_client=httpx.AsyncClient(limits=no_keepalive, timeout=settings.timeout_s),
        model=srv.alias,
        base_url=srv.base_url,
        api_key="unused",
        temperature=settings.temperature,
        seed=settings.seed,
        max_tokens=min(settings.max_tokens, local.max_tokens),
        timeout=settings.timeout_s,
        max_retries=settings.max_retries,
        stream_usage=True,
        extra_body={"cache_prompt": False},  # prompt-cache reuse makes outputs drift between runs
    )


# --------------------------------------------------------------------------- CLI (Makefile hooks)


def _prepare() -> Path:
    from . import model_files

    dest = model_files.model_path()
    if dest.is_file() and model_files._stamp_ok(dest, model_files.MODEL_SHA256):
        print(f"model ready: {dest}")
        return dest
    try:
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn()) as bar:
            task = bar.add_task("assembling + verifying the local model", total=model_files.MODEL_SIZE)
            path = ensure_local_model(lambda done, total: bar.update(task, completed=done, total=total))
    except ImportError:  # pragma: no cover
        path = ensure_local_model()
    print(f"model ready: {path}")
    return path


def _smoke(n_parallel: int, max_tokens: int) -> None:
    from wikihowagent.config import LocalModelSettings, ModelSettings

    # `python -m` runs this file as __main__: use the package module so the registry is the shared one
    from wikihowagent.backends import local as mod
    from wikihowagent.backends.factory import make_chat_model

    t0 = time.perf_counter()
    chat = make_chat_model("local", ModelSettings(max_tokens=max_tokens), LocalModelSettings(n_parallel=n_parallel, n_ctx=4096))
    srv = mod.running_servers()[0]
    print(f"server {srv.url} started in {srv.start_s:.1f} s (total {time.perf_counter() - t0:.1f} s incl. model check)")
    t1 = time.perf_counter()
    msg = chat.invoke("In one sentence: how do I boil an egg?")
    dt = time.perf_counter() - t1
    usage = msg.usage_metadata or {}
    out = usage.get("output_tokens", 0)
    print(f"reply ({dt:.1f} s, {usage}): {msg.content!r}")
    print(f"~{out / dt:.1f} generated tokens/s (wall, incl. prompt)")
    mod.shutdown_local_servers()


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m wikihowagent.backends.local", description=__doc__.split("\n")[0])
    ap.add_argument("--prepare", action="store_true", help="assemble and verify the GGUF in the cache (default action)")
    ap.add_argument("--verify", action="store_true", help="re-hash the cached GGUF even if a stamp exists")
    ap.add_argument("--smoke", action="store_true", help="start the server and get one short reply")
    ap.add_argument("--path", action="store_true", help="print the GGUF path only")
    ap.add_argument("--n-parallel", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args(argv)
    try:
        if args.path:
            from .model_files import model_path

            print(model_path())
            return 0
        if args.verify:
            print(f"verified: {ensure_local_model(force_verify=True)}")
        else:
            _prepare()
        if args.smoke:
            _smoke(args.n_parallel, args.max_tokens)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
