"""The `align` stage: read human and LLM scores, compute, render and write the results (`run_alignment`).

Definitions:
- human score of a conversation and metric = mean of the judges' available scores (blanks ignored); the
  number of judges behind each mean is kept (`paired_scores.csv`, `descriptives.csv`);
- `Overall` = per conversation, the mean of the metrics available on *both* sides (human mean and LLM
  score present), computed separately for the human and the LLM side, so both means cover the same metrics;
- a metric is correlated over the conversations that have both a human and an LLM score for it; fewer
  than 3 such pairs -> left out (reported);
- with `by`, everything is also computed per run / model / domain of the conversation (taken from the LLM
  scores); inter-annotator agreement for the whole set uses every human-rated conversation.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wikihowagent.config import load_config
from wikihowagent.errors import WikihowagentError, kind_of
from wikihowagent.layout import METRIC_ALIGNMENT_MD
from wikihowagent.outdir import OutputDirError, check_replaceable
from wikihowagent.records import ESTIMATE_NAME
from wikihowagent.runs import evaluated_runs, run_name
from wikihowagent.stats.pair_order import PairOrder, pair_order

from . import checklist_fit, estimates, metric_table, people_fit, schema
from .agreement import (
    TOO_FEW,
    UNDEFINED,
    CorrelationResult,
    agreement,
    correlate,
    describe,
)
from .annotations import JudgeRatings, average_judges, human_matrix, read_human_files
from .blind import unblind
from .calibration import METHODS
from .judges import compare_judges
from .named import unused_inputs
from .problems import AlignInputError, Problems
from .result import ALL, BY_CHOICES, TOOL, AlignResult, GroupResult
from .sources import LLMScores, llm_matrix, read_llm_scores
from .writing import write_outputs


def overall_scores(human: np.ndarray, model: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    both = ~np.isnan(human) & ~np.isnan(model)
    k = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(k > 0, np.where(both, human, 0).sum(1) / np.maximum(k, 1), np.nan)
        m = np.where(k > 0, np.where(both, model, 0).sum(1) / np.maximum(k, 1), np.nan)
    return h, m


def default_score_paths(judges: list[JudgeRatings], runs_dir: Path, problems: Problems) -> list[Path]:
    """Without --scores: the evaluated runs under `runs_dir` named in the sheets' `filename` column, or else
    every evaluated run there (see `runs.evaluated_runs`: also scores-paper.jsonl and runs_dir/rescored/)."""
    found = evaluated_runs(runs_dir)
    if not found:
        problems.add(
            "unusable file", f"{runs_dir}: no evaluated runs found and no --scores given; no LLM scores to compare with"
        )
        return []
    runs: dict[str, list[Path]] = {}  # a run and a re-scored paper file may share a name: keep both
    for d in found:
        runs.setdefault(run_name(d), []).append(d)
    wanted = {r for j in judges for r in j.runs.values() if r}
    chosen = [d for n in sorted(wanted) if n in runs for d in runs[n]]
    return chosen or found


def _seed(seed: int, group: str, metric: str) -> list[int]:
    return [seed, zlib.crc32(group.encode()), zlib.crc32(metric.encode())]


def compute(
    human_paths: list[Path],
    score_paths: list[Path],
    *,
    by: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    problems: Problems | None = None,
    runs_dir: Path | None = None,
    keys: list[Path] | None = None,
) -> AlignResult:
    """`runs_dir` (for the default score paths): None = the project config's runs_dir. `keys`: key files of
    blind sheets (default: the `*.key.csv` beside each human file that knows its ids)."""
    problems = problems if problems is not None else Problems()
    if by is not None and by not in BY_CHOICES:
        raise ValueError(f"--by must be one of {', '.join(BY_CHOICES)}")
    judges, llm = read_inputs(human_paths, score_paths, problems, runs_dir, keys)
    ids, H = human_matrix(judges)
    human8, counts = (
        average_judges(H)
        if len(judges)
        else (np.empty((0, schema.n_metrics())), np.empty((0, schema.n_metrics()), int))
    )
    model8 = llm_matrix(llm, ids)
    matched = np.fromiter((cid in llm.rows for cid in ids), dtype=bool, count=len(ids))
    if llm.sources:
        report_unmatched(judges, llm, ids, matched, problems)
    if len(judges) >= 2:
        report_judge_coverage(judges, ids, problems)
    hum_overall, mod_overall = overall_scores(human8, model8)
    human = np.column_stack([human8, hum_overall]) if len(ids) else np.empty((0, schema.n_metrics() + 1))
    model = np.column_stack([model8, mod_overall]) if len(ids) else np.empty((0, schema.n_metrics() + 1))
    groups = make_groups(by, ids, llm, matched)
    judged = bool(np.any(~np.isnan(model8)))
    if len(ids) and llm.rows and not judged:
        problems.add(
            "no judge score",
            "the scores hold no LLM judge score for the rated conversations (evaluated with --no-judge?): "
            f"only the metrics are compared with people ({METRIC_ALIGNMENT_MD})",
        )
    for g in groups:
        where_g = f"{by} {g.group}: " if g.group != ALL or by else ""
        correlate_group(g, human, model, counts, n_boot, seed, where_g, problems if judged else Problems())
        if len(judges) >= 2:
            agree_group(g, H, judges, where_g, problems)
    res = AlignResult(judges, llm, ids, H, human, counts, model, matched, groups, by, n_boot, seed, problems)
    res.automatic = automatic_correlations(llm, ids, human, n_boot, seed)
    res.pair_order = head_to_head(llm, ids, human, model, n_boot, seed)
    if len(ids):
        tutorials, _ = estimates.tutorial_keys(res, ids)
        tutorial_ids = [str(t) for t in tutorials]
        res.metric_alignment = metric_table.metric_alignment(res, tutorial_ids, n_boot, seed)
        for line in metric_table.uncompared(res.metric_alignment) if res.metric_alignment else []:
            problems.add(UNDEFINED, line)
        if metric_table.metric_columns(res, ids):
            res.people_fit = people_fit.fit_people(res, tutorial_ids, n_boot, seed, human_paths)
            if res.people_fit.estimate is None:
                problems.add("no estimate", f"{ESTIMATE_NAME} not written: {res.people_fit.why_not}")
    return res


def head_to_head(
    llm: LLMScores, ids: list[str], human: np.ndarray, model: np.ndarray, n_boot: int, seed: int
) -> dict[str, PairOrder]:
    """Per metric: the share of the pairs of conversations of one tutorial whose people's means differ by at least
    stats.pair_order.GAP that the judge's scores order the same way (ties half; what `compare`'s verdicts from
    absolute scores give), 95 % CI resampling tutorials. Only conversations with a score take part."""
    tutorial = [(llm.rows[c].tutorial_id or llm.rows[c].title) if c in llm.rows else "" for c in ids]
    out = {}
    for k, metric in enumerate(schema.row_names()):
        res, _ = pair_order({metric: model[:, k]}, human[:, k], tutorial, n_boot=n_boot, seed=seed)
        out[metric] = res[metric]
    return out


def read_inputs(
    human_paths: list[Path], score_paths: list[Path], problems: Problems, runs_dir: Path | None, keys: list[Path] | None
) -> tuple[list[JudgeRatings], LLMScores]:
    """The human judges (blind sheets unblinded) and the LLM scores (default: the runs under `runs_dir` the
    sheets name; None = the project config's runs_dir). An unusable score path is a problem, not an error."""
    judges = read_human_files(human_paths, problems)
    unblind(judges, list(keys or []), problems)
    if not score_paths:
        if runs_dir is None:
            runs_dir = Path(load_config().runs_dir)
        score_paths = default_score_paths(judges, runs_dir, problems)
    rated = frozenset(cid for j in judges for cid in j.scores)
    try:
        llm = read_llm_scores(score_paths, problems, keep=rated)
    except AlignInputError as exc:
        problems.add("unusable file", str(exc))
        llm = LLMScores()
    return judges, llm


def report_unmatched(
    judges: list[JudgeRatings], llm: LLMScores, ids: list[str], matched: np.ndarray, problems: Problems
) -> None:
    """Matching problems, both directions: rated conversations without an LLM score, LLM-scored ones without
    a human rating."""
    first_loc: dict[str, tuple[str, int]] = {}
    for j in judges:
        for cid, row in j.rows.items():
            first_loc.setdefault(cid, (str(j.source), row))
    for i in np.flatnonzero(~matched):  # a judge run still in progress: many, one line per file on screen
        cid = ids[i]
        src, row = first_loc[cid]
        problems.add(
            "no llm score",
            f"{src}:{row}: column 'conversation_id': {cid} has no LLM score; left out",
            group=src,
            label=cid,
            group_text="{n} rated conversations have no LLM score (the first: {first}); left out",
        )
    human_ids = set(ids)
    for src, src_ids in llm.by_source.items():
        extra = [c for c in src_ids if c not in human_ids]
        if extra:
            listed = ", ".join(extra[:5]) + (", ..." if len(extra) > 5 else "")
            problems.add(
                "not annotated",
                f"{src}: {len(extra)} of {len(src_ids)} LLM-scored conversations have "
                f"no human rating ({listed}); not in the correlations (--ppi uses them)",
            )


def report_judge_coverage(judges: list[JudgeRatings], ids: list[str], problems: Problems) -> None:
    """Each judge's conversations the others rated and it did not (counted as blank)."""
    present = np.zeros((len(judges), len(ids)), dtype=bool)
    index = {c: i for i, c in enumerate(ids)}
    for a, j in enumerate(judges):
        present[a, [index[c] for c in j.scores]] = True
        absent = int((~present[a]).sum())
        if absent:
            problems.add(
                "judge coverage",
                f"{j.source}: judge '{j.judge}' has no row for {absent} of the "
                f"{len(ids)} conversations the other judges rated; counted as blank",
            )


def make_groups(by: str | None, ids: list[str], llm: LLMScores, matched: np.ndarray) -> list[GroupResult]:
    """All conversations, then (`--by`) one group per value of the field, sorted."""
    groups = [GroupResult(ALL, np.ones(len(ids), dtype=bool))]
    if by:
        labels = np.array(
            [(getattr(llm.rows[c], by) or "(none)") if m else "" for c, m in zip(ids, matched, strict=True)],
            dtype=object,
        )
        for g in sorted({lab for lab in labels if lab}):
            groups.append(GroupResult(g, labels == g))
    return groups


def correlate_group(
    g: GroupResult,
    human: np.ndarray,
    model: np.ndarray,
    counts: np.ndarray,
    n_boot: int,
    seed: int,
    where_g: str,
    problems: Problems,
) -> None:
    """Human vs LLM per metric (and Overall) over the group: correlations, descriptives, judges per mean."""
    for k, metric in enumerate(schema.row_names()):
        ok = g.mask & ~np.isnan(human[:, k]) & ~np.isnan(model[:, k])
        x, y = human[ok, k], model[ok, k]
        res = correlate(x, y, n_boot=n_boot, seed=_seed(seed, g.group, metric))
        g.correlations[metric] = res
        g.descriptives[metric] = describe(x, y)
        if k < len(schema.metrics()):
            g.judges_mean[metric] = float(counts[ok, k].mean()) if ok.any() else math.nan
        for note in res.notes:  # bootstrap notes are informational: in the note column, not problems
            kind = kind_of(note, "")
            if kind in (TOO_FEW, UNDEFINED):
                problems.add(kind, f"{where_g}{metric}: {note}; correlations left out")


def agree_group(g: GroupResult, H: np.ndarray, judges: list[JudgeRatings], where_g: str, problems: Problems) -> None:
    """Inter-annotator agreement per metric over the group (two or more judges)."""
    judge_names = [j.judge for j in judges]
    units = g.mask if g.group != ALL else np.ones(len(g.mask), dtype=bool)
    for k, metric in enumerate(schema.metrics()):
        ag = agreement(H[:, units, k], judge_names)
        g.agreement[metric] = ag
        for note in ag.notes:
            problems.add("agreement", f"{where_g}{metric}: inter-annotator agreement: {note}")
        for p in ag.pairs:
            for note in p.notes:
                problems.add("agreement", f"{where_g}{metric}: {p.judge_a} vs {p.judge_b}: {note}")


def automatic_correlations(
    llm: LLMScores, ids: list[str], human: np.ndarray, n_boot: int, seed: int
) -> dict[tuple[str, str], CorrelationResult]:
    """Each automatic metric (the post-test's: what the learner recalled) against each human rubric mean and
    the human Overall; that Overall is the mean of every rubric the humans rated (no LLM side to match here,
    unlike the judge's Overall, which covers the rubrics both sides have)."""
    names = sorted({m for r in llm.rows.values() for m in r.automatic}, key=str)
    out: dict[tuple[str, str], CorrelationResult] = {}
    n_metrics = len(schema.metrics())
    people = human.copy()
    if len(ids):
        rated = ~np.isnan(human[:, :n_metrics])
        sums = np.where(rated, human[:, :n_metrics], 0.0).sum(axis=1)
        counts = rated.sum(axis=1)
        people[:, n_metrics] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    for name in names:
        auto = np.array([llm.rows[c].automatic.get(name, np.nan) if c in llm.rows else np.nan for c in ids])
        for k, rubric in enumerate(schema.row_names()):
            ok = ~np.isnan(people[:, k]) & ~np.isnan(auto) if len(ids) else np.zeros(0, dtype=bool)
            out[(name, rubric)] = correlate(people[ok, k], auto[ok], n_boot=n_boot, seed=_seed(seed, name, rubric))
    return out


# ---------------------------------------------------------------------------------------------------------
# Tables


# ---------------------------------------------------------------------------------------------------------
# Writing


# ---------------------------------------------------------------------------------------------------------
# Terminal


# --------------------------------------------------------------------------- the stage


@dataclass(frozen=True)
class AlignRequest:
    """What `wikihowagent align` was asked to do (paths already resolved by the command)."""

    human: tuple[Path, ...]
    out_dir: Path
    runs_dir: Path
    scores: tuple[Path, ...] = ()  # () = the runs under runs_dir named in the sheets
    by: str | None = None
    bootstrap: int = 2000
    seed: int = 0
    figures: bool = True
    keys: tuple[Path, ...] = ()  # key files of blind sheets (`annotate export --blind`)
    calibrate: str | None = None  # --calibrate: the method of calibration.json ("isotonic" | "ridge"); None = off
    ppi: bool = False  # --ppi: prediction-powered means per --by group (default: model)
    fit_checklist: float | None = None  # --fit-checklist: the shrinkage toward uniform; None = off


class AlignUsageError(WikihowagentError, ValueError):
    """A bad `align` option, found before any work (exit 2); `option` names it ("" when the message names it)."""

    def __init__(self, message: str, option: str = "") -> None:
        super().__init__(message)
        self.option = option


def check_options(by: str | None, calibration_method: str) -> None:
    """--by and --calibration-method are among the choices; AlignUsageError naming the option if not."""
    if by is not None and by not in BY_CHOICES:
        raise AlignUsageError(f"must be one of: {', '.join(BY_CHOICES)}", "--by")
    if calibration_method not in METHODS:
        raise AlignUsageError(f"must be one of: {', '.join(METHODS)}", "--calibration-method")


def check_out_dir(out_dir: Path, inputs: Iterable[Path] = (), holders: Iterable[Path] = ()) -> None:
    """--out can be replaced as a whole (outdir.check_replaceable: a writable directory, or not there yet, holding
    only what align wrote; none of the `inputs` (human sheets, key files), neither holding nor inside one; it may
    lie inside a --scores folder, the `holders`, but not be or hold one); AlignUsageError (one line) if not.
    Checked again when writing; here so that nothing is computed in vain."""
    try:
        check_replaceable(out_dir, TOOL, inputs=inputs, holders=holders)
    except OutputDirError as exc:
        raise AlignUsageError(str(exc)) from None


@dataclass
class AlignOutcome:
    result: AlignResult
    written: list[Path] = field(default_factory=list)  # empty: nothing could be computed, nothing written
    unused: list[str] = field(default_factory=list)  # named files that contributed nothing, one line each


def run_alignment(req: AlignRequest, problems: Problems) -> AlignOutcome:
    """Read, compute and write all-or-nothing; what was left out goes to `problems`. Raises OutputDirError if
    --out changed under us (nothing written); nothing is written either when nothing could be computed."""
    res = compute(
        list(req.human),
        list(req.scores),
        by=req.by,
        n_boot=req.bootstrap,
        seed=req.seed,
        problems=problems,
        runs_dir=req.runs_dir,
        keys=list(req.keys),
    )
    unused = unused_inputs(list(req.human), list(req.scores), res.judges, res.llm, res.problems)
    if res.any_correlation:
        res.raters = compare_judges(res, [Path(p) for p in res.llm.sources], n_boot=req.bootstrap, seed=req.seed)
    if res.computed and req.calibrate:
        res.calibration = estimates.calibrate(
            res, req.calibrate, n_boot=req.bootstrap, seed=req.seed, problems=problems, human_paths=list(req.human)
        )
    if res.computed and req.fit_checklist is not None:
        res.checklist_fit = checklist_fit.fit_checklist(
            res, shrinkage=req.fit_checklist, n_boot=req.bootstrap, seed=req.seed, problems=problems
        )
    if res.computed and req.ppi:
        res.ppi = estimates.ppi_estimates(res, req.by or "model", problems)
    if not res.computed:
        return AlignOutcome(res, unused=unused)
    return AlignOutcome(res, write_outputs(res, req.out_dir, list(req.human), figures=req.figures), unused)
