"""One rubric score cell (a human sheet or an LLM score file) -> a number on the 1-5 scale, or NaN (reported)."""

from __future__ import annotations

import math

from .problems import Problems

SCORE_MIN, SCORE_MAX = 1.0, 5.0

BLANKS = frozenset({"", "na", "n/a", "nan", "none", "null", "-"})


FAST_SCORES = {
    **{b: math.nan for b in BLANKS},
    **{str(i): float(i) for i in range(1, 6)},
    **{f"{i}.0": float(i) for i in range(1, 6)},
    **{f"{i}.5": i + 0.5 for i in range(1, 5)},
}


def parse_score(raw, loc: str, problems: Problems) -> float:
    """One rubric score cell -> float in [1, 5], or NaN for a blank / unusable cell (reported)."""
    if type(raw) is str:
        fast = FAST_SCORES.get(raw)
        if fast is not None:
            return fast
    elif type(raw) is float and SCORE_MIN <= raw <= SCORE_MAX:
        return raw
    if raw is None:
        return math.nan
    if isinstance(raw, bool):
        problems.add("bad value", f"{loc}: {raw!r} is not a number; cell left out")
        return math.nan
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        text = str(raw).strip()
        if text.lower() in BLANKS:
            return math.nan
        try:
            value = float(text)
        except ValueError:
            problems.add("bad value", f"{loc}: {text[:40]!r} is not a number; cell left out")
            return math.nan
    if math.isnan(value):  # a blank as pandas writes it ("NaN", a NaN in a score file)
        return math.nan
    if not SCORE_MIN <= value <= SCORE_MAX:  # infinity included
        hint = " (0 is the paper's placeholder for a missing score)" if value == 0 else ""
        problems.add("out of range", f"{loc}: {value:g} is outside the 1-5 scale{hint}; cell left out")
        return math.nan
    return value
