"""The LLM judge's scores and the runs they belong to.

`--scores` accepts:
- a run directory (its `scores.jsonl`, or `scores-paper.jsonl` from `evaluate --compat paper` when there is
  no `scores.jsonl`; `run.json` names the run) or a directory of runs (see `runs.evaluated_runs`: also the
  re-scored paper files under `rescored/`);
- a `scores.jsonl` file (ScoreRecord lines; a conversation id seen twice -> the last line wins, as after a
  resumed `evaluate`);
- a wide CSV in the annotation format (`conversation_id`, metric columns in any case; `filename`/`run`
  names the run, an optional `model` column the model), as the paper's study published its model scores;
- one of the paper's run files (`T-<teacher>_L-<learner>_E-<evaluator>_<job>.json`, `total_conversations`
  with an `evaluation` dict per record).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.jsonlio import RunError
from wikihowagent.judge.modes import first_mode
from wikihowagent.judge.prompt_variants import recorded_prompt
from wikihowagent.layout import CONVERSATIONS, SCORE_FILES
from wikihowagent.metrics.computational import POSTTEST_METRICS, computational_names
from wikihowagent.paper_format import parse_run_stem
from wikihowagent.records import CAL_SUFFIX
from wikihowagent.runs import evaluated_runs, read_score_table, resolve_runs, run_name, scores_file
from wikihowagent.scoretable import ScoreTable

from . import schema
from .annotations import read_human_file
from .csv_dialect import read_table
from .problems import AlignInputError, Problems, where
from .schema import KNOWN_META_KEYS, norm_key
from .score_cells import parse_score


@dataclass(slots=True)  # one per score line: 114,296 of them at the paper's scale
class ScoreRow:
    conversation_id: str
    values: np.ndarray  # 8 floats, NaN = missing
    run: str = ""
    model: str = ""
    domain: str = ""
    persona: str = ""  # learner persona ("" before personas)
    title: str = ""
    tutorial_id: str = ""
    where: str = ""  # path:line it came from
    judge: str = ""  # the judge's spec (scores.jsonl); "" = not recorded (a CSV, a paper file)
    scoring: str = ""  # --judge-scoring mode of that judge ("weighted", "json", ...); "" = not recorded
    prompt: str = ""  # --judge-prompt variant of that judge, as recorded ("" = json's layout or an older file)
    rubrics_sha256: str = ""  # the rubric file the judge was given; "" = not recorded
    dist: dict[str, list[float]] = field(default_factory=dict)  # rubric -> the judge's p(1..5) (weighted)
    automatic: dict[str, float] = field(default_factory=dict)  # automatic metrics compared too (the post-test's)
    # every numeric metric of the record that is not one of the rubrics (computational, post-test, registered)
    metrics: dict[str, float] = field(default_factory=dict)
    mode: str = ""  # evaluate's metric mode ("default" | "paper"); "" = not recorded (a CSV, a paper file)
    # --judge-scoring checklist: item id -> P(good) (None = not answered), item id -> its rubrics, the checklist
    items: dict[str, float | None] = field(default_factory=dict)
    item_rubrics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    checklist: str = ""

    @property
    def configuration(self) -> str:
        """The judge configuration from the scores' provenance: "local (weighted, prompt plain)"; "" = none."""
        if not self.judge:
            return ""
        prompt = recorded_prompt(self, self.scoring)
        return f"{self.judge} ({self.scoring or first_mode('paper')}" + (f", prompt {prompt})" if prompt else ")")


@dataclass
class LLMScores:
    rows: dict[str, ScoreRow] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    by_source: dict[str, list[str]] = field(default_factory=dict)  # source -> ids it contributed
    ignored_metrics: dict[str, list[str]] = field(default_factory=dict)  # unused custom rubric name -> sources

    @property
    def judges(self) -> list[str]:
        """The judge configurations the scores come from (none recorded: CSV sheets, paper run files)."""
        return sorted({r.configuration for r in self.rows.values() if r.configuration})


def _computational_metric_names() -> frozenset[str]:
    """The `evaluate` metrics that are not rubric scores (they share ScoreRecord.metrics with the rubrics)."""
    return computational_names()


def is_other_rubric(name: str, computational: frozenset[str]) -> bool:
    """A ScoreRecord metric that is neither one of the 8 paper rubrics nor a computational metric: a custom
    rubric (`evaluate --rubrics`), which `align` does not compare."""
    key = norm_key(name)
    return key not in schema.metric_by_key() and name not in computational and key not in KNOWN_META_KEYS


def model_label(teacher: str = "", learner: str = "", run: str = "") -> str:
    """The conversation model of a run: the teacher, or `teacher / learner` when they differ; falls back to
    the paper's run-file name pattern, then to the run name."""
    if not (teacher or learner):
        m = parse_run_stem(run or "")
        if m:
            teacher, learner = m["teacher"], m["learner"]
    if teacher and learner and teacher != learner:
        return f"{teacher} / {learner}"
    return teacher or learner or run or "(unknown)"


