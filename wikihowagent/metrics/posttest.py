"""Post-test metrics: what the learner can write down after the conversation (docs/methodology/metrics.md "Post-test").

The tutorial's steps are matched one-to-one to the steps the learner recalled (all-MiniLM-L6-v2 sentence
embeddings, cosine similarity, `scipy.optimize.linear_sum_assignment` maximising the total similarity; a
pair counts only at similarity >= THRESHOLD, chosen as measured (docs/methodology/metrics.md); MATCHING names the
rule: "assign" (the default) or "nearest", where a recalled step may match only the tutorial step it is most
similar to — measured against each other in BENCHMARKS.md "post-test: matching": better on no yardstick
with confidence, so not the default). Then:
- Step Recall: matched tutorial steps / tutorial steps;
- Order: Kendall tau of the matched steps' positions (tutorial vs answer); None with fewer than 2 matches;
- Extraneous: recalled steps similar to no tutorial step (below the threshold to every one) / recalled steps
  (invented steps; lower is better);
- Detail Recall: the tutorial's details (numbers with their unit, and the physical things WordNet knows:
  artifacts, food, substances, body parts, organisms, natural objects) that reappear in the answer;
- Learning Gain: post-test Step Recall - pre-test Step Recall (the same model from the title alone);
- Detail Gain: post-test Detail Recall - pre-test Detail Recall: what the lesson added of this tutorial's
  own quantities and objects, which a model cannot know from the title (Step Recall's pre-test is high for
  common procedures: a model knows that eggs are boiled; BENCHMARKS.md "post-test").
- Likelihood Gain (only when the likelihood post-test was taken, judge-check --posttest-likelihood): the
  learner model's mean log-probability per token of the tutorial's own steps given the lesson minus given
  the title only, in nats per token (workflow/likelihood.py; not a fraction).
A conversation without a post-test, or whose answer is not a step list (`TestAnswer.error`), gets None:
never a recall of 0. Fractions (Order and Learning Gain in [-1, 1]), shown as percentages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

from wikihowagent.lexicon import noun_lemma, thing_lemma
from wikihowagent.records import Conversation, TestAnswer
from wikihowagent.workflow.likelihood import likelihood_gain

STEP_RECALL = "Step Recall"
ORDER = "Order"
EXTRANEOUS = "Extraneous"
DETAIL_RECALL = "Detail Recall"
LEARNING_GAIN = "Learning Gain"
DETAIL_GAIN = "Detail Gain"
LIKELIHOOD_GAIN = "Likelihood Gain"  # nats per token (workflow/likelihood.py); from the record's posttest.likelihood
# The metrics of the step-list post-test (posttest_scores: matched steps); Likelihood Gain is read per conversation
# from the record's likelihood post-test (likelihood_gain_of).
MATCHED_METRICS = (STEP_RECALL, ORDER, EXTRANEOUS, DETAIL_RECALL, LEARNING_GAIN, DETAIL_GAIN)
POSTTEST_METRICS = (*MATCHED_METRICS, LIKELIHOOD_GAIN)

THRESHOLD = 0.4  # cosine similarity of a match; docs/methodology/metrics.md (its measured table)
# How recalled steps are matched to tutorial steps (docs/methodology/metrics.md, BENCHMARKS.md "post-test: matching"):
# "assign": the one-to-one assignment of maximal total similarity; "nearest": the same, each recalled step
# allowed only its most similar tutorial step. Recorded in each score line (ScoreRecord.posttest_matching).
MATCHING_RULES = ("assign", "nearest")
MATCHING = "assign"
LEGACY_MATCHING = "assign"  # the rule of score lines written before the rule was recorded

_NUMBER_WORDS = {
    w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
_TOKEN = re.compile(r"\d+(?:[.,/]\d+)?|[a-z]+")


def match_steps(sim: Any, threshold: float = THRESHOLD, rule: str = MATCHING) -> list[tuple[int, int]]:
    """(tutorial index, answer index) pairs: the one-to-one assignment of maximal total similarity, keeping
    the pairs at >= threshold; with rule "nearest", an answer step is allowed only its most similar tutorial
    step. `sim` is a (tutorial steps x answer steps) array."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    if rule not in MATCHING_RULES:
        raise ValueError(f"matching rule {rule!r}: expected one of {', '.join(MATCHING_RULES)}")
    sim = np.asarray(sim, dtype=float)
    if sim.size == 0:
        return []
    if rule == "nearest":
        nearest = sim.argmax(axis=0)  # each answer step's most similar tutorial step (the first on a tie)
        sim = np.where(np.arange(sim.shape[0])[:, None] == nearest[None, :], sim, -1.0)
    rows, cols = linear_sum_assignment(sim, maximize=True)
    return sorted((int(r), int(c)) for r, c in zip(rows, cols, strict=True) if sim[r, c] >= threshold)


def step_recall(matches: Sequence[tuple[int, int]], n_tutorial: int) -> float | None:
    return len(matches) / n_tutorial if n_tutorial else None


