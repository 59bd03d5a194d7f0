"""Shards (`--shard K/N` of `generate` and `evaluate`): parse K/N, check that a set of shard directories is
complete (every K in 0..N-1, one N) and homogeneous (one fingerprint), and merge them (`wikihowagent merge`):
a run's conversation shards (`<run>/shards/K-of-N/`) and its score shards (`<dir>/score-shards/K-of-N/`, see
`wikihowagent.scores.shards` for how `evaluate --shard` writes them)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import (
    JsonInputError,
    JsonlError,
    RunError,
    iter_jsonl,
    merge_lines,
    read_json_file,
    repair_torn_tail,
)
from wikihowagent.layout import CONVERSATIONS, SCORE_FILES, SCORE_SHARDS_DIR, SHARD_INFO, SHARDS_DIR
from wikihowagent.records_io import read_records
from wikihowagent.runs import merge_pretests, now, read_run_info, record_counts, shard_dirs, sum_counts, write_run_info

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
        raise ShardError(
            f"{where}: shards of different counts N ({', '.join(str(n) for n in sorted(parsed))}): "
            "remove the shards of the other sharding"
        )
    n, ks = next(iter(parsed.items()))
    missing = sorted(set(range(n)) - ks)
    if missing:
        shown = ", ".join(f"{k}-of-{n}" for k in missing[:8]) + (" ..." if len(missing) > 8 else "")
        raise ShardError(f"{where}: {len(missing)} of {n} shards missing ({shown}); run them, then merge again")
    prints = {d.name: json.dumps(fingerprint_of(d), sort_keys=True, default=str) for d in shard_dirs}
    first = sorted(prints)[0]
    odd = [name for name, fp in sorted(prints.items()) if fp != prints[first]]
    if odd:
        raise ShardError(
            f"{where}: shard {odd[0]} was made with other settings than shard {first} "
            "(different fingerprint); rerun it with the same command"
        )
    return n


def parse_shard(value: str) -> tuple[int, int]:
    """ "K/N" (0-based K, e.g. a SLURM array index) -> (K, N)."""
    try:
        k, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise ValueError(f"--shard {value!r}: expected K/N, e.g. 0/8") from None
    if n < 1 or not 0 <= k < n:
        raise ValueError(f"--shard {value!r}: need 0 <= K < N")
    return k, n


def shard_option(value: str | None, error: Callable[[str], Exception]) -> tuple[int, int] | None:
    """--shard K/N as given to a command: None without it; a bad value (also "": not unsharded) raised as
    `error(message)`, one line."""
    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise error(str(exc)) from None


def merge_run(run_dir: Path) -> Iterator[str]:
    """`wikihowagent merge RUN_DIR`: its conversation shards (when there are any, or when there are no score
    shards either: then the "no shards" error), then its score shards; one line per merge, as it is done."""
    scores = (run_dir / SCORE_SHARDS_DIR).is_dir()
    if (run_dir / SHARDS_DIR).is_dir() or not scores:
        counts = merge_shards(run_dir)
        yield (
            f"{run_dir}: merged {counts['shards']} shards into {counts['conversations']} conversations "
            f"({counts['finished']} finished, {counts['failed']} failed)"
        )
    if scores:
        counts = merge_score_shards(run_dir)
        yield f"{run_dir}: merged {counts['shards']} score shards into {counts['scores']} score records"


def merge_shards(run_dir: Path) -> dict[str, int]:
    """Merge `run_dir/shards/*/conversations.jsonl` into `run_dir/conversations.jsonl`.

    One record per tutorial: a successful record beats a failed one, otherwise the later one wins.
    Shards share the parent's run name, so conversation ids do not depend on the sharding.
    """
    shards = shard_dirs(run_dir)
    if not shards:
        raise RunError(f"{run_dir}: no shards to merge (expected {run_dir / SHARDS_DIR}/K-of-N/)")
    try:  # every shard 0..N-1 there, all made with the same settings
        check_shards(shards, lambda d: read_run_info(d).fingerprint, run_dir)
    except ShardError as exc:
        raise RunError(str(exc)) from None  # merge_shards: RunError, whatever went wrong
    sources = [run_dir / CONVERSATIONS] + [d / CONVERSATIONS for d in shards]
    try:  # one record at a time: the merge holds the tutorial ids, never the records
        shares = merge_lines(run_dir / CONVERSATIONS, _conversation_lines(sources))
    except JsonlError as exc:
        raise RunError(str(exc)) from None
    merge_pretests(run_dir, shards)
    info = read_run_info(shards[0])
    info = info.model_copy(
        update={
            "name": run_dir.name,
            "shards": [d.name for d in shards],
            "ended_at": now(),
            "counts": sum_counts(shares.values()),
            "status": "merged",
        }
    )
    write_run_info(run_dir, info)
    return {"shards": len(shards), **info.counts}


def _conversation_lines(sources: list[Path]) -> Iterator[tuple[str, bytes, int, tuple[int, ...]]]:
    """merge_lines' items of conversation files: one per record, keyed by tutorial, a successful record ranked
    above a failed one (so it wins over it whichever came first; otherwise the later wins), with its share of
    run.json's counts."""
    for src in sources:
        if not src.exists():
            continue
        repair_torn_tail(src)
        for _, rec in read_records(src):
            line = json.dumps(rec.model_dump(mode="json"), ensure_ascii=False).encode("utf-8") + b"\n"
            yield rec.tutorial_id, line, 0 if rec.error else 1, record_counts(rec)


