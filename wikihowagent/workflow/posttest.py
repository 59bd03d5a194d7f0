"""The learner's procedural test: after the conversation (post-test) and from the title alone (pre-test).

The learner model is asked to write the method's steps from memory, one per line, in order. The post-test
shows it the conversation it took part in, from its own side ("Teacher:" / "You:"), and never the tutorial;
the pre-test shows it the method's title only (what the model already knew). Both ask for exactly as many
steps as the method has (the same instruction before and after): recall is then compared at one answer length,
so a model cannot gain recall by listing more steps (v1 asked for "the steps": the 1.5B model listed 6-9
generic steps before the lesson and ~3 after a 10-message lesson, and Learning Gain measured list length,
BENCHMARKS.md "post-test"). The pre-test is taken once
per (learner model, tutorial) and cached in the run (`runs.PretestCache`), so resumes and shards do not
repeat it. Answers are parsed into steps here (`parse_steps`); a reply that is not a step list (empty, one
line of prose, hundreds of lines) is recorded with an `error` and never scored (metrics/posttest.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from wikihowagent.backends.calls import achat, with_reply_cap
from wikihowagent.errors import WikihowagentError
from wikihowagent.records import MAX_TEST_STEPS, PostTest, TestAnswer, Turn
from wikihowagent.runs import PretestCache

MAX_STEPS = MAX_TEST_STEPS  # more recalled "steps" than this is not a step list (a looping model, a pasted text)
REPLY_TOKENS_PER_STEP, REPLY_TOKENS_EXTRA = 64, 32  # a test reply's cap: N steps fit whatever `--max-tokens` is
CALL_FAILED = "call failed: "  # prefix of a TestAnswer error that a later run should retry (not cached)

SYSTEM = (
    "You are a student who has just had a lesson with a teacher. You answer from memory, with nothing in front of you."
)
_LIST = "exactly {n} lines, one step per line, in order, numbered 1. to {n}."


@dataclass(frozen=True)
class TestPrompt:
    """One wording of the two tests (`--posttest-prompt NAME`): the post-test's user message (with
    {transcript}, {method}, {n}) and the pre-test's (with {method}, {n}); `version` (name + a hash of the
    texts) is recorded with every answer and keys the pre-test cache."""

    __test__ = False  # not a pytest class

    name: str
    system: str
    post: str
    pre: str

    @property
    def version(self) -> str:
        digest = hashlib.sha256("\x00".join((self.system, self.post, self.pre)).encode()).hexdigest()
        return f"{self.name}-{digest[:10]}"


# docs/methodology/metrics.md: v2 asks both tests for exactly the method's number of steps (v1 asked for "the steps" and
# measured list length); v3 keeps the length and lets the learner abstain line by line ("not taught" after the
# lesson, "don't know" before it) instead of filling a line from prior knowledge; measured no better with the
# embedded model, so v2 stays the default (BENCHMARKS.md "post-test: wording").
PROMPTS: dict[str, TestPrompt] = {
    p.name: p
    for p in (
        TestPrompt(
            "v2",
            SYSTEM,
            'This was your lesson (you are "You"):\n\n{transcript}\n\n'
            'Now, from memory, write the {n} steps of the method "{method}" that you were taught: '
            + _LIST
            + " Write only the steps, nothing else.",
            'Before any lesson: from what you already know, write the {n} steps of the method "{method}": '
            + _LIST
            + " Write only the steps, nothing else.",
        ),
        TestPrompt(
            "v3",
            SYSTEM,
            'This was your lesson (you are "You"):\n\n{transcript}\n\n'
            'Now, from memory, write the {n} steps of the method "{method}" as your teacher taught them: '
            + _LIST
            + " Write only what this lesson taught you: for a step the lesson did not teach, write "
            '"not taught" on its line instead of guessing. Write only the steps, nothing else.',
            'Before any lesson: from what you already know, write the {n} steps of the method "{method}": '
            + _LIST
            + ' For a step you do not know, write "don\'t know" on its line instead of guessing. '
            "Write only the steps, nothing else.",
        ),
    )
}
DEFAULT_PROMPT = "v2"


class PostTestPromptError(WikihowagentError, ValueError):
    pass


def get_prompt(name: str | None) -> TestPrompt:
    """The registered test prompt `name` (None: the default); a one-line error names the known ones."""
    try:
        return PROMPTS[name or DEFAULT_PROMPT]
    except KeyError:
        raise PostTestPromptError(
            f"--posttest-prompt {name!r}: not a post-test prompt (known: {', '.join(PROMPTS)})"
        ) from None


def prompt_option(name: str | None, learner: str | None) -> TestPrompt:
    """`--posttest-prompt NAME` beside `--posttest-learner SPEC` (evaluate, judge-check): checked before any work.
    An empty (or blank) SPEC is refused: it names no model, and would quietly take no post-test."""
    if learner is not None and not learner.strip():
        raise PostTestPromptError(
            "--posttest-learner: empty model spec; give the learner model that takes the "
            "post-test (e.g. --posttest-learner local)"
        )
    if name is not None and not learner:
        raise PostTestPromptError("--posttest-prompt: give --posttest-learner (the model that takes the test)")
    return get_prompt(name)


# A line where the learner says it was not taught / does not know the step: not a recalled step (it neither
# matches nor counts as invented); counted in TestAnswer.abstained.
_ABSTAIN = re.compile(
    r"^\(?\s*(?:not\s+taught|not\s+covered|(?:i\s+)?(?:don'?t|do\s+not)\s+know|unknown)"
    r"\s*\)?[\s.!]*$",
    re.IGNORECASE,
)

_NUMBERED = re.compile(r"^(?:step\s*)?\(?(\d+)\s*[.):\-](?:\s+|(?=[^\W\d_])|$)(.*)$", re.IGNORECASE)
_BULLET = re.compile(r"^[-*•·]\s+(.*)$")
_INLINE = re.compile(r"(?:^|\s)\d{1,2}[.)]\s+")
_MARKUP = re.compile(r"^[#>\s]+|\*\*|__")
_WORD = re.compile(r"[^\W\d_]")  # a letter (any script): a step needs words, "3" or "|---|" is not one
# Control and invisible format characters (NUL, zero-width space, BOM, ...): never part of a step.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]")
# A markdown table's rule line ("|---|:--:|"); the line before it is the table's header.
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_TABLE_NUMBER = re.compile(r"^(?:step\s*)?(\d+)\.?$", re.IGNORECASE)


def method_name(title: str, method_title: str) -> str:
    """ "How to X: Part 1 of 2:Y" (both when the tutorial is a method of a longer article)."""
    title, method_title = title.strip(), method_title.strip()
    if title and method_title and method_title.lower() not in title.lower():
        return f"{title}: {method_title}"
    return title or method_title


def transcript(turns: Sequence[Turn]) -> str:
    """The conversation as the learner saw it: the teacher's lines and its own ("You: ...")."""
    return "\n".join(f"{'Teacher' if t.role == 'teacher' else 'You'}: {t.text}" for t in turns)


