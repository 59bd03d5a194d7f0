"""The computational metrics are one registry (name -> scorer, mode, scale); modes are entries, not ladders."""

from __future__ import annotations

from typing import get_args

import pytest

from wikihowagent.metrics import computational as M
from wikihowagent.records import Conversation, Turn
from wikihowagent.scores.summary import header


def conv() -> Conversation:
    turns = [
        Turn(role="teacher", text="Fill the pot with water."),
        Turn(role="learner", text="Why cold water?"),
        Turn(role="teacher", text="Cold water heats the egg evenly."),
    ]
    return Conversation.from_turns(
        turns, ["Fill a pot with cold water.", "Boil the egg."], "Boil", completed=True, conversation_id="c"
    )


def test_every_entry_is_computable_and_the_lists_derive_from_it():
    for m in M.all_metrics():
        assert (m.score is None) != (m.batch is None), m
        assert m.batch is None or callable(getattr(M.Scorers, m.batch)), m
        assert m.mode in M.HYPOTHESIS
    assert M.computational_metrics("default") == [m.name for m in M.all_metrics() if m.mode == "default"]
    assert M.computational_metrics("paper") == [m.name for m in M.all_metrics() if m.mode == "paper"]
    assert M.computational_names() == {m.name for m in M.all_metrics()}
    assert M.REGISTRY.names() == [M.key(m.mode, m.name) for m in M.all_metrics()]
    for mode in ("default", "paper"):
        names = M.computational_metrics(mode)
        assert len(names) == len(set(names)), mode  # one entry per name and mode
        fractions = [m.name for m in M.all_metrics() if m.mode == mode and m.scale == "fraction"]
        assert all(header(n).endswith("(%)") for n in fractions)  # fractions, shown as percentages
        assert all(not header(n).endswith("(%)") for n in names if n not in fractions)  # nats, counts: as they are
    assert [m.name for m in M.all_metrics() if m.scale != "fraction"] == [M.LIKELIHOOD_GAIN, M.WORDS]
    assert M.value_range(M.LIKELIHOOD_GAIN) == (-1000.0, 1000.0)


def test_batch_passes_are_the_declared_ones():
    """`EmbedBatch` lacked "posttest", which six entries use (only mypy could see it). Every batch of
    the registry is a value of the type and a Scorers pass; a misspelt pass fails when the entry is made."""
    declared = set(get_args(M.EmbedBatch))
    assert {m.batch for m in M.all_metrics() if m.batch} == declared
    assert all(callable(getattr(M.Scorers, b)) for b in declared)
    with pytest.raises(ValueError, match="metric 'X': unknown batch pass 'post_test'"):
        M.Metric("X", "default", batch="post_test")  # type: ignore[arg-type]  # the wrong value on purpose


def test_a_new_metric_is_one_registry_entry(request):
    extra = M.Metric("Teacher Words", "default", lambda x: len(x.hyp.split()) / 100, needs_hypothesis=True)
    M.register(extra)
    request.addfinalizer(lambda: M.REGISTRY.remove(M.key("default", "Teacher Words")))
    (res,) = M.Scorers("default", [M.QUESTION, "Teacher Words"]).score([conv()])
    assert res.metrics == {M.QUESTION: pytest.approx(1.0), "Teacher Words": pytest.approx(0.11)}
    empty = Conversation.from_turns([Turn(role="learner", text="hi?")], ["s"], completed=False, conversation_id="e")
    (res,) = M.Scorers("default", ["Teacher Words"]).score([empty])
    assert res.metrics == {"Teacher Words": None} and res.notes  # no teacher text: not computable, said so


def test_modes_score_with_their_own_definitions():
    c = conv()
    (d,) = M.Scorers("default", [M.QUESTION, M.COMPLETION, M.ROUGE1]).score([c])
    (p,) = M.Scorers("paper", [M.QUESTION, M.COMPLETION, M.ROUGE]).score([c])
    assert list(d.metrics) == [M.QUESTION, M.COMPLETION, M.ROUGE1] and list(p.metrics) == [
        M.QUESTION,
        M.COMPLETION,
        M.ROUGE,
    ]
    assert d.metrics[M.QUESTION] == M.question_ratio(c) and p.metrics[M.QUESTION] == M.paper_question_ratio(c)
    assert d.metrics[M.COMPLETION] == 1.0 and p.metrics[M.COMPLETION] == M.paper_completion(c)
