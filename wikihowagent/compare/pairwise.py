"""The pairwise judge: two conversations of one tutorial, which teaches better on one rubric?

The prompt puts [instructions + tutorial + conversation A + conversation B] first and the criterion last,
so the calls for one pair in one order share one prefix (the server's prompt cache), as the weighted judge.
Reading the reply:

- `logprobs` (backends with token log-probabilities): P(A) = p("A") / (p("A") + p("B")) at the answer
  token; if the two letters hold less than `LETTER_MASS_MIN` of the probability there, the rubric is a
  failure, never a verdict.
- `answer` (no log-probabilities): the letter only, P(A) = 1 or 0.

Either way the reply must be unambiguously one letter, as strictly as a score digit is read (scoring.py's
`digit_closed`): "A", "B.", "Conversation B", "**A**" count; the letter's line must end after it and the
reply must not be cut off by the token limit right after it, so "A is better", "A and B", "Both", "a",
"10" or an empty reply are failures, and so is a reply that names the other letter as a word after its
answer ("A\nB", "B\n\nActually A is better") (asked again up to `retries` times). Each pair is asked in
both orders by the caller; `verdict` combines them under a verdict rule (`VERDICT_RULES`: `agree`, the
default, or `average`, the order-averaged P(A) outside a tie band).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wikihowagent.backends import capabilities
from wikihowagent.errors import Note, kind_of
from wikihowagent.judge.rubric_judge import (
    LOW_MASS,
    ROLE_TEXT,
    JudgeBackendError,
    JudgeRequestError,
    Rubric,
    tutorial_block,
)
from wikihowagent.judge.scoring import (
    TOP_LOGPROBS,
    backend_name,
    cache_kwargs,
    digit_closed,
    invoke,
    reply_complete,
    token_entries,
)
from wikihowagent.records import Conversation, JudgeProvenance, ScoreRecord, conversation_lines
from wikihowagent.registry import Registry

READINGS = ("logprobs", "answer")
LETTERS = ("A", "B")
LETTER_MASS_MIN = 0.5
ANSWER_TOKENS = 4

_LETTER_TOKEN = re.compile(r"^\s*\(?\**([AB])([\s.,:)*]*)$")
_LABEL = re.compile(r"^\s*\**\s*(?:(?:conversation|answer|option|better)\s*:?\s*)*\**\s*$", re.I)
_ANSWER = re.compile(
    r"^\s*\**\s*(?:(?:conversation|answer|option|better)\s*:?\s*)*\**\s*\(?([AB])(?![A-Za-z0-9])(.*)$", re.S | re.I
)
# A letter named as a word ("A", "(B)", "B." but not the B of "Because"): in the rest of a reply after the
# answer, the other letter named so makes the reply name both ("A\nB", "B\n\nActually A is better").
_LETTER_WORD = {letter: re.compile(rf"(?<![A-Za-z0-9]){letter}(?![A-Za-z0-9])") for letter in LETTERS}


def names_other_letter(letter: str, rest: str) -> bool:
    """True when `rest` (the reply after the answer `letter`) names the other letter as a word."""
    return _LETTER_WORD["B" if letter == "A" else "A"].search(rest) is not None


def read_letter(text: str, complete: bool = True) -> str | None:
    """ "A" / "B" when the reply is unambiguously that letter, else None. `complete`: the reply ended by
    itself (False when the token limit cut it off)."""
    m = _ANSWER.match(text or "")
    if not m or m.group(1) not in LETTERS:  # a lower-case "a" is an article, not an answer
        return None
    if digit_closed(m.group(2), complete) is not None:  # "A is better", "A and B", "A" cut off by the limit
        return None
    if names_other_letter(m.group(1), m.group(2)):  # "A\nB", "B\n\nActually A is better": both letters
        return None
    return m.group(1)


def letter_probability(meta: Any, complete: bool = True) -> tuple[float | None, str | None]:
    """A reply's logprobs -> (P(A), None) or (None, why it is not a verdict). The answer token is the first
    A/B token after nothing but a short label ("Conversation", "Answer:", "**"), and its line must end
    after it (as a score digit's)."""
    entries = token_entries(meta)
    if not entries:
        return None, "no token log-probabilities in the reply"
    before = ""
    pos = None
    for i, e in enumerate(entries):
        if _LETTER_TOKEN.match(e["token"]):
            if _LABEL.match(before):
                pos = i
            break
        before += e["token"]
    text = "".join(e["token"] for e in entries)
    if pos is None:
        return None, f"no single letter A or B in the reply ({text.strip()[:40]!r})"
    m = _LETTER_TOKEN.match(entries[pos]["token"])
    tail = (m.group(2) if m else "") + "".join(e["token"] for e in entries[pos + 1 :])
    why = digit_closed(tail, complete)
    if not why and m and names_other_letter(m.group(1), tail):
        why = "the reply names the other letter too"
    if why:
        return None, f"no single letter A or B in the reply ({text.strip()[:40]!r}: {why.replace('digit', 'letter')})"
    mass = dict.fromkeys(LETTERS, 0.0)
    seen: set[str] = set()
    cands = list(entries[pos].get("top_logprobs") or [])
    if not any(c.get("token") == entries[pos]["token"] for c in cands):
        cands.append(entries[pos])
    for c in cands:
        tok, lp = c.get("token"), c.get("logprob")
        if not isinstance(tok, str) or tok in seen or not isinstance(lp, (int, float)):
            continue
        seen.add(tok)
        m = _LETTER_TOKEN.match(tok)
        if m:
            mass[m.group(1)] += math.exp(lp)
    total = mass["A"] + mass["B"]
    if total < LETTER_MASS_MIN:
        return None, Note(
            f"below the letter-probability threshold (p(A) + p(B) = {total:.2f} < {LETTER_MASS_MIN:g})", LOW_MASS
        )
    return mass["A"] / total, None


def pair_prefix(first: Conversation, second: Conversation) -> str:
    def convo(c: Conversation) -> str:
        return "\n".join(conversation_lines(c.messages))

    return "\n\n".join(
        [
            "You are an expert in pedagogy. A teacher was asked to teach the tutorial below to a learner, step by step, "
            "in a conversation. Below are two such conversations, A and B. Compare them on one criterion.",
            f"Tutorial:\n{tutorial_block(first)}",
            f"Conversation A:\n{convo(first)}",
            f"Conversation B:\n{convo(second)}",
        ]
    )


def pair_prompt(first: Conversation, second: Conversation, rubric: Rubric) -> str:
    levels = "\n".join(f"{k} - {rubric.levels[k]}" for k in ("5", "4", "3", "2", "1"))
    crit = f"Criterion: {rubric.name} (judge {ROLE_TEXT[rubric.role]}): {rubric.question}\n{levels}"
    ask = f"Which conversation is better on {rubric.name}? Answer with one letter only: A or B."
    return f"{pair_prefix(first, second)}\n\n{crit}\n\n{ask}"


@dataclass
class PairResult:
    p_first: dict[str, float | None] = field(default_factory=dict)  # rubric -> P(A better)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    raw: dict[str, list[str]] = field(default_factory=dict)


class PairwiseJudge:
    """Asks one model which of two conversations is better, rubric by rubric (one order per call to
    `judge`; the rubrics of one pair run one after another: they share the prefix)."""

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, Rubric],
        names: list[str] | None = None,
        *,
        reading: str | None = None,
        retries: int = 2,
        concurrency: int = 2,
    ):
        self.llm = llm
        self.rubrics = {n: r for n, r in rubrics.items() if names is None or n in names}
        has_logprobs = capabilities(llm).logprobs
        auto = reading is None
        if reading is None:
            reading = "logprobs" if has_logprobs else "answer"
        if reading not in READINGS:
            raise ValueError(f"pairwise reading must be one of {', '.join(READINGS)}, not {reading!r}")
        if reading == "logprobs" and not has_logprobs:
            raise ValueError(
                f"backend {backend_name(llm)} returns no token log-probabilities: use the answer-only reading"
            )
        self.reading = reading
        self.auto = auto
        self.retries = max(0, retries)
        self.sem = asyncio.Semaphore(max(1, concurrency))

    @property
    def names(self) -> list[str]:
        return list(self.rubrics)

    @property
    def label(self) -> str:
        return self.reading

    async def probe(self) -> None:
        """With the reading chosen by backend (no --pairwise-reading): one short call checks that the server
        really returns log-probabilities; if not, the answer-only reading is used for every verdict."""
        if not self.auto or self.reading != "logprobs":
            return
        msg = await invoke(
            self.llm,
            "Answer with one letter only: A or B.",
            max_tokens=ANSWER_TOKENS,
            logprobs=True,
            top_logprobs=TOP_LOGPROBS,
            **cache_kwargs(self.llm),
        )
        if not token_entries((getattr(msg, "response_metadata", None) or {}).get("logprobs")):
            self.reading = "answer"

    async def _one(
        self, first: Conversation, second: Conversation, rubric: Rubric
    ) -> tuple[float | None, str | None, list[str]]:
        prompt = pair_prompt(first, second, rubric)
        bind: dict[str, Any] = {"max_tokens": ANSWER_TOKENS, **cache_kwargs(self.llm)}
        if self.reading == "logprobs":
            bind.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        raws: list[str] = []
        problem: str | None = None
        for _ in range(1 + self.retries):
            msg = await invoke(self.llm, prompt, **bind)
            text = str(getattr(msg, "content", "") or "")
            raws.append(text)
            meta = (getattr(msg, "response_metadata", None) or {}).get("logprobs")
            complete = reply_complete(msg, ANSWER_TOKENS, len(token_entries(meta)) or None)
            letter = read_letter(text, complete)
            if self.reading == "answer":
                if letter is not None:
                    return (1.0 if letter == "A" else 0.0), None, raws
                problem = f"not one letter A or B: {text.strip()[:40]!r}"
                continue
            if not token_entries(meta):
                raise JudgeBackendError(
                    f"the evaluator ({backend_name(self.llm)}) returned no token log-probabilities; "
                    "use --pairwise-reading answer"
                )
            p, problem = letter_probability(meta, complete)
            if p is not None and letter is None:
                p, problem = None, f"not one letter A or B: {text.strip()[:40]!r}"
            if p is not None:
                return p, None, raws
            if kind_of(problem, "parse") == LOW_MASS:
                break  # the model's own uncertainty: asking again at temperature 0 gives the same answer
        return None, problem, raws

    async def judge(self, first: Conversation, second: Conversation, names: list[str] | None = None) -> PairResult:
        res = PairResult()
        async with self.sem:
            for n in self.names:
                if names is not None and n not in names:
                    continue
                try:
                    p, problem, raws = await self._one(first, second, self.rubrics[n])
                except JudgeRequestError as exc:
                    p, problem, raws = None, f"request refused by the evaluator ({exc})", []
                res.raw[n] = raws
                res.p_first[n] = None if p is None else round(p, 4)
                if p is None:
                    res.failures.append(n)
                    res.notes.append(f"{n}: {problem} after {max(1, len(raws))} replies")
        return res