def _metric_values(
    metrics: dict, loc: str, problems: Problems, missing: list[int], unjudged: list[int] | None = None
) -> np.ndarray:
    """The 8 rubric scores; a metric stored as null counts in `missing` (the judge ran, its reply was not
    parsed), a metric absent from the record in `unjudged` (no judge ran, e.g. `evaluate --no-judge`)."""
    by_key = None
    out = np.full(len(schema.metrics()), np.nan)
    for j, m in enumerate(schema.metrics()):
        raw = metrics.get(m)
        if raw is None and m not in metrics:  # other spellings ("clarity", "CLARITY")
            if by_key is None:
                by_key = {norm_key(k): v for k, v in metrics.items()}
            raw = by_key.get(m.lower())
            if raw is None and unjudged is not None and m.lower() not in by_key:
                unjudged[j] += 1
                continue
        if raw is None:
            missing[j] += 1
            continue
        out[j] = parse_score(raw, f"{loc}: {m}", problems)
    return out


def _report_missing(source: str, missing: list[int], problems: Problems, what: str) -> None:
    parts = [f"{m} {n}" for m, n in zip(schema.metrics(), missing, strict=True) if n]
    if parts:
        problems.add("missing llm score", f"{source}: no LLM score ({what}) for: {', '.join(parts)} conversations")


def _automatic(metrics: dict) -> dict[str, float]:
    """The automatic metrics `align` correlates with the human ratings (the post-test's), where computed."""
    out = {}
    for m in POSTTEST_METRICS:
        v = metrics.get(m)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[m] = float(v)
    return out


def _numeric_metrics(metrics: dict) -> dict[str, float]:
    """Every finite numeric metric of a record other than the rubric scores (and their calibrated columns): what
    `align` compares with people beside the judge (metric_alignment.csv)."""
    out = {}
    rubrics = schema.metric_by_key()
    for m, v in metrics.items():
        if norm_key(m) in rubrics or m.endswith(CAL_SUFFIX):
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[m] = float(v)
    return out


# the score table's metadata columns a row of scores is made from, in order
_META_COLUMNS = (
    "conversation_id",
    "run",
    "teacher",
    "learner",
    "domain",
    "persona",
    "title",
    "tutorial_id",
    "where",
    "evaluator",
    "scoring",
    "prompt",
    "rubrics_sha256",
    "record",
    "mode",
)


def _table_rows(
    table: ScoreTable,
    problems: Problems,
    missing: list[int],
    unjudged: list[int] | None,
    keep: frozenset[str] | None = None,
) -> list[ScoreRow]:
    """Rows of the score table -> rows of the 8 rubric scores (checked against the 1-5 scale); see
    `read_llm_scores` for `keep`."""
    columns = [table.meta[c] for c in _META_COLUMNS]
    return [
        _score_row(dict(zip(_META_COLUMNS, values, strict=True)), metrics, problems, missing, unjudged, keep)
        for values, metrics in zip(zip(*columns, strict=True), table.iter_row_metrics(), strict=True)
    ]


def _score_row(
    m: dict[str, Any],
    metrics: Any,
    problems: Problems,
    missing: list[int],
    unjudged: list[int] | None,
    keep: frozenset[str] | None = None,
) -> ScoreRow:
    """One row of scores from its metadata (`m`, keyed by _META_COLUMNS) and its metric values; a row `keep`
    leaves out gets no metrics, distributions or checklist items (what only rated conversations are read for)."""
    rec = m["record"]
    judge = rec.judge if rec is not None and rec.judge and (keep is None or m["conversation_id"] in keep) else None
    return ScoreRow(
        conversation_id=m["conversation_id"],
        values=_metric_values(metrics, m["where"], problems, missing, unjudged),
        run=m["run"],
        model=model_label(m["teacher"], m["learner"], m["run"]),
        domain=m["domain"],
        persona=m["persona"],
        title=m["title"],
        tutorial_id=m["tutorial_id"],
        where=m["where"],
        judge=m["evaluator"],
        scoring=m["scoring"],
        prompt=m["prompt"],
        rubrics_sha256=m["rubrics_sha256"],
        dist=dict(judge.dist) if judge else {},
        automatic=_automatic(metrics),
        metrics=_numeric_metrics(metrics) if keep is None or m["conversation_id"] in keep else {},
        mode=m["mode"],
        items={i.id: i.good for i in judge.items} if judge else {},
        item_rubrics={i.id: tuple(i.rubrics) for i in judge.items} if judge else {},
        checklist=judge.checklist if judge else "",
    )


