"""Shards (`--shard K/N` of `generate` and `evaluate`): parse K/N, and check that a set of shard directories
is complete (every K in 0..N-1, one N) and homogeneous (one fingerprint) before anything is merged."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikihowagent.errors import WikihowagentError

SHARD_DIR_RE = re.compile(r"^(\d+)-of-(\d+)$")


class ShardError(WikihowagentError, ValueError):
    """Incomplete or mixed shards; one line."""


def check_shards(shard_dirs: list[Path], fingerprint_of: Callable[[Path], Any], where: Path) -> int:
    """Raise ShardError unless `shard_dirs` are exactly K-of-N for K = 0..N-1 with one fingerprint; return N."""
    parsed: dict[int, set[int]] = {}
    for d in shard_dirs:
        m = SHARD_DIR_RE.match(d.name)
        if not m:
            raise ShardError(f"{d}: not a shard directory (expected K-of-N)")
        parsed.setdefault(int(m.group(2)), set()).add(int(m.group(1)))
    if len(parsed) != 1:
        raise ShardError(f"{where}: shards of different counts N ({', '.join(str(n) for n in sorted(parsed))}): "
                         "remove the shards of the other sharding")
    n, ks = next(iter(parsed.items()))
    missing = sorted(set(range(n)) - ks)
    if missing:
        shown = ", ".join(f"{k}-of-{n}" for k in missing[:8]) + (" ..." if len(missing) > 8 else "")
        raise ShardError(f"{where}: {len(missing)} of {n} shards missing ({shown}); run them, then merge again")
    prints = {d.name: json.dumps(fingerprint_of(d), sort_keys=True, default=str) for d in shard_dirs}
    first = sorted(prints)[0]
    odd = [name for name, fp in sorted(prints.items()) if fp != prints[first]]
    if odd:
        raise ShardError(f"{where}: shard {odd[0]} was made with other settings than shard {first} "
                         "(different fingerprint); rerun it with the same command")
    return n
