"""The score table: every stage that reads scores reads this one typed table.

One row per scored conversation of a run (or, for `judge-check`, per judged variant of a conversation):
typed metadata, the metric values and the judge's provenance. `wikihowagent.runs.read_score_table` builds it
from `scores.jsonl`, `scores-paper.jsonl` and the paper's run files (their `evaluation` scores),
`wikihowagent.records_io.read_judgment_table` from `judge-check`'s `judgments.jsonl` — and `evaluate` (summary, Tables 1/2, `--by`), `report`, `align`
and `judge-check` compute from it. A later line for the same conversation replaces an earlier one (a
resumed or re-judged evaluation), in the earlier one's place.

Three frames with one index (row i is the same conversation in each), so metadata and metric names never
share a namespace (a rubric may be called "domain"):

- `table.meta`: the declared `META_COLUMNS` (all `str`, "" = not known; the judge's provenance among them:
  evaluator, scoring, prompt, rubrics_sha256), plus `failures` (tuple of rubric names whose judge reply could
  not be parsed), `dist` (rubric -> p(1)..p(5) of a weighted / sampled judge; {} otherwise) and `record` (the
  typed `ScoreRecord` the row came from, for its raw replies and notes);
- `table.values`: one float column per metric (NaN = null, i.e. not computable or a judge failure, or absent);
- `table.present`: one bool column per metric: the record has the metric (False = not asked, e.g. `--no-judge`).

How to use it:

    from wikihowagent.runs import read_score_table
    t = read_score_table(run_dir)                 # a run directory, a scores file or a paper run file
    t.runs()                                      # run names, in order of first appearance
    t.run("T-local_L-local_E-local")              # that run's rows (a ScoreTable)
    t.metric_names()                              # every metric column, in first-seen order
    t.rubric_columns(rubric_names)                # the rubrics (names from wikihowagent/data/rubrics.json) present
    t.column("Clarity")                           # one metric's values as a list (NaN = none), in row order
    t.tutorial_means(["Clarity", "BLEU"])         # mean per (run, tutorial_id): for paired comparisons
    t.judged(rubric_names), t.failure_counts()    # per row: rubrics asked / rubrics failed
    t.scorings()                                  # judge scoring modes present ("weighted", "json", ...)
    t.row_metrics(i)                              # row i's metrics as the record had them (None = null)
    t.iter_row_metrics()                          # the same for every row, in one pass
    ScoreTable.concat([a, b])                     # several sources in one table

pandas is imported inside the functions (no module-level cost for commands that never read scores).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from wikihowagent.records import JudgmentRecord, ScoreRecord

# The typed metadata of a row (every one a str; "" = not known). `scoring` is the judge's --judge-scoring mode
# ("weighted", "json", "sampled", "+rationale"; "" = no judge ran); `variant` is judge-check's variant
# ("" for score files); `where` is "FILE:LINE" (or "FILE: total_conversations[i]").
META_COLUMNS: tuple[str, ...] = (
    "run",
    "conversation_id",
    "tutorial_id",
    "title",
    "domain",
    "teacher",
    "learner",
    "persona",
    "mode",
    "evaluator",
    "scoring",
    "prompt",
    "rubrics_sha256",
    "variant",
    "source",
    "where",
)
_OBJECT_COLUMNS = ("failures", "dist", "record")
NONE = "(none)"  # the group label of an empty domain / persona in tables


@dataclass
class ScoreTable:
    """Rows of scores; see the module docstring. Build with `from_records` / `from_rows` (or `runs.py`)."""

    meta: pd.DataFrame
    values: pd.DataFrame
    present: pd.DataFrame

    # ---------------------------------------------------------------- building

    @classmethod
    def empty(cls) -> ScoreTable:
        return cls.from_rows([])

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[dict[str, Any], dict[str, float | None]]]) -> ScoreTable:
        """(metadata, metrics) pairs -> table. Metadata keys outside META_COLUMNS + failures/record are an error;
        a metric absent from a row is absent (present False), a None value is null (present True, NaN)."""
        import pandas as pd

        meta_cols: dict[str, list[Any]] = {c: [] for c in (*META_COLUMNS, *_OBJECT_COLUMNS)}
        vals: dict[str, list[float]] = {}
        pres: dict[str, list[bool]] = {}
        n = 0
        for meta, metrics in rows:
            unknown = set(meta) - set(meta_cols)
            if unknown:
                raise ValueError(f"not score table columns: {', '.join(sorted(unknown))}")
            for c in META_COLUMNS:
                meta_cols[c].append(str(meta.get(c) or ""))
            meta_cols["failures"].append(tuple(meta.get("failures") or ()))
            meta_cols["dist"].append(dict(meta.get("dist") or {}))
            meta_cols["record"].append(meta.get("record"))
            for name, v in metrics.items():
                if name not in vals:
                    vals[name] = [math.nan] * n
                    pres[name] = [False] * n
                vals[name].append(math.nan if v is None else float(v))
                pres[name].append(True)
            n += 1
            for name in vals:
                if len(vals[name]) < n:
                    vals[name].append(math.nan)
                    pres[name].append(False)
        index = pd.RangeIndex(n)
        return cls(
            meta=pd.DataFrame(meta_cols, index=index),
            values=pd.DataFrame({k: pd.Series(v, dtype="float64") for k, v in vals.items()}, index=index),
            present=pd.DataFrame({k: pd.Series(v, dtype="bool") for k, v in pres.items()}, index=index),
        )

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, ScoreRecord]], run: str = "", source: str = "") -> ScoreTable:
        """(where, ScoreRecord) pairs -> table; `run` names the rows whose record has no run."""
        return cls.from_rows((record_meta(rec, where, run, source), rec.metrics) for where, rec in records)

    @classmethod
    def from_judgments(cls, records: Iterable[tuple[str, JudgmentRecord]], source: str = "") -> ScoreTable:
        """judge-check's judgments: one row per (conversation, variant), its `scores` as the metrics."""
        return cls.from_rows(
            (
                {
                    "run": r.run,
                    "conversation_id": r.conversation_id,
                    "evaluator": r.evaluator,
                    "scoring": r.judge_scoring or "json",
                    "prompt": r.judge_prompt,
                    "variant": r.variant,
                    "source": source,
                    "where": where,
                    "failures": r.judge_failures,
                },
                r.scores,
            )
            for where, r in records
        )

    @classmethod
    def concat(cls, tables: Sequence[ScoreTable]) -> ScoreTable:
        import pandas as pd

        tables = [t for t in tables if len(t)]
        if not tables:
            return cls.empty()
        if len(tables) == 1:
            return tables[0]
        meta = pd.concat([t.meta for t in tables], ignore_index=True)
        values = pd.concat([t.values for t in tables], ignore_index=True)
        present = pd.concat([t.present for t in tables], ignore_index=True).fillna(False).astype(bool)
        return cls(meta=meta, values=values.astype("float64"), present=present)

    # ---------------------------------------------------------------- selecting

    def __len__(self) -> int:
        return len(self.meta)

    def select(self, mask: Any) -> ScoreTable:
        """The rows where `mask` (a bool sequence over the rows) holds, renumbered from 0."""
        import numpy as np

        keep = np.asarray(mask, dtype=bool)
        return ScoreTable(
            meta=self.meta[keep].reset_index(drop=True),
            values=self.values[keep].reset_index(drop=True),
            present=self.present[keep].reset_index(drop=True),
        )

    def runs(self) -> list[str]:
        return list(dict.fromkeys(self.meta["run"]))

    def run(self, name: str) -> ScoreTable:
        return self.select(self.meta["run"] == name)

    def index_of(self) -> dict[str, int]:
        """conversation_id -> row (the last row of an id seen twice)."""
        return {cid: i for i, cid in enumerate(self.meta["conversation_id"])}

    # ---------------------------------------------------------------- reading values

    def metric_names(self) -> list[str]:
        """Every metric some row has, in first-seen order."""
        return [m for m in self.values.columns if self.present[m].any()]

    def rubric_columns(self, rubric_names: Iterable[str]) -> list[str]:
        """The rubrics (in the rubric file's order) that some row has."""
        have = set(self.metric_names())
        return [m for m in rubric_names if m in have]

    def column(self, metric: str) -> list[float]:
        """One metric's values in row order (NaN = null or absent)."""
        if metric not in self.values:
            return [math.nan] * len(self)
        values: list[float] = self.values[metric].tolist()
        return values

    def row_metrics(self, i: int) -> dict[str, float | None]:
        """Row i's metrics as its record had them: only those present, None = null."""
        vals, pres = self.values.iloc[i], self.present.iloc[i]
        return {m: (None if math.isnan(vals[m]) else float(vals[m])) for m in self.values.columns if pres[m]}

    def iter_row_metrics(self) -> Iterable[dict[str, float | None]]:
        """`row_metrics` of every row, in row order (one pass over the frames)."""
        names = list(self.values.columns)
        vals = self.values.to_numpy(dtype=float).tolist()
        pres = self.present.to_numpy(dtype=bool).tolist()
        for v, p in zip(vals, pres, strict=True):
            yield {m: (None if math.isnan(x) else x) for m, x, has in zip(names, v, p, strict=True) if has}

    def judged(self, rubric_names: Iterable[str]) -> list[int]:
        """Per row: how many of `rubric_names` it has (asked of the judge, parsed or not)."""
        cols = [m for m in rubric_names if m in self.present]
        if not cols:
            return [0] * len(self)
        counts: list[int] = self.present[cols].sum(axis=1).astype(int).tolist()
        return counts

    def failure_counts(self) -> list[int]:
        return [len(f) for f in self.meta["failures"]]

    def scorings(self) -> list[str]:
        """The judge scoring modes of the judged rows, sorted."""
        return sorted({s for s in self.meta["scoring"] if s})

    def modes(self) -> list[str]:
        """The evaluate modes ("default", "paper") of the rows, sorted."""
        return sorted({s for s in self.meta["mode"] if s})

    def labels(self, key: str) -> list[str]:
        """A metadata column as group labels: "" -> "(none)"."""
        return [v or NONE for v in self.meta[key]]

    def tutorial_means(self, metrics: Iterable[str]) -> pd.DataFrame:
        """Mean of each metric per (run, tutorial_id) (NaN skipped): the unit a paired comparison of two runs
        pairs on. Rows without a tutorial_id are left out."""
        cols = [m for m in metrics if m in self.values]
        frame = self.values[cols].copy()
        frame.insert(0, "tutorial_id", self.meta["tutorial_id"])
        frame.insert(0, "run", self.meta["run"])
        frame = frame[frame["tutorial_id"] != ""]
        return frame.groupby(["run", "tutorial_id"], sort=False).mean().reset_index()


def record_meta(rec: ScoreRecord, where: str = "", run: str = "", source: str = "") -> dict[str, Any]:
    """A ScoreRecord's row metadata (see META_COLUMNS)."""
    judge = rec.judge
    return {
        "run": rec.run or run,
        "conversation_id": rec.conversation_id,
        "tutorial_id": rec.tutorial_id,
        "title": rec.title,
        "domain": rec.domain,
        "teacher": rec.teacher,
        "learner": rec.learner,
        "persona": rec.persona,
        "mode": rec.mode,
        "evaluator": judge.evaluator if judge else "",
        "scoring": (judge.scoring or "json") if judge else "",
        "prompt": judge.prompt if judge else "",
        "rubrics_sha256": judge.rubrics_sha256 if judge else "",
        "source": source,
        "where": where,
        "failures": judge.failures if judge else (),
        "dist": judge.dist if judge else {},
        "record": rec,
    }
