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

import itertools
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import RunError
from wikihowagent.judge.rubric_judge import RubricError, load_rubrics
from wikihowagent.layout import CONVERSATIONS, FIGURES_DIR, POSTTESTS, RUN_INFO, SCORE_FILES
from wikihowagent.metrics.computational import value_range
from wikihowagent.paper_format import LenientRecord, parse_run_stem, read_lenient
from wikihowagent.processes import pool_context
from wikihowagent.records import Conversation, ScoreRecord, Turn
from wikihowagent.records_io import read_posttests
from wikihowagent.runs import conversation_items, read_run_info, read_score_table, resolve_runs, runs_below, scores_file
from wikihowagent.scoretable import ScoreTable

from .store import STATUSES, ConversationStore, StoredRun, parts

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
    rows: range = range(0)  # its conversations in the report's ConversationStore
    scores: ScoreTable = field(default_factory=ScoreTable.empty)  # this run's rows of the score table
    calibrated: list[str] = field(default_factory=list)  # the `<rubric> (cal.)` columns `--calibration` added


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


def load_run(
    path: Path,
    problems: Problems,
    store: ConversationStore,
    index: int,
    on_record: Callable[[], None] | None = None,
) -> ReportRun | None:
    """One run directory (or one of the paper's run files) -> ReportRun, its conversations streamed into
    `store` as run number `index` (each record read once, its text spooled, never all in memory); None
    (reported) when it holds nothing readable."""
    found = _paper_file(path, problems) if path.is_file() else _run_dir(path, problems)
    if found is None:
        return None
    run, records, score_file = found
    later = Problems()  # the score file's problems: said after the records' (in the order a reader meets them)
    scores = _read_scores(run, score_file, later) if score_file is not None else None
    start = len(store)
    at: dict[str, int] = {}  # conversation id -> its index in the store
    for where, obj in records:
        conv = _conversation(obj, run, where, problems)
        if conv is not None:
            score_row = scores.attach(conv) if scores is not None else -1
            at[conv.conversation_id] = store.put(at.get(conv.conversation_id), index, score_row, conv, parts(conv))
        if on_record:
            on_record()
    if score_file is None:
        if at:
            problems.add(
                f"{path}: no {SCORE_FILES[0]} (not evaluated: run `wikihowagent evaluate {path}`); "
                "shown without metrics"
            )
    else:
        assert scores is not None  # read from score_file
        for score_row, conv in scores.orphans(at):
            at[conv.conversation_id] = store.put(None, index, score_row, conv, parts(conv))
        scores.done(later)
    problems.lines += later.lines
    if not at:
        problems.add(f"{path}: nothing to show (no readable conversation or score record)")
        return None
    run.rows = range(start, len(store))
    _run_labels(run, store, problems)
    return run


def _run_labels(run: ReportRun, store: ConversationStore, problems: Problems) -> None:
    """The run's failed conversations said; its model and persona from the records when run.json has none."""
    failed = sum(store.status[i] == STATUSES.index("failed") for i in run.rows)
    if failed:
        problems.add(
            f"{run.path}: {failed} failed conversation(s) (run status {run.status or 'unknown'}); shown as failed, "
            "without scores (rerun `wikihowagent generate` to retry them)"
        )
    if not run.teacher:  # paper-style runs: take the model from the records
        t = next((store.teacher[i] for i in run.rows if store.teacher[i]), "")
        lr = next((store.learner[i] for i in run.rows if store.learner[i]), "")
        run.model = _model_label(t, lr, run.name)
    if not run.persona:
        personas = sorted({store.persona[i] for i in run.rows if store.persona[i]})
        run.persona = ", ".join(personas)


Found = tuple[ReportRun, Iterable[tuple[str, Any]], Path | None]  # the run, its ("where", record) items, its scores


def _run_dir(path: Path, problems: Problems) -> Found:
    """A run directory: run.json, the records of conversations.jsonl, its score file."""
    teacher = learner = evaluator = persona = status = elsewhere = ""
    name = path.name
    try:
        info = read_run_info(path)
        name, teacher, learner = info.name or path.name, info.teacher, info.learner or info.teacher
        evaluator, status, elsewhere = info.evaluator or "", info.status, info.conversations_file
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
    elif elsewhere:  # scores of a file (`evaluate` on one of the paper's run files): its conversations are there
        records = _records_elsewhere(path, Path(elsewhere), problems)
    else:
        problems.add(f"{path}: no {CONVERSATIONS} (the conversation text is missing)")
    return run, records, scores_file(path)


