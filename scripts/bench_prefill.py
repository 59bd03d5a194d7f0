#!/usr/bin/env python
"""What `local.n_batch` costs: the embedded server's prompt-reading speed per decode-step size (issue 28 #15).

A small step (n_batch 64, the default since issue 28) bounds how long a Ctrl-C waits for llama.cpp; this measures
what it costs when nobody presses Ctrl-C. For each n_batch value in turn (interleaved over --rounds, so a change
in the machine's load hits every value alike) the embedded server is started with that value, reads one
judge-sized prompt (--tokens, no prompt cache) --reps times with one generated token, and is stopped; llama.cpp's
own `timings.prompt_per_second` is recorded. Hold the model lock: `flock /tmp/wikihowagent-model.lock`.

    flock /tmp/wikihowagent-model.lock .venv/bin/python scripts/bench_prefill.py [--write-md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

SECTION = "prefill: prompt reading per decode step (local.n_batch)"


def prompt(tokens: int) -> str:
    """A judge-like prompt of about `tokens` tokens (a tutorial's words; ~0.75 words a token)."""
    from wikihowagent.corpus.core import default_tutorials_path, load_tutorials

    words: list[str] = []
    for t in load_tutorials(default_tutorials_path()):
        for s in t.steps:
            words.extend(str(s).split())
    text = " ".join(words)
    return " ".join(text.split()[: int(tokens * 0.75)])


def read_once(url: str, text: str) -> float:
    body = {"messages": [{"role": "user", "content": text}], "max_tokens": 1, "temperature": 0, "cache_prompt": False}
    req = urllib.request.Request(
        url + "/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=600) as resp:
        out = json.loads(resp.read())
    return float(out["timings"]["prompt_per_second"]), int(out["timings"]["prompt_n"])


def main() -> None:
    from wikihowagent.backends.local import get_local_server, shutdown_local_servers
    from wikihowagent.config import LocalModelSettings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", default="64,256,2048")
    ap.add_argument("--tokens", type=int, default=1500)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    text = prompt(args.tokens)
    values = [int(v) for v in args.values.split(",")]
    speeds: dict[int, list[float]] = {v: [] for v in values}
    n_tokens = 0
    for r in range(args.rounds):
        for v in values:
            srv = get_local_server(LocalModelSettings(n_batch=v))
            read_once(srv.url, "warm up")
            for _ in range(args.reps):
                tps, n_tokens = read_once(srv.url, text)
                speeds[v].append(tps)
                print(f"round {r + 1} n_batch {v}: {n_tokens} prompt tokens at {tps:.1f} tok/s", flush=True)
            shutdown_local_servers()
    base = statistics.median(speeds[max(values)])
    rows = [
        f"| {v} | {len(speeds[v])} | {statistics.median(speeds[v]):.1f} | {min(speeds[v]):.1f}–{max(speeds[v]):.1f} "
        f"| {statistics.median(speeds[v]) / base:.2f} |"
        for v in values
    ]
    md = "\n".join(
        [
            f"Prompt reading speed of the embedded model (Qwen2.5-Coder-1.5B Q4_K_M, 2 threads) per `local.n_batch`, "
            f"one prompt of {n_tokens} tokens read without prompt cache, {args.reps} reads per server start, "
            f"values interleaved over {args.rounds} rounds on the shared 2-core machine ({time.strftime('%Y-%m-%d')}). "
            "Script: `scripts/bench_prefill.py`.",
            "",
            "| n_batch | n | median tok/s | range | vs largest |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )
    print(md)
    if args.write_md:
        from benchmarks_md import write_section

        write_section(SECTION, md)


if __name__ == "__main__":
    main()
