"""Typed records passed between the pipeline stages: the contract.

One record format everyone reads: `generate` writes `ConversationRecord`s (one JSON line each) to a run's
`conversations.jsonl`; `evaluate`, `annotate export` and `align` read them back as `Conversation`s (the
same record plus the run it belongs to and where it was read; the paper's released records are turned
into the same type once, at the edge: `wikihowagent.paper_format`). `evaluate` writes `ScoreRecord`s to
`scores.jsonl` (the judge's provenance in `ScoreRecord.judge`); `align` reads those. Reading and writing
the files: `wikihowagent.runs` (with `wikihowagent.jsonlio` and `wikihowagent.records_io`); their names:
`wikihowagent.layout`.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator

# Namespace for deterministic conversation ids: uuid5(namespace, run_name + tutorial_id). The paper used
# uuid4; a deterministic uuid keeps the same shape and makes resumed runs reproducible.
CONVERSATION_NAMESPACE = uuid.UUID("6f1d6a52-4c8e-4a8f-9a57-0e7f2b1c9d31")

Role = Literal["teacher", "learner"]
TurnKind = Literal["begin", "finish", "model", "clarification"]  # begin / finish: the fixed texts below, no model call
# The manager's classification of a learner turn (workflow/manager.py).
Label = Literal["question", "understood", "off-topic", "wants-to-stop"]
Mode = Literal["default", "paper"]  # `evaluate`'s metric definitions: ours, or the paper's released code

# The workflow's fixed texts (no model call); the defaults of the prompt file, recognised in the paper's records.
BEGIN_TEXT = "Let's begin: {method_title}. BEGIN"
FINISH_TEXT = "We've reached the end of the tutorial. Bye! FINISHED"
StopReason = Literal["finished", "max_interactions", "error", "learner_stopped", "quit"]  # quit: a person left `chat`


class Tutorial(BaseModel):
    """One WikiHow method with >= 2 steps: the unit a conversation is grounded in."""

    tutorial_id: str  # stable: derived from source path + method index (see `make_tutorial_id`)
    doc_id: int  # index of the article in the (deterministically ordered) source
    method_id: int  # index of the method inside its article
    source_tutorial_path: str
    title: str  # the article title, "How to ..."
    method_title: str  # e.g. "Part 2 of 3:Writing the Body of the Speech"
    categories: list[str] = Field(default_factory=list)  # breadcrumb, root first
    topic: str = ""  # the crawl folder (e.g. "Relationship-Issues") or the most specific category
    domain: str = (
        ""  # one of the paper's 17 domains (wikihowagent/data/domains.csv), else the first category after the root
    )
    summary: str = ""  # the article introduction
    steps: list[str]


def make_tutorial_id(source: str, method_index: int) -> str:
    digest = hashlib.sha1(f"{source}\x00{method_index}".encode()).hexdigest()
    return digest[:16]


def make_conversation_id(run_name: str, tutorial_id: str) -> str:
    return str(uuid.uuid5(CONVERSATION_NAMESPACE, f"{run_name}/{tutorial_id}"))


class Turn(BaseModel):
    role: Role
    text: str
    step: int | None = None  # 0-based index of the tutorial step under discussion (None: unknown, paper records)
    kind: TurnKind = "model"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    # The learner persona's intent for this turn ("ask", "acknowledge", "drift", "free", "farewell");
    # None on teacher turns and in records made before personas.
    intent: str | None = None
    retried: list[str] = Field(default_factory=list)  # turn-check problems that caused a retry
    warnings: list[str] = Field(default_factory=list)  # turn-check problems the retry did not fix
    # The manager's classification of a learner turn: question / understood / off-topic / wants-to-stop
    # (None: not classified, e.g. the reply to BEGIN); manager_fallback = the llm manager failed, rules decided.
    manager_label: Label | None = None
    manager_fallback: bool = False


class TutorialRef(BaseModel):
    """The paper's `tutorial` field: the method as taught."""

    title: str
    steps: list[str]


