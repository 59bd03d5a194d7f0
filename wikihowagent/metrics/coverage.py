"""Step coverage and echo rate: did the teacher convey the tutorial, or repeat the learner?

- **Step Coverage**: the share of tutorial steps whose main instruction the teacher conveyed. A step's
  main instruction is its first sentence (WikiHow's bold headline); it counts as conveyed when at least
  `COVER_MIN` (0.5) of its content words (Porter-stemmed, stop words left out) appear in one teacher
  turn (ROUGE-1 recall against the best-matching turn). Fixed BEGIN/FINISHED texts do not count.
- **Echo Rate**: the share of teacher turns that follow a learner turn and repeat it: ROUGE-L F1 of the
  two (stemmed words) >= `ECHO_MIN` (0.5). A teacher answering "Thank you for the instruction. I will
  begin by stating..." to the learner's own words is an echo, not teaching; Completion cannot see it.
Default mode; both work on our records and the paper's (messages read from the "Teacher:"/"Learner:" lines).
"""

from __future__ import annotations

import re

from wikihowagent.records import Conversation

from .rouge import rouge_l, rouge_tokens

COVER_MIN = 0.5
ECHO_MIN = 0.5
STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from into onto over under up down out
off as is are was were be been being do does did doing have has had having it its it's this that these those
there here you your yours we our i me my he she they them their his her him what which who whom when where why
how all any both each few more most other some such no nor not only own same than too very can will just should
now also may might must would could get got make sure""".split()
)

_SENT_RE = re.compile(r"(?<=[.!?])\s+")


def _content(text: str) -> list[str]:
    raw = rouge_tokens(text, stem=False)
    stemmed = rouge_tokens(text, stem=True)
    return (
        [s for w, s in zip(raw, stemmed, strict=True) if w not in STOP and len(w) > 1]
        if len(raw) == len(stemmed)
        else [s for s in stemmed if s not in STOP and len(s) > 1]
    )


def _headline(step: str) -> str:
    return _SENT_RE.split(" ".join(step.split()), maxsplit=1)[0]


def _teacher_turns(conv: Conversation) -> list[str]:
    return [
        m.text for m in conv.messages if m.role == "teacher" and m.kind not in ("begin", "finish") and m.text.strip()
    ]


def step_recalls(conv: Conversation) -> list[float]:
    """Per step: the best ROUGE-1 recall of its headline's content words in one teacher turn."""
    turns = [set(_content(t)) for t in _teacher_turns(conv)]
    out = []
    for step in conv.steps:
        words = set(_content(_headline(step)))
        if not words:
            continue
        out.append(max((len(words & t) / len(words) for t in turns), default=0.0))
    return out


def step_coverage(conv: Conversation) -> float | None:
    recalls = step_recalls(conv)
    if not recalls:
        return None
    return sum(r >= COVER_MIN for r in recalls) / len(recalls)


def echo_rate(conv: Conversation) -> float | None:
    pairs = []
    prev = None
    for m in conv.messages:
        if m.role == "learner":
            prev = m if m.kind not in ("begin", "finish") else None
        elif m.kind not in ("begin", "finish") and m.text.strip():
            if prev is not None and prev.text.strip():
                pairs.append((prev.text, m.text))
            prev = None
    if not pairs:
        return None
    echoes = sum(rouge_l(rouge_tokens(a, stem=True), rouge_tokens(b, stem=True)) >= ECHO_MIN for a, b in pairs)
    return echoes / len(pairs)
