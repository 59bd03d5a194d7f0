"""The conversation browser's data files, written from the ConversationStore: data/index.js (the table: a
column per field, one entry per conversation), data/values.js (a column per metric, read after the table
shows) and data/conv-NNNN.js (the conversations, in chunks loaded on demand, written one chunk at a time).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.layout import REPORT_INDEX_JS, REPORT_VALUES_JS
from wikihowagent.metrics.computational import percent_metrics

from .sources import ReportRun
from .store import CHUNK, STATUSES, ConversationStore, dumps


class MetricValues:
    """Each conversation's metrics in the report's metric order, from its run's score table: `row(i)` ->
    (values, has) of conversation i; a value is NaN where null or absent, `has` False where the record has no
    such metric. A calibrated column (`<rubric> (cal.)`) has only its finite values, rounded to 4 decimals."""

    def __init__(self, runs: list[ReportRun], store: ConversationStore, metrics: list[str]) -> None:
        self.store, self.metrics = store, metrics
        self._values: list[np.ndarray] = []
        self._has: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        for r in runs:
            n = len(r.scores)
            values = np.full((n, len(metrics)), np.nan)
            has = np.zeros((n, len(metrics)), dtype=bool)
            for j, m in enumerate(metrics):
                if m not in r.scores.values:
                    continue
                col = r.scores.values[m].to_numpy(dtype=float)
                if m in r.calibrated:
                    has[:, j] = np.isfinite(col)
                    values[:, j] = [
                        round(v, 4) if ok else math.nan for v, ok in zip(col.tolist(), has[:, j], strict=True)
                    ]
                else:
                    has[:, j] = r.scores.present[m].to_numpy(dtype=bool)
                    values[:, j] = col
            self._values.append(values)
            self._has.append(has)

    def row(self, i: int) -> tuple[list[float], list[bool]]:
        s = self.store.score_row[i]
        if s < 0:
            return [math.nan] * len(self.metrics), [False] * len(self.metrics)
        r = self.store.run[i]
        return self._values[r][s].tolist(), self._has[r][s].tolist()

    def matrix(self) -> np.ndarray:
        """Every conversation's metrics: conversations (the store's order) x metrics, NaN where it has none."""
        if self._matrix is None:
            store = self.store
            self._matrix = np.full((len(store), len(self.metrics)), np.nan)
            run, row = np.asarray(store.run, dtype=np.int64), np.asarray(store.score_row, dtype=np.int64)
            for r, vals in enumerate(self._values):
                at = np.flatnonzero((run == r) & (row >= 0))
                self._matrix[at] = vals[row[at]]
        return self._matrix

    def present(self, convs: list[int], m: str) -> list[float]:
        """The values of metric `m` the conversations `convs` have, in their order."""
        col = self.matrix()[np.asarray(convs, dtype=np.int64), self.metrics.index(m)]
        return col[~np.isnan(col)].tolist()

    def value(self, i: int, m: int) -> float | None:
        """Conversation i's value of metric number m; None if it has none."""
        s = self.store.score_row[i]
        if s < 0:
            return None
        v = float(self._values[self.store.run[i]][s, m])
        return None if math.isnan(v) else v