# More recalled "steps" than this is not a step list (a looping model, a pasted text): workflow/posttest.py's
# parser refuses such a reply, and a stored answer read back with more is turned into an error (never scored).
MAX_TEST_STEPS = 50


class TestAnswer(BaseModel):
    """The learner model's answer to a procedural test: the method's steps written from memory.

    `steps` is the parsed list (workflow/posttest.py `parse_steps`); `error` set = no usable answer (a failed
    call, or a reply that is not a step list: empty, one line of prose, hundreds of lines), never scored.
    Range-checked when read back: a stored answer with more than MAX_TEST_STEPS lines (steps + abstained) or a
    negative `abstained` is read as an answer with `error` (its steps dropped), as the parser would have made it."""

    __test__ = False  # not a pytest class

    text: str = ""
    steps: list[str] = Field(default_factory=list)
    error: str | None = None
    abstained: int = 0  # lines saying "not taught" / "don't know" (prompt v3): not steps; all abstained = recall 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    @model_validator(mode="after")
    def _range_checked(self) -> TestAnswer:
        if self.error is None and self.abstained < 0:
            self.error, self.steps, self.abstained = f"stored answer: abstained = {self.abstained} (negative)", [], 0
        elif self.error is None and len(self.steps) + self.abstained > MAX_TEST_STEPS:
            self.error = (
                f"stored answer: {len(self.steps) + self.abstained} lines, not a step list (more than {MAX_TEST_STEPS})"
            )
            self.steps, self.abstained = [], 0
        return self

    @property
    def abstained_share(self) -> float | None:
        """Share of the answer's lines that abstained; None for an answer that is not a step list."""
        lines = len(self.steps) + self.abstained
        return self.abstained / lines if self.error is None and lines else None


class LikelihoodTest(BaseModel):
    """The likelihood post-test (workflow/likelihood.py): the learner model's mean log-probability per token of
    each tutorial step (nats, <= 0), teacher-forced, given the lesson (`post`) and given the title only
    (`pre`); None for a step no token came back for. `error`: why it could not be read (then not scored)."""

    transport: str = ""  # "echo" (/v1/completions) or "grammar" (llama.cpp /completion)
    post: list[float | None] = Field(default_factory=list)
    pre: list[float | None] = Field(default_factory=list)
    post_tokens: list[int] = Field(default_factory=list)
    pre_tokens: list[int] = Field(default_factory=list)
    error: str | None = None
    latency_s: float = 0.0  # the read given the lesson
    pre_latency_s: float = 0.0  # the read given the title (once per tutorial; 0 when reused)

    @field_validator("post", "pre")
    @classmethod
    def _logprobs(cls, v: list[float | None]) -> list[float | None]:
        for x in v:
            if x is not None and not (math.isfinite(x) and -1000.0 <= x <= 1e-6):
                raise ValueError(f"mean log-probability {x!r}: not a number in [-1000, 0]")
        return v


class PostTest(BaseModel):
    """The record's `posttest`: after the conversation, the learner model writes the method's steps from
    memory (`post`, seeing the conversation from its side, never the tutorial); `pre` is the same model's
    answer from the method title alone (the run's cached pre-test of this tutorial). Kept out of `turns`."""

    model: str = ""  # the learner model's spec
    prompt_version: str = ""  # workflow/posttest.py: a hash of the post-/pre-test templates
    post: TestAnswer = Field(default_factory=TestAnswer)
    pre: TestAnswer | None = None  # None = not taken (e.g. the pre-test call failed to start)
    likelihood: LikelihoodTest | None = None  # the likelihood post-test, when taken (judge-check --posttest-likelihood)

    @property
    def source(self) -> str:
        """Who took it in which wording ("<model spec> <prompt version>"): what a score line was computed from."""
        return f"{self.model} {self.prompt_version}"

    def taken_by(self, model: str, prompt_version: str) -> bool:
        return self.model == model and self.prompt_version == prompt_version

    @property
    def likelihood_read(self) -> bool:
        """Its likelihood post-test was taken and read (an `error` is not a reading: taken again)."""
        return self.likelihood is not None and self.likelihood.error is None


