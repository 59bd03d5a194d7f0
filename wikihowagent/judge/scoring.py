"""How the rubric judge turns a model's reply into a score: the `--judge-scoring` modes (a registry).

- `json`: the structured-output judge of `rubric_judge.py` (two prompts per conversation, integer scores).
- `weighted`: one request per rubric whose answer is one score token; the score is sum k * p(k) over the
  digit tokens 1..5 at that position (token log-probabilities), renormalised over the digits (G-Eval).
  Tokens such as " 4" count as 4. If the digits hold less than `DIGIT_MASS_MIN` of the probability at
  that position, the rubric is a failure ("below the digit-probability threshold"), never a score.
- `sampled`: `SAMPLES` replies at temperature `SAMPLE_TEMPERATURE` (seeds seed..seed+n-1); the mean of the
  digits read, their spread. For backends without log-probabilities.

With `rationale=True` the judge writes its analysis first and ends with `Score: k`; the score is read at
the *final* `Score: k` token, never at an earlier digit of the analysis.

A digit is a score only when its line ends there: what follows it on the line may be nothing but spaces,
`.`, `)` or `*`, and the reply must be seen to end or to break the line after it. "10", "3/10", "2.5",
"4 because ..." are parse failures (counted, asked again), as `json` rejects them. Tokenizers that split
numbers into digits (Qwen's, Llama 3's) write "10" as "1", "0": the judge generates `SCORE_TOKENS` tokens,
enough to see the token after the digit (the embedded model answers "4" then its end-of-text token), and a
reply cut off by the token limit right after the digit is a failure, never a guess.

Prompts (a `--judge-prompt` variant of wikihowagent/data/judge_prompts.json, see prompts.py) put what the calls
share first (instructions, conversation, the tutorial where every rubric sees it) and the rubric last, so
the calls for one conversation share one prefix the server can cache (llama.cpp's prompt cache, vLLM's prefix cache,
OpenAI's prompt caching); the embedded server's judge calls turn its prompt cache on.

- `checklist`: narrow yes/no items (wikihowagent/data/checklists.json: steps of the tutorial, questions per rubric), one
  call each, P(yes) read from the answer token's log-probabilities; a rubric's score = 1 + 4 x the weighted
  mean of its items' P(good) (judge/checklist.py). Works without log-probabilities (answer-only).

Adding a mode = one scorer class (`Scorer` subclass, or the same interface) and one `SCORING_MODES` entry
(judge/modes.py, where the modes' names and flags live).
"""

from __future__ import annotations

import asyncio
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from wikihowagent.backends import capabilities
from wikihowagent.backends.spec import JUDGE_SCORING_METADATA
from wikihowagent.errors import Note, WikihowagentError, kind_of
from wikihowagent.records import ChecklistItemScore, Conversation, turn_line

from .checklist import (
    ANSWER_TOKENS,
    Answer,
    bad_logprob,
    conversation_items,
    load_checklist,
    p_good,
    read_answer,
    rubric_score,
)
from .modes import SCORING_MODES, first_mode, mode_of, modes_where, prompt_variant_modes
from .prompt_variants import DEFAULT_PROMPT, LEGACY_PROMPT, JudgePrompt, load_prompts, render, shorten, shows_tutorial
from .rubric_judge import (
    LOW_MASS,
    ROLE_TEXT,
    Judge,
    JudgeBackendError,
    JudgeRequestError,
    JudgeResult,
    Rubric,
    error_line,
    failure_kind,
    is_request_error,
    prompt_groups,
    tutorial_block,
)

DIGITS = (1, 2, 3, 4, 5)
DIGIT_MASS_MIN = 0.5  # below this share of probability on "1".."5" the rubric is a failure
TOP_LOGPROBS = 20  # the OpenAI API's maximum
SAMPLES = 5
SAMPLE_TEMPERATURE = 0.7
SCORE_TOKENS = 8  # room for a short label ("Clarity: ") before the digit and a token after it
RATIONALE_TOKENS = 256