# --------------------------------------------------------------------------------------------------
# Position-free head to head: each conversation judged alone by the checklist judge
# --------------------------------------------------------------------------------------------------

SCORE_SCALE = 8.0  # p_first = 0.5 + (score_A - score_B) / 8: rubric scores 1..5 -> [0, 1]
CHECKLIST_READING = "checklist"


def score_p_first(a: float, b: float) -> float:
    """The stored "P(A better)" of a checklist verdict: a monotone map of the two scores' difference (equal
    in both orders up to the swap, so the two orders always agree: position consistency 1 by construction)."""
    return round(min(1.0, max(0.0, 0.5 + (a - b) / SCORE_SCALE)), 6)


class ChecklistPairJudge:
    """`compare --judge-scoring checklist`: no conversation is shown beside another. Each conversation is
    judged alone by the checklist scorer (once, whatever the number of pairs it is in: kept in memory and in
    `store`, a scores file in the output directory, so a resumed compare asks nothing twice); a pair's
    verdict per rubric comes from the two conversations' own scores (verdict rule `scores`)."""

    label = CHECKLIST_READING

    def __init__(self, scorer: Any, store: Any = None, evaluator: str = "", stored: dict[str, Any] | None = None):
        self.scorer = scorer
        self.store = store  # a JsonlAppender of ScoreRecords (or None)
        self.evaluator = evaluator
        self.scores: dict[str, dict[str, float | None]] = {}
        ident = (scorer.checklist.ident, scorer.weights_name)
        for cid, rec in (stored or {}).items():  # lines of this checklist and weights only
            if rec.judge and (rec.judge.checklist, rec.judge.checklist_weights) == ident and rec.evaluator == evaluator:
                self.scores[cid] = dict(rec.metrics)
        self._locks: dict[str, asyncio.Lock] = {}
        self.asked = 0  # conversations judged in this invocation

    @property
    def names(self) -> list[str]:
        return self.scorer.names

    async def probe(self) -> None:
        return None

    async def scores_of(self, conv: Conversation, names: list[str]) -> dict[str, float | None]:
        lock = self._locks.setdefault(conv.conversation_id, asyncio.Lock())
        async with lock:
            have = self.scores.get(conv.conversation_id, {})
            missing = [n for n in names if have.get(n) is None]
            if missing:
                jr = await self.scorer.judge(conv, missing)
                self.asked += 1
                have = {**have, **jr.scores}
                self.scores[conv.conversation_id] = have
                if self.store is not None:
                    self.store.append(
                        ScoreRecord(
                            conversation_id=conv.conversation_id,
                            run=conv.run,
                            tutorial_id=conv.tutorial_id,
                            title=conv.title,
                            teacher=conv.teacher,
                            learner=conv.learner,
                            persona=conv.persona,
                            metrics=dict(have),
                            judge=JudgeProvenance(
                                evaluator=self.evaluator,
                                raw=jr.raw,
                                failures=jr.failures,
                                notes=jr.notes,
                                scoring=self.scorer.label,
                                prompt=self.scorer.prompt_name,
                                checklist=jr.checklist,
                                checklist_weights=jr.checklist_weights,
                                reading=jr.reading,
                                items=jr.items,
                            ),
                        )
                    )
            return have

    async def judge(self, first: Conversation, second: Conversation, names: list[str] | None = None) -> PairResult:
        want = [n for n in self.names if names is None or n in names]
        a = await self.scores_of(first, want)
        b = await self.scores_of(second, want)
        res = PairResult()
        for n in want:
            sa, sb = a.get(n), b.get(n)
            if sa is None or sb is None:
                res.p_first[n] = None
                res.failures.append(n)
                res.notes.append(f"{n}: no checklist score for " + ("A" if sa is None else "B"))
            else:
                res.p_first[n] = score_p_first(sa, sb)
                res.notes.append(f"{n}: checklist scores A {sa:.4f}, B {sb:.4f}")
        return res


