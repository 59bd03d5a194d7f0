"""Turn checks: a reply that is empty, echoes the other agent, or speaks in the wrong role.

The graph retries such a reply once with a corrective reminder; an empty reply that stays empty fails the
conversation (it is re-run on resume), the other problems are kept as a warning on the turn.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

EMPTY = "empty reply"
ECHO = "echoes the other agent's last message"
WRONG_ROLE = "speaks in the wrong role"

ECHO_SIMILARITY = 0.8  # difflib ratio of the normalised texts

# The teacher talking like a learner: thanking for "the instruction", asking to move on, a role prefix.
_TEACHER_AS_LEARNER = re.compile(
    r"\bthanks?(?: you)?(?: (?:so|very) much)? for (?:the|your|this|these) (?:instructions?|explanations?|lesson|"
    r"guidance|tutorial|steps?)\b|\b(?:let's|can we|could we) (?:go|move) (?:on )?to the next step\?|"
    r"^\s*(?:learner|student)\s*:",
    re.IGNORECASE,
)
# The learner talking like the teacher: a role prefix (or the teacher's end token, checked cased).
_LEARNER_AS_TEACHER = re.compile(r"^\s*teacher\s*:", re.IGNORECASE)


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def is_echo(reply: str, other: str) -> bool:
    a, b = _norm(reply), _norm(other)
    if not a or not b:
        return False
    if a == b or (len(b) >= 20 and b in a and len(a) <= 1.3 * len(b)):
        return True
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    # Both tests below are bounded by the characters a and b share (as multisets): when too few are shared,
    # neither can pass, and the quadratic matching of two long replies is skipped (same result, less CPU).
    quick = matcher.quick_ratio()
    if quick * (len(a) + len(b)) / 2 < ECHO_SIMILARITY * len(a) and quick < ECHO_SIMILARITY:
        return False
    if len(a.split()) >= 4:  # the reply is mostly a piece of the other's message (e.g. a step it made up)
        if matcher.find_longest_match(0, len(a), 0, len(b)).size >= ECHO_SIMILARITY * len(a):
            return True
    return matcher.ratio() >= ECHO_SIMILARITY


def wrong_role(role: str, reply: str) -> bool:
    if role == "teacher":
        return bool(_TEACHER_AS_LEARNER.search(reply))
    return bool(_LEARNER_AS_TEACHER.search(reply)) or "FINISHED" in reply


def check_turn(role: str, reply: str, other_last: str | None) -> str | None:
    """The first problem of `reply` (a message of `role` answering `other_last`), or None."""
    if not reply.strip():
        return EMPTY
    if other_last and is_echo(reply, other_last):
        return ECHO
    if wrong_role(role, reply):
        return WRONG_ROLE
    return None


def reminder(role: str, problem: str) -> str:
    """The corrective note appended to the prompt for the one retry."""
    other = "learner" if role == "teacher" else "teacher"
    what = {EMPTY: "was empty", ECHO: f"repeated the {other}'s words", WRONG_ROLE: f"sounded like the {other}"}[problem]
    job = "teach the step in your own words" if role == "teacher" else "answer the teacher in your own words"
    return f"(Your previous reply {what}. Reply again as the {role}: {job}. Do not repeat the {other}.)"