class PreTestRecord(BaseModel):
    """One line of a run's `pretests.jsonl`: the pre-test cache, one answer per (learner model, tutorial)."""

    learner: str
    tutorial_key: str
    prompt_version: str = ""
    answer: TestAnswer


class ConversationRecord(BaseModel):
    """One line of `conversations.jsonl`; a superset of the paper's released record."""

    conversation_id: str
    tutorial_id: str = ""
    doc_id: int | None = None
    method_id: int | None = None
    source_tutorial_path: str = ""
    title: str = ""
    categories: list[str] = Field(default_factory=list)
    topic: str = ""
    domain: str = ""
    summary: str = ""
    tutorial: TutorialRef
    conversation: list[str] = Field(default_factory=list)  # "Teacher: ..." / "Learner: ..." lines
    turns: list[Turn] = Field(default_factory=list)
    finished: bool = False
    stop_reason: StopReason | None = None
    error: str | None = None  # set = a failed conversation (re-run on resume)
    warnings: list[str] = Field(default_factory=list)  # problems that did not fail the conversation
    teacher: str = ""  # model specs (never keys)
    learner: str = ""
    persona: str = ""  # learner persona (wikihowagent/configs/personas.yaml); "" in records made before personas
    manager: str = ""  # "rules" or "llm:<spec>"; "" in records made before managers
    human: str = ""  # the role a person played (`wikihowagent chat`): "teacher" | "learner"; "" = none
    posttest: PostTest | None = None  # the learner's post-test (not a turn); None = not taken
    started_at: str | None = None
    ended_at: str | None = None


class Conversation(ConversationRecord):
    """A ConversationRecord as a stage reads it back: plus its run and where it was read (not serialised)."""

    run: str = Field(default="", exclude=True)  # run name (directory name, or the paper's run-file stem)
    where: str = Field(default="", exclude=True)  # "file:LINE" (or "file: total_conversations[i]"), for messages
    paper_format: bool = Field(default=False, exclude=True)  # read from the paper's shape (no structured turns)

    @classmethod
    def from_turns(
        cls,
        turns: list[Turn],
        steps: list[str],
        tutorial_title: str = "",
        *,
        completed: bool | None = None,
        **fields: Any,
    ) -> Conversation:
        """A conversation built in code (benchmarks, tests): the lines follow the turns; `completed` None =
        not recorded (as in the paper's records)."""
        stop = None if completed is None else "finished" if completed else "max_interactions"
        return cls(
            tutorial=TutorialRef(title=tutorial_title, steps=list(steps)),
            turns=list(turns),
            conversation=conversation_lines(turns),
            finished=bool(completed),
            stop_reason=stop,
            paper_format=completed is None,
            **fields,
        )

    @property
    def messages(self) -> list[Turn]:
        return self.turns

    @property
    def lines(self) -> list[str]:
        """ "Teacher: ..." / "Learner: ..." as the paper stored them."""
        return self.conversation

    @property
    def steps(self) -> list[str]:
        return self.tutorial.steps

    @property
    def tutorial_title(self) -> str:
        return self.tutorial.title

    @property
    def tutorial_key(self) -> str:
        """The tutorial's id; for the paper's records (no tutorial_id) `title|doc_id|method_id`."""
        return self.tutorial_id or paper_tutorial_key(self.title, self.doc_id, self.method_id)

    @property
    def completed(self) -> bool | None:
        """Did the conversation reach the end of the tutorial? None = not recorded (the paper's records)."""
        if self.stop_reason is not None:
            return self.stop_reason == "finished" or self.finished
        return None if self.paper_format else self.finished