class ScoringError(WikihowagentError, ValueError):
    """A scoring mode that cannot work with this judge; one line naming the backend and the modes that do."""


@dataclass
class Distribution:
    probs: list[float]  # p(1)..p(5), renormalised over the digits
    mass: float  # the digits' share of the probability before renormalising (1.0 for samples)

    @property
    def mean(self) -> float:
        return sum(k * p for k, p in zip(DIGITS, self.probs, strict=True))

    @property
    def argmax(self) -> int:
        return DIGITS[max(range(len(DIGITS)), key=lambda i: self.probs[i])]

    @property
    def spread(self) -> float:
        m = self.mean
        return math.sqrt(max(0.0, sum(p * (k - m) ** 2 for k, p in zip(DIGITS, self.probs, strict=True))))


# --------------------------------------------------------------------------------------------------
# Reading log-probabilities
# --------------------------------------------------------------------------------------------------

_DIGIT_TOKEN = re.compile(r"^\s*([1-5])([\s.,)*]*)$")
_SCORE_LABEL = re.compile(r"score\s*\**\s*[:=]\s*\**\s*$", re.I)
_SHORT_LABEL = re.compile(r"^[^\n\d]{0,40}[:=]\s*\**\s*$")  # "Clarity:", never "3/5:"
_LINE_END = re.compile(r"[ \t\r.)*]*")  # what may follow a score digit on its line


def digit_closed(tail: str, complete: bool) -> str | None:
    """None if `tail` (the reply after a score digit) closes the score; else why it does not.

    The rest of the digit's line must be empty (spaces, `.`, `)`, `*`), and the line must be seen to end:
    a line break, or the end of a reply that was not cut off by the token limit (`complete`)."""
    line, newline, _ = tail.partition("\n")
    if not _LINE_END.fullmatch(line):
        return f"the digit is followed by {line.strip()[:20]!r}"
    if not newline and not complete:
        return "the reply was cut off right after the digit"
    return None


# A line that is a score alone ("5", "**4**", "Score: 3."): after the score's own line, one with another digit
# makes the reply name two scores ("4\n5"): ambiguous, not a score.
_SCORE_LINE = re.compile(r"^[ \t]*(?:[^\n\d]{0,40}[:=][ \t]*)?\**[ \t]*([1-5])[ \t\r.)*]*$", re.M)


def second_score(tail: str, digit: int) -> str | None:
    """None unless a later line of `tail` (the reply after the score digit) is a score alone with another
    digit; else why the reply is ambiguous."""
    rest = tail.partition("\n")[2]
    for m in _SCORE_LINE.finditer(rest):
        if int(m.group(1)) != digit:
            return f"a second score on a later line ({m.group(0).strip()[:20]!r})"
    return None


def token_entries(meta: Any) -> list[dict[str, Any]]:
    """The per-token entries of a reply's `logprobs` (OpenAI/llama.cpp `{"content": [...]}` or a plain list)."""
    if isinstance(meta, dict):
        meta = meta.get("content")
    if not isinstance(meta, list):
        return []
    return [e for e in meta if isinstance(e, dict) and isinstance(e.get("token"), str)]


def digit_of(token: str) -> int | None:
    m = _DIGIT_TOKEN.match(token)
    return int(m.group(1)) if m else None


def distribution_at(entry: dict[str, Any]) -> Distribution:
    """p(1..5) at one token position from its top log-probabilities (" 4" and "4" both count as 4)."""
    mass = dict.fromkeys(DIGITS, 0.0)
    seen: set[str] = set()
    cands = list(entry.get("top_logprobs") or [])
    if not any(c.get("token") == entry.get("token") for c in cands):
        cands.append(entry)  # the chosen token itself, if the server left it out of the top list
    for c in cands:
        tok, lp = c.get("token"), c.get("logprob")
        if not isinstance(tok, str) or tok in seen or not isinstance(lp, (int, float)):
            continue
        seen.add(tok)
        k = digit_of(tok)
        if k is not None:
            mass[k] += math.exp(lp)
    total = sum(mass.values())
    probs = [mass[k] / total if total > 0 else 0.0 for k in DIGITS]
    return Distribution(probs=probs, mass=min(1.0, total))


