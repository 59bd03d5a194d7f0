"""Benchmark the client side of `generate` at scale and write BENCHMARKS.md (section "scale").

A fake OpenAI-compatible server runs in a child process on 127.0.0.1 (asyncio, keep-alive) and answers
every chat request after `--latency` seconds; it accounts the requests in flight on its side. The client
is `generate`'s real path in this process: the LangGraph graph, the runner with fsynced JSONL, and the
chat clients made by `make_pooled_chat_model` (langchain-openai over HTTP). Measured:

* client CPU per message: this process's CPU time (user + system) / chat requests served;
* slot utilisation: the server's mean requests in flight / `--concurrency`, over the steady part of the
  run (first request -> the moment the last conversation starts; the tail, where fewer conversations than
  slots remain, is reported separately);
* peak RSS of the client.

    python -m benchmarks scale [--write-md] [--latency 1.0] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, Section, write_section

# --------------------------------------------------------------------------- the fake server (child process)


def serve(port_file: str, latency: float) -> None:
    events: list[tuple[float, int]] = []  # (monotonic time, +1 / -1)
    reply = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Step done. Next step please."},
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 6, "total_tokens": 56},
        }
    ).encode()
    models = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for h in lines[1:]:
                    if h.lower().startswith("content-length:"):
                        length = int(h.split(":", 1)[1])
                if length:
                    await reader.readexactly(length)
                if method == "POST" and path.endswith("/chat/completions"):
                    events.append((time.monotonic(), 1))
                    await asyncio.sleep(latency)
                    events.append((time.monotonic(), -1))
                    body = reply
                elif path.startswith("/stats"):
                    body = json.dumps(events).encode()
                    events.clear() if "reset" in path else None
                else:
                    body = models
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\n\r\n"
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    port_file = tempfile.mktemp(prefix="bench-scale-port-")
    argv = [sys.executable, "-m", "benchmarks", "scale", "--serve", port_file, "--latency", str(latency)]
    proc = subprocess.Popen(argv, cwd=ROOT)
    for _ in range(200):
        if os.path.exists(port_file) and Path(port_file).read_text():
            break
        time.sleep(0.05)
    port = Path(port_file).read_text()
    os.unlink(port_file)
    return proc, f"http://127.0.0.1:{port}/v1"


def server_events(base_url: str, reset: bool = False) -> list[tuple[float, int]]:
    import urllib.request

    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + ("/stats/reset" if reset else "/stats")) as r:
        return [tuple(e) for e in json.loads(r.read())]


def mean_in_flight(events: list[tuple[float, int]], start: float, end: float) -> float:
    """Time-weighted mean of requests in flight over [start, end]."""
    if end <= start:
        return float("nan")
    level, area, t_prev = 0, 0.0, start
    for t, d in sorted(events):
        if t > start:
            area += level * (min(t, end) - t_prev)
            t_prev = min(t, end)
        if t >= end:
            break
        level += d
    area += level * max(0.0, end - t_prev)
    return area / (end - start)


# --------------------------------------------------------------------------- the client


def tutorials(n: int, steps: int = 4):
    from wikihowagent.records import Tutorial

    return [
        Tutorial(
            tutorial_id=f"t{i:06d}",
            doc_id=i,
            method_id=0,
            source_tutorial_path="bench",
            title=f"How to {i}",
            method_title=f"Method {i}",
            steps=[f"Do part {k} of task {i} carefully." for k in range(steps)],
        )
        for i in range(n)
    ]


def in_process_model(latency: float) -> Any:
    """A chat model in this process that answers every message after `latency` seconds and counts its calls
    (`calls`), called directly as the replica pool's models are."""
    from typing import ClassVar

    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class InProcess(BaseChatModel):
        direct_calls: ClassVar[bool] = True  # as the replica pool
        calls: int = 0

        @property
        def _llm_type(self) -> str:
            return "bench-in-process"

        def _generate(self, *a, **k):  # pragma: no cover - the pipeline is asynchronous
            raise NotImplementedError

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            self.calls += 1
            await asyncio.sleep(latency)
            usage = {"input_tokens": 50, "output_tokens": 6, "total_tokens": 56}
            msg = AIMessage(content="Step done. Next step please.", usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=msg, generation_info={"finish_reason": "stop"})])

    return InProcess()


def timed_conversations(
    n: int, model: Any, spec: str, concurrency: int, on_done: Any = None
) -> tuple[float, float, float]:
    """`generate`'s runner over `n` tutorials with `model` as teacher and learner (named `spec`), into a
    temporary run file, every conversation finished; -> (CPU seconds, wall seconds, monotonic time at the end)."""
    from wikihowagent.generation.core import RunStats, run_conversations
    from wikihowagent.workflow.graph import WorkflowOptions
    from wikihowagent.workflow.prompts import load_prompts

    tuts = tutorials(n)
    stats = RunStats(total=n)
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, t0 = time.process_time(), time.monotonic()
        asyncio.run(
            run_conversations(
                tuts,
                model,
                model,
                load_prompts(),
                WorkflowOptions(),
                Path(tmp) / "c.jsonl",
                run_name="bench",
                teacher=spec,
                learner=spec,
                concurrency=concurrency,
                on_done=on_done,
                stats=stats,
            )
        )
        t_end = time.monotonic()
        cpu, wall = time.process_time() - cpu0, t_end - t0
    assert stats.failed == 0, stats.errors[:3]
    return cpu, wall, t_end


