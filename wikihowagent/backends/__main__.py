"""Developer hooks for the embedded model (users have `wikihowagent model prepare | path | remove`).

python -m wikihowagent.backends --prepare   # the same as `wikihowagent model prepare`
python -m wikihowagent.backends --smoke     # start the server, one short reply, tokens/s
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from wikihowagent.backends import model_files
from wikihowagent.backends.errors import BackendError


def _prepare() -> Path:
    path = model_files.ensure_with_bar()
    print(f"model ready: {path}")
    return path


def _smoke(n_parallel: int, max_tokens: int) -> None:
    from wikihowagent.backends import local
    from wikihowagent.backends.registry import make_chat_model
    from wikihowagent.config import LocalModelSettings, ModelSettings

    t0 = time.perf_counter()
    chat = make_chat_model(
        "local", ModelSettings(max_tokens=max_tokens), LocalModelSettings(n_parallel=n_parallel, n_ctx=4096)
    )
    srv = local.running_servers()[0]
    print(f"server {srv.url} started in {srv.start_s:.1f} s (total {time.perf_counter() - t0:.1f} s incl. model check)")
    t1 = time.perf_counter()
    msg = chat.invoke("In one sentence: how do I boil an egg?")
    dt = time.perf_counter() - t1
    usage: dict[str, Any] = dict(msg.usage_metadata or {})
    out = usage.get("output_tokens", 0)
    print(f"reply ({dt:.1f} s, {usage}): {msg.content!r}")
    print(f"~{out / dt:.1f} generated tokens/s (wall, incl. prompt)")
    local.shutdown_local_servers()


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m wikihowagent.backends", description="Prepare or smoke-test the embedded model."
    )
    ap.add_argument("--prepare", action="store_true", help="assemble and verify the GGUF in the cache (default action)")
    ap.add_argument("--verify", action="store_true", help="re-hash the cached GGUF even if a stamp exists")
    ap.add_argument("--smoke", action="store_true", help="start the server and get one short reply")
    ap.add_argument("--path", action="store_true", help="print the GGUF path only")
    ap.add_argument("--n-parallel", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args(argv)
    try:
        if args.path:
            print(model_files.model_path())
            return 0
        if args.verify:
            print(f"verified: {model_files.ensure_local_model(force_verify=True)}")
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