def score_position(tokens: list[str], rationale: bool) -> int | None:
    """Index of the score token: the first digit (after nothing but whitespace or a short label such as
    "Score:"), or with a rationale the digit of the *last* "Score: k"."""
    text_before = ""
    found: int | None = None
    for i, tok in enumerate(tokens):
        k = digit_of(tok)
        if k is not None:
            if rationale:
                if _SCORE_LABEL.search(text_before + tok[: len(tok) - len(tok.lstrip())]):
                    found = i
            else:
                head = text_before.strip(" \t\r\n*")  # "**4**" is 4
                if not head or _SHORT_LABEL.match(head):
                    return i
                return None
        text_before += tok
    return found


def weighted_score(
    meta: Any, rationale: bool, threshold: float = DIGIT_MASS_MIN, complete: bool = True
) -> tuple[Distribution | None, str | None]:
    """A reply's logprobs -> (distribution, None) or (None, why it is not a score). `complete`: the reply
    ended by itself (False when the token limit cut it off)."""
    entries = token_entries(meta)
    if not entries:
        return None, "no token log-probabilities in the reply"
    tokens = [e["token"] for e in entries]
    pos = score_position(tokens, rationale)
    want = "a final 'Score: k'" if rationale else "a single score digit"
    if pos is None:
        return None, f"no {want} in the reply ({''.join(tokens).strip()[:40]!r})"
    m = _DIGIT_TOKEN.match(tokens[pos])
    tail = (m.group(2) if m else "") + "".join(tokens[pos + 1 :])
    why = (digit_closed(tail, complete) or second_score(tail, int(m.group(1)))) if m else "no digit"
    if why:
        return None, f"no {want} in the reply ({''.join(tokens).strip()[:40]!r}: {why})"
    bad = bad_logprob(entries[pos], digit_of)
    if bad:
        return None, bad
    dist = distribution_at(entries[pos])
    if dist.mass < threshold:
        return None, Note(
            f"below the digit-probability threshold (p(1..5) = {dist.mass:.2f} < {threshold:g})", LOW_MASS
        )
    return dist, None


def text_score(text: str, rationale: bool, complete: bool = True) -> int | None:
    """A sampled reply's digit: the whole reply (or a short label + digit), or the last 'Score: k'; the
    digit's line must end after it (`digit_closed`) and no later line may be another score alone
    (`second_score`: "4\n5" is ambiguous)."""
    text = text or ""
    if rationale:
        hits = list(re.finditer(r"score\s*\**\s*[:=]\s*\**\s*([1-5])", text, re.I))
        m = hits[-1] if hits else None
    else:
        m = re.match(r"\s*(?:[^\n\d]{0,40}[:=]\s*)?\**\s*([1-5])", text)
    if m is None or digit_closed(text[m.end() :], complete) or second_score(text[m.end() :], int(m.group(1))):
        return None
    return int(m.group(1))


# --------------------------------------------------------------------------------------------------
# Prompts: shared prefix first, rubric last
# --------------------------------------------------------------------------------------------------