def input_state(records: Path, jsonl: bool = True) -> dict[str, Any]:
    """What a shard's scores were computed from: the conversations file, its sha256 and (JSONL) its records."""
    digest = hashlib.sha256()
    n = 0
    with open(records, "rb") as fh:
        for line in fh:
            digest.update(line)
            n += bool(line.strip())
    return {"file": str(Path(records).resolve()), "sha256": digest.hexdigest(), "records": n if jsonl else None}


def _stale_shards(directory: Path, shard_dirs: list[Path], info_of: Any) -> str | None:
    """One line naming the shards whose conversations file has changed since they were scored, or None."""
    now: dict[str, dict[str, Any] | None] = {}
    stale: dict[str, list[str]] = {}
    then_of: dict[str, dict[str, Any]] = {}
    for d in shard_dirs:
        then = info_of(d).get("input_state")
        if not isinstance(then, dict) or not isinstance(then.get("file"), str):
            continue  # a shard written before input states were recorded
        f = then["file"]
        if f not in now:
            here = Path(f) if Path(f).exists() else directory / Path(f).name  # the run directory was moved
            try:
                now[f] = input_state(here, then.get("records") is not None)
            except OSError:
                now[f] = None
        state = now[f]
        if state is None or state["sha256"] != then.get("sha256"):
            stale.setdefault(f, []).append(d.name)
            then_of.setdefault(f, then)
    if not stale:
        return None
    f, names = next(iter(stale.items()))
    cur, then = now[f], then_of[f]
    if cur is None:
        what = "which is gone now"
    elif then.get("records") is not None:
        what = f"{then['records']} records then, {cur['records']} now"
    else:
        what = "its content changed"
    ks = ", ".join(n.replace("-of-", "/") for n in names)
    return (
        f"{directory}: score shard{'s' if len(names) > 1 else ''} {', '.join(names)} scored another state of {f} "
        f"({what}): rerun evaluate with --shard {ks} (same options), then merge again"
    )


def merge_score_shards(directory: Path) -> dict[str, int]:
    """Merge `<directory>/score-shards/K-of-N/<scores file>` into `<directory>/<scores file>`.

    Raises RunError (one line) if a shard is missing or was made with other settings.
    """
    shard_dirs = sorted(p for p in (directory / SCORE_SHARDS_DIR).glob("*") if (p / SHARD_INFO).exists())
    if not shard_dirs:
        raise RunError(f"{directory}: no score shards to merge (expected {directory}/{SCORE_SHARDS_DIR}/K-of-N/)")

    def info(d: Path) -> dict[str, Any]:
        try:
            obj = read_json_file(d / SHARD_INFO)
        except JsonInputError as exc:
            raise RunError(exc.located(d / SHARD_INFO)) from None
        return obj if isinstance(obj, dict) else {}

    try:
        n = check_shards(shard_dirs, lambda d: info(d).get("fingerprint"), directory / SCORE_SHARDS_DIR)
    except ShardError as exc:
        raise RunError(str(exc)) from None
    stale = _stale_shards(directory, shard_dirs, info)
    if stale:
        raise RunError(stale)
    names = sorted(n for n in SCORE_FILES if any((d / n).is_file() for d in shard_dirs))
    total = 0
    for name in names:  # shards' lines win over older ones; one line at a time, the ids held, never the records
        sources = [directory / name] + [d / name for d in shard_dirs]
        total += len(merge_lines(directory / name, _score_lines(sources)))
    return {"shards": n, "scores": total}


def _score_lines(sources: list[Path]) -> Iterator[tuple[str, bytes, int, None]]:
    """merge_lines' items of score files: one per line with a conversation id (the last one per id wins)."""
    for src in sources:
        if src.exists():
            for _, obj in iter_jsonl(src, on_error=lambda _m: None):
                if isinstance(obj.get("conversation_id"), str):
                    yield obj["conversation_id"], json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n", 0, None