def _records_elsewhere(run_dir: Path, source: Path, problems: Problems) -> Iterator[tuple[str, Any]]:
    """The records of the conversations file run.json names (`conversations_file`): one of the paper's run
    files or a JSONL of records; missing or unreadable: said, and the run shown without text."""
    if not source.is_file():
        problems.add(
            f"{run_dir}: its conversations file {source} (run.json conversations_file) is missing; shown without text"
        )
        return
    try:
        for where, obj in conversation_items(source, on_error=problems.add):
            if isinstance(obj, dict):
                yield where, obj
            else:
                problems.add(f"{where}: expected a JSON object; left out")
    except (ValueError, OSError) as exc:
        problems.add(str(exc) if isinstance(exc, ValueError) else f"{source}: cannot read ({exc.strerror or exc})")


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
    items = conversation_items(path, paper=True)  # a large file (the released ones): read as it is streamed
    try:
        first = next(items, None)  # opening the file: a file that cannot be read at all leaves the run out
    except (ValueError, OSError) as exc:
        problems.add(str(exc) if isinstance(exc, ValueError) else f"{path}: cannot read ({exc.strerror or exc})")
        return None

    def records() -> Iterator[tuple[str, Any]]:
        try:
            for where, obj in itertools.chain([first] if first is not None else [], items):
                if isinstance(obj, dict):
                    yield where, obj
                else:
                    problems.add(f"{where}: expected a JSON object; left out")
        except ValueError as exc:  # malformed text further in a large file: what came before is shown
            problems.add(str(exc))

    return run, records(), path


def _item_step(item_id: str) -> int | None:
    """The 0-based tutorial step of a checklist step item ("step:3:step-taught" -> 2), else None."""
    parts = item_id.split(":")
    return int(parts[1]) - 1 if len(parts) == 3 and parts[0] == "step" and parts[1].isdigit() else None


def _later_fields(record: Any, known: set[str]) -> dict[str, Any]:
    """A typed record's fields the report does not know by name (e.g. added by a later change), non-empty."""
    later = set(type(record).model_fields) - known
    if not later:  # nothing to dump (a whole conversation's dump per record costs as much as reading it)
        return {}
    return {k: v for k, v in record.model_dump(mode="json", include=later).items() if v not in (None, "", [], {})}


class _Scores:
    """A run's score table, read before its records: each conversation record takes its row (`attach`), the
    rows no record took are shown from their score records (`orphans`)."""

    def __init__(self, run: ReportRun, score_file: Path, table: Any) -> None:
        self.run, self.score_file, self.table = run, score_file, table
        self.row_of = table.index_of()
        self.records = table.meta["record"].tolist()
        # Post-tests that `evaluate --posttest-learner` took for records that had none are stored beside the scores.
        self.posttests = read_posttests(score_file.parent / POSTTESTS)
        self.n_orphans = 0

    def attach(self, conv: ReportConversation) -> int:
        """The conversation's score row (-1: none), its judge's replies and notes set on it."""
        if conv.posttest is None and conv.conversation_id in self.posttests:
            conv.posttest = self.posttests[conv.conversation_id].model_dump(mode="json")
        row = self.row_of.get(conv.conversation_id, -1)
        if row >= 0:
            _score_fields(conv, self.records[row])
        return row

    def orphans(self, seen: dict[str, int]) -> Iterator[tuple[int, ReportConversation]]:
        """Scored, but its conversation record is missing: shown from the score record."""
        for row, rec in enumerate(self.records):
            if rec.conversation_id in seen:
                continue
            self.n_orphans += 1
            conv = ReportConversation(
                conversation_id=rec.conversation_id,
                run=self.run.name,
                where=str(self.score_file),
                tutorial_id=rec.tutorial_id,
                title=rec.title,
                domain=rec.domain,
                teacher=rec.teacher,
                learner=rec.learner,
                missing=["conversation record"],
            )
            _score_fields(conv, rec)
            yield row, conv

    def done(self, problems: Problems) -> None:
        """The records were read: their typed score records are let go (the table keeps the numbers)."""
        self.table.meta["record"] = None
        self.records = []
        if self.n_orphans:
            problems.add(
                f"{self.score_file}: {self.n_orphans} score record(s) without a conversation in {CONVERSATIONS} "
                "(shown without text)"
            )


def _read_scores(run: ReportRun, score_file: Path, problems: Problems) -> _Scores:
    run.scores_path = score_file
    try:
        table = read_score_table(score_file, run=run.name, on_error=problems.add)
    except RunError as exc:
        problems.add(f"{exc}; shown without metrics")
        table = ScoreTable.empty()
    drop_out_of_range(table, problems)
    run.scores = table
    run.mode = ", ".join(table.modes())
    run.scoring = ", ".join(table.scorings())
    if not run.evaluator:
        run.evaluator = next((e for e in table.meta["evaluator"] if e), "")
    return _Scores(run, score_file, table)


def _score_fields(conv: ReportConversation, rec: ScoreRecord) -> None:
    """What a conversation shows of its score record besides the numbers: the judge's replies, failures, notes
    and checklist items, later fields, post-test matches."""
    conv.scored = True
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
    else:
        conv.notes = list(rec.notes)
    conv.score_extra = _later_fields(rec, _KNOWN_SCORE_FIELDS)
    conv.posttest_matches = list(rec.posttest_matches or [])


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
    extra = _later_fields(conv, _KNOWN_CONV_FIELDS)  # {} unless a field is added to the type: the record's own
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


@dataclass
class Loaded:
    """What `load_inputs` read: the runs, and their conversations (spooled; `store.close()` when done)."""

    runs: list[ReportRun]
    store: ConversationStore