def rubric_prompt(
    conv: Conversation, rubric: Rubric, rationale: bool, prompt: JudgePrompt | None = None
) -> tuple[list[tuple[str, str]], str | None]:
    """One rubric's chat messages under a prompt variant (default: the tutorial-first layout), and a note
    when the variant's truncation rule shortened the conversation.

    The variants keep what the calls of one conversation share first (instructions, conversation; the
    tutorial too where every rubric sees it) and the rubric last, so the server can cache the prefix."""
    prompt = prompt or load_prompts()[LEGACY_PROMPT]
    short = shorten(conv, prompt)
    crit = f"Criterion: {rubric.name} (judge {ROLE_TEXT[rubric.role]}): {rubric.question}"
    if prompt.levels:
        crit += "\n" + "\n".join(f"{k} - {rubric.levels[k]}" for k in ("5", "4", "3", "2", "1"))
    if rationale:
        ask = (
            "First explain your judgement in at most three sentences. Then end with a last line "
            "'Score: k', where k is one digit from 1 to 5."
        )
    else:
        ask = prompt.ask.replace("{name}", rubric.name)
    user = render(prompt, conv, short.lines, crit, ask, shows_tutorial(prompt, rubric.reference))
    messages = ([("system", prompt.system)] if prompt.system else []) + [("human", user)]
    return messages, short.note


# --------------------------------------------------------------------------------------------------
# Capabilities
# --------------------------------------------------------------------------------------------------


def backend_name(llm: Any) -> str:
    return type(llm).__name__


def preferred_mode(llm: Any) -> str | None:
    """The mode the chat model's provider measured best for its judge (its `metadata`; the embedded model:
    checklist), None where it names none or an unknown one."""
    meta = getattr(llm, "metadata", None)
    mode = meta.get(JUDGE_SCORING_METADATA) if isinstance(meta, dict) else None
    return mode if mode in SCORING_MODES else None


def default_mode(llm: Any, compat: str, holistic: bool = False) -> str:
    """The mode when none is asked for: json under --compat paper; else the provider's measured choice (not
    when `holistic`: an option of the 1-5 rating judges was given, --judge-rationale or --judge-prompt);
    else weighted where the backend returns log-probabilities, json where it does not."""
    if compat == "paper":
        return first_mode("paper")
    preferred = None if holistic else preferred_mode(llm)
    if preferred is not None:
        return preferred
    return first_mode("default_with_logprobs" if capabilities(llm).logprobs else "paper")


def resolve_mode(requested: str | None, llm: Any, compat: str, holistic: bool = False) -> str:
    if requested is None:
        return default_mode(llm, compat, holistic)
    if requested not in SCORING_MODES:
        raise ScoringError(f"--judge-scoring: unknown mode {requested!r}; valid: {', '.join(SCORING_MODES)}")
    mode = SCORING_MODES.get(requested)
    if compat == "paper" and not mode.paper:
        raise ScoringError(
            f"--compat paper keeps the paper's prompts and parsing: only --judge-scoring {first_mode('paper')} applies"
        )
    if mode.needs_logprobs and not capabilities(llm).logprobs:
        works = ", ".join(modes_where("needs_logprobs", False))
        raise ScoringError(
            f"--judge-scoring {requested} needs token log-probabilities, which backend "
            f"{backend_name(llm)} does not return; use one of: {works}"
        )
    return requested


async def invoke(llm: Any, prompt: Any, **bind: Any) -> Any:
    """One judge call; JudgeRequestError when the evaluator refuses this request (e.g. too long),
    JudgeBackendError when it cannot be reached."""
    try:
        return await llm.bind(**bind).ainvoke(prompt)
    except Exception as exc:  # noqa: BLE001
        if is_request_error(exc):
            raise JudgeRequestError(error_line(exc)[:200]) from exc
        raise JudgeBackendError(f"evaluator call failed: {error_line(exc)}") from exc


def reply_complete(msg: Any, max_tokens: int, n_tokens: int | None = None) -> bool:
    """Did the reply end by itself? The finish reason (OpenAI-compatible `finish_reason`, Ollama's
    `done_reason`) is "length" when the token limit cut it off; without one, a reply of fewer tokens
    (`n_tokens`, else its usage's output tokens) than the limit ended by itself."""
    meta = getattr(msg, "response_metadata", None) or {}
    reason = meta.get("finish_reason") or meta.get("done_reason")
    if isinstance(reason, str) and reason:
        return reason != "length"
    if n_tokens is None:
        n_tokens = (getattr(msg, "usage_metadata", None) or {}).get("output_tokens")
    return isinstance(n_tokens, int) and n_tokens < max_tokens