def run_in_process(n: int, concurrency: int, latency: float) -> dict[str, float]:
    """The same graph and runner with an in-process model answering after `latency` (no HTTP, no server): the
    client CPU per message that is not the transport's."""
    model = in_process_model(latency)
    cpu, wall, _ = timed_conversations(n, model, "m", concurrency)
    return {
        "tutorials": n,
        "concurrency": concurrency,
        "requests": model.calls,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_ms_per_message": 1000 * cpu / model.calls,
        "utilisation": float("nan"),
        "tail_s": float("nan"),
        "tail_utilisation": float("nan"),
        "steady_s": float("nan"),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_1min": os.getloadavg()[0],
    }


def client_model(base_url: str, pooled: bool) -> Any:
    """`generate`'s chat client for the fake server: the replica pool's (`pooled`) or a plain one; no retries."""
    from wikihowagent.backends import make_chat_model, resolve_spec
    from wikihowagent.backends.replicas import make_pooled_chat_model
    from wikihowagent.config import load_config

    cfg = load_config(None, {"model": {"max_retries": 0, "timeout_s": 120}})
    if pooled:
        return make_pooled_chat_model(
            resolve_spec("openai:bench"), cfg.model, cfg.local, [base_url], pool_settings=cfg.replicas
        )
    return make_chat_model("openai:bench", cfg.model, cfg.local, base_url=base_url)


def run_client(base_url: str, n: int, concurrency: int, pooled: bool) -> dict[str, float]:
    model = client_model(base_url, pooled)
    finished: list[float] = []

    def on_done(_rec) -> None:
        finished.append(time.monotonic())

    server_events(base_url, reset=True)
    cpu, wall, t_end = timed_conversations(n, model, "openai:bench", concurrency, on_done)
    events = server_events(base_url)
    requests = sum(1 for _, d in events if d == 1)
    first = min(t for t, d in events if d == 1)
    # the last conversation starts when the (n - concurrency)-th one finishes; after that, the tail
    steady_end = finished[n - concurrency - 1] if n > concurrency else first
    return {
        "tutorials": n,
        "concurrency": concurrency,
        "requests": requests,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_ms_per_message": 1000 * cpu / requests,
        "utilisation": mean_in_flight(events, first, steady_end) / concurrency,
        "tail_s": t_end - steady_end,
        "tail_utilisation": mean_in_flight(events, steady_end, t_end) / concurrency,
        "steady_s": steady_end - first,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_1min": os.getloadavg()[0],
    }


# before: `--before-root DIR`'s own bench (a checkout of the code before the change, e.g. main: ChatOpenAI over the
# openai SDK + httpx, 8 clients per endpoint, LangChain's ainvoke, two graph supersteps per message);
# sdk: this code with the SDK transport (WIKIHOWAGENT_OPENAI_TRANSPORT=sdk), to split the gain;
# after: what `generate` does now (LeanChatOpenAI over aiohttp + direct calls).
VARIANTS = {
    "sdk": ["--transport", "sdk"],
    "after": ["--transport", "lean"],
    "after, no HTTP": ["--in-process"],
}
ORDER = {"before": 0, "plain": 0, "sdk": 1, "after": 2, "after, no HTTP": 3}


def section(results: list[dict], latency: float) -> Section:
    """The section from the variants' results (one JSON object each)."""

    def row(r: dict) -> str:
        util = "–" if r["utilisation"] != r["utilisation"] else f"{r['utilisation']:.3f}"
        tail = "–" if r["tail_s"] != r["tail_s"] else f"{r['tail_s']:.0f} s at {r['tail_utilisation']:.2f}"
        return (
            f"| {r['variant']} | {r['concurrency']} | {r['tutorials']:,} | {r['requests']:,} | "
            f"{r['cpu_ms_per_message']:.2f} | {util} | {tail} | {r['peak_rss_mb']:.0f} MB | "
            f"{r.get('load_1min', float('nan')):.1f} |"
        )

    ordered = sorted(results, key=lambda r: (r["concurrency"], ORDER.get(r["variant"], 9)))
    rows = "\n".join(row(r) for r in ordered)
    top = [r for r in ordered if r["variant"] == "after"][-1:]
    headline = "; ".join(
        f"client CPU {g['cpu_ms_per_message']:.2f} ms per message at concurrency {g['concurrency']}, "
        f"{g['utilisation']:.2f} of the slots busy"
        for g in top
    )
    load = os.getloadavg()[0]
    body = (
        SCALE_MD.format(latency=latency, rows=rows)
        + f"\nLoad average when written: {load:.1f} on {os.cpu_count()} cores (shared machine). "
        "Slot utilisation needs a free core: with the client starved of CPU it measures the "
        "machine's load, not the pipeline; client CPU per message is the robust figure. The fake "
        "server answers every request after exactly the same time and every conversation has the "
        "same 18 requests, so the conversations stay in step: the replies arrive in waves of up to "
        "--concurrency at once, and the last of a wave waits for the client to handle the others "
        "(~concurrency x the CPU per message); on a loaded machine that queueing is the idle "
        "share.\n"
    )
    return Section("scale", "generate (remote server)", headline, "python -m benchmarks scale", body)