def _read_table(path: Path, problems: Problems, default_run: str = "") -> ScoreTable:
    try:
        return read_score_table(
            path,
            run=default_run,
            on_error=lambda msg: problems.add("bad line", f"{msg}; line skipped"),
            on_bad_value=lambda msg: problems.add("bad value", msg),
        )
    except RunError as exc:
        raise AlignInputError(str(exc)) from None


def read_scores_jsonl(
    path: Path,
    problems: Problems,
    default_run: str = "",
    other_rubrics: set[str] | None = None,
    keep: frozenset[str] | None = None,
) -> list[ScoreRow]:
    """A scores file's rows of the score table -> rows of the 8 rubric scores. Metric names that are neither
    those 8 nor computational metrics (custom rubrics) are added to `other_rubrics` when given. `keep`: see
    `read_llm_scores`."""
    table = _read_table(path, problems, default_run)
    missing = [0] * len(schema.metrics())
    unjudged = [0] * len(schema.metrics())
    rows = _table_rows(table, problems, missing, unjudged, keep)
    _report_missing(str(path), missing, problems, "judge reply not parsed")
    _report_missing(str(path), unjudged, problems, "not judged: evaluated without a judge, e.g. --no-judge")
    if other_rubrics is not None:
        computational = _computational_metric_names()
        other_rubrics.update(k for k in table.metric_names() if is_other_rubric(k, computational))
    return rows


def read_scores_csv(path: Path, problems: Problems) -> list[ScoreRow]:
    judges = read_human_file(path, problems)
    if len(judges) > 1:
        raise AlignInputError(f"{path}: has an annotator column with several judges; not an LLM score file")
    header, rows = read_table(path)  # already reported by read_human_file
    keys = [norm_key(h) for h in header]
    model_col = keys.index("model") if "model" in keys else None
    models = {}
    if model_col is not None:
        id_col = next(i for i, k in enumerate(keys) if k in ("conversation_id", "conversationid", "conv_id"))
        models = {c[id_col]: c[model_col] for _, c in rows if len(c) > max(id_col, model_col)}
    j = judges[0]
    out = []
    for cid, arr in j.scores.items():
        run = j.runs.get(cid) or path.stem
        out.append(
            ScoreRow(
                cid,
                arr,
                run=run,
                model=models.get(cid) or model_label(run=run),
                title=j.titles.get(cid, ""),
                where=where(path, j.rows[cid]),
            )
        )
    return out


def read_paper_run(path: Path, problems: Problems) -> list[ScoreRow]:
    """The `evaluation` scores of a paper run file's records (their rows of the score table)."""
    table = _read_table(path, problems)
    missing = [0] * len(schema.metrics())
    rows = _table_rows(table, problems, missing, None)
    _report_missing(str(path), missing, problems, "not in the record's evaluation")
    return rows