def cache_kwargs(llm: Any) -> dict[str, Any]:
    """The embedded server sends `cache_prompt: false` (reproducible generations); judge calls of one
    conversation share their prefix, so they turn llama.cpp's prompt cache on."""
    extra = getattr(llm, "extra_body", None)
    if isinstance(extra, dict) and extra.get("cache_prompt") is False:
        return {"extra_body": {**extra, "cache_prompt": True}}
    return {}


# --------------------------------------------------------------------------------------------------
# Scorers (same interface as rubric_judge.Judge: .names, .judge(conv, names, variant), .fallback_note)
# --------------------------------------------------------------------------------------------------


class Scorer(ABC):
    """One call per rubric; the calls of one conversation run one after another (they share a prefix)."""

    name: ClassVar[str] = ""

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, Rubric],
        names: list[str] | None = None,
        *,
        rationale: bool = False,
        retries: int = 2,
        concurrency: int = 2,
        seed: int | None = None,
        prompt: JudgePrompt | None = None,
    ):
        self.llm = llm
        self.prompt = prompt or load_prompts()[DEFAULT_PROMPT]
        self.rubrics = {n: r for n, r in rubrics.items() if names is None or n in names}
        self.groups = prompt_groups(rubrics, names)
        self.rationale = rationale
        self.retries = max(0, retries)
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.seed = seed if seed is not None else getattr(llm, "seed", None)
        self.fallback_note: str | None = None

    @property
    def label(self) -> str:
        return self.name + ("+rationale" if self.rationale else "")

    @property
    def names(self) -> list[str]:
        return list(self.rubrics)

    @property
    def prompt_name(self) -> str:
        """The prompt variant, recorded with every score (JudgeProvenance.prompt)."""
        return self.prompt.name

    async def _invoke(self, prompt: Any, **bind: Any) -> Any:
        return await invoke(self.llm, prompt, **bind)

    @abstractmethod
    async def score(
        self, conv: Conversation, rubric: Rubric, variant: int
    ) -> tuple[Distribution | None, str | None, list[str]]:
        """-> (distribution, problem, raw replies); each scoring mode implements it."""

    async def judge(self, conv: Conversation, names: list[str] | None = None, variant: int = 0) -> JudgeResult:
        """Score `names` (default: all); `variant` 1 = reversed rubric order and seed + 1 (self-consistency)."""
        res = JudgeResult()
        order = [n for n in self.names if names is None or n in names]
        if variant:
            order.reverse()
        note = shorten(conv, self.prompt).note
        if note and order:
            res.notes.append(note)
        async with self.sem:
            for n in order:
                try:
                    dist, problem, raws = await self.score(conv, self.rubrics[n], variant)
                except JudgeRequestError as exc:
                    dist, problem, raws = None, f"request refused by the evaluator ({exc})", []
                    res.kinds[n] = "call"
                res.raw[n] = raws
                if dist is None:
                    res.scores[n] = None
                    res.failures.append(n)
                    res.kinds.setdefault(n, failure_kind(problem))
                    res.notes.append(f"{n}: {problem} after {max(1, len(raws))} replies")
                else:
                    res.scores[n] = round(dist.mean, 4)
                    res.dist[n] = [round(p, 4) for p in dist.probs]
                    res.argmax[n] = dist.argmax
                    res.spread[n] = round(dist.spread, 4)
        keep = [n for n in self.names if n in res.scores]
        res.scores = {n: res.scores[n] for n in keep}
        res.failures = [n for n in keep if n in res.failures]
        return res