def run_variants(sizes: list[tuple[int, int]], latency: float, quick: bool) -> list[dict]:
    """Every variant at every (concurrency, tutorials) size, each in a process of its own (`--only`); each result
    printed as it comes."""
    results = []
    for conc, n in sizes:
        for variant, flags in VARIANTS.items():
            argv = [
                sys.executable,
                "-m",
                "benchmarks",
                "scale",
                "--only",
                str(conc),
                "--latency",
                str(latency),
            ]
            argv += flags
            if variant == "after, no HTTP":  # CPU per message only: fewer tutorials do
                argv += ["--tutorials", str(min(n, 300))]
            argv += ["--quick"] * quick
            out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT).stdout
            r = json.loads(out.strip().splitlines()[-1])
            results.append(r | {"variant": variant, "load_1min": r.get("load_1min", os.getloadavg()[0])})
            print(json.dumps(results[-1]), flush=True)
    return results


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve")
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--write-md", action="store_true")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run; not for BENCHMARKS.md)")
    ap.add_argument("--plain", action="store_true", help="the chat client without the replica pool (before)")
    ap.add_argument(
        "--transport",
        choices=["lean", "sdk"],
        default="lean",
        help="the chat-completion transport (WIKIHOWAGENT_OPENAI_TRANSPORT)",
    )
    ap.add_argument("--only", choices=["16", "64", "256"])
    ap.add_argument("--in-process", action="store_true", help="with --only: an in-process model, no HTTP")
    ap.add_argument("--tutorials", type=int, help="tutorials for the --only size (default: 300 at 64, 2,000 at 256)")
    ap.add_argument("--results", nargs="*", help="write BENCHMARKS.md from these JSON results (variant key set)")
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, args.latency)
        return
    sizes = [(64, 300), (256, 2000)] if not args.quick else [(16, 40), (64, 200)]
    if args.only:  # one size per process: the HTTP clients are bound to their event loop
        os.environ["WIKIHOWAGENT_OPENAI_TRANSPORT"] = args.transport
        conc, n = next(s for s in sizes if str(s[0]) == args.only)
        if args.in_process:
            r = run_in_process(args.tutorials or n, conc, args.latency) | {"variant": "after, no HTTP"}
            print(json.dumps(r), flush=True)
            return
        proc, url = start_server(args.latency)
        try:
            r = run_client(url, args.tutorials or n, conc, pooled=not args.plain)
            r["variant"] = "plain" if args.plain else "before" if args.transport == "sdk" else "after"
            print(json.dumps(r), flush=True)
        finally:
            proc.terminate()
            proc.wait()
        return
    results = [json.loads(Path(f).read_text().strip().splitlines()[-1]) for f in args.results or []]
    if not results:
        results = run_variants(sizes, args.latency, args.quick)
    if args.write_md:
        write_section(section(results, args.latency))


SCALE_MD = """`generate`'s real client path (graph, runner, fsynced JSONL, the chat clients of
the replica pool over HTTP) against a fake OpenAI-compatible server in another process on 127.0.0.1 that
answers every request after {latency:g} s and counts the requests in flight on its side; four-step tutorials
(18 requests each). *sdk*: this code with `WIKIHOWAGENT_OPENAI_TRANSPORT=sdk` (direct calls and the shorter graph, SDK transport);
*after*: `generate` as it is now (`LeanChatOpenAI`: ChatOpenAI's payload and result over an aiohttp session;
direct `_agenerate` calls when nothing traces; the manager only after learner messages).
Client CPU = this process's CPU time / requests. Utilisation = the server's mean requests in flight /
concurrency from the first request until the last conversation starts; the tail after that is reported
separately. Load = the machine's 1-minute load average at the end of the run (2 cores, shared).
*after, no HTTP*: the same graph and runner with an in-process model that answers after the same latency
(no HTTP, no server): the part of the client CPU that is not the transport.

| variant | concurrency | tutorials | requests | client CPU ms / message | slot utilisation | tail | peak RSS | load |
| :-- | --: | --: | --: | --: | --: | :-- | --: | --: |
{rows}
"""


if __name__ == "__main__":
    main()
