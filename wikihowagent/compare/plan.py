"""The runs `compare` judges and the passes it plans: each run's conversations by tutorial (the first of a
tutorial, by id), checked to share tutorials (`load_runs`), and both orders of every pair of runs on every
tutorial they share (`plan_compare`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from wikihowagent.records import Conversation

from .engine import PairJob
from .request import CompareError


def first_by_tutorial(convs: Iterable[Conversation]) -> dict[str, Conversation]:
    out: dict[str, Conversation] = {}
    for c in sorted(convs, key=lambda c: c.conversation_id):
        out.setdefault(c.tutorial_key, c)
    return out


def plan_compare(
    runs: dict[str, dict[str, Conversation]], names: list[str], shard: tuple[int, int] | None = None
) -> list[PairJob]:
    """Both orders of every pair of runs on every tutorial they share; `shard` (K, N) keeps every N-th
    tutorial from K (of the sorted union). Jobs come tutorial by tutorial, by first run, so passes that
    show the same conversation first follow each other (a shared prompt prefix)."""
    order = list(runs)
    tutorials = sorted({t for convs in runs.values() for t in convs})
    jobs = []
    for i, t in enumerate(tutorials):
        if shard is not None and i % shard[1] != shard[0]:
            continue
        for x in order:
            for y in order:
                if x != y and t in runs[x] and t in runs[y]:
                    jobs.append(PairJob(t, x, y, runs[x][t], runs[y][t], list(names)))
    return jobs


def load_runs(
    sources: list[Any], warn: Callable[[str], None], max_tutorials: int | None
) -> dict[str, dict[str, Conversation]]:
    names = [s.name for s in sources]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CompareError(
            f"two inputs have the same run name {dup[0]!r} ({', '.join(str(s.path) for s in sources if s.name == dup[0])}): "
            "rename one run directory"
        )
    runs = {}
    for s in sources:
        convs = first_by_tutorial(s.conversations(on_error=warn))
        if not convs:
            raise CompareError(f"{s.path}: no conversations to compare")
        runs[s.name] = convs
    if max_tutorials:
        keep = set(sorted({t for c in runs.values() for t in c})[:max_tutorials])
        runs = {n: {t: c for t, c in cs.items() if t in keep} for n, cs in runs.items()}
    order = list(runs)
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            if not set(runs[a]) & set(runs[b]):
                raise CompareError(
                    f"runs {a} and {b} share no tutorial: nothing to compare (compare runs generated on "
                    "the same tutorials)"
                )
    return runs