def write_chunks(
    d: Path,
    runs: list[ReportRun],
    store: ConversationStore,
    values: MetricValues,
    on_chunk: Callable[[], None] | None,
) -> int:
    names = [dumps(r.name) for r in runs]
    by_tutorial: dict[str, list[int]] = {}
    for i, t in enumerate(store.tutorial):
        if t:
            by_tutorial.setdefault(t, []).append(i)
    n_chunks = -(-len(store) // CHUNK)
    for k in range(n_chunks):
        # one entry per conversation id, written as it is made: an id twice in a chunk is the later
        # conversation, in the earlier one's place
        last = {store.ids[i]: i for i in range(k * CHUNK, min(len(store), (k + 1) * CHUNK))}
        with (d / "data" / f"conv-{k:04d}.js").open("wb") as fh:
            fh.write(b"reportChunk(%d, {" % k)
            for n, (cid, i) in enumerate(last.items()):
                others = [
                    {"run": runs[store.run[o]].name, "id": store.ids[o], "chunk": store.chunk(o)}
                    for o in by_tutorial.get(store.tutorial[i], [])
                    if o != i
                ]
                entry = _entry(names[store.run[i]], store.parts(i), _metrics(values, i), dumps(others))
                fh.write(b"".join((b"," if n else b"", dumps(cid), b":", entry)))
            fh.write(b"});\n")
        if on_chunk:
            on_chunk()
    return n_chunks


def _metrics(values: MetricValues, i: int) -> bytes:
    vals, has = values.row(i)
    return dumps([[m, None if math.isnan(v) else v] for m, v, h in zip(values.metrics, vals, has, strict=True) if h])


def _entry(run: bytes, parts: tuple[bytes, bytes, bytes], metrics: bytes, others: bytes) -> bytes:
    """One conversation's object in its chunk (the members in the order conversation.js has always read)."""
    head, judge, tail = parts
    return b"".join(
        (
            b'{"run":',
            run,
            b",",
            head[1:-1],
            b',"metrics":',
            metrics,
            b",",
            judge[1:-1],
            b',"others":',
            others,
            b",",
            tail[1:-1],
            b"}",
        )
    )


PAGE = 100  # the table's rows per page; the first page's metrics come with data/index.js


def write_index_data(
    d: Path, runs: list[ReportRun], store: ConversationStore, values: MetricValues, n_chunks: int
) -> None:
    """data/index.js (the table's columns, a column per field, and the first page's metrics) and data/values.js
    (a column per metric: the larger part, read after the table is on screen), each written a column at a time."""
    run_names = [r.name for r in runs]
    models = sorted({r.model for r in runs})
    mi = {n: i for i, n in enumerate(models)}
    model_of = [mi[r.model] for r in runs]
    domains = sorted({x or "(none)" for x in set(store.domain)})
    personas = sorted({x for x in set(store.persona) if x})
    titles = sorted(set(store.title))
    di, pi, ti = ({n: i for i, n in enumerate(xs)} for xs in (domains, personas, titles))
    head = {
        "runs": run_names,
        "models": models,
        "domains": domains,
        "personas": personas,
        "statuses": STATUSES,
        "metrics": values.metrics,
        "percent": [m in percent_metrics() for m in values.metrics],
        "chunks": n_chunks,
        "chunk_size": CHUNK,  # conversation i is in chunk floor(i / chunk_size)
        "page": PAGE,
        "titles": titles,
    }
    columns: dict[str, Callable[[], list[Any]]] = {
        "id": lambda: store.ids,
        "run": lambda: list(store.run),
        "model": lambda: [model_of[r] for r in store.run],
        "domain": lambda: [di[x or "(none)"] for x in store.domain],
        "persona": lambda: [pi.get(x, -1) for x in store.persona],
        "status": lambda: list(store.status),
        "title": lambda: [ti[x] for x in store.title],
        "tokens": lambda: list(store.tokens),
        "turns": lambda: list(store.turns),
    }
    table = _shown(values)  # conversations x metrics, as the table shows them
    with (d / "data" / REPORT_INDEX_JS).open("wb") as fh:
        fh.write(b"window.REPORT_INDEX = " + dumps(head)[:-1] + b',"columns":{')
        for n, (key, column) in enumerate(columns.items()):
            fh.write(b"".join((b"," if n else b"", dumps(key), b":", dumps(column()))))
        fh.write(b'},"first":' + dumps([_row(table, i) for i in range(min(PAGE, len(store)))]) + b"};\n")
    with (d / "data" / REPORT_VALUES_JS).open("wb") as fh:
        fh.write(b"reportValues([")
        for j in range(len(values.metrics)):
            fh.write(b"," + dumps(_column(table, j)) if j else dumps(_column(table, j)))
        fh.write(b"]);\n")


def _shown(values: MetricValues) -> np.ndarray:
    """Every conversation's metrics (rows in the store's order; NaN: none), in the table's unit (% x 100)."""
    return values.matrix() * np.array([100.0 if m in percent_metrics() else 1.0 for m in values.metrics])


def _rounded(xs: list[float]) -> list[float | None]:
    return [None if math.isnan(v) else round(v, 2) for v in xs]


def _row(table: np.ndarray, i: int) -> list[float | None]:
    return _rounded(table[i].tolist())


def _column(table: np.ndarray, j: int) -> list[float | None]:
    return _rounded(table[:, j].tolist())
