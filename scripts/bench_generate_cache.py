"""Benchmark llama.cpp's prompt cache for `generate` on the embedded model (section "generate prompt cache").

Full-length conversations (workflow defaults: up to 40 messages, history 0 = the paper's prompts, learner
farewell on, no post-test) of the bundled tutorials with the `passive` learner persona, each on a freshly started
embedded server, one conversation at a time (concurrency 1), in three modes, interleaved per tutorial:

    old     local.n_parallel 1, local.cache_prompt false (the defaults)
    cache   local.n_parallel 2, local.cache_prompt true (one slot per role: teacher and learner alternate)
    slots2  local.n_parallel 2, local.cache_prompt false (does a second slot alone change the text?)

For every model call the server's own `timings` (prompt_n = prompt tokens read, cache_n = reused from the slot)
are recorded through the HTTP transport, and /slots after it (which slot holds which prompt). Outputs are
compared message by message: `cache` twice (run-to-run determinism) and against `old`.

Resumable: results go to --out (JSON lines), done (tutorial, mode, rep) rows are skipped, and a new conversation
starts only while --budget-s allows one more of the slowest kind seen (run it under the model lock, in chunks).

    flock /tmp/wikihowagent-model.lock timeout -s INT 590 python scripts/bench_generate_cache.py --budget-s 540
    python scripts/bench_generate_cache.py --report [--write-md]      # no model: the table from --out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchmarks_md import write_section  # noqa: E402

from wikihowagent.config import load_config  # noqa: E402
from wikihowagent.corpus.core import load_tutorials  # noqa: E402
from wikihowagent.generation.core import run_conversations  # noqa: E402
from wikihowagent.runs import read_records  # noqa: E402
from wikihowagent.workflow.graph import WorkflowOptions  # noqa: E402
from wikihowagent.workflow.personas import select_personas  # noqa: E402
from wikihowagent.workflow.prompts import load_prompts  # noqa: E402

MODES = {"old": (1, False), "cache": (2, True), "slots2": (2, False)}
SECTION = "generate prompt cache"


class Recording(httpx.AsyncBaseTransport):
    """Forwards to a real transport and keeps each chat completion's `timings`/`usage` and /slots after it."""

    def __init__(self, slots_url: str) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.slots_url = slots_url
        self.calls: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        resp = await self.inner.handle_async_request(request)
        body = await resp.aread()
        row: dict[str, Any] = {}
        try:
            data = json.loads(body)
            row = {"timings": data.get("timings"), "usage": data.get("usage")}
        except ValueError:
            row = {"raw": body[:200].decode("utf-8", "replace")}
        try:
            async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport()) as c:
                slots = (await c.get(self.slots_url, timeout=10)).json()
            row["slots"] = [{k: v for k, v in s.items() if isinstance(v, (int, float, bool))} for s in slots]
        except (httpx.HTTPError, ValueError) as exc:
            row["slots"] = f"unavailable: {exc}"
        self.calls.append(row)
        return httpx.Response(resp.status_code, headers=resp.headers, content=body, request=request)


def one_conversation(tutorial_id: str, mode: str) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    from wikihowagent.backends import make_chat_model, shutdown_local_servers
    from wikihowagent.backends.local import running_servers

    cfg = load_config()
    cfg.local.n_parallel, cfg.local.cache_prompt = MODES[mode]
    tut = next(t for t in load_tutorials() if t.tutorial_id == tutorial_id)
    base: ChatOpenAI = make_chat_model("local", cfg.model, cfg.local)  # type: ignore[assignment]
    srv = running_servers()[0]
    rec = Recording(f"{srv.url}/slots")
    model = ChatOpenAI(
        **{
            **{k: getattr(base, k) for k in ("model_name", "openai_api_base", "temperature")},
            "seed": base.seed,
            "max_tokens": base.max_tokens,
            "api_key": "unused",
            "extra_body": base.extra_body,
            "stream_usage": True,
            "max_retries": 0,
            "http_async_client": httpx.AsyncClient(transport=rec, timeout=600),
        }
    )
    persona = select_personas(["passive"])[0]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "c.jsonl"
            t0 = time.perf_counter()
            stats = asyncio.run(
                run_conversations(
                    [tut],
                    model,
                    model,
                    load_prompts(),
                    WorkflowOptions(
                        max_interactions=cfg.workflow.max_interactions,
                        history=cfg.workflow.history,
                        learner_farewell=cfg.workflow.learner_farewell,
                        max_clarifications_per_step=cfg.workflow.max_clarifications_per_step,
                        seed=cfg.model.seed,
                    ),
                    out,
                    run_name="bench",
                    teacher="local",
                    learner="local",
                    concurrency=1,
                    personas={tut.tutorial_id: persona},
                )
            )
            wall = time.perf_counter() - t0
            records = [r for _, r in read_records(out)]
    finally:
        shutdown_local_servers()
    texts = [t.text for t in records[0].turns] if records else []
    return {
        "tutorial": tutorial_id,
        "mode": mode,
        "wall_s": wall,
        "done": stats.done,
        "texts": texts,
        "calls": rec.calls,
    }