class ChecklistItemScore(BaseModel):
    """One checklist item asked of one conversation (`--judge-scoring checklist`, judge/checklist.py)."""

    id: str  # "rubric:<Rubric>:<item id>" | "step:<1-based step>:<template id>"
    rubrics: list[str] = Field(default_factory=list)  # the rubrics it informs
    question: str = ""
    polarity: Literal["yes-good", "yes-bad"] = "yes-good"
    p_yes: float | None = Field(default=None, ge=0.0, le=1.0)  # None = no answer (failure)
    mass: float | None = Field(default=None, ge=0.0, le=1.0)  # p(yes)+p(no); None = answer-only reading
    good: float | None = Field(default=None, ge=0.0, le=1.0)  # P(good): p_yes, or 1 - p_yes for yes-bad
    failure: str | None = None  # why it has no answer (after the retries)


class JudgeProvenance(BaseModel):
    """Who judged a ScoreRecord's rubric metrics, with what, and what came back."""

    evaluator: str = ""  # the judge's model spec
    rubrics_sha256: str = ""  # of the rubric file (its canonical JSON); "" = not recorded (older files)
    raw: dict[str, list[str]] = Field(default_factory=dict)  # prompt name -> raw replies (all tries)
    failures: list[str] = Field(default_factory=list)  # rubric names whose reply could not be parsed
    notes: list[str] = Field(default_factory=list)  # e.g. "Depth: no score found after 3 replies"
    scoring: str = ""  # --judge-scoring mode: "weighted", "json", "sampled" (+ "+rationale"); "" = json (older files)
    prompt: str = ""  # --judge-prompt variant (wikihowagent/data/judge_prompts.json); "" = json's own layout, or tutorial-first (older files)
    dist: dict[str, list[float]] = Field(default_factory=dict)  # rubric -> p(1..5) (weighted / sampled)
    argmax: dict[str, int] = Field(default_factory=dict)  # rubric -> most likely score
    spread: dict[str, float] = Field(default_factory=dict)  # rubric -> standard deviation of that distribution
    # --judge-scoring checklist: the checklist's `<version>@<hash>`, the weights applied ("uniform" or
    # "<file hash>"), how answers were read ("logprobs" | "answer"), and every item asked
    checklist: str = ""
    checklist_weights: str = ""
    reading: str = ""
    items: list[ChecklistItemScore] = Field(default_factory=list)


# Files written before JudgeProvenance kept these at the top level, and the judge's notes as "judge: ..." notes.
_LEGACY_JUDGE_KEYS = {"evaluator": "evaluator", "judge_raw": "raw", "judge_failures": "failures"}
_LEGACY_JUDGE_NOTE = "judge: "