# --------------------------------------------------------------------------------------------------
# Both orders -> one verdict: the verdict rules (a registry; `--verdict-rule NAME`)
# --------------------------------------------------------------------------------------------------

AGREE, AVERAGE, SCORES = "agree", "average", "scores"
DEFAULT_RULE = AGREE
DEFAULT_TIE_BAND = 0.0  # |P − 0.5| within it is a tie (the averaged rule); 0 = any lean counts, as the absolute judge's
_EVEN = 1e-9  # the absolute judge-check's tie tolerance (accuracy.win)


def preference(p: float) -> int:
    """+1 = the first shown is preferred, -1 = the second, 0 = exactly even."""
    return 1 if p > 0.5 else (-1 if p < 0.5 else 0)


def _agree(p_ab: float, p_ba: float, tie_band: float) -> str:
    """A preference only when it survives the swap (each order prefers the same conversation)."""
    a_first, b_first = preference(p_ab), preference(p_ba)
    if a_first == 1 and b_first == -1:
        return "A"
    if a_first == -1 and b_first == 1:
        return "B"
    return "tie"


def _average(p_ab: float, p_ba: float, tie_band: float) -> str:
    """P(A better) averaged over the two orders, (p_ab + 1 − p_ba) / 2: a constant position bias (the same
    pull towards the first shown in both orders) cancels; outside 0.5 ± tie_band a preference, else a tie."""
    lean = (p_ab + (1.0 - p_ba)) / 2 - 0.5
    if lean > tie_band + _EVEN:
        return "A"
    if lean < -tie_band - _EVEN:
        return "B"
    return "tie"


