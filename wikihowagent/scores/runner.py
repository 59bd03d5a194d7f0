"""Scoring runs: stream conversations in chunks, compute the computational metrics of a chunk in one batch,
judge conversations concurrently (judge calls stream across chunks, bounded by the judge's semaphore and one
chunk of backlog), append one ScoreRecord per conversation as soon as it is complete (resumable).

A scores line is reused only if it has every wanted metric and its rubric scores come from this
invocation's evaluator and rubric file; otherwise its rubric scores are re-judged (its computational
metrics are kept) and a new line is appended (readers keep the last line per conversation)."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.backends import capabilities
from wikihowagent.jsonlio import JsonlAppender, RunError
from wikihowagent.judge.checklist import ChecklistError, checklist_for, rubric_score
from wikihowagent.judge.gather import gather_bounded
from wikihowagent.judge.modes import SCORING_MODES, first_mode, prompt_variant_modes
from wikihowagent.judge.panel import judge_scores_path
from wikihowagent.judge.prompt_variants import SHORTENED_NOTE, PromptError, recorded_prompt
from wikihowagent.judge.prompt_variants import get_prompt as judge_prompt
from wikihowagent.judge.request import ScoringRequest
from wikihowagent.judge.rubric_judge import rubrics_sha256
from wikihowagent.judge.scoring import ScoringError, make_scorer, resolve_mode
from wikihowagent.judge.session import EvaluateError, JudgeLoop
from wikihowagent.layout import POSTTESTS, RESCORED_DIR, RUN_INFO, SCORES, SCORES_PAPER
from wikihowagent.metrics.computational import (
    LIKELIHOOD_GAIN,
    POSTTEST_METRICS,
    STEP_RECALL,
    computational_metrics,
    computational_names,
)
from wikihowagent.metrics.posttest import LEGACY_MATCHING, MATCHING
from wikihowagent.metrics.workers import make_scorers
from wikihowagent.records import Conversation, JudgeProvenance, LikelihoodTest, Mode, PostTest, ScoreRecord
from wikihowagent.records_io import read_posttests
from wikihowagent.runs import RunInfo, read_run_info, read_scores, write_run_info
from wikihowagent.workflow.likelihood import LikelihoodError, LikelihoodTaker, for_chat_model
from wikihowagent.workflow.posttest import CALL_FAILED, PostTester, post_tester
from wikihowagent.workflow.posttest import get_prompt as test_prompt

from .inputs import InputSource
from .shards import shard_filter, shard_scores_path
from .source_stats import SourceStats, count_judged, count_rejudged


@dataclass
class EvalOptions:
    """How an Evaluation scores: the scoring options as asked, and what the stage settled from the request."""

    asked: ScoringRequest = field(default_factory=ScoringRequest)
    mode: Mode = "default"
    metrics: list[str] | None = None  # computational + rubric names; None = all
    judge: bool = True
    default_concurrency: int = 2  # the config's concurrency: the default for judges other than the embedded one
    device: str = "cpu"  # the metric encoders' torch device, resolved (metrics.resolve_device)
    workers: int = 1  # processes computing the metrics (--workers; workers.py): 1 = in this process
    chunk: int = 64  # conversations per scoring chunk (memory is flat in the number of conversations)
    shard: tuple[int, int] | None = None  # (K, N): only the conversations of shard K (see shards.py)
    panel_judge: bool = False  # one judge of a panel: its scores go to <scores dir>/judges/<judge>/ (panel.py)


def scores_dir(src: InputSource, out: Path | None, runs_dir: Path) -> Path:
    """The directory of an input's scores: OUT/<name>/ with --out, the run directory itself, else (a file)
    <runs_dir>/rescored/<name>/."""
    if out is not None:
        return Path(out) / src.name
    if src.kind == "run":
        return src.path
    return Path(runs_dir) / RESCORED_DIR / src.name


def write_source_info(src: InputSource, directory: Path) -> None:
    """When an input's scores go elsewhere than beside its conversations (a file: one of the paper's run files,
    a JSONL of records; or a run directory with --out): run.json in the scores directory, naming the run, its
    models and the file its conversations are in, so that the directory is a run `report` shows with its
    conversations. A run.json of another kind there (a run directory's own) is left as it is."""
    if Path(directory).resolve() == Path(src.path).resolve():
        return
    path = Path(directory) / RUN_INFO
    if path.exists():
        try:
            if not read_run_info(directory).conversations_file:
                return
        except RunError:
            return
    where = str(Path(src.records_path).resolve())
    if src.info is not None:  # a run directory's: as its own run.json says
        info = src.info.model_copy(update={"conversations_file": where})
    else:
        info = RunInfo(
            name=src.name,
            teacher=src.teacher,
            learner=src.learner,
            evaluator=src.evaluator,
            status="complete",
            conversations_file=where,
        )
    Path(directory).mkdir(parents=True, exist_ok=True)
    write_run_info(directory, info)


def scores_path(src: InputSource, opts: EvalOptions, runs_dir: Path) -> Path:
    fname = SCORES_PAPER if opts.mode == "paper" else SCORES
    path = scores_dir(src, opts.asked.out, runs_dir) / fname
    if opts.shard is not None:
        path = shard_scores_path(path, opts.shard)
    if opts.panel_judge and opts.asked.evaluator:
        path = judge_scores_path(path, opts.asked.evaluator)
    return path


def select_metrics(spec: str | None, mode: str, rubric_names: list[str]) -> tuple[list[str], list[str]]:
    """--metrics "BLEU,METEOR,Clarity" -> (computational, rubric); case-insensitive; groups
    "computational" and "rubric" allowed."""
    comp_all = computational_metrics(mode)
    if not spec:
        return comp_all, list(rubric_names)
    by_key = {m.lower(): m for m in comp_all + list(rubric_names)}
    comp: list[str] = []
    rub: list[str] = []
    for raw in spec.split(","):
        key = raw.strip().lower()
        if not key:
            continue
        if key in ("computational", "computed"):
            comp += comp_all
            continue
        if key in ("rubric", "rubrics", "judge"):
            rub += list(rubric_names)
            continue
        name = by_key.get(key)
        if name is None:
            valid = ", ".join(comp_all + list(rubric_names))
            raise EvaluateError(f"--metrics: unknown metric {raw.strip()!r} in {mode} mode; valid: {valid}")
        (rub if name in rubric_names else comp).append(name)
    return [m for m in comp_all if m in comp], [m for m in rubric_names if m in rub]


def _chunks(it: Iterator[Conversation], n: int) -> Iterator[list[Conversation]]:
    buf: list[Conversation] = []
    for c in it:
        buf.append(c)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf


def count_input_records(src: InputSource) -> int | None:
    """Non-empty lines of a JSONL input (the progress bar's total); None for a paper JSON file."""
    if src.kind == "paper-json":
        return None
    n = 0
    with open(src.records_path, "rb") as fh:
        for line in fh:
            if line.strip():
                n += 1
    return n


def judge_concurrency(opts: EvalOptions, llm: Any) -> int:
    """Conversations judged at once (and post-tests taken at once, with the learner's model as `llm`):
    --concurrency if given; for the embedded model, its server's slots (one conversation per slot: two
    conversations on one slot interleave their rubric calls, and each call then re-reads its whole prefix instead
    of reusing the prompt cache); else the config's concurrency."""
    if opts.asked.concurrency is not None:
        return opts.asked.concurrency
    return capabilities(llm).slots or opts.default_concurrency


class JudgeCalls:
    """The judge calls of one input in flight (tasks, across chunks), and the conversations reported to the
    progress bar so far."""

    def __init__(self, progress: Callable[[int], None] | None):
        self.pending: set[asyncio.Task[None]] = set()
        self.reported = 0
        self.progress = progress

    def in_flight(self) -> int:
        return sum(not t.done() for t in self.pending)

    def advance(self, n: int) -> None:
        self.reported += n
        if self.progress and n:
            self.progress(n)

    def start(self, call: Coroutine[Any, Any, None]) -> None:
        self.pending.add(asyncio.ensure_future(call))

    async def settle(self, limit: int) -> None:
        """Wait until at most `limit` judge calls are in flight; the first failure (e.g. the evaluator is
        unreachable) is raised here."""
        while self.pending:
            done = {t for t in self.pending if t.done()}
            if not done and len(self.pending) <= limit:
                return
            if not done:
                done, _ = await asyncio.wait(self.pending, return_when=asyncio.FIRST_COMPLETED)
            self.pending.difference_update(done)
            errors = [e for t in done if not t.cancelled() and (e := t.exception()) is not None]
            if errors:
                raise errors[0]

    async def cancel(self) -> None:
        """Cancel and await the calls still in flight (after the last chunk, a failure or Ctrl-C)."""
        for t in self.pending:
            t.cancel()
        if self.pending:
            await asyncio.gather(*self.pending, return_exceptions=True)


def _posttests_due(
    convs: list[Conversation],
    stored: dict[str, PostTest],
    spec: str,
    version: str,
    likelihood: bool,
    own: dict[str, str],
) -> tuple[list[Conversation], list[Conversation]]:
    """-> (due a post-test, due only its likelihood post-test). A conversation without a post-test by this learner
    in this wording gets the stored one (unless its call failed) or is due one, `own` noting its record's; with
    `likelihood`, a post-test without its likelihood post-test gets the stored one or is due it."""
    todo, lik = [], []
    for c in convs:
        if c.posttest is not None and c.posttest.taken_by(spec, version):
            pass  # the record's own post-test by this learner in this wording
        else:
            own[c.conversation_id] = c.posttest.source if c.posttest is not None else ""
            c.posttest = None
            old = stored.get(c.conversation_id)
            if old is not None and old.taken_by(spec, version) and not (old.post.error or "").startswith(CALL_FAILED):
                c.posttest = old
            else:
                todo.append(c)
                continue
        if likelihood and c.posttest is not None and not c.posttest.likelihood_read:
            kept = _stored_likelihood(stored.get(c.conversation_id), spec, version)
            if kept is not None:
                c.posttest = c.posttest.model_copy(update={"likelihood": kept})
            else:
                lik.append(c)
    return todo, lik


def _stored_likelihood(old: PostTest | None, spec: str, version: str) -> LikelihoodTest | None:
    """The likelihood post-test of a stored post-test by this learner in this wording (None: none)."""
    if old is None or not old.likelihood_read or not old.taken_by(spec, version):
        return None
    return old.likelihood


class Evaluation:
    """Holds what is loaded once per process: the scorers and one judge per evaluator spec. Its judge calls run
    on `loop`, the command's judge session (`session.JudgeLoop`, closed by the command); without one, on a
    JudgeLoop of its own, made on first use and shut down by `close()`."""

    def __init__(
        self,
        opts: EvalOptions,
        comp: list[str],
        rubric_names: list[str],
        rubrics: dict[str, Any] | None,
        make_llm: Callable[[str], Any] | None,
        warn: Callable[[str], None],
        make_learner: Callable[[str], Any] | None = None,
        loop: JudgeLoop | None = None,
    ):
        self.opts = opts
        self.make_learner = make_learner  # spec -> chat model, for --posttest-learner
        self._learner: Any = None
        self.comp = comp
        self.rubric_names = rubric_names if opts.judge else []
        self.rubrics = rubrics
        self.make_llm = make_llm
        self.warn = warn
        self.scorers = make_scorers(opts.mode, comp, opts.asked.batch_size, opts.device, opts.workers) if comp else None
        self.rubrics_hash = rubrics_sha256(rubrics) if rubrics is not None else ""
        self._judges: dict[str, Any] = {}
        self.loop = loop
        self._own_loop = loop is None

    def evaluator_spec(self, src: InputSource) -> str | None:
        if not self.rubric_names:
            return None
        spec = self.opts.asked.evaluator or src.evaluator or src.teacher
        if not spec:
            raise EvaluateError(f"{src.path}: no evaluator known for this input: pass --evaluator SPEC or --no-judge")
        return spec

    def judge_for(self, spec: str) -> Any:
        """The scorer of `spec` in the chosen --judge-scoring mode (built once; EvaluateError if the mode
        cannot work with that backend)."""
        if spec not in self._judges:
            assert self.make_llm is not None and self.rubrics is not None
            llm = self.make_llm(spec)
            try:
                checklist_asked = bool(self.opts.asked.checklist or self.opts.asked.checklist_weights)
                mode = resolve_mode(
                    self.opts.asked.judge_scoring or (first_mode("checklist") if checklist_asked else None),
                    llm,
                    self.opts.mode,
                    holistic=self.opts.asked.judge_rationale or self.opts.asked.judge_prompt is not None,
                )
                prompt = None
                entry = SCORING_MODES.get(mode)
                if entry.prompt_variants:
                    prompt = judge_prompt(self.opts.asked.judge_prompt)
                elif self.opts.asked.judge_prompt is not None:
                    raise ScoringError(
                        f"--judge-prompt applies to --judge-scoring {prompt_variant_modes()}, not {mode}"
                    )
                checklist, weights = (
                    checklist_for(
                        spec, list(self.rubrics), self.opts.asked.checklist, self.opts.asked.checklist_weights
                    )
                    if entry.checklist
                    else (None, None)
                )
                if not entry.checklist and (self.opts.asked.checklist or self.opts.asked.checklist_weights):
                    raise ScoringError("--checklist and --checklist-weights apply to --judge-scoring checklist")
                self._judges[spec] = make_scorer(
                    mode,
                    llm,
                    self.rubrics,
                    self.rubric_names,
                    compat=self.opts.mode,
                    rationale=self.opts.asked.judge_rationale,
                    retries=self.opts.asked.retries,
                    concurrency=judge_concurrency(self.opts, llm),
                    prompt=prompt,
                    checklist=checklist,
                    checklist_weights=weights,
                )
            except (PromptError, ChecklistError) as exc:
                raise EvaluateError(str(exc)) from None
            except ScoringError as exc:
                raise EvaluateError(f"evaluator {spec!r}: {exc}") from None
        return self._judges[spec]

    def prepare(self, specs: list[str | None]) -> None:
        """Build every judge before any work, so a mode the backend cannot serve fails first."""
        for spec in specs:
            if spec and self.rubric_names:
                self.judge_for(spec)

    def scoring_label(self, spec: str | None) -> str:
        return self._judges[spec].label if spec in self._judges else ""

    def prompt_name(self, spec: str | None) -> str | None:
        return self._judges[spec].prompt_name if spec in self._judges else None

    def run_source(
        self, src: InputSource, out_path: Path, progress: Callable[[int], None] | None = None
    ) -> SourceStats:
        # One event loop for every input: async HTTP clients of a cached judge model are bound to the loop
        # they were first used on (a fresh asyncio.run per input would find it closed).
        if self.loop is None or (self._own_loop and self.loop.loop.is_closed()):
            self.loop = JudgeLoop()
        return self.loop.run(self._run_source(src, out_path, progress))

    def close(self) -> None:
        """Shut its own event loop down (`JudgeLoop.close`: the tasks still running cancelled and awaited, the
        metrics' worker thread stopped), also after a failure; a loop the caller gave is the caller's to close. The
        metrics' worker processes (--workers) exit."""
        if self.scorers is not None:
            self.scorers.close()
        if self._own_loop and self.loop is not None:
            self.loop.close()

    def _stale_rubrics(self, old: ScoreRecord | None, spec: str | None) -> str | None:
        """Why the rubric scores of an earlier line cannot be reused ("evaluator" / "rubrics"), else None."""
        if not old or not self.rubric_names:
            return None
        keys = set(old.metrics) - computational_names()
        if not keys:
            return None  # nothing judged yet (e.g. a --no-judge pass): nothing to compare
        if old.evaluator != (spec or ""):
            return "evaluator"
        if self.rubrics is not None and not keys <= set(self.rubrics):
            return "rubrics"  # scores of rubrics the current rubric file does not define: another rubric file
        old_hash = old.judge.rubrics_sha256 if old.judge else ""
        if old_hash and self.rubrics_hash and old_hash != self.rubrics_hash:
            return "rubrics"  # the same rubric names, other definitions
        label = self.scoring_label(spec)
        if label and ((old.judge.scoring if old.judge else "") or first_mode("paper")) != label:
            return "scoring"  # lines written before --judge-scoring existed were json-scored
        prompt = self.prompt_name(spec)
        if prompt is not None and recorded_prompt(old.judge, label) != prompt:
            return "prompt"  # another --judge-prompt variant (or checklist file)
        weights = getattr(self._judges.get(spec or ""), "weights_name", None)
        if weights is not None and old.judge is not None and old.judge.checklist_weights != weights:
            return "weights"  # other checklist item weights: the stored items are weighed again (`reweighted`)
        return None

    def reweighted(self, old: ScoreRecord, spec: str | None) -> ScoreRecord | None:
        """`old` (checklist scores of this judge and checklist, other item weights) with every rubric score
        computed again from its stored items under this judge's weights: no model call. None when the stored
        items cannot give every rubric asked (then the conversation is judged again)."""
        judge = self._judges.get(spec or "")
        prov = old.judge
        if judge is None or prov is None or prov.checklist != judge.checklist.ident or not prov.items:
            return None
        metrics = dict(old.metrics)
        failures = [f for f in prov.failures if f not in self.rubric_names]
        for n in self.rubric_names:
            goods = [(i.id, i.good) for i in prov.items if n in i.rubrics]
            if not goods:
                return None
            w = judge.weights.weights.get(n) if judge.weights is not None else None
            rs = rubric_score(n, goods, w)
            metrics[n] = None if rs.score is None else round(rs.score, 4)
            if rs.score is None:
                failures.append(n)
        judge_prov = prov.model_copy(update={"failures": failures, "checklist_weights": judge.weights_name})
        return old.model_copy(update={"metrics": metrics, "judge": judge_prov})

    def learner(self) -> Any:
        if self._learner is None:
            assert self.make_learner is not None and self.opts.asked.posttest_learner
            self._learner = self.make_learner(self.opts.asked.posttest_learner)
        return self._learner

    async def _run_source(
        self, src: InputSource, out_path: Path, progress: Callable[[int], None] | None
    ) -> SourceStats:
        stats = SourceStats()
        with contextlib.ExitStack() as files:
            add_posttests, own = (
                self._posttests(out_path.parent, files, stats) if self.opts.asked.posttest_learner else (None, {})
            )
            return await self._score_source(src, out_path, progress, stats, add_posttests, own)

    def _posttests(
        self, directory: Path, files: contextlib.ExitStack, stats: SourceStats
    ) -> tuple[Callable[..., Any], dict[str, str]]:
        """-> (async fn(conversations), own). The function gives each conversation whose record has no
        post-test by this learner in this wording one: the one stored in `directory/posttests.jsonl` by an
        earlier pass, else a new one (appended there at once). With --posttest-likelihood each of them also gets
        its likelihood post-test: the stored one, else a new one (the post-test appended again with it). `own`
        maps the conversations it gave another post-test to the `PostTest.source` of the record's own ("" =
        none): what older score lines were computed from. The learner's model is made when the first test is
        due."""
        stored = read_posttests(directory / POSTTESTS)
        spec = self.opts.asked.posttest_learner or ""
        prompt = test_prompt(self.opts.asked.posttest_prompt)
        sink = files.enter_context(JsonlAppender(directory / POSTTESTS))
        tester: PostTester | None = None
        taker: LikelihoodTaker | None = None
        own: dict[str, str] = {}

        async def attach(convs: list[Conversation]) -> None:
            nonlocal tester, taker
            todo, lik = _posttests_due(
                convs, stored, spec, prompt.version, bool(self.opts.asked.posttest_likelihood), own
            )
            if not todo and not lik:
                return
            if tester is None:
                tester = files.enter_context(post_tester(self.learner(), spec, directory, prompt))
            if self.opts.asked.posttest_likelihood and taker is None:
                try:
                    taker = LikelihoodTaker(for_chat_model(self.learner()))
                except LikelihoodError as exc:
                    raise EvaluateError(f"--posttest-likelihood: {exc}") from None

            async def with_likelihood(c: Conversation) -> None:
                assert taker is not None and c.posttest is not None
                test = await taker.take(c.tutorial_key, c.title, c.tutorial_title, c.turns, list(c.steps))
                c.posttest = c.posttest.model_copy(update={"likelihood": test})
                stats.likelihoods += 1
                stats.likelihood_failures += test.error is not None

            async def one(c: Conversation) -> None:
                assert tester is not None
                c.posttest = await tester.run(c.tutorial_key, c.title, c.tutorial_title, c.turns, len(c.steps))
                stats.posttests += 1
                stats.posttest_failures += c.posttest.post.error is not None
                if self.opts.asked.posttest_likelihood:
                    await add(c)
                else:
                    sink.append({"conversation_id": c.conversation_id, "posttest": c.posttest.model_dump(mode="json")})

            async def add(c: Conversation) -> None:  # a post-test without its likelihood post-test: take it, store both
                await with_likelihood(c)
                assert c.posttest is not None
                sink.append({"conversation_id": c.conversation_id, "posttest": c.posttest.model_dump(mode="json")})

            jobs = [*(one(c) for c in todo), *(add(c) for c in lik)]
            await gather_bounded(jobs, judge_concurrency(self.opts, self.learner()))  # one per learner slot

        return attach, own

    async def _score_source(
        self,
        src: InputSource,
        out_path: Path,
        progress: Callable[[int], None] | None,
        stats: SourceStats,
        add_posttests: Callable[..., Any] | None,
        own_posttests: dict[str, str],
    ) -> SourceStats:
        """Score `src` chunk by chunk into `out_path`: each chunk's post-tests (when asked), what each of its
        conversations still needs (`_plan`), its metrics in one batch and its judge calls started
        (`_score_chunk`); judge calls run on across chunks (`JudgeCalls`)."""
        existing = read_scores(out_path, on_error=self.warn)
        spec = self.evaluator_spec(src)
        judge = None
        stream = shard_filter(src.conversations(on_error=self.warn), self.opts.shard, self.opts.chunk)
        calls = JudgeCalls(progress)
        with JsonlAppender(out_path) as sink:
            try:
                for chunk in _chunks(stream, self.opts.chunk):
                    if add_posttests is not None:
                        await add_posttests(chunk)
                    todo, judge = self._plan(chunk, existing, spec, own_posttests, sink, stats, judge)
                    # At most one chunk's judge calls wait while the next chunk's metrics are computed.
                    await calls.settle(self.opts.chunk)
                    if not todo:
                        calls.advance(src.n_seen - calls.reported - calls.in_flight())
                        continue
                    judge = await self._score_chunk(src, todo, spec, judge, sink, stats, calls)
                    calls.advance(src.n_seen - calls.reported - calls.in_flight())
                    await asyncio.sleep(0)  # let the new judge tasks start their calls
                await calls.settle(0)
            finally:
                await calls.cancel()
            if judge is not None and judge.fallback_note and judge.fallback_note not in stats.notes:
                stats.notes.append(judge.fallback_note)
            calls.advance(src.n_seen - calls.reported)
        stats.failed, stats.invalid = src.n_failed, src.n_invalid
        return stats

    async def _score_chunk(
        self,
        src: InputSource,
        todo: list[tuple[Conversation, ScoreRecord | None, str | None, set[str]]],
        spec: str | None,
        judge: Any,
        sink: JsonlAppender,
        stats: SourceStats,
        calls: JudgeCalls,
    ) -> Any:
        """The conversations of `todo` (`_plan`'s) scored: the metrics they lack computed in one batch, the lines
        that need no judge written, a judge call started for each of the others (its line is written when it
        returns) -> the judge (made here when first needed)."""
        convs = [c for c, _, _, _ in todo]
        comp = await self._computed(todo, calls)
        records = [self._record(src, c, old, cs, stale) for (c, old, stale, _), cs in zip(todo, comp, strict=True)]
        rubric_names = set(self.rubric_names)
        need_judge = [
            i for i, (_, _, stale, have) in enumerate(todo) if rubric_names and (stale or not rubric_names <= have)
        ]
        count_rejudged(stats, todo, rubric_names)
        to_judge = set(need_judge)
        for i in range(len(todo)):
            if i not in to_judge:
                sink.append(records[i])
                stats.scored += 1
        if need_judge and judge is None:
            judge = self.judge_for(spec)  # type: ignore[arg-type]  # need_judge is empty when spec is None (no rubrics)
        for i in need_judge:
            _, _, stale, have = todo[i]
            names = None if stale else [n for n in self.rubric_names if n not in have]
            calls.start(self._judged(records[i], convs[i], judge, names, spec, sink, stats, calls))
        return judge

    async def _computed(
        self, todo: list[tuple[Conversation, ScoreRecord | None, str | None, set[str]]], calls: JudgeCalls
    ) -> list[Any]:
        """The computational metrics of the conversations of `todo` that lack some (None for the others: e.g. a
        judge pass after a --no-judge pass reuses the metrics), computed in one batch."""
        comp_names = set(self.comp)
        need_comp = [i for i, (_, _, _, have) in enumerate(todo) if not comp_names <= have]
        comp: list[Any] = [None] * len(todo)
        if self.scorers and need_comp:
            batch = [todo[i][0] for i in need_comp]
            if calls.pending:  # judge calls are in flight: keep the event loop serving them meanwhile
                scored = await asyncio.get_running_loop().run_in_executor(None, self.scorers.score, batch)
            else:
                scored = self.scorers.score(batch)
            for i, cs in zip(need_comp, scored, strict=True):
                comp[i] = cs
        return comp

    async def _judged(
        self,
        rec: ScoreRecord,
        conv: Conversation,
        judge: Any,
        names: list[str] | None,
        spec: str | None,
        sink: JsonlAppender,
        stats: SourceStats,
        calls: JudgeCalls,
    ) -> None:
        """`conv` judged on the rubrics `names` (None: all), its line written as soon as it is (a resume keeps
        every finished one)."""
        jr = await judge.judge(conv, names)
        rec.metrics.update(jr.scores)
        rec.judge = self._provenance(rec.judge or JudgeProvenance(), jr, spec or "", judge)
        sink.append(rec)
        count_judged(stats, conv, jr)
        calls.advance(1)

    def _plan(
        self,
        chunk: list[Conversation],
        existing: dict[str, ScoreRecord],
        spec: str | None,
        own_posttests: dict[str, str],
        sink: Any,
        stats: SourceStats,
        judge: Any,
    ) -> tuple[list[tuple[Conversation, ScoreRecord | None, str | None, set[str]]], Any]:
        """What each conversation of `chunk` still needs: -> (todo, the judge, made when a stored line is only
        reweighed). A conversation with every metric is counted as already done (or, reweighed from its stored
        checklist items, written as a new line at once)."""
        comp_names = set(self.comp)
        rubric_names = set(self.rubric_names)
        # (conversation, its earlier scores line, why its rubric scores are stale, metrics it has)
        todo: list[tuple[Conversation, ScoreRecord | None, str | None, set[str]]] = []
        for c in chunk:
            old = existing.get(c.conversation_id)
            stale = self._stale_rubrics(old, spec)
            reweighed = False
            if stale == "weights":
                if judge is None:
                    judge = self.judge_for(spec)  # type: ignore[arg-type]
                again = self.reweighted(old, spec) if old is not None else None
                stale, reweighed = ("scoring", False) if again is None else (None, True)
                old = again or old
            have = set(old.metrics) if old else set()
            if (
                old
                and c.posttest is not None
                and c.posttest.post.error is None
                and (
                    old.metrics.get(STEP_RECALL) is None  # a post-test taken since that line was written
                    # ... or another one (another learner or wording); older lines: the record's own
                    or (old.posttest_source or own_posttests.get(c.conversation_id, c.posttest.source))
                    != c.posttest.source
                    or (old.posttest_matching or LEGACY_MATCHING) != MATCHING
                )
            ):  # ... or matched otherwise
                have -= set(POSTTEST_METRICS)
            if (
                old
                and old.metrics.get(LIKELIHOOD_GAIN) is None
                and c.posttest is not None
                and c.posttest.likelihood_read
            ):  # a likelihood post-test taken since that line was written
                have.discard(LIKELIHOOD_GAIN)
            if old and self.opts.asked.retry_failed and not stale:  # failed rubrics count as not judged yet
                have -= set(old.judge_failures) & rubric_names
            if stale is None and comp_names | rubric_names <= have:
                if reweighed:  # new rubric scores from the stored items: a new line
                    sink.append(old)
                    stats.scored += 1
                    stats.reweighted += 1
                else:
                    stats.already += 1
                continue
            todo.append((c, old, stale, have))
        return todo, judge

    def _provenance(self, prev: JudgeProvenance, jr: Any, spec: str, j: Any) -> JudgeProvenance:
        """The judge's provenance of a conversation after judge `j` gave `jr` (a JudgeResult): what this pass
        judged replaces the earlier pass's entries for those rubrics; the rest is kept."""
        done = set(jr.scores)

        def keep(d: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
            return {**{k: v for k, v in d.items() if k not in done}, **new}

        return JudgeProvenance(
            evaluator=spec,
            rubrics_sha256=self.rubrics_hash,
            raw={**prev.raw, **jr.raw},
            failures=[f for f in prev.failures if f not in done] + jr.failures,
            notes=[n for n in prev.notes if n.split(":")[0] not in done and not n.startswith(SHORTENED_NOTE)]
            + jr.notes,
            scoring=j.label,
            prompt=j.prompt_name,
            dist=keep(prev.dist, jr.dist),
            argmax=keep(prev.argmax, jr.argmax),
            spread=keep(prev.spread, jr.spread),
            checklist=jr.checklist,
            checklist_weights=jr.checklist_weights,
            reading=jr.reading or prev.reading,
            items=[i for i in prev.items if not set(i.rubrics) & done] + list(jr.items),
        )

    def _record(
        self, src: InputSource, c: Conversation, old: ScoreRecord | None, cs: Any, stale: str | None = None
    ) -> ScoreRecord:
        # Keep what an earlier pass computed that this one does not recompute; the judge's provenance is set
        # anew when this pass judges the conversation.
        metrics: dict[str, float | None] = dict(old.metrics) if old else {}
        judge = old.judge.model_copy(deep=True) if old and old.judge else None
        notes = list(old.notes) if old else []
        if stale:  # another judge or rubric file: none of its rubric scores is kept (the computed metrics are)
            names = computational_names()
            metrics = {k: v for k, v in metrics.items() if k in names}
            judge = None
        if cs is not None:
            metrics.update(
                {
                    k: (None if v is None or (isinstance(v, float) and math.isnan(v)) else v)
                    for k, v in cs.metrics.items()
                }
            )
            notes = list(cs.notes)
        return ScoreRecord(
            conversation_id=c.conversation_id,
            run=src.name,
            tutorial_id=c.tutorial_id,
            title=c.title,
            domain=c.domain,
            teacher=c.teacher,
            learner=c.learner,
            persona=c.persona,
            mode="paper" if self.opts.mode == "paper" else "default",
            metrics=metrics,
            judge=judge,
            notes=notes,
            posttest_matches=cs.posttest_matches if cs is not None else (old.posttest_matches if old else None),
            posttest_source=(c.posttest.source if c.posttest is not None else "")
            if cs is not None
            else (old.posttest_source if old else ""),
            posttest_matching=(MATCHING if c.posttest is not None else "")
            if cs is not None
            else (old.posttest_matching if old else ""),
            metrics_device=(cs.device or (old.metrics_device if old else ""))
            if cs is not None
            else (old.metrics_device if old else ""),
        )
