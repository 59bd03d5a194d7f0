"""`evaluate --shard K/N` and merging score shards (`wikihowagent merge`).

Shard K of N scores the blocks number K, K+N, K+2N, ... of `chunk` (64) consecutive scorable
conversations. A block is exactly what an unsharded evaluation scores in one batch, so sharded scores are
bit-for-bit those of an unsharded run (the embedding model's CPU kernels round differently when the texts
batched together differ, so a finer split would not be). Shard K of a scores file `<dir>/scores.jsonl` is
written to `<dir>/score-shards/K-of-N/scores.jsonl` with a `shard.json` holding what the scores depend on
(mode, metrics, evaluator, rubric file, input) and the state of the conversations file it read (sha256,
records); merging refuses missing shards, shards made with other settings, and shards made against another
state of the conversations file than the current one (generate added conversations since: the shards no
longer cover them), naming the shards to run again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wikihowagent.runs import SCORE_FILES, SCORE_SHARDS_DIR, SHARD_INFO



def shard_filter(stream: Iterator[Any], shard: tuple[int, int] | None, chunk: int) -> Iterator[Any]:
    """The conversations of shard K of N: blocks number K, K+N, K+2N, ... of `chunk` consecutive ones."""
    if shard is None:
        return stream
    k, n = shard
    return (c for i, c in enumerate(stream) if (i // chunk) % n == k)


def shard_scores_path(path: Path, shard: tuple[int, int]) -> Path:
    k, n = shard
    return path.parent / SCORE_SHARDS_DIR / f"{k}-of-{n}" / path.name


def write_shard_info(out_path: Path, shard: tuple[int, int], fingerprint: dict[str, Any],
                     state: dict[str, Any] | None = None) -> None:
    from wikihowagent.runs import write_json_atomic

    info = {"shard": list(shard), "fingerprint": fingerprint}
    if state is not None:
        info["input_state"] = state
    write_json_atomic(out_path.parent / SHARD_INFO, info)


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
        if (state := now[f]) is None or state["sha256"] != then.get("sha256"):
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
    return (f"{directory}: score shard{'s' if len(names) > 1 else ''} {', '.join(names)} scored another state of {f} "
            f"({what}): rerun evaluate with --shard {ks} (same options), then merge again")


def scores_fingerprint(mode: str, metrics: list[str], evaluator: str | None, rubrics_path: Path | None,
                       source: Path) -> dict[str, Any]:
    from .judge import default_rubrics_path

    rubric_file = Path(rubrics_path) if rubrics_path else default_rubrics_path()
    digest = hashlib.sha256(rubric_file.read_bytes()).hexdigest()[:16] if rubric_file.exists() else None
    return {"mode": mode, "metrics": sorted(metrics), "evaluator": evaluator, "rubrics_sha256": digest,
            "input": str(Path(source).resolve())}


def merge_score_shards(directory: Path) -> dict[str, int]:
    """Merge `<directory>/score-shards/K-of-N/<scores file>` into `<directory>/<scores file>`.

    Raises RunError (one line) if a shard is missing or was made with other settings.
    """
    import json

    from wikihowagent.runs import RunError, iter_jsonl, rewrite_jsonl
    from wikihowagent.shards import ShardError, check_shards

    shard_dirs = sorted(p for p in (directory / SCORE_SHARDS_DIR).glob("*") if (p / SHARD_INFO).exists())
    if not shard_dirs:
        raise RunError(f"{directory}: no score shards to merge (expected {directory}/{SCORE_SHARDS_DIR}/K-of-N/)")

    def info(d: Path) -> dict[str, Any]:
        obj = json.loads((d / SHARD_INFO).read_text(encoding="utf-8"))
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
    for name in names:
        merged: dict[str, dict[str, Any]] = {}
        for src in [directory / name] + [d / name for d in shard_dirs]:  # shards' lines win over older ones
            if src.exists():
                for _, obj in iter_jsonl(src, on_error=lambda _m: None):
                    if isinstance(obj.get("conversation_id"), str):
                        merged[obj["conversation_id"]] = obj  # the last line per conversation wins
        rewrite_jsonl(directory / name, list(merged.values()))
        total += len(merged)
    return {"shards": n, "scores": total}