def _scores(p_ab: float, p_ba: float, tie_band: float) -> str:
    """Checklist verdicts (`ChecklistPairJudge`): the two conversations' own scores; a difference of at most
    `tie_band` rubric points is a tie."""
    diff = ((p_ab + (1.0 - p_ba)) / 2 - 0.5) * SCORE_SCALE
    if diff > tie_band + _EVEN:
        return "A"
    if diff < -tie_band - _EVEN:
        return "B"
    return "tie"


@dataclass(frozen=True)
class VerdictRule:
    name: str
    winner: Callable[[float, float, float], str]  # (p_ab, p_ba, tie_band) -> "A" | "B" | "tie"
    text: str  # one sentence for summaries

    def label(self, tie_band: float) -> str:
        """The rule as written into pairwise.csv and summaries: "agree", "average (tie band 0.01)",
        "scores (tie band 0.1 points)"."""
        if self.name == AGREE:
            return self.name
        return f"{self.name} (tie band {tie_band:g}{' points' if self.name == SCORES else ''})"

    def sentence(self, tie_band: float) -> str:
        return self.text.format(band=f"{tie_band:g}")


VERDICT_RULES: Registry[VerdictRule] = Registry(
    "verdict rule",
    {
        AGREE: VerdictRule(
            AGREE, _agree, "Verdict rule `agree`: a preference counts only when both orders agree; otherwise a tie."
        ),
        AVERAGE: VerdictRule(
            AVERAGE,
            _average,
            "Verdict rule `average`: P(A better) averaged over the two orders, "
            "(p_ab + 1 − p_ba) / 2 (a constant position bias cancels); a preference "
            "when it is outside 0.5 ± {band}, else a tie.",
        ),
        SCORES: VerdictRule(
            SCORES,
            _scores,
            "Verdict rule `scores` (checklist judge): each conversation judged alone "
            "by the checklist; per rubric the one with the higher checklist score wins, "
            "a difference of at most {band} points (1-5 scale) is a tie. No conversation "
            "is shown beside another, so the two orders agree by construction.",
        ),
    },
)