class ScoreRecord(BaseModel):
    """One line of `scores.jsonl`: every metric of one conversation plus the judge's provenance."""

    conversation_id: str
    run: str = ""  # run name (directory name, or the paper's run-file stem)
    tutorial_id: str = ""
    title: str = ""
    domain: str = ""
    teacher: str = ""
    learner: str = ""
    persona: str = ""
    mode: Mode = "default"
    metrics: dict[str, float | None] = Field(default_factory=dict)  # None = not computable / failed
    judge: JudgeProvenance | None = None  # None = no rubric metric judged yet
    notes: list[str] = Field(default_factory=list)  # the computational metrics' notes, e.g. "BERTScore: ... chunked"
    # The post-test's matched steps: [tutorial step, recalled step, similarity] (0-based); None = no post-test scored.
    posttest_matches: list[tuple[int, int, float]] | None = None
    posttest_source: str = ""  # PostTest.source of the post-test scored; "" = older lines (the record's own)
    posttest_matching: str = ""  # metrics/posttest.py MATCHING rule of those metrics; "" = LEGACY_MATCHING
    # The torch device the metric encoders computed this line's embedding metrics on (cpu, cuda, mps; `--device`);
    # "" (and left out of the line) = none computed, or a line written before the device was recorded.
    metrics_device: str = Field(default="", exclude_if=lambda v: not v)

    @model_validator(mode="before")
    @classmethod
    def _read_legacy(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not (
            set(data) & set(_LEGACY_JUDGE_KEYS)
            or any(isinstance(n, str) and n.startswith(_LEGACY_JUDGE_NOTE) for n in data.get("notes") or [])
        ):
            return data
        data = dict(data)
        judge = dict(data.get("judge") or {})
        for old, new in _LEGACY_JUDGE_KEYS.items():
            value = data.pop(old, None)
            if value is not None:
                judge.setdefault(new, value)
        notes = [n for n in data.get("notes") or [] if isinstance(n, str)]
        judge.setdefault("notes", [n[len(_LEGACY_JUDGE_NOTE) :] for n in notes if n.startswith(_LEGACY_JUDGE_NOTE)])
        data["notes"] = [n for n in notes if not n.startswith(_LEGACY_JUDGE_NOTE)]
        has_judge = judge.get("evaluator") or judge.get("raw") or judge.get("failures") or judge.get("notes")
        data["judge"] = judge if has_judge or data.get("judge") else None
        return data

    @property
    def evaluator(self) -> str:
        return self.judge.evaluator if self.judge else ""

    @property
    def judge_failures(self) -> list[str]:
        return self.judge.failures if self.judge else []


def paper_tutorial_key(title: str | None, doc_id: int | None, method_id: int | None) -> str:
    """The key of a tutorial in the paper's records (which have no tutorial_id): `title|doc_id|method_id`."""
    return "|".join("" if x is None else str(x) for x in (title, doc_id, method_id))


def turn_line(role: str, text: str) -> str:
    """One message as the paper's records store it: "Teacher: ..." / "Learner: ..."."""
    return f"{role.capitalize()}: {text}"


def conversation_lines(turns: list[Turn]) -> list[str]:
    return [turn_line(t.role, t.text) for t in turns]


class JudgmentRecord(BaseModel):
    """One line of `judge-check`'s `judgments.jsonl`: one judge pass over an original or perturbed copy."""

    conversation_id: str
    run: str = ""
    variant: str  # "original" | "original-2" (rubric order reversed, seed + 1) | a perturbation name
    evaluator: str = ""
    judge_scoring: str = ""
    judge_prompt: str = ""  # --judge-prompt variant; "" = json's own layout, or tutorial-first (older files)
    scores: dict[str, float | None] = Field(default_factory=dict)  # None = failed (call, parse, low digit mass)
    judge_failures: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


RUBRIC_SCALE = (1.0, 5.0)  # a rubric score: a digit 1..5, or a mean of them (weighted, sampled)
CAL_SUFFIX = " (cal.)"  # the column of a calibrated rubric: `Clarity (cal.)` (evaluate/report --calibration)
RIDGE_FEATURES = ("p1", "p2", "p3", "p4", "p5", "expected", "spread")  # a ridge calibration's inputs, in order


class RubricCalibration(BaseModel):
    """One rubric's mapping from the judge's output to the human mean rating (see `alignment.calibration`).

    Checked when read: isotonic knots as many x as y, at least one, finite, x increasing, y on the rubric
    scale; ridge: one finite coefficient per feature of RIDGE_FEATURES and a finite intercept."""

    method: Literal["isotonic", "ridge"]
    n: int  # paired conversations it was fitted on
    tutorials: int  # distinct tutorials among them
    x: list[float] = Field(default_factory=list)  # isotonic: the judge's expected score at the knots ...
    y: list[float] = Field(default_factory=list)  # ... and the human mean there (linear in between, flat outside)
    features: list[str] = Field(default_factory=list)  # ridge: p1..p5, expected, spread
    coef: list[float] = Field(default_factory=list)  # ridge: on the raw features
    intercept: float = 0.0
    alpha: float | None = None  # ridge: the penalty chosen (leave-one-out within the fit)

    @model_validator(mode="after")
    def _usable(self) -> RubricCalibration:
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem)
        return self

    def problem(self) -> str | None:
        """Why this mapping cannot be applied (None: it can)."""
        lo, hi = RUBRIC_SCALE
        if self.method == "isotonic":
            if not self.x or not self.y:
                return "isotonic: no knots (x and y must each hold at least one)"
            if len(self.x) != len(self.y):
                return f"isotonic: x has {len(self.x)} knots and y {len(self.y)} (one y per x)"
            bad = next((i for i, v in enumerate(self.x) if not math.isfinite(v)), None)
            if bad is not None:
                return f"isotonic: x[{bad}] = {self.x[bad]:g} is not a finite number"
            bad = next((i for i, v in enumerate(self.y) if not (math.isfinite(v) and lo <= v <= hi)), None)
            if bad is not None:  # a calibrated score is a y knot or between two
                return f"isotonic: y[{bad}] = {self.y[bad]:g} is outside the rubric scale {lo:g} to {hi:g}"
            bad = next((i for i in range(1, len(self.x)) if self.x[i] < self.x[i - 1]), None)
            if bad is not None:
                return (
                    f"isotonic: x is not increasing (x[{bad}] = {self.x[bad]:g} < x[{bad - 1}] = {self.x[bad - 1]:g})"
                )
            return None
        if list(self.features) != list(RIDGE_FEATURES):
            return f"ridge: features must be {', '.join(RIDGE_FEATURES)}, not {', '.join(map(str, self.features)) or 'none'}"
        if len(self.coef) != len(RIDGE_FEATURES):
            return f"ridge: {len(self.coef)} coefficients for {len(RIDGE_FEATURES)} features"
        bad = next((i for i, c in enumerate(self.coef) if not math.isfinite(c)), None)
        if bad is not None:
            return f"ridge: coef[{bad}] = {self.coef[bad]:g} is not a finite number"
        if not math.isfinite(self.intercept):
            return f"ridge: intercept = {self.intercept:g} is not a finite number"
        return None