class WeightedScorer(Scorer):
    name = mode_of("WeightedScorer")

    async def score(
        self, conv: Conversation, rubric: Rubric, variant: int
    ) -> tuple[Distribution | None, str | None, list[str]]:
        prompt, _ = rubric_prompt(conv, rubric, self.rationale, self.prompt)
        limit = RATIONALE_TOKENS if self.rationale else SCORE_TOKENS
        bind: dict[str, Any] = {
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
            "max_tokens": limit,
            **cache_kwargs(self.llm),
        }
        if variant and self.seed is not None:
            bind["seed"] = self.seed + variant
        raws: list[str] = []
        problem: str | None = None
        for _ in range(1 + self.retries):
            msg = await self._invoke(prompt, **bind)
            meta = (getattr(msg, "response_metadata", None) or {}).get("logprobs")
            raws.append(str(getattr(msg, "content", "") or ""))
            if not token_entries(meta):
                raise JudgeBackendError(
                    f"the evaluator ({backend_name(self.llm)}) returned no token log-probabilities "
                    "for --judge-scoring weighted; use --judge-scoring json or sampled"
                )
            dist, problem = weighted_score(
                meta, self.rationale, complete=reply_complete(msg, limit, len(token_entries(meta)))
            )
            if dist is not None:
                return dist, None, raws
            if kind_of(problem, "parse") == LOW_MASS:
                break  # the model's own uncertainty: asking again at temperature 0 gives the same answer
        return None, problem, raws


class SampledScorer(Scorer):
    name = mode_of("SampledScorer")

    async def score(
        self, conv: Conversation, rubric: Rubric, variant: int
    ) -> tuple[Distribution | None, str | None, list[str]]:
        prompt, _ = rubric_prompt(conv, rubric, self.rationale, self.prompt)
        base = (self.seed or 0) + 1000 * variant
        raws: list[str] = []
        counts = dict.fromkeys(DIGITS, 0)
        limit = RATIONALE_TOKENS if self.rationale else SCORE_TOKENS
        for i in range(SAMPLES):
            msg = await self._invoke(
                prompt, temperature=SAMPLE_TEMPERATURE, seed=base + i, max_tokens=limit, **cache_kwargs(self.llm)
            )
            text = str(getattr(msg, "content", "") or "")
            raws.append(text)
            k = text_score(text, self.rationale, complete=reply_complete(msg, limit))
            if k is not None:
                counts[k] += 1
        n = sum(counts.values())
        if n * 2 < SAMPLES:
            return None, f"only {n} of {SAMPLES} samples gave a score", raws
        return Distribution(probs=[counts[k] / n for k in DIGITS], mass=n / SAMPLES), None, raws


class JsonScorer(Judge):
    """Today's structured-output judge (`rubric_judge.Judge`), unchanged; --compat paper replays the paper's prompts."""

    name = mode_of("JsonScorer")

    prompt_name = ""  # its own two-prompt layout (rubric_judge.build_prompt), not a prompt variant

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, Rubric],
        names: list[str] | None = None,
        *,
        rationale: bool = False,
        retries: int = 2,
        concurrency: int = 2,
        mode: str = "default",
        seed: int | None = None,
        prompt: JudgePrompt | None = None,
    ):
        if rationale:
            raise ScoringError(
                f"--judge-rationale applies to --judge-scoring {prompt_variant_modes()}, not {self.name}"
            )
        if prompt is not None:
            raise ScoringError(f"--judge-prompt applies to --judge-scoring {prompt_variant_modes()}, not {self.name}")
        super().__init__(llm, rubrics, names, mode=mode, retries=retries, concurrency=concurrency)

    @property
    def label(self) -> str:
        return self.name