def posttest_messages(
    title: str, method_title: str, turns: Sequence[Turn], n_steps: int, prompt: TestPrompt | None = None
) -> list[BaseMessage]:
    prompt = prompt or get_prompt(None)
    user = prompt.post.format(transcript=transcript(turns), method=method_name(title, method_title), n=n_steps)
    return [SystemMessage(content=prompt.system), HumanMessage(content=user)]


def pretest_messages(
    title: str, method_title: str, n_steps: int, prompt: TestPrompt | None = None
) -> list[BaseMessage]:
    prompt = prompt or get_prompt(None)
    user = prompt.pre.format(method=method_name(title, method_title), n=n_steps)
    return [SystemMessage(content=prompt.system), HumanMessage(content=user)]


def _clean(line: str) -> str:
    return _MARKUP.sub("", _INVISIBLE.sub("", line)).strip().strip("*_").strip()


def _untable(lines: list[str]) -> list[str]:
    """A markdown table's rows as lines ("| 1 | Open the lid |" -> "1. Open the lid"); its header (the line
    before a `|---|` rule) and the rule itself dropped. Other lines as they are."""
    out: list[str] = []
    for line in lines:
        stripped = line.strip()
        if "|" in stripped and "-" in stripped and _TABLE_RULE.match(stripped):
            if out and "|" in out[-1]:
                out.pop()  # the header row
            continue
        if stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1:
            cells = [c.strip() for c in stripped[1:-1].split("|")]
            cells = [c for c in cells if c]
            if len(cells) >= 2 and _TABLE_NUMBER.match(cells[0]):
                line = f"{_TABLE_NUMBER.match(cells[0]).group(1)}. {' '.join(cells[1:])}"  # type: ignore[union-attr]
            else:
                line = " ".join(cells)
        out.append(line)
    return out