def verdict_rule(name: str | None) -> VerdictRule:
    """The registered rule (None = the default); ValueError naming the valid ones."""
    if (name or DEFAULT_RULE) not in VERDICT_RULES:
        raise ValueError(f"unknown verdict rule {name!r}; valid: {', '.join(VERDICT_RULES)}")
    return VERDICT_RULES[name or DEFAULT_RULE]


def check_tie_band(tie_band: float) -> float:
    if not 0.0 <= tie_band < 0.5:
        raise ValueError(f"tie band must be at least 0 and below 0.5 (got {tie_band:g})")
    return tie_band


@dataclass(frozen=True)
class Verdict:
    p_ab: float  # P(A better) with A shown first
    p_ba: float  # P(B better) with B shown first
    winner: str  # "A" | "B" | "tie"
    consistent: bool  # both orders prefer the same conversation (or both are exactly even), whatever the rule

    @property
    def p_a(self) -> float:
        """P(A better) averaged over the two orders."""
        return (self.p_ab + (1.0 - self.p_ba)) / 2

    @property
    def order_effect(self) -> float:
        return abs(self.p_ab - (1.0 - self.p_ba))

    @property
    def score(self) -> float:
        return winner_score(self.winner)


def winner_score(winner: str) -> float:
    """The first-named conversation's outcome of a verdict ("A" | "B" | "tie"): 1 win, 0.5 tie, 0 loss."""
    return {"A": 1.0, "B": 0.0}.get(winner, 0.5)


def verdict(p_ab: float, p_ba: float, rule: str | None = None, tie_band: float = DEFAULT_TIE_BAND) -> Verdict:
    """Both orders -> one verdict under `rule` (default `agree`: a preference only when it survives the swap).
    `consistent` is the position consistency, the same under every rule."""
    a_first, b_first = preference(p_ab), preference(p_ba)
    consistent = (a_first, b_first) in ((1, -1), (-1, 1), (0, 0))
    return Verdict(p_ab, p_ba, verdict_rule(rule).winner(p_ab, p_ba, tie_band), consistent)
