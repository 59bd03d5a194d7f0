"""The conversation browser's data files: data/index.js (one row per conversation) and data/conv-NNNN.js (the
conversations, in chunks loaded on demand).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikihowagent.evaluation.summary import (
    PERCENT_METRICS,
)
from wikihowagent.records import Turn
from wikihowagent.runs import (
    REPORT_INDEX_JS,
)

from .sources import ReportConversation, ReportRun

CHUNK = 250  # conversations per data/conv-NNNN.js
STATUSES = ("finished", "cut", "failed", "unknown")


def _write_chunks(
    d: Path,
    convs: list[ReportConversation],
    chunk_of: dict[int, int],
    metrics: list[str],
    on_chunk: Callable[[], None] | None,
) -> int:
    by_tutorial: dict[str, list[ReportConversation]] = {}
    for c in convs:
        if c.tutorial_id:
            by_tutorial.setdefault(c.tutorial_id, []).append(c)
    n_chunks = -(-len(convs) // CHUNK)
    for k in range(n_chunks):
        part = convs[k * CHUNK : (k + 1) * CHUNK]
        data = {}
        for c in part:
            others = [
                {"run": o.run, "id": o.conversation_id, "chunk": chunk_of[id(o)]}
                for o in by_tutorial.get(c.tutorial_id, [])
                if o is not c
            ]
            data[c.conversation_id] = _conversation_data(c, metrics, others)
        (d / "data" / f"conv-{k:04d}.js").write_text(
            f"reportChunk({k}, {json.dumps(data, ensure_ascii=False, separators=(',', ':'))});\n", encoding="utf-8"
        )
        if on_chunk:
            on_chunk()
    return n_chunks


_TURN_FIELDS = {"role", "text", "step", "kind", "prompt_tokens", "completion_tokens", "latency_s"}


def _turn_extra(t: Turn) -> dict[str, Any]:
    """A turn's other fields (e.g. the persona's intent, the manager's label, turn-check warnings), non-empty."""
    return {
        k: v
        for k, v in t.model_dump(mode="json").items()
        if k not in _TURN_FIELDS and v not in (None, "", [], {}, False)
    }


def shared_where(where: str) -> str:
    """A record's source ("FILE:LINE", "FILE: total_conversations[i]", or a FILE) as the site shows it: the file
    as `<folder>/<file>` (its run and file name), never a path of the machine the report was made on."""
    cuts = [i for i, ch in enumerate(where) if ch == ":"] + [len(where)]
    i = next((i for i in cuts if Path(where[:i]).is_file()), len(where))
    p = Path(where[:i])
    return f"{p.parent.name}/{p.name}{where[i:]}" if p.parent.name else f"{p.name}{where[i:]}"


def _conversation_data(c: ReportConversation, metrics: list[str], others: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "run": c.run,
        "where": shared_where(c.where),
        "tutorial_id": c.tutorial_id,
        "title": c.title,
        "method_title": c.method_title,
        "domain": c.domain,
        "steps": c.steps,
        "turns": [
            [
                t.role,
                t.text,
                t.step,
                t.kind,
                t.prompt_tokens,
                t.completion_tokens,
                round(t.latency_s, 3),
                _turn_extra(t),
            ]
            for t in c.turns
        ],
        "status": c.status,
        "error": c.error,
        "warnings": c.warnings,
        "teacher": c.teacher,
        "learner": c.learner,
        "persona": c.persona,
        "extra": c.extra,
        "missing": c.missing,
        "scored": c.scored,
        "metrics": [[m, c.metrics[m]] for m in metrics if m in c.metrics],
        "judge_raw": c.judge_raw,
        "judge_failures": c.judge_failures,
        "notes": c.notes,
        "score_extra": c.score_extra,
        "others": others,
        "checklist": c.checklist,
        "checklist_reading": c.checklist_reading,
        "posttest": c.posttest,
        "posttest_matches": c.posttest_matches,
    }


def _write_index_data(
    d: Path,
    runs: list[ReportRun],
    convs: list[ReportConversation],
    chunk_of: dict[int, int],
    metrics: list[str],
    n_chunks: int,
) -> None:

    run_names = [r.name for r in runs]
    models = sorted({r.model for r in runs})
    model_of = {r.name: r.model for r in runs}
    domains = sorted({c.domain or "(none)" for c in convs})
    personas = sorted({c.persona for c in convs if c.persona})
    ri, mi = {n: i for i, n in enumerate(run_names)}, {n: i for i, n in enumerate(models)}
    di, pi = {n: i for i, n in enumerate(domains)}, {n: i for i, n in enumerate(personas)}
    rows = []
    for c in convs:
        vals = []
        for m in metrics:
            v = c.metrics.get(m)
            vals.append(None if v is None or math.isnan(v) else round(v * (100.0 if m in PERCENT_METRICS else 1.0), 2))
        rows.append(
            [
                c.conversation_id,
                ri[c.run],
                mi[model_of[c.run]],
                di[c.domain or "(none)"],
                pi.get(c.persona, -1),
                STATUSES.index(c.status),
                c.title or c.method_title,
                chunk_of[id(c)],
                c.tokens,
                len(c.turns),
                vals,
            ]
        )
    data = {
        "runs": run_names,
        "models": models,
        "domains": domains,
        "personas": personas,
        "statuses": STATUSES,
        "metrics": metrics,
        "percent": [m in PERCENT_METRICS for m in metrics],
        "chunks": n_chunks,
        "rows": rows,
    }
    (d / "data" / REPORT_INDEX_JS).write_text(
        "window.REPORT_INDEX = " + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + ";\n", encoding="utf-8"
    )