class ParsedAnswer(NamedTuple):
    steps: list[str]
    problem: str | None  # set: not a step list (never scored)
    abstained: int = 0  # lines saying "not taught" / "don't know": the learner's own "I do not have this step"


def parse_steps(text: str) -> ParsedAnswer:
    """A reply -> (steps, problem, abstained). Numbered lines (or bullets) start steps; other lines after the
    first one continue it, lines before it (a preamble) are dropped. Without markers: each line is a step if
    there are several; a single line is split at inline numbering ("1. a 2. b"), is one step if numbered, or
    else is prose, not a step list.
    A step that only says "not taught" / "don't know" is an abstention, counted, not a step: an answer of
    abstentions alone is a step list with nothing recalled (scored 0), not a failure.
    Repeated steps (a looping model) count once; more than MAX_STEPS is not a step list. A step needs words (a
    letter): bare numbers, rule lines and invisible characters are not steps; a markdown table's rows are
    read as lines (its header and rule line dropped)."""
    lines = [c for c in (_clean(x) for x in _untable((text or "").splitlines())) if c and not c.startswith("```")]
    if not lines:
        return ParsedAnswer([], "empty reply")
    steps: list[str] = []
    if len(lines) == 1:
        parts = [p.strip() for p in _INLINE.split(lines[0])]
        parts = [p for p in (parts if _INLINE.match(lines[0]) else parts[1:]) if p]  # drop a preamble
        if len(parts) >= 2 and len(_INLINE.findall(lines[0])) >= 2:
            lines = [f"{i}. {p}" for i, p in enumerate(parts, 1)]
        elif not (_NUMBERED.match(lines[0]) or _BULLET.match(lines[0])):
            return ParsedAnswer([], "one line without a step list")
    numbered = any(_NUMBERED.match(x) for x in lines)
    pattern = _NUMBERED if numbered else _BULLET if any(_BULLET.match(x) for x in lines) else None
    if pattern is not None:
        started = False
        for line in lines:
            m = pattern.match(line)
            if m:
                started = True
                steps.append(m.group(m.lastindex or 1).strip())
            elif started and _WORD.search(line):  # a continuation (a sub-bullet, a wrapped line); not "---"
                bullet = _BULLET.match(line)
                steps[-1] = f"{steps[-1]} {bullet.group(1) if bullet else line}".strip()
    else:
        steps = [x for x in lines if not x.endswith(":") and _WORD.search(x)]  # headings, preambles, bare numbers
        if len(steps) == 1:
            return ParsedAnswer([], "one line without a step list")
    steps = [s for s in steps if _WORD.search(s)]  # "3.", "1. ---": a number or a rule is not a step
    kept = [s for s in steps if not _ABSTAIN.match(s)]
    abstained = len(steps) - len(kept)
    unique = list(dict.fromkeys(s for s in kept if s))
    seen: set[str] = set()
    steps = []
    for s in unique:
        key = " ".join(s.lower().split())
        if key not in seen:
            seen.add(key)
            steps.append(s)
    if len(steps) + abstained > MAX_STEPS:
        return ParsedAnswer([], f"{len(steps) + abstained} lines: not a step list (more than {MAX_STEPS})")
    if not steps and not abstained:
        return ParsedAnswer([], "no step found")
    return ParsedAnswer(steps, None, abstained)