def resolve_score_paths(paths: list[Path], problems: Problems | None = None) -> list[Path]:
    """Directories -> their score file (a run dir) or the score file of each run inside (a runs dir); see
    `scores_file` and `runs.evaluated_runs`. A path with no score file raises AlignInputError, or with `problems`
    is reported there ("unusable file") and skipped, so the other paths are still read."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        try:
            out.extend(_score_files_of(p))
        except AlignInputError as exc:
            if problems is None:
                raise
            problems.add("unusable file", str(exc))
    return out


def _score_files_of(p: Path) -> list[Path]:
    (rp,) = resolve_runs([p], sweeps=False)  # a sweep directory: its evaluated cells, as a directory of runs
    if rp.kind == "missing":
        raise AlignInputError(f"{p}: not found")
    if rp.kind == "file":
        return [p]
    own = scores_file(p)
    if own is not None:
        return [own]
    runs = evaluated_runs(p)
    if not runs:
        has_conv = (p / CONVERSATIONS).is_file()
        hint = "; run `wikihowagent evaluate` on it first" if has_conv else ""
        raise AlignInputError(f"{p}: no {' or '.join(SCORE_FILES)} in it (nor in any run directory inside){hint}")
    return [f for r in runs if (f := scores_file(r)) is not None]  # evaluated runs: each has one


def read_llm_scores(paths: list[Path], problems: Problems, keep: frozenset[str] | None = None) -> LLMScores:
    """All LLM scores; a conversation id found in two sources: the later source wins (reported). Only the 8
    paper rubrics are read as the judge's rubrics; another rubric in scores.jsonl files (`evaluate --rubrics`)
    is compared with people as a metric (metric_alignment.md) where it has a number, else ignored, with one
    warning line listing those. `keep` (the rated conversations' ids; None = every one): the rows of the others
    hold what every row is read for (rubric scores, run, model, judge, where it came from, the automatic
    metrics) but not their metrics, the judge's distributions or checklist items, which are only compared with
    people: at the paper's scale the scores of 114,296 conversations are read for 70 rated."""
    result = LLMScores()
    for path in resolve_score_paths(paths, problems):
        try:
            rows = _score_rows(path, problems, keep, result)
        except AlignInputError as exc:
            problems.add("unusable file", str(exc))
            continue
        result.sources.append(str(path))
        result.by_source[str(path)] = [r.conversation_id for r in rows]
        for r in rows:
            prev = result.rows.get(r.conversation_id)
            if prev is not None and complementary(prev, r):
                result.rows[r.conversation_id] = joined(prev, r)
                continue
            if prev is not None:
                problems.add(
                    "duplicate id",
                    f"{r.where}: conversation_id {r.conversation_id} already scored at "
                    f"{prev.where}; this later score is used",
                )
            result.rows[r.conversation_id] = r
    _warn_mixed_or_ignored(result, problems)
    return result


def _score_rows(path: Path, problems: Problems, keep: frozenset[str] | None, result: LLMScores) -> list[ScoreRow]:
    """One score file's rows, read by its type; a scores.jsonl's rubrics with no number go to
    `result.ignored_metrics`."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        others: set[str] = set()
        rows = read_scores_jsonl(path, problems, run_name(path.parent), others, keep)
        for name in others - {m for r in rows for m in r.metrics}:  # a number somewhere: a metric
            result.ignored_metrics.setdefault(name, []).append(str(path))
        return rows
    if suffix in (".csv", ".tsv", ".txt"):
        return read_scores_csv(path, problems)
    if suffix == ".json":
        return read_paper_run(path, problems)
    raise AlignInputError(f"{path}: unknown score file type (expected scores.jsonl, .csv or a paper run .json)")


def _warn_mixed_or_ignored(result: LLMScores, problems: Problems) -> None:
    """One problem line for scores of several judge configurations, one for rubrics ignored for want of a number."""
    if len(result.judges) > 1:
        counts = {j: sum(r.configuration == j for r in result.rows.values()) for j in result.judges}
        listed = "; ".join(f"{j}: {n} conversations" for j, n in counts.items())
        where_ = result.sources[0] if len(result.sources) == 1 else f"{len(result.sources)} score files"
        problems.add(
            "mixed judges",
            f"{where_}: LLM scores by {len(counts)} judge configurations ({listed}); the "
            "tables mix them (named in correlations.md): align one configuration's scores "
            "at a time, or use --by run",
        )
    if result.ignored_metrics:
        names = sorted(result.ignored_metrics, key=str.lower)
        files = sorted({f for fs in result.ignored_metrics.values() for f in fs})
        where_ = files[0] if len(files) == 1 else f"{len(files)} score files"
        problems.add(
            "ignored metric",
            f"{where_}: rubric(s) other than the 8 paper rubrics, with no number to compare as a metric, "
            f"ignored (align compares {', '.join(schema.metrics())} as rubrics): {', '.join(names)}",
        )


def complementary(a: ScoreRow, b: ScoreRow) -> bool:
    """Two sources' rows of one conversation that never score the same rubric (e.g. `evaluate --no-judge`'s
    metrics and a judge's rubric scores in a CSV): they are joined, not one replacing the other."""
    return not bool(np.any(~np.isnan(a.values) & ~np.isnan(b.values)))


def joined(a: ScoreRow, b: ScoreRow) -> ScoreRow:
    """One row from two complementary rows: the rubric scores of each, the metrics of both (b's on a clash),
    the metadata and judge provenance of the row that has them (b's where both do)."""
    from dataclasses import replace

    judged, other = (a, b) if np.any(~np.isnan(a.values)) else (b, a)
    base = a if (a.tutorial_id and not b.tutorial_id) else b
    values = np.where(np.isnan(a.values), b.values, a.values)
    return replace(
        base,
        values=values,
        automatic={**a.automatic, **b.automatic},
        metrics={**a.metrics, **b.metrics},
        judge=judged.judge,
        scoring=judged.scoring,
        prompt=judged.prompt,
        rubrics_sha256=judged.rubrics_sha256,
        dist=judged.dist or other.dist,
        items=judged.items or other.items,
        item_rubrics=judged.item_rubrics or other.item_rubrics,
        checklist=judged.checklist or other.checklist,
        title=base.title or a.title or b.title,
        mode=a.mode or b.mode,
        where=f"{a.where} + {b.where}",
    )


def llm_matrix(llm: LLMScores, ids: list[str]) -> np.ndarray:
    """conversations x metrics of LLM scores for `ids` (NaN where absent)."""
    out = np.full((len(ids), len(schema.metrics())), math.nan)
    for i, cid in enumerate(ids):
        r = llm.rows.get(cid)
        if r is not None:
            out[i] = r.values
    return out
