"""Property-based tests (hypothesis) of how model replies are read: the post-test's step lists
(workflow/posttest.py `parse_steps`, and stored answers read back, records.TestAnswer) and the judge's scores
(judge/scoring.py `text_score` / `weighted_score`, judge/rubric_judge.py `parse_scores`).

The rule for both: a reply counts only when it is unambiguously a step list / a score; anything else is a
failure with a reason, never an exception and never a number from outside the scale."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wikihowagent.judge.rubric_judge import parse_scores
from wikihowagent.judge.scoring import text_score, weighted_score
from wikihowagent.records import MAX_TEST_STEPS, TestAnswer
from wikihowagent.workflow.posttest import _INVISIBLE, _WORD, MAX_STEPS, parse_steps

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A step: 1-6 words of letters (never an abstention phrase, a heading or a number).
WORD = st.text(alphabet="abcdefghijklm", min_size=1, max_size=8)
STEP = st.lists(WORD, min_size=1, max_size=6).map(" ".join)
STEPS = st.lists(STEP, min_size=1, max_size=MAX_STEPS, unique_by=lambda s: s.lower())


def _layout(steps: list[str], style: str) -> str:
    if style == "dot":
        return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
    if style == "paren":
        return "\n".join(f"{i}) {s}" for i, s in enumerate(steps, 1))
    if style == "step":
        return "\n".join(f"Step {i}: {s}" for i, s in enumerate(steps, 1))
    if style == "bullet":
        return "\n".join(f"- {s}" for s in steps)
    if style == "table":
        return "\n".join(["| Step | What to do |", "|---|:---|"] + [f"| {i} | {s} |" for i, s in enumerate(steps, 1)])
    return "\n".join(steps)  # plain lines


# --------------------------------------------------------------------------- the post-test parser


@SETTINGS
@given(st.text(max_size=400))
@example("1\n2\n3\n4")
@example("| Step | Action |\n|---|---|\n| 1 | Open the lid |")
@example("1. Open the lid\n\x00\n2. Pour")
def test_parse_steps_is_total_and_a_step_list_has_words(text):
    steps, problem, abstained = parse_steps(text)
    assert (problem is None) == bool(steps or abstained)  # a result or a reason, never both
    assert problem is None or steps == []
    assert len(steps) + abstained <= MAX_STEPS
    for s in steps:
        assert _WORD.search(s), s  # a step needs words
        assert not _INVISIBLE.search(s), s
        assert "|" not in s or s.strip("|- :") != ""


@SETTINGS
@given(STEPS, st.sampled_from(["dot", "paren", "step", "bullet", "table", "plain"]))
def test_a_written_step_list_reads_back_as_its_steps(steps, style):
    if style == "plain" and len(steps) < 2:
        steps = steps + ["one more step"]
    parsed = parse_steps(_layout(steps, style))
    assert parsed.problem is None and parsed.steps == steps  # no header, no rule line, nothing lost


@SETTINGS
@given(
    STEPS,
    st.lists(st.sampled_from(["", "\x00", "\u200b", " \t", "---", "|---|---|", "7", "12."]), max_size=5),
    st.randoms(use_true_random=False),
)
def test_wordless_lines_change_nothing(steps, junk, rnd):
    lines = [f"{i}. {s}" for i, s in enumerate(steps, 1)]
    for j in junk:  # wordless lines inserted after the first step (before it, a line is a preamble anyway)
        lines.insert(rnd.randint(1, len(lines)), j)
    parsed = parse_steps("\n".join(lines))
    assert parsed.problem is None and parsed.steps == steps


@SETTINGS
@given(st.text(alphabet="0123456789 .)-|:*#>\t\n\x00\u200b", max_size=300))
@example("1\n2\n3\n4")
@example("|---|---|\n| 1 | 2 |\n|---|")
def test_a_reply_without_words_is_never_a_step_list(text):
    steps, problem, _ = parse_steps(text)
    assert steps == [] and problem


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=MAX_STEPS + 1, max_value=12_000))
@example(1000)
@example(10_000)
def test_too_many_numbered_lines_are_counted_right(n):
    steps, problem, _ = parse_steps("\n".join(f"{i}. step number {i}" for i in range(1, n + 1)))
    assert steps == [] and problem == f"{n} lines: not a step list (more than {MAX_STEPS})"


@SETTINGS
@given(st.integers(min_value=0, max_value=3 * MAX_TEST_STEPS), st.integers(min_value=-3, max_value=MAX_TEST_STEPS))
@example(100_000, 0)
def test_a_stored_answer_is_range_checked_when_read_back(n, abstained):
    stored = json.dumps({"text": "", "steps": [f"step {i}" for i in range(n)], "abstained": abstained})
    answer = TestAnswer.model_validate_json(stored)
    if abstained >= 0 and n + abstained <= MAX_TEST_STEPS:
        assert answer.error is None and len(answer.steps) == n
    else:
        assert answer.error and answer.error.startswith("stored answer:") and answer.steps == []


# --------------------------------------------------------------------------- the judge's score reading

DIGIT = st.integers(min_value=1, max_value=5)
LABEL = st.sampled_from(["", "Score: ", "Clarity: ", "**", "Rating = "])
AFTER = st.sampled_from(["", ".", "\n", "\nThe teacher explained every step.", " \n\nGood pacing."])


@SETTINGS
@given(DIGIT, LABEL, AFTER)
def test_one_score_reads_as_that_score(k, label, after):
    text = f"{label}{k}{'**' if label == '**' else ''}{after}"
    assert text_score(text, rationale=False) == k


@SETTINGS
@given(DIGIT, DIGIT, LABEL, LABEL, st.sampled_from(["\n", "\n\n", "\nActually:\n"]))
@example(3, 4, "", "", "\n")
def test_two_different_scores_are_not_a_score(k, j, label1, label2, sep):
    text = f"{label1}{k}{'**' if label1 == '**' else ''}{sep}{label2}{j}{'**' if label2 == '**' else ''}"
    got = text_score(text, rationale=False)
    assert got == (k if k == j else None), text


def _tokens(*toks):
    return {"content": [{"token": t, "logprob": 0.0, "top_logprobs": [{"token": t, "logprob": 0.0}]} for t in toks]}


@SETTINGS
@given(DIGIT, DIGIT)
@example(4, 5)
def test_weighted_reading_refuses_a_second_score_line(k, j):
    dist, why = weighted_score(_tokens(str(k), "\n", str(j)), rationale=False)
    if k == j:
        assert why is None and dist is not None and dist.argmax == k
    else:
        assert dist is None and "second score" in str(why)


@SETTINGS
@given(st.text(max_size=200), st.booleans())
def test_text_score_is_a_digit_of_the_scale_or_nothing(text, rationale):
    assert text_score(text, rationale=rationale) in (None, 1, 2, 3, 4, 5)


JSON_VALUE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10, 10),
    st.booleans(),
    st.text(max_size=8),
    st.none(),
    st.just("4/5"),
    st.just("3 out of 10"),
)


@SETTINGS
@given(JSON_VALUE)
def test_a_json_value_is_a_score_only_on_the_scale(value):
    text = '{"Clarity": ' + json.dumps(value) + "}"  # json.dumps writes NaN / Infinity as a model might
    found, problems = parse_scores(text, ["Clarity"])
    if "Clarity" in found:
        v = found["Clarity"]
        assert not isinstance(v, bool) and math.isfinite(v) and 1 <= v <= 5
    else:
        assert problems["Clarity"]


@SETTINGS
@given(DIGIT, DIGIT, st.sampled_from(["objects", "key twice", "lines"]))
@example(3, 4, "objects")
@example(3, 4, "key twice")
def test_one_rubric_given_two_scores_is_ambiguous(k, j, how):
    text = {
        "objects": f'{{"Clarity": {k}}}\nOn reflection: {{"Clarity": {j}}}',
        "key twice": f'{{"Clarity": {k}, "Clarity": {j}}}',
        "lines": f"Clarity: {k}\nClarity: {j}",
    }[how]
    found, problems = parse_scores(text, ["Clarity"])
    if k == j:
        assert found == {"Clarity": k}
    else:
        assert "Clarity" not in found and problems["Clarity"].startswith("ambiguous")


# --------------------------------------------------------------------------- the checklist's yes/no reading

_YESNO_TOKENS = st.sampled_from(["Yes", " yes", "YES", "No", " no", "no", "Y", "Maybe", "Ｙｅｓ", "yes\u200b", "."])
_LOGPROB = st.one_of(
    st.floats(min_value=-30, max_value=0),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(float("nan")),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
)


@SETTINGS
@given(
    reply=st.one_of(st.text(max_size=12), st.sampled_from(["Yes", "No.", " yes", "YES!", "no!", "Yes, but"])),
    top=st.dictionaries(_YESNO_TOKENS, _LOGPROB, max_size=6),
    chosen=_YESNO_TOKENS,
    complete=st.booleans(),
)
def test_read_answer_is_a_probability_or_a_reason(reply, top, chosen, complete):
    """Whatever the reply and its log-probabilities: P(yes) in [0, 1] with a yes/no mass at or above the
    threshold, or a reason (never both, never NaN, never an exception)."""
    from wikihowagent.judge.checklist import MASS_MIN, answer_word, read_answer

    entry = {"token": chosen, "logprob": top.get(chosen, -1.0), "top_logprobs": [
        {"token": t, "logprob": lp} for t, lp in top.items()
    ]}  # fmt: skip
    ans = read_answer([entry], reply, complete)
    assert (ans.p_yes is None) == (ans.problem is not None)
    if ans.p_yes is not None:
        assert 0.0 <= ans.p_yes <= 1.0 and not math.isnan(ans.p_yes)
        assert ans.mass is not None and MASS_MIN <= ans.mass <= 1.0
        assert answer_word(reply) is not None and complete