async def take_test(model: BaseChatModel, messages: list[BaseMessage]) -> TestAnswer:
    """One test call; a failed call or an unparsable reply is an answer with `error`, never an exception."""
    start = time.perf_counter()
    try:
        reply = await achat(model, messages)
    except Exception as exc:  # recorded; the conversation and the run go on
        return TestAnswer(
            error=CALL_FAILED + f"{type(exc).__name__}: {exc}".splitlines()[0],
            latency_s=round(time.perf_counter() - start, 3),
        )
    usage: dict[str, Any] = dict(reply.usage_metadata or {})
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    steps, problem, abstained = parse_steps(text)
    return TestAnswer(
        text=text.strip(),
        steps=steps,
        error=problem,
        abstained=abstained,
        prompt_tokens=int(usage.get("input_tokens", 0)),
        completion_tokens=int(usage.get("output_tokens", 0)),
        latency_s=round(time.perf_counter() - start, 3),
    )


class PostTester:
    """Takes the post-test of a conversation and the (cached) pre-test of its tutorial with one learner model.

    `cache` is a `runs.PretestCache` (or anything with get(learner, key, version) / put(learner, key, version,
    answer)); concurrent conversations of the same tutorial share one pre-test call."""

    def __init__(self, model: BaseChatModel, learner: str, cache: Any, prompt: TestPrompt | None = None):
        self.model, self.learner, self.cache = model, learner, cache
        self.prompt = prompt or get_prompt(None)
        self._inflight: dict[str, asyncio.Task[TestAnswer]] = {}
        self._capped: dict[int, BaseChatModel] = {}

    def model_for(self, n_steps: int) -> BaseChatModel:
        """The learner model with room for an N-step answer (a cap of REPLY_TOKENS_PER_STEP per step + extra,
        raised above the conversation's reply cap, never lowered): a cut answer would score as forgetting."""
        if n_steps not in self._capped:
            self._capped[n_steps] = with_reply_cap(self.model, REPLY_TOKENS_PER_STEP * n_steps + REPLY_TOKENS_EXTRA)
        return self._capped[n_steps]

    async def pretest(self, key: str, title: str, method_title: str, n_steps: int) -> TestAnswer:
        cached = self.cache.get(self.learner, key, self.prompt.version)
        if cached is not None:
            return cached
        task = self._inflight.get(key)
        if task is None:
            task = self._inflight[key] = asyncio.ensure_future(self._take_pretest(key, title, method_title, n_steps))
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():
                self._inflight.pop(key, None)

    async def _take_pretest(self, key: str, title: str, method_title: str, n_steps: int) -> TestAnswer:
        answer = await take_test(self.model_for(n_steps), pretest_messages(title, method_title, n_steps, self.prompt))
        if not (answer.error or "").startswith(CALL_FAILED):  # a failed call is retried by a later run
            self.cache.put(self.learner, key, self.prompt.version, answer)
        return answer

    async def run(
        self, key: str, title: str, method_title: str, turns: Sequence[Turn], n_steps: int, pretest: bool = True
    ) -> PostTest:
        """`n_steps`: the method's step count, asked of both tests."""
        post = await take_test(
            self.model_for(n_steps), posttest_messages(title, method_title, turns, n_steps, self.prompt)
        )
        pre = await self.pretest(key, title, method_title, n_steps) if pretest else None
        return PostTest(model=self.learner, prompt_version=self.prompt.version, post=post, pre=pre)


@contextmanager
def post_tester(model: BaseChatModel, learner: str, directory: Path, prompt: TestPrompt) -> Iterator[PostTester]:
    """The post-tester of `learner` (its spec, recorded with each answer) with `model`, in the wording `prompt`,
    its pre-tests cached in `directory`'s pretests.jsonl (`runs.PretestCache`, closed at the block's end). The
    one way `generate`, `evaluate --posttest-learner` and `judge-check --posttest-learner` make one; the latter two
    take `model` from `judge.session.JudgeEndpoints.learner_factory`."""
    with PretestCache(directory) as cache:
        yield PostTester(model, learner, cache, prompt)