class ChecklistScorer:
    """`--judge-scoring checklist` (judge/checklist.py): narrow yes/no items, one call each, P(yes) from
    the answer token's log-probabilities (the answer itself where the backend gives none). The items of one
    conversation run one after another with the conversation as the shared prefix and the item last."""

    name = mode_of("ChecklistScorer")
    uses_prompt_variants = False

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, Rubric],
        names: list[str] | None = None,
        *,
        rationale: bool = False,
        retries: int = 2,
        concurrency: int = 2,
        seed: int | None = None,
        prompt: JudgePrompt | None = None,
        checklist: Any = None,
        weights: Any = None,
    ):
        if rationale:
            raise ScoringError(
                f"--judge-rationale applies to --judge-scoring {prompt_variant_modes()}, not {self.name}"
            )
        if prompt is not None:
            raise ScoringError(f"--judge-prompt applies to --judge-scoring {prompt_variant_modes()}, not {self.name}")
        self.llm = llm
        self.rubrics = {n: r for n, r in rubrics.items() if names is None or n in names}
        self.checklist = checklist if checklist is not None else load_checklist(None, list(rubrics))
        self.weights = weights  # checklist.ChecklistWeights or None (uniform)
        self.retries = max(0, retries)
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.seed = seed if seed is not None else getattr(llm, "seed", None)
        self.logprobs = capabilities(llm).logprobs
        self.saw_logprobs = False  # a reply of this judge carried log-probabilities: every later one must too
        self.fallback_note: str | None = (
            None
            if self.logprobs
            else (f"checklist answers read from the reply only: {backend_name(llm)} returns no log-probabilities")
        )

    label = name

    @property
    def names(self) -> list[str]:
        return list(self.rubrics)

    @property
    def prompt_name(self) -> str:
        """Recorded as JudgeProvenance.prompt: the checklist's `<version>@<hash>` (another file = re-judged)."""
        return f"checklist {self.checklist.ident}"

    @property
    def weights_name(self) -> str:
        return "uniform" if self.weights is None else f"fitted:{self.weights.ident}"

    def messages(self, conv: Conversation, question: str, tutorial: bool, retry: bool = False) -> list[tuple[str, str]]:
        """The conversation first (shared by every item), the tutorial where the item needs it, the item last."""
        cl = self.checklist
        convo = "Conversation:\n" + "\n".join(turn_line(m.role, m.text) for m in conv.messages)
        parts = [cl.intro, convo]
        if tutorial:
            parts.append(f"Tutorial:\n{tutorial_block(conv)}")
        ask = cl.ask + (" Reply with that one word only." if retry else "")
        parts.append(f"Question: {question}\n{ask}")
        user = "\n\n".join(parts)
        return ([("system", cl.system)] if cl.system else []) + [("human", user)]

    async def ask(self, conv: Conversation, item: Any, variant: int, res: JudgeResult) -> Any:
        bind: dict[str, Any] = {"max_tokens": ANSWER_TOKENS, **cache_kwargs(self.llm)}
        if self.logprobs:
            bind.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        if variant and self.seed is not None:
            bind["seed"] = self.seed + variant
        problem: str | None = None
        raws: list[str] = []
        for attempt in range(1 + self.retries):
            msg = await invoke(self.llm, self.messages(conv, item.question, item.tutorial, retry=attempt > 0), **bind)
            res.calls += 1
            res.prompt_tokens += int((getattr(msg, "usage_metadata", None) or {}).get("input_tokens") or 0)
            text = str(getattr(msg, "content", "") or "")
            raws.append(text)
            meta = (getattr(msg, "response_metadata", None) or {}).get("logprobs")
            entries = token_entries(meta)
            if self.logprobs and not entries and self.fallback_note is None and not self.saw_logprobs:
                self.fallback_note = (
                    f"checklist answers read from the reply only: the evaluator "
                    f"({backend_name(self.llm)}) returned no log-probabilities"
                )
            if entries:
                self.saw_logprobs = True
            if self.logprobs and not entries and self.saw_logprobs:
                # the server gave log-probabilities for other replies: a 0/1 reading here would mix two scales
                ans = Answer(problem="no log-probabilities in this reply (the evaluator returned them for others)")
            else:
                res.reading = "logprobs" if entries and res.reading != "answer" else "answer"
                ans = read_answer(entries, text, reply_complete(msg, ANSWER_TOKENS, len(entries) or None))
            if ans.p_yes is not None:
                return ChecklistItemScore(
                    id=item.id,
                    rubrics=list(item.rubrics),
                    question=item.question,
                    polarity=item.polarity,
                    p_yes=round(ans.p_yes, 4),
                    mass=None if ans.mass is None else round(ans.mass, 4),
                    good=round(p_good(ans.p_yes, item.polarity), 4),
                ), raws
            problem = ans.problem
            if ans.low_mass:
                return ChecklistItemScore(
                    id=item.id,
                    rubrics=list(item.rubrics),
                    question=item.question,
                    polarity=item.polarity,
                    mass=round(ans.mass or 0.0, 4),
                    failure=problem,
                ), raws
        return ChecklistItemScore(
            id=item.id,
            rubrics=list(item.rubrics),
            question=item.question,
            polarity=item.polarity,
            failure=f"{problem} after {len(raws)} replies",
        ), raws

    async def judge(self, conv: Conversation, names: list[str] | None = None, variant: int = 0) -> JudgeResult:
        res = JudgeResult(checklist=self.checklist.ident, checklist_weights=self.weights_name)
        order = [n for n in self.names if names is None or n in names]
        items, note = conversation_items(self.checklist, list(conv.steps), order)
        if variant:
            items = list(reversed(items))
        if note and order:
            res.notes.append(note)
        scored: list[Any] = []
        async with self.sem:
            for it in items:
                try:
                    got, raws = await self.ask(conv, it, variant, res)
                except JudgeRequestError as exc:
                    got, raws = (
                        ChecklistItemScore(
                            id=it.id,
                            rubrics=list(it.rubrics),
                            question=it.question,
                            polarity=it.polarity,
                            failure=f"request refused by the evaluator ({exc})",
                        ),
                        [],
                    )
                    for r in it.rubrics:
                        res.kinds[r] = "call"
                res.raw[it.id] = raws
                scored.append(got)
        res.items = scored
        for n in order:
            goods = [(s.id, s.good) for s in scored if n in s.rubrics]
            w = self.weights.weights.get(n) if self.weights is not None else None
            rs = rubric_score(n, goods, w)
            if rs.score is None:
                res.scores[n] = None
                res.failures.append(n)
                lows = sum(1 for s in scored if n in s.rubrics and s.good is None and s.mass is not None)
                res.kinds.setdefault(n, LOW_MASS if lows and lows * 2 >= rs.total - rs.answered else "parse")
                failed = [s for s in scored if n in s.rubrics and s.failure]
                why = f"; e.g. {failed[0].id}: {failed[0].failure}" if failed else ""
                res.notes.append(f"{n}: {rs.problem}{why}")
            else:
                res.scores[n] = round(rs.score, 4)
                res.kinds.pop(n, None)  # a refused item call does not fail a rubric its other items scored
        keep = [n for n in self.names if n in res.scores]
        res.scores = {n: res.scores[n] for n in keep}
        res.failures = [n for n in keep if n in res.failures]
        return res


def make_scorer(
    mode: str,
    llm: Any,
    rubrics: dict[str, Rubric],
    names: list[str] | None,
    *,
    compat: str = "default",
    rationale: bool = False,
    retries: int = 2,
    concurrency: int = 2,
    prompt: JudgePrompt | None = None,
    checklist: Any = None,
    checklist_weights: Any = None,
) -> Any:
    """`prompt` None = the default variant (weighted/sampled); json and checklist keep their own layouts
    (checklist: `checklist` a loaded checklist.Checklist, None = wikihowagent/data/checklists.json; `checklist_weights`
    a checklist.ChecklistWeights, None = uniform)."""
    entry = SCORING_MODES.get(mode)
    cls = entry.scorer if isinstance(entry.scorer, type) else globals()[entry.scorer]
    kw: dict[str, Any] = {"rationale": rationale, "retries": retries, "concurrency": concurrency, "prompt": prompt}
    if entry.paper:
        kw["mode"] = compat
    if entry.checklist:
        kw.update(checklist=checklist, weights=checklist_weights)
    return cls(llm, rubrics, names, **kw)
