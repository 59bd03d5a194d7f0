"""The overview's "Reading these figures": a figure that looks wrong, explained where a measurement says why.

- Learning Gain next to the pre-test: the learner's post-test minus its title-only pre-test. When the pre-test
  already recalls most steps (a procedure the model knew), a small or negative gain says the procedure was
  familiar, not that the lesson failed; when the pre-test recalls little (an invented procedure, as in the
  validity set), the gain is what the lesson taught. Both from the run's own scores (pre = Step Recall minus
  Learning Gain, per conversation).
- Question Ratio 0 with the paper's learner (persona `paper`): that learner decides alone whether to ask, and a
  small model does not; a persona with a question policy asks.
- The rubric scores of the embedded judge: its measured agreement with people (data/embedded_judge.json, the
  figures of BENCHMARKS.md), next to the scores it gave.

Each note names the run and the numbers it rests on; a run without the metric gets no note."""

from __future__ import annotations

import html
import math
from typing import Any

from wikihowagent.backends import is_embedded
from wikihowagent.metrics.computational import QUESTION
from wikihowagent.metrics.posttest import LEARNING_GAIN, STEP_RECALL

from .measured import MeasuredError, load_measured
from .sources import ReportRun

FAMILIAR = 0.6  # a pre-test recalling at least this share of the steps: the learner knew the procedure
UNFAMILIAR = 0.25  # at most this: the procedure was new to it


def _mean(values: list[float]) -> float | None:
    xs = [v for v in values if not math.isnan(v)]
    return sum(xs) / len(xs) if xs else None


def _posttest_note(run: ReportRun) -> str | None:
    names = set(run.scores.metric_names())
    if not {STEP_RECALL, LEARNING_GAIN} <= names:
        return None
    post_col, gain_col = run.scores.column(STEP_RECALL), run.scores.column(LEARNING_GAIN)
    pairs = [(p, g) for p, g in zip(post_col, gain_col, strict=True) if not (math.isnan(p) or math.isnan(g))]
    if not pairs:
        return None
    post = sum(p for p, _ in pairs) / len(pairs)
    gain = sum(g for _, g in pairs) / len(pairs)
    pre = post - gain
    n = f"{len(pairs)} conversation{'s' if len(pairs) != 1 else ''}"
    head = (
        f"{run.name}: Learning Gain {100 * gain:+.1f} % = post-test Step Recall {100 * post:.1f} % minus the "
        f"pre-test's {100 * pre:.1f} % ({n})."
    )
    if pre >= FAMILIAR:
        return (
            f"{head} Before the lesson the learner already recalled {100 * pre:.0f} % of the steps from the title "
            "alone: the procedure was familiar to the model, so there was little left to learn, and a small or "
            "negative gain says that, not that the lesson failed. Tutorials the model cannot know (the validity "
            "set, wikihowagent/data/validity/counterfactual, with generate --tutorials) show what a lesson teaches."
        )
    if pre <= UNFAMILIAR:
        return (
            f"{head} From the title alone the learner recalled only {100 * pre:.0f} % of the steps: the procedure "
            "was new to it, so the gain is what the lesson taught."
        )
    return head


def _question_note(run: ReportRun) -> str | None:
    if QUESTION not in set(run.scores.metric_names()) or (run.persona or "paper") != "paper":
        return None
    q = _mean(run.scores.column(QUESTION))
    if q is None or q > 0:
        return None
    return (
        f"{run.name}: Question Ratio 0 %: the paper's learner (persona paper) decides alone whether to ask, and "
        "this model never did. A persona with a question policy asks (generate --learner-persona curious: about "
        "most steps)."
    )


def _judge_notes(runs: list[ReportRun]) -> list[str]:
    embedded = [r for r in runs if r.evaluator and is_embedded(r.evaluator) and r.scoring]
    if not embedded:
        return []
    try:
        measured = load_measured()
    except MeasuredError:
        return []  # "How far to trust the judge" says the file is unreadable
    by_mode: dict[str, list[str]] = {}  # one note per scoring mode, naming its runs
    for r in embedded:
        by_mode.setdefault(r.scoring.split("+")[0], []).append(r.name)
    out = []
    for mode, names in by_mode.items():
        figures = {f.what: f for f in measured.modes.get(mode, [])}
        people = next((f for w, f in figures.items() if w.startswith("Pearson r")), None)
        check = figures.get("judge-check accuracy")
        if people is None and check is None:
            continue
        parts, reading, weak = [], [], False
        if check is not None:
            parts.append(check.line())
            if check.ci is not None and check.ci[0] > 0.5:
                reading.append("it tells a damaged lesson from a sound one more often than chance")
        if people is not None:
            parts.append(people.line())
            weak = people.ci is not None and people.ci[0] <= 0.0 <= people.ci[1]
            if weak:
                reading.append("its agreement with people's ratings is not distinguishable from none")
        out.append(
            f"{', '.join(names)}: the rubric scores are the embedded {measured.model} judge's ({mode}). Measured: "
            + "; ".join(parts)
            + "."
            + (f" So {' but '.join(reading)}." if reading else "")
            + (" Read its rubric scores as a rough signal, not as people's judgement." if weak else "")
        )
    return out


def reading_html(runs: list[ReportRun]) -> str:
    """The section ("" when no note applies)."""
    notes: list[Any] = []
    for r in runs:
        notes += [n for n in (_posttest_note(r), _question_note(r)) if n]
    notes += _judge_notes(runs)
    if not notes:
        return ""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return f"<h2 id='reading'>Reading these figures</h2><ul class='reading'>{items}</ul>"
