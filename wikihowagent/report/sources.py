"""The report's one adapter to the run readers.

Everything the report knows about a run comes through `load_inputs`: it reads run directories (or sweep
directories of runs) with the project's readers — `wikihowagent.runs.read_run_info` (RunInfo),
`conversation_items` + `wikihowagent.paper_format.read_lenient` (typed `Conversation`s, ours or the paper's
records, and what a damaged or failed record still holds), `wikihowagent.runs.read_score_table` (the score table every stage reads) — and returns
`ReportRun`s, each with its rows of the score table (`ReportRun.scores`). When the readers change, only this
module changes.

Bad input never stops the report: a cell of a sweep that cannot be read, a run without scores, a record
with a missing field are reported (one line each, naming the file and line) and left out or shown as
missing. A path the user named that yields nothing at all is an error (`ReportInputError`). Fields the
typed records gain later (e.g. personas, score distributions) are shown as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.errors import WikihowagentError
from wikihowagent.evaluation.judge import RubricError, load_rubrics
from wikihowagent.evaluation.metrics import value_range
from wikihowagent.paper_format import LenientRecord, parse_run_stem, read_lenient
from wikihowagent.records import Conversation, ScoreRecord, Turn
from wikihowagent.runs import (
    CONVERSATIONS,
    FIGURES_DIR,
    POSTTESTS,
    RUN_INFO,
    SCORE_FILES,
    RunError,
    conversation_items,
    read_posttests,
    read_run_info,
    read_score_table,
    resolve_runs,
    runs_below,
    scores_file,
)
from wikihowagent.scoretable import ScoreTable

# Fields shown as such; any other (later) field of a record is shown as it is.
_KNOWN_SCORE_FIELDS = set(ScoreRecord.model_fields)
_KNOWN_CONV_FIELDS = set(Conversation.model_fields) | {"persona"}


class ReportInputError(WikihowagentError, ValueError):
    """A path the user named is missing or yields nothing; the message is one line naming it."""


@dataclass
class ReportConversation:
    conversation_id: str
    run: str
    where: str  # "file:LINE"
    tutorial_id: str = ""
    title: str = ""
    method_title: str = ""
    domain: str = ""
    steps: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    status: str = "unknown"  # finished | cut | failed | unknown
    error: str = ""
    warnings: list[str] = field(default_factory=list)
    teacher: str = ""
    learner: str = ""
    persona: str = ""  # shown when the records carry one; never required
    extra: dict[str, Any] = field(default_factory=dict)  # other record fields, shown as they are
    missing: list[str] = field(default_factory=list)  # fields the record lacks
    # from scores.jsonl (empty when the run is not evaluated)
    scored: bool = False
    metrics: dict[str, float | None] = field(default_factory=dict)
    judge_raw: dict[str, list[str]] = field(default_factory=dict)
    judge_failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    score_extra: dict[str, Any] = field(default_factory=dict)  # e.g. weighted-score distributions
    # --judge-scoring checklist: one row per item asked, [id, rubrics, question, polarity, P(yes), P(good),
    # failure, step (0-based) or None]; and how the answers were read ("logprobs" | "answer")
    checklist: list[list[Any]] = field(default_factory=list)
    checklist_reading: str = ""
    posttest: dict[str, Any] | None = None  # the learner's post-test (record field `posttest`), as stored
    posttest_matches: list[tuple[int, int, float]] = field(default_factory=list)  # from the score record

    @property
    def tokens(self) -> int:
        return sum(t.prompt_tokens + t.completion_tokens for t in self.turns)


@dataclass
class ReportRun:
    name: str
    path: Path
    model: str  # "T-<teacher> L-<learner>"
    teacher: str = ""
    learner: str = ""
    evaluator: str = ""
    persona: str = ""
    status: str = ""  # run.json status
    scores_path: Path | None = None
    mode: str = ""  # evaluate mode(s) of the score records: default, paper
    scoring: str = ""  # judge scoring mode(s) of the score records: weighted, json, ...
    conversations: list[ReportConversation] = field(default_factory=list)
    scores: ScoreTable = field(default_factory=ScoreTable.empty)  # this run's rows of the score table


@dataclass
class Problems:
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)


def _model_label(teacher: str, learner: str, fallback: str) -> str:
    if not teacher:
        return fallback
    return f"T-{teacher} L-{learner or teacher}"


def expand(paths: list[Path], problems: Problems) -> list[Path]:
    """Run directories. A sweep directory (`sweep.json` from `wikihowagent sweep`) stands for its cells, a cell
    not generated or not merged yet is reported; any other directory without run files stands for the
    directories below it."""
    out: list[Path] = []
    for p in map(Path, paths):
        try:
            resolved = resolve_runs([p])
        except RunError as exc:  # a sweep.json that is not a sweep file
            raise ReportInputError(str(exc)) from None
        kind = resolved[0].kind if resolved else "cell"  # a sweep without cells: none has conversations
        if kind == "missing":
            raise ReportInputError(f"{p}: no such run directory")
        if kind == "file" and not (p.is_file() and p.suffix.lower() == ".json"):  # a paper run file, or refused
            raise ReportInputError(
                f"{p}: not a run directory (expected a directory with {RUN_INFO} and {CONVERSATIONS})"
            )
        if kind in ("file", "run"):
            out.append(p)
        elif kind == "cell":
            for rp in resolved:
                if rp.generated:
                    out.append(rp.path)
                else:
                    problems.add(f"{rp.path}: sweep cell not generated (or its shards not merged) yet; left out")
            if not out:
                raise ReportInputError(f"{p}: no cell of this sweep has conversations yet")
        else:
            cells = runs_below(p, skip=[FIGURES_DIR])
            if not cells:
                raise ReportInputError(f"{p}: not a run directory and no runs below it")
            out.extend(cells)
    return out


def load_run(path: Path, problems: Problems, on_record: Callable[[], None] | None = None) -> ReportRun | None:
    """One run directory (or one of the paper's run files) -> ReportRun, or None (reported) when it holds
    nothing readable."""
    found = _paper_file(path, problems) if path.is_file() else _run_dir(path, problems)
    if found is None:
        return None
    run, records, score_file = found
    by_id: dict[str, ReportConversation] = {}
    for where, obj in records:
        conv = _conversation(obj, run, where, problems)
        if conv is not None:
            by_id[conv.conversation_id] = conv  # a rerun's later line replaces the earlier one
        if on_record:
            on_record()
    if score_file is None:
        if by_id:
            problems.add(
                f"{path}: no {SCORE_FILES[0]} (not evaluated: run `wikihowagent evaluate {path}`); "
                "shown without metrics"
            )
    else:
        run.scores_path = score_file
        _attach_scores(run, by_id, score_file, problems)
    if not by_id:
        problems.add(f"{path}: nothing to show (no readable conversation or score record)")
        return None
    run.conversations = list(by_id.values())
    failed = sum(c.status == "failed" for c in run.conversations)
    if failed:
        problems.add(
            f"{path}: {failed} failed conversation(s) (run status {run.status or 'unknown'}); shown as failed, "
            "without scores (rerun `wikihowagent generate` to retry them)"
        )
    if not run.teacher:  # paper-style runs: take the model from the records
        t = next((c.teacher for c in run.conversations if c.teacher), "")
        lr = next((c.learner for c in run.conversations if c.learner), "")
        run.model = _model_label(t, lr, run.name)
    if not run.persona:
        personas = sorted({c.persona for c in run.conversations if c.persona})
        run.persona = ", ".join(personas)
    return run


Found = tuple[ReportRun, Iterable[tuple[str, Any]], Path | None]  # the run, its ("where", record) items, its scores


def _run_dir(path: Path, problems: Problems) -> Found:
    """A run directory: run.json, the records of conversations.jsonl, its score file."""
    teacher = learner = evaluator = persona = status = ""
    name = path.name
    try:
        info = read_run_info(path)
        name, teacher, learner = info.name or path.name, info.teacher, info.learner or info.teacher
        evaluator, status = info.evaluator or "", info.status
        persona = str((info.model_extra or {}).get("persona") or "")
    except RunError as exc:
        problems.add(str(exc))
    run = ReportRun(
        name=name,
        path=path,
        model=_model_label(teacher, learner, name),
        teacher=teacher,
        learner=learner,
        evaluator=evaluator,
        persona=persona,
        status=status,
    )
    conv_file = path / CONVERSATIONS
    records: Iterable[tuple[str, Any]] = ()
    if conv_file.is_file():
        records = conversation_items(path, on_error=problems.add, paper=False)
    else:
        problems.add(f"{path}: no {CONVERSATIONS} (the conversation text is missing)")
    return run, records, scores_file(path)


def _paper_file(path: Path, problems: Problems) -> Found | None:
    """One of the paper's run files: its records, and itself as the score file (their `evaluation` scores)."""
    stem = parse_run_stem(path.stem) or {}
    teacher, learner = stem.get("teacher", ""), stem.get("learner", "")
    run = ReportRun(
        name=path.stem,
        path=path,
        model=_model_label(teacher, learner, path.stem),
        teacher=teacher,
        learner=learner,
        evaluator=stem.get("evaluator", ""),
    )
    try:
        items = list(conversation_items(path, paper=True))
    except (ValueError, OSError) as exc:
        problems.add(str(exc) if isinstance(exc, ValueError) else f"{path}: cannot read ({exc.strerror or exc})")
        return None

    def records() -> Iterator[tuple[str, Any]]:
        for where, obj in items:
            if isinstance(obj, dict):
                yield where, obj
            else:
                problems.add(f"{where}: expected a JSON object; left out")

    return run, records(), path


def _item_step(item_id: str) -> int | None:
    """The 0-based tutorial step of a checklist step item ("step:3:step-taught" -> 2), else None."""
    parts = item_id.split(":")
    return int(parts[1]) - 1 if len(parts) == 3 and parts[0] == "step" and parts[1].isdigit() else None


def _later_fields(record: Any, known: set[str]) -> dict[str, Any]:
    """A typed record's fields the report does not know by name (e.g. added by a later change), non-empty."""
    return {k: v for k, v in record.model_dump(mode="json").items() if k not in known and v not in (None, "", [], {})}


def _attach_scores(run: ReportRun, by_id: dict[str, ReportConversation], score_file: Path, problems: Problems) -> None:
    # Post-tests that `evaluate --posttest-learner` took for records that had none are stored beside the scores.
    for cid, test in read_posttests(score_file.parent / POSTTESTS).items():
        if cid in by_id and by_id[cid].posttest is None:
            by_id[cid].posttest = test.model_dump(mode="json")

    try:
        table = read_score_table(score_file, run=run.name, on_error=problems.add)
    except RunError as exc:
        problems.add(f"{exc}; shown without metrics")
        return
    drop_out_of_range(table, problems)
    orphans = 0
    for cid, rec, metrics in zip(
        table.meta["conversation_id"], table.meta["record"], table.iter_row_metrics(), strict=True
    ):
        conv = by_id.get(cid)
        if conv is None:  # scored, but its conversation record is missing: shown from the score record
            orphans += 1
            conv = by_id[cid] = ReportConversation(
                conversation_id=cid,
                run=run.name,
                where=str(score_file),
                tutorial_id=rec.tutorial_id,
                title=rec.title,
                domain=rec.domain,
                teacher=rec.teacher,
                learner=rec.learner,
                missing=["conversation record"],
            )
        conv.scored = True
        conv.metrics = metrics
        judge = rec.judge
        if judge is not None:
            conv.judge_raw = dict(judge.raw)
            conv.judge_failures = list(judge.failures)
            conv.notes = list(rec.notes) + [f"judge: {n}" for n in judge.notes]
            conv.checklist = [
                [i.id, list(i.rubrics), i.question, i.polarity, i.p_yes, i.good, i.failure, _item_step(i.id)]
                for i in judge.items
            ]
            conv.checklist_reading = judge.reading
            if not run.evaluator and judge.evaluator:
                run.evaluator = judge.evaluator
        else:
            conv.notes = list(rec.notes)
        conv.score_extra = _later_fields(rec, _KNOWN_SCORE_FIELDS)
        conv.posttest_matches = [tuple(m) for m in rec.posttest_matches or []]
    run.scores = table
    run.mode = ", ".join(table.modes())
    run.scoring = ", ".join(table.scorings())
    if orphans:
        problems.add(
            f"{score_file}: {orphans} score record(s) without a conversation in {CONVERSATIONS} (shown without text)"
        )


def drop_out_of_range(table: Any, problems: Problems, columns: list[str] | None = None) -> None:
    """Values no metric or judge can produce (a hand-edited scores file: Clarity 99, BLEU -7) are reported,
    one line per metric with the first cell and the count, and left out (null) of every table and figure.
    Each metric's range is its registry entry's (`metrics.value_range`). `columns`: only these (default all)."""
    try:
        rubric_names = list(load_rubrics())
    except (RubricError, OSError):
        rubric_names = []
    for name in [c for c in table.values.columns if columns is None or c in columns]:
        rng = value_range(name, rubric_names)
        if rng is None:
            continue
        col = table.values[name]
        bad = col.notna() & ((col < rng[0]) | (col > rng[1]))
        if not bad.any():
            continue
        rows = list(bad[bad].index)
        more = f" (and {len(rows) - 1} more)" if len(rows) > 1 else ""
        problems.add(
            f"{table.meta.at[rows[0], 'where']}: {name} = {col[rows[0]]:g} is outside {rng[0]:g} to "
            f"{rng[1]:g}{more}; left out"
        )
        table.values.loc[bad, name] = float("nan")


def _conversation(obj: dict[str, Any], run: ReportRun, where: str, problems: Problems) -> ReportConversation | None:
    """One record -> ReportConversation, read by the project's lenient reader (`paper_format.read_lenient`): a
    record the adapter refuses is shown with what it has, and what it lacks is reported (not for failed
    conversations, which may lack their turns)."""
    rec = read_lenient(obj, run.name, where)
    if rec is None:
        problems.add(f"{where}: record has no conversation_id; left out")
        return None
    if rec.refused:
        problems.add(f"{where}: {rec.refused}; shown without it")
    conv = rec.conversation
    if conv is None:
        return _partial(rec, run)
    extra = _later_fields(conv, _KNOWN_CONV_FIELDS)
    extra.update({k: v for k, v in obj.items() if k not in _KNOWN_CONV_FIELDS and k not in extra})
    return ReportConversation(
        conversation_id=rec.conversation_id,
        run=run.name,
        where=where,
        tutorial_id=conv.tutorial_id,
        title=conv.title,
        method_title=conv.tutorial_title,
        domain=conv.domain,
        steps=list(conv.steps),
        turns=list(conv.turns),
        status=rec.status,
        error=conv.error or "",
        warnings=list(conv.warnings),
        teacher=conv.teacher or run.teacher,
        learner=conv.learner or run.learner or conv.teacher or run.teacher,
        persona=rec.persona,
        extra=extra,
        posttest=conv.posttest.model_dump(mode="json") if conv.posttest is not None else None,
    )


def _partial(rec: LenientRecord, run: ReportRun) -> ReportConversation:
    """What can be shown of a record the record adapter refuses (e.g. no tutorial, or a failed one): its
    `partial` reading (`paper_format.partial_record`)."""
    part = rec.partial
    assert part is not None  # read_lenient gives one whenever it gives no conversation
    teacher = part.teacher or run.teacher
    return ReportConversation(
        conversation_id=rec.conversation_id,
        run=run.name,
        where=rec.where,
        tutorial_id=part.tutorial_id,
        title=part.title,
        method_title=part.method_title,
        domain=part.domain,
        steps=part.steps,
        turns=part.turns,
        status=rec.status,
        error=part.error,
        warnings=part.warnings,
        teacher=teacher,
        learner=part.learner or run.learner or teacher,
        persona=rec.persona,
        extra={k: v for k, v in rec.obj.items() if k not in _KNOWN_CONV_FIELDS},
        missing=part.missing,
    )


def load_inputs(paths: list[Path], problems: Problems, on_record: Callable[[], None] | None = None) -> list[ReportRun]:
    """Every named run (sweeps expanded). A named run directory that yields nothing is a ReportInputError;
    a sweep cell that yields nothing is reported and skipped."""
    named = {Path(p).resolve() for p in paths}
    runs: list[ReportRun] = []
    for p in expand(paths, problems):
        before = len(problems.lines)
        run = load_run(p, problems, on_record)
        if run is None:
            if p.resolve() in named:
                raise ReportInputError(problems.lines[-1] if len(problems.lines) > before else f"{p}: nothing to show")
            continue
        runs.append(run)
    if not runs:
        raise ReportInputError("nothing to show: no run with a readable conversation or score record")
    names = [r.name for r in runs]
    for r in runs:
        if names.count(r.name) > 1:  # two sweeps with the same cell name: keep them apart
            r.name = f"{r.path.parent.name}/{r.path.name}"
            for c in r.conversations:
                c.run = r.name
    return runs


def count_lines(paths: list[Path]) -> int:
    """Conversation records to read (for the progress bar)."""
    total = 0
    for p in paths:
        f = Path(p) / CONVERSATIONS
        if f.is_file():
            with f.open("rb") as fh:
                total += sum(1 for _ in fh)
    return total