def run(out: Path, tutorials: list[str], reps: dict[str, int], budget_s: float) -> None:
    done = {(r["tutorial"], r["mode"], r["rep"]) for r in _rows(out)}
    plan = [(t, m, k) for t in tutorials for m in ("old", "cache") for k in range(reps.get(m, 0))]
    plan += [(t, "slots2", k) for t in tutorials for k in range(reps.get("slots2", 0))]
    t_start, slowest = time.perf_counter(), 0.0
    for tut, mode, rep in plan:
        if (tut, mode, rep) in done:
            continue
        if time.perf_counter() - t_start + slowest * 1.1 > budget_s:
            print(f"budget: stopping before {tut} {mode} #{rep}", flush=True)
            return
        t0 = time.perf_counter()
        row = {**one_conversation(tut, mode), "rep": rep}
        slowest = max(slowest, time.perf_counter() - t0)
        with out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        read = sum((c.get("timings") or {}).get("prompt_n", 0) for c in row["calls"])
        reused = sum((c.get("timings") or {}).get("cache_n", 0) for c in row["calls"])
        print(
            f"{tut} {mode} #{rep}: {row['wall_s']:.0f} s, {len(row['texts'])} messages, "
            f"{len(row['calls'])} calls, prompt tokens read {read}, reused {reused}",
            flush=True,
        )


def _rows(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]


def _pairs(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each `old` row with the `cache` row of the same tutorial that came right after it in the file."""
    pairs, prev = [], None
    for r in rows:
        if prev is not None and prev["mode"] == "old" and r["mode"] == "cache" and r["tutorial"] == prev["tutorial"]:
            pairs.append((prev, r))
        prev = r
    return pairs


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def _sum(row: dict[str, Any], key: str) -> float:
    return sum((c.get("timings") or {}).get(key, 0) for c in row["calls"])


def _first_diff(a: list[str], b: list[str]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"message {i + 1}"
    return "identical" if len(a) == len(b) else f"length {len(a)} vs {len(b)}"


def report(out: Path, write_md: bool) -> str:
    rows = _rows(out)
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["tutorial"], r["mode"]), []).append(r)
    lines = [
        "| tutorial | mode | runs | messages | model calls | s / conversation (range) | prompt tokens read | "
        "reused from the slot | server s reading prompts | server s generating |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (tut, mode), rs in sorted(by.items()):
        read = [_sum(r, "prompt_n") for r in rs]
        walls = [r["wall_s"] for r in rs]
        lines.append(
            f"| {tut} | {mode} | {len(rs)} | {len(rs[0]['texts'])} | {len(rs[0]['calls'])} | "
            f"{statistics.mean(walls):.0f} ({min(walls):.0f}-{max(walls):.0f}) | {statistics.mean(read):.0f} | "
            f"{statistics.mean(_sum(r, 'cache_n') for r in rs):.0f} | "
            f"{statistics.mean(_sum(r, 'prompt_ms') for r in rs) / 1000:.0f} | "
            f"{statistics.mean(_sum(r, 'predicted_ms') for r in rs) / 1000:.0f} |"
        )
    cmp = []
    for tut in sorted({t for t, _ in by}):
        old, cache, two = by.get((tut, "old")), by.get((tut, "cache")), by.get((tut, "slots2"))
        for mode in ("old", "cache"):
            rs = by.get((tut, mode)) or []
            if len(rs) >= 2:
                diffs = [_first_diff(rs[0]["texts"], r["texts"]) for r in rs[1:]]
                same = all(d == "identical" for d in diffs)
                verdict = f"all {len(rs)} identical" if same else "first differs from the others at " + ", ".join(diffs)
                cmp.append(f"- {tut}: {mode} runs with each other (fresh server each): {verdict}")
        if old and cache:
            cmp.append(f"- {tut}: old vs cache: {_first_diff(old[0]['texts'], cache[0]['texts'])}")
        if old and two:
            cmp.append(
                f"- {tut}: old (1 slot) vs slots2 (2 slots, no cache): {_first_diff(old[0]['texts'], two[0]['texts'])}"
            )
    pairs = _pairs(rows)
    if pairs:
        walls = [c["wall_s"] / o["wall_s"] for o, c in pairs]
        reads = [_sum(c, "prompt_n") / _sum(o, "prompt_n") for o, c in pairs]
        prompt_s = [_sum(c, "prompt_ms") / _sum(o, "prompt_ms") for o, c in pairs]
        cmp += [
            "",
            f"Interleaved pairs (an `old` conversation and the `cache` one run right after it, same tutorial), "
            f"n = {len(pairs)}, cache / old, median (range):",
            f"- prompt tokens read: {_med(reads)}",
            f"- server seconds reading prompts: {_med(prompt_s)}",
            f"- seconds per conversation: {_med(walls)}",
        ]
    load = (
        "The 2 cores were shared with other jobs and the load changed between chunks (the same `old` conversation "
        "took 95 s in the first chunk and 21-48 s later): compare seconds only within the interleaved pairs below."
    )
    body = "\n".join([*lines, "", load, "", "Outputs (message by message):", *cmp])
    print(body)
    if write_md:
        intro = "\n\n".join(__doc__.split("\n\n")[1:4])
        how = (
            "Embedded model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process, n_batch 64), 2 CPU cores. "
            "Run in chunks under the model lock: `python scripts/bench_generate_cache.py --budget-s 540` "
            "(then `--tutorials 7ea52e5970fe423c,d6f1c8b032107329,0f097063e348351d --reps old=2,cache=3`), "
            "table: `--report --write-md`."
        )
        write_section(SECTION, f"{intro}\n\n{how}\n\n{body}")
    return body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_generate_cache.jsonl"))
    ap.add_argument("--tutorials", default="", help="comma-separated ids (default: the 2 shortest bundled)")
    ap.add_argument("--reps", default="old=1,cache=2,slots2=1")
    ap.add_argument("--budget-s", type=float, default=540)
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    if args.report:
        report(args.out, args.write_md)
        return
    tuts = [t for t in args.tutorials.split(",") if t] or [
        t.tutorial_id for t in sorted(load_tutorials(), key=lambda t: sum(len(s) for s in t.steps))[:2]
    ]
    reps = {k: int(v) for k, v in (p.split("=") for p in args.reps.split(","))}
    run(args.out, tuts, reps, args.budget_s)


if __name__ == "__main__":
    main()