class SourceFile(BaseModel):
    """An input file a shared output was made from (`calibration.json`, `people_estimate.json`): its name (a
    run's score file: `<run folder>/scores.jsonl`) and the sha256 of its bytes, never a machine's path."""

    name: str
    sha256: str = ""  # "" = not recorded (a file written before the hash was)


def _refs(value: Any) -> Any:
    """Older files listed the inputs as paths: each read as its file name, without a hash."""
    if not isinstance(value, list):
        return value
    return [{"name": v.replace("\\", "/").rsplit("/", 1)[-1]} if isinstance(v, str) else v for v in value]


SourceFiles = Annotated[list[SourceFile], BeforeValidator(_refs)]


class Calibration(BaseModel):
    """`align --calibrate`'s `calibration.json`: per rubric, a mapping fitted for ONE judge (spec and scoring
    mode) and ONE rubric file (its sha256, as in `JudgeProvenance`); `evaluate --calibration` refuses scores
    of another judge or rubric file."""

    kind: Literal["wikihowagent-calibration"] = "wikihowagent-calibration"
    version: int = 1
    method: Literal["isotonic", "ridge"]
    judge: str  # the judge's spec; "" = not recorded (e.g. fitted on a CSV of scores): not applicable by evaluate
    scoring: str = ""
    prompt: str = ""  # the judge's --judge-prompt variant, as `judge_prompts.recorded_prompt` reads it
    rubrics_sha256: str = ""
    rubrics: dict[str, RubricCalibration] = Field(default_factory=dict)
    human_files: SourceFiles = Field(default_factory=list)
    score_sources: SourceFiles = Field(default_factory=list)
    out_of_fold: dict[str, dict[str, float | None]] = Field(default_factory=dict)  # rubric -> raw/calibrated r, MAE