def order_tau(matches: Sequence[tuple[int, int]]) -> float | None:
    """Kendall tau between the matched steps' tutorial positions and answer positions (1 = same order)."""
    if len(matches) < 2:
        return None
    from scipy.stats import kendalltau

    tau = kendalltau([t for t, _ in matches], [a for _, a in matches]).statistic
    return None if tau != tau else float(tau)  # NaN cannot occur one-to-one; kept out anyway


def extraneous(sim: Any, threshold: float = THRESHOLD) -> float | None:
    """Share of the recalled steps (columns of `sim`) similar to no tutorial step (>= threshold to none):
    invented steps. Not one-to-one: a recalled detail of a step that another line already matched is not
    invented."""
    import numpy as np

    sim = np.asarray(sim, dtype=float)
    if sim.shape[1] == 0:
        return None
    if sim.shape[0] == 0:
        return 1.0
    return float((sim.max(axis=0) < threshold).mean())


def _tokens(text: str) -> list[str]:
    return [_NUMBER_WORDS.get(t, t) for t in _TOKEN.findall(text.lower())]


def details(text: str, wn: Any) -> set[str]:
    """The text's details: numbers with the word after them ("3 minutes", "350 degrees"), and things.
    `wn`: WordNet (computational.load_wordnet())."""
    toks = _tokens(text)
    out: set[str] = set()
    for i, t in enumerate(toks):
        if t[0].isdigit():
            unit = toks[i + 1] if i + 1 < len(toks) and not toks[i + 1][0].isdigit() else ""
            out.add(f"{t} {noun_lemma(wn, unit) or unit}".strip())
        else:
            thing = thing_lemma(wn, t)
            if thing:
                out.add(thing)
    return out


def detail_recall(tutorial_steps: Sequence[str], answer_steps: Sequence[str], wn: Any) -> float | None:
    wanted = details("\n".join(tutorial_steps), wn)
    if not wanted:
        return None
    got = details("\n".join(answer_steps), wn)
    return len(wanted & got) / len(wanted)


def likelihood_gain_of(conv: Conversation) -> float | None:
    """Likelihood Gain of the conversation's likelihood post-test (None: not taken, or not read)."""
    test = conv.posttest.likelihood if conv.posttest is not None else None
    if test is None or test.error is not None:
        return None
    return likelihood_gain(test.post, test.pre)


def usable(answer: TestAnswer | None) -> TypeGuard[TestAnswer]:
    """A step list: steps, or lines where the learner abstained ("not taught": nothing recalled, scored 0)."""
    return answer is not None and answer.error is None and bool(answer.steps or answer.abstained)


def posttest_scores(
    conv: Conversation,
    similarity: Callable[[Sequence[str], Sequence[str]], Any],
    want: set[str],
    wordnet: Any = None,
    threshold: float = THRESHOLD,
) -> tuple[dict[str, float | None], list[str], list[tuple[int, int, float]] | None]:
    """The post-test metrics of one conversation -> (metrics, notes, matched pairs (tutorial step, recalled
    step, similarity) or None). `similarity(a, b)` is the cosine matrix of two lists of texts; `wordnet`
    (computational.load_wordnet()) is needed for Detail Recall."""
    out: dict[str, float | None] = {m: None for m in MATCHED_METRICS if m in want}
    test = conv.posttest
    if test is None:
        return out, [], None
    if not usable(test.post):
        return out, [f"post-test: {test.post.error or 'no step'} (not scored)"], None
    steps, recalled = list(conv.steps), test.post.steps
    sim = similarity(steps, recalled)
    matches = match_steps(sim, threshold)
    values = {
        STEP_RECALL: step_recall(matches, len(steps)),
        ORDER: order_tau(matches),
        EXTRANEOUS: extraneous(sim, threshold),
    }
    notes: list[str] = []
    if DETAIL_RECALL in want or DETAIL_GAIN in want:
        values[DETAIL_RECALL] = detail_recall(steps, recalled, wordnet)
    gains = [m for m in (LEARNING_GAIN, DETAIL_GAIN) if m in want]
    if gains and usable(test.pre):
        pre_steps = test.pre.steps
        if LEARNING_GAIN in want:
            pre = step_recall(match_steps(similarity(steps, pre_steps), threshold), len(steps))
            post = values[STEP_RECALL]
            values[LEARNING_GAIN] = None if pre is None or post is None else post - pre
        if DETAIL_GAIN in want:
            pre_d = detail_recall(steps, pre_steps, wordnet)
            post_d = values[DETAIL_RECALL]
            values[DETAIL_GAIN] = None if pre_d is None or post_d is None else post_d - pre_d
    elif gains:
        notes.append(f"pre-test: {(test.pre.error if test.pre else None) or 'not taken'} (no {' or '.join(gains)})")
    out.update({k: v for k, v in values.items() if k in want})
    return out, notes, [(t, a, round(float(sim[t][a]), 4)) for t, a in matches]
