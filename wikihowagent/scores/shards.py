"""`evaluate --shard K/N`: which conversations a shard scores and what its `shard.json` records (merging the
shards, `wikihowagent merge`, is `wikihowagent.shards.merge_score_shards`).

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

from wikihowagent.jsonlio import write_json_atomic
from wikihowagent.judge.rubric_judge import default_rubrics_path
from wikihowagent.layout import SCORE_SHARDS_DIR, SHARD_INFO


def shard_filter(stream: Iterator[Any], shard: tuple[int, int] | None, chunk: int) -> Iterator[Any]:
    """The conversations of shard K of N: blocks number K, K+N, K+2N, ... of `chunk` consecutive ones."""
    if shard is None:
        return stream
    k, n = shard
    return (c for i, c in enumerate(stream) if (i // chunk) % n == k)


def shard_scores_path(path: Path, shard: tuple[int, int]) -> Path:
    k, n = shard
    return path.parent / SCORE_SHARDS_DIR / f"{k}-of-{n}" / path.name


def write_shard_info(
    out_path: Path, shard: tuple[int, int], fingerprint: dict[str, Any], state: dict[str, Any] | None = None
) -> None:
    info = {"shard": list(shard), "fingerprint": fingerprint}
    if state is not None:
        info["input_state"] = state
    write_json_atomic(out_path.parent / SHARD_INFO, info)


def scores_fingerprint(
    mode: str, metrics: list[str], evaluator: str | None, rubrics_path: Path | None, source: Path
) -> dict[str, Any]:
    rubric_file = Path(rubrics_path) if rubrics_path else default_rubrics_path()
    digest = hashlib.sha256(rubric_file.read_bytes()).hexdigest()[:16] if rubric_file.exists() else None
    return {
        "mode": mode,
        "metrics": sorted(metrics),
        "evaluator": evaluator,
        "rubrics_sha256": digest,
        "input": str(Path(source).resolve()),
    }