ESTIMATE_NAME = "Estimated Overall (people)"  # the column `evaluate --people-estimate` adds
MAX_WEIGHT = RUBRIC_SCALE[1] - RUBRIC_SCALE[0]  # an estimate's weight per sd of a metric: at most the scale's width
ESTIMATE_BASES = ("cheap metrics", "METEOR alone")  # what `align` wrote: the fit, or its baseline (it did not beat)


class EstimatePredictor(BaseModel):
    """One metric of a people-calibrated estimate: standardised with the fit's mean and sd (after negating a
    metric where lower is better), times a non-negative weight."""

    name: str
    better: Literal["higher", "lower"] = "higher"
    mean: float
    sd: float
    weight: float

    @model_validator(mode="after")
    def _finite(self) -> EstimatePredictor:
        for key in ("mean", "sd", "weight"):
            v = getattr(self, key)
            if not math.isfinite(v):
                raise ValueError(f"{self.name}: {key} = {v:g} is not a finite number")
        if self.sd <= 0:
            raise ValueError(f"{self.name}: sd = {self.sd:g} must be positive")
        if not 0 <= self.weight <= MAX_WEIGHT:
            raise ValueError(
                f"{self.name}: weight = {self.weight:g} is outside 0 to {MAX_WEIGHT:g} (rating points per standard "
                "deviation: no more than the width of the 1-5 scale)"
            )
        return self


class PeopleEstimate(BaseModel):
    """`align`'s `people_estimate.json`: the people's Overall rating predicted from a few cheap metrics (a
    non-negative ridge fitted on a human study, its figures out of fold by tutorial); `evaluate
    --people-estimate` adds it as the column ESTIMATE_NAME, refusing scores of another metric mode or without
    a predictor."""

    kind: Literal["wikihowagent-people-estimate"] = "wikihowagent-people-estimate"
    version: int = 1
    target: str = "Overall"
    mode: Literal["default", "paper"] = "default"  # evaluate's metric mode the predictors were computed in
    intercept: float
    predictors: list[EstimatePredictor]
    shrinkage: float = 0.0  # the ridge penalty chosen (on standardised metrics)
    conversations: int = 0
    tutorials: int = 0
    basis: Literal["cheap metrics", "METEOR alone"] = "cheap metrics"  # METEOR alone: the fit did not beat it
    residual_sd: float | None = None  # of the out-of-fold predictions around the people's ratings
    residual_sd_between_runs: float | None = None  # of a run's mean residual beyond residual_sd / sqrt(n)
    human_files: SourceFiles = Field(default_factory=list)
    score_sources: SourceFiles = Field(default_factory=list)
    out_of_fold: dict[str, float | None] = Field(default_factory=dict)  # pooled_r, within_r, pair_share, ...

    @model_validator(mode="after")
    def _usable(self) -> PeopleEstimate:
        if not self.predictors:
            raise ValueError("no predictor")
        if not math.isfinite(self.intercept) or not RUBRIC_SCALE[0] <= self.intercept <= RUBRIC_SCALE[1]:
            raise ValueError(f"intercept = {self.intercept:g} is not on the rating scale")
        return self


class PairwiseRecord(BaseModel):
    """One line of `compare`'s `pairwise.jsonl` (and `judge-check --pairwise`'s `pairwise-judgments.jsonl`):
    one judge pass over two conversations of one tutorial in one order, the first shown as "A"."""

    tutorial_id: str
    first: str  # run name (compare) or variant (judge-check) of the conversation shown as A
    second: str
    first_conversation: str
    second_conversation: str
    evaluator: str = ""
    reading: str = ""  # "logprobs" (P(A) from the A/B tokens) | "answer" (the letter only)
    p_first: dict[str, float | None] = Field(default_factory=dict)  # rubric -> P(A better); None = failed
    failures: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    raw: dict[str, list[str]] = Field(default_factory=dict)  # rubric -> raw replies (all tries)