def load_inputs(
    paths: list[Path],
    problems: Problems,
    on_record: Callable[[], None] | None = None,
    *,
    spool_dir: Path | None = None,
    calibrate: Callable[[ReportRun], None] | None = None,
    workers: int = 1,
) -> Loaded:
    """Every named run (sweeps expanded), each record read once and streamed into a ConversationStore whose
    spool file is made in `spool_dir` (default: the system's temporary directory). A named run directory that
    yields nothing is a ReportInputError; a sweep cell that yields nothing is reported and skipped.
    `calibrate(run)`: applied to each run's scores once they are read. `workers` > 1: that many runs are read
    at once, each in a process of its own; the runs, their order and the problems said are the same."""
    named = {Path(p).resolve() for p in paths}
    runs: list[ReportRun] = []
    store = ConversationStore(spool_dir)
    try:
        items = expand(paths, problems)
        read = (
            _read_apart(items, problems, store, runs, on_record, workers, spool_dir)
            if workers > 1 and len(items) > 1
            else ((p, load_run(p, problems, store, len(runs), on_record)) for p in items)
        )
        for p, run, before in _counted(read, problems):
            if run is None:
                if p.resolve() in named:
                    raise ReportInputError(
                        problems.lines[-1] if len(problems.lines) > before else f"{p}: nothing to show"
                    )
                continue
            if calibrate is not None:
                calibrate(run)
            runs.append(run)
        if not runs:
            raise ReportInputError("nothing to show: no run with a readable conversation or score record")
    except BaseException:
        store.close()
        raise
    names = [r.name for r in runs]
    for r in runs:
        if names.count(r.name) > 1:  # two sweeps with the same cell name: keep them apart
            r.name = f"{r.path.parent.name}/{r.path.name}"
    return Loaded(runs, store)


def _counted(
    read: Iterable[tuple[Path, ReportRun | None]], problems: Problems
) -> Iterator[tuple[Path, ReportRun | None, int]]:
    """Each (path, run) with the number of problems said before its own."""
    before = len(problems.lines)
    for p, run in read:
        yield p, run, before
        before = len(problems.lines)


_READ = 0  # in a worker process of `_read_apart`: records read and not yet counted in the shared counter
_COUNTER: Any = None  # ... the shared counter


def _worker_start(counter: Any) -> None:
    global _COUNTER
    _COUNTER = counter


def _one_more_record() -> None:
    global _READ
    _READ += 1
    if _READ >= 64:
        with _COUNTER.get_lock():
            _COUNTER.value += _READ
        _READ = 0


def _read_alone(path: Path, spool: Path) -> tuple[ReportRun | None, list[str], StoredRun | None]:
    """In a worker process: one run read into a store of its own (spooled to `spool`) -> the run, the problems
    said, and the store to adopt."""
    global _READ
    problems = Problems()
    store = ConversationStore(spool_file=spool)
    try:
        run = load_run(path, problems, store, 0, _one_more_record)
        return run, problems.lines, store.export() if run is not None else None
    finally:
        store.close()
        with _COUNTER.get_lock():
            _COUNTER.value += _READ
        _READ = 0


def _read_apart(
    items: list[Path],
    problems: Problems,
    store: ConversationStore,
    runs: list[ReportRun],
    on_record: Callable[[], None] | None,
    workers: int,
    spool_dir: Path | None,
) -> Iterator[tuple[Path, ReportRun | None]]:
    """The runs read `workers` at a time, each in a process of its own, and taken over in order: each one's
    problems said, its conversations adopted by `store` as the next run."""
    ctx = pool_context(["wikihowagent.report.sources"])
    counter = ctx.Value("q", 0)
    counted = 0
    with tempfile.TemporaryDirectory(prefix=".wikihowagent-report-", dir=spool_dir, ignore_cleanup_errors=True) as tmp:
        pool = ProcessPoolExecutor(
            min(workers, len(items)), mp_context=ctx, initializer=_worker_start, initargs=(counter,)
        )
        try:
            jobs = [pool.submit(_read_alone, p, Path(tmp) / f"{k}.spool") for k, p in enumerate(items)]
            for p, job in zip(items, jobs, strict=True):
                while True:
                    try:
                        run, lines, part = job.result(timeout=0.25)
                        break
                    except FuturesTimeout:
                        pass
                    finally:
                        counted = _advance(on_record, counter.value, counted)
                problems.lines += lines
                if run is not None and part is not None:
                    run.rows = store.adopt(part, len(runs))
                yield p, run
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _advance(on_record: Callable[[], None] | None, now: int, counted: int) -> int:
    """The progress callback called once for each record the workers read since the last call -> records counted."""
    if on_record is not None:
        for _ in range(now - counted):
            on_record()
    return now


def count_lines(paths: list[Path]) -> int:
    """Conversation records to read (for the progress bar)."""
    total = 0
    for p in paths:
        f = Path(p) / CONVERSATIONS
        if f.is_file():
            last = b"\n"
            with f.open("rb") as fh:
                while block := fh.read(1 << 20):
                    total += block.count(b"\n")
                    last = block[-1:]
            total += last != b"\n"  # a last line without its newline is a line too
    return total
