"""Learner personas: the seeded question policy, intent-built prompts, the clarification limit."""

from __future__ import annotations

import asyncio
import re

import pytest
from helpers import make_tutorial, teacher_script

from wikihowagent.config import ConfigError
from wikihowagent.generation.core import assign_personas, to_record
from wikihowagent.records import ConversationRecord
from wikihowagent.testing import ScriptedChatModel
from wikihowagent.workflow.graph import WorkflowOptions, asks_question, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.personas import load_personas, select_personas
from wikihowagent.workflow.prompts import load_prompts

REQUIRED = ("paper", "curious", "novice", "passive", "skeptical", "distracted", "expert")


def obedient_learner(prompt: str) -> str:
    """A learner model that does what the intent text asks (as a small model given it mostly does)."""
    if "ONE short" in prompt or "what it means" in prompt or "Ask the teacher" in prompt:
        return "Why is that needed here?"
    if "get distracted" in prompt:
        return "By the way, did you see the match yesterday?"
    if "ready to start" in prompt:
        return "I'm ready."
    if "tutorial is over" in prompt:
        return "Thank you, goodbye."
    return "Got it, let's go to the next step."


def converse(persona_name, cid="c1", n_steps=6, options=None, learner=obedient_learner):
    options = options or WorkflowOptions()
    persona = load_personas()[persona_name]
    teacher = ScriptedChatModel(script=teacher_script)
    learner_model = ScriptedChatModel(script=learner)
    graph = build_graph(teacher, learner_model, load_prompts(), options)
    state = asyncio.run(
        graph.ainvoke(
            initial_state(make_tutorial(n_steps), cid, persona), config={"recursion_limit": recursion_limit(options)}
        )
    )
    return state, learner_model


def intents(state):
    return [t.intent for t in state["messages"] if t.role == "learner"]


def test_registry_has_the_required_personas():
    personas = load_personas()
    assert set(REQUIRED) <= set(personas)
    assert personas["paper"].question_rate is None and personas["passive"].question_rate == 0.0
    assert personas["curious"].question_rate > personas["expert"].question_rate > 0


def test_policy_is_seeded_per_conversation_id():
    a, _ = converse("curious", "conv-A")
    b, _ = converse("curious", "conv-A")
    assert intents(a) == intents(b)
    others = {tuple(intents(converse("curious", f"conv-{i}")[0])) for i in range(6)}
    assert len(others) > 1  # the draw depends on the conversation id
    c, _ = converse("curious", "conv-A", options=WorkflowOptions(seed=7))
    d, _ = converse("curious", "conv-A", options=WorkflowOptions(seed=7))
    assert intents(c) == intents(d)


@pytest.mark.parametrize("name,low,high", [("passive", 0.0, 0.0), ("curious", 0.5, 1.0), ("expert", 0.1, 0.7)])
def test_question_rate_follows_the_persona(name, low, high):
    persona = load_personas()[name]
    draws = [
        persona.intent(seed=42, conversation_id=f"c{i}", step=s, asked_at_step=0, limit=2)
        for i in range(40)
        for s in range(5)
    ]
    share = draws.count("ask") / len(draws)
    assert low <= share <= high, share


def test_passive_never_asks_and_curious_asks():
    passive, _ = converse("passive")
    assert set(intents(passive)) <= {"begin", "acknowledge", "farewell"}
    assert not any(asks_question(t.text) for t in passive["messages"] if t.role == "learner")
    curious, learner = converse("curious")
    assert "ask" in intents(curious)
    kinds = [t.kind for t in curious["messages"] if t.role == "teacher"]
    assert "clarification" in kinds
    assert curious["finished"]
    # The learner prompt was built for the intent: the ask instruction names the current step.
    assert any(re.search(r"question about Step \d as the teacher just explained", p) for p in learner.prompts)
    record = to_record(make_tutorial(6), curious, "run", "t", "l", "x", WorkflowOptions())
    assert record.persona == "curious"
    assert ConversationRecord.model_validate(record.model_dump(mode="json")).turns[1].intent == "begin"


def test_distracted_drifts_sometimes():
    seen = set()
    for i in range(8):
        seen.update(intents(converse("distracted", f"d{i}")[0]))
    assert "drift" in seen


def test_paper_persona_keeps_the_prompts_file_learner():
    state, learner = converse("paper")
    assert set(intents(state)) == {"free"}
    assert all("Write the learner's reply to the teacher" in p for p in learner.prompts)


@pytest.mark.parametrize("limit", [0, 1, 2])
def test_clarification_limit_per_step(limit):
    """A learner that always asks cannot loop: at most `limit` clarifications per step, then it advances."""
    state, _ = converse(
        "curious",
        n_steps=3,
        options=WorkflowOptions(max_clarifications_per_step=limit),
        learner=lambda p: "I'm ready." if "ready to start" in p else "But why exactly?",
    )
    per_step = {}
    for t in state["messages"]:
        if t.role == "teacher" and t.kind == "clarification":
            per_step[t.step] = per_step.get(t.step, 0) + 1
    assert all(n == limit for n in per_step.values()) and len(per_step) == (3 if limit else 0)
    assert state["finished"]


def test_unknown_persona_and_bad_file_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match="unknown learner persona 'shy'; known: paper, curious"):
        select_personas(["shy"])
    bad = tmp_path / "p.yaml"
    bad.write_text("curious:\n  question_rate: 0.5\n  ask: 'Ask about {stepindex}'\n")
    with pytest.raises(ConfigError, match="p.yaml: persona 'curious': 'ask' has an unknown"):
        load_personas(bad)
    bad.write_text("x:\n  question_rate: 2\n")
    with pytest.raises(ConfigError, match="persona 'x': question_rate"):
        load_personas(bad)


def test_mixed_personas_round_robin():
    tuts = [make_tutorial(2, tid=f"t{i}") for i in range(5)]
    got = assign_personas(tuts, select_personas(["curious", "passive"]))
    assert [got[t.tutorial_id].name for t in tuts] == ["curious", "passive", "curious", "passive", "curious"]


def test_default_run_name_names_the_personas():
    from wikihowagent.generation.core import default_run_name

    assert default_run_name("local", "local", None) == default_run_name("local", "local", None, ["paper"])
    assert (
        default_run_name("local", "local", None, ["curious", "passive"]) == "T-local_L-local_E-local_P-curious+passive"
    )


def test_old_records_without_persona_still_read():
    old = {
        "conversation_id": "x",
        "tutorial": {"title": "T", "steps": ["a", "b"]},
        "turns": [{"role": "learner", "text": "hi", "step": 0}],
    }
    rec = ConversationRecord.model_validate(old)
    assert rec.persona == "" and rec.turns[0].intent is None and rec.turns[0].warnings == []
