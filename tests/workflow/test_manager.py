"""`--manager llm`: a model classifies learner messages; parse failures fall back to the rules (counted)."""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_servers import FakeOpenAI, scripted_reply
from helpers import learner_says, make_tutorial, teacher_script
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.generation.core import to_record
from wikihowagent.jsonlio import iter_jsonl
from wikihowagent.testing import ScriptedChatModel
from wikihowagent.workflow.graph import WorkflowOptions, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.manager import MANAGERS, LLMManager, parse_classification
from wikihowagent.workflow.prompts import load_prompts


@pytest.mark.parametrize(
    "reply,label",
    [
        ('{"label": "question"}', "question"),
        ('Sure: {"label": "off-topic"} ', "off-topic"),
        ("understood", "understood"),
        ('"wants-to-stop".', "wants-to-stop"),
        ('{"label": "confused"}', None),
        ("I think the learner asks a question", None),
        ("{broken", None),
    ],
)
def test_parse_classification(reply, label):
    assert parse_classification(reply) == label


def run_with_manager(manager_script, learner_script, n_steps=3):
    manager_model = ScriptedChatModel(script=manager_script)
    opts = WorkflowOptions()
    graph = build_graph(
        ScriptedChatModel(script=teacher_script),
        ScriptedChatModel(script=learner_script),
        load_prompts(),
        opts,
        MANAGERS["llm"](manager_model),
    )
    tut = make_tutorial(n_steps)
    state = asyncio.run(graph.ainvoke(initial_state(tut), config={"recursion_limit": recursion_limit(opts)}))
    return to_record(tut, state, "run", "t", "l", "x", opts, "llm:scripted"), manager_model


def test_llm_manager_labels_drive_the_graph():
    # "Hmm, interesting." has no '?': the rules would advance; the model calls it a question.
    def manager(prompt):
        return '{"label": "question"}' if "Learner: Hmm, interesting." in prompt else '{"label": "understood"}'

    record, model = run_with_manager(manager, learner_says("Ready.", "Hmm, interesting.", "Fine."))
    clar = [t for t in record.turns if t.kind == "clarification"]
    assert len(clar) == 1 and clar[0].step == 0
    labelled = [t for t in record.turns if t.manager_label]
    assert labelled[0].text == "Hmm, interesting." and labelled[0].manager_label == "question"
    assert not any(t.manager_fallback for t in record.turns) and record.manager == "llm:scripted"
    assert "Step being taught: Do step number 1." in model.prompts[0]
    assert record.finished


def test_parse_failure_falls_back_to_the_rules_and_is_counted():
    record, _ = run_with_manager(
        lambda p: "I would say the learner understood.", learner_says("Ready.", "Why step one?", "Ok, next step.")
    )
    labelled = [t for t in record.turns if t.manager_label]
    assert all(t.manager_fallback for t in labelled)
    assert labelled[0].manager_label == "question" and labelled[1].manager_label == "understood"  # the rules'
    assert [t.kind for t in record.turns if t.role == "teacher"].count("clarification") == 1
    assert record.finished


def test_manager_call_failure_falls_back():
    def boom(prompt):
        raise TimeoutError("manager down")

    record, _ = run_with_manager(boom, learner_says("Ready."))
    assert record.error is None and record.finished
    assert all(t.manager_fallback for t in record.turns if t.manager_label)


def test_wants_to_stop_and_off_topic():
    def manager(prompt):
        if "Learner: What a nice day!" in prompt:
            return '{"label": "off-topic"}'
        if "Learner: I have to go" in prompt:
            return '{"label": "wants-to-stop"}'
        return '{"label": "understood"}'

    record, _ = run_with_manager(manager, learner_says("Ready.", "What a nice day!", "Ok.", "I have to go now."))
    teacher = [t for t in record.turns if t.role == "teacher"]
    # off-topic: the teacher teaches step 1 again (not a clarification answer), then the lesson goes on.
    assert [t.text for t in teacher[1:4]] == ["Teaching step 1.", "Teaching step 1.", "Teaching step 2."]
    assert teacher[2].kind == "model"
    assert record.stop_reason == "learner_stopped" and not record.finished and record.error is None
    assert record.turns[-1].text == "I have to go now."


def test_generate_with_llm_manager_counts_fallbacks(tmp_path):
    def reply(prompt):
        if "You classify a learner's message" in prompt:
            return "no idea"  # never parsable
        return scripted_reply(prompt)

    out = tmp_path / "run"
    with FakeOpenAI(reply=reply) as srv:
        res = CliRunner().invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(out),
                "--max-tutorials",
                "1",
                "--manager",
                "llm",
            ],
        )
    assert res.exit_code == 0, res.output
    rec = [o for _, o in iter_jsonl(out / "conversations.jsonl")][0]
    n = sum(t["manager_fallback"] for t in rec["turns"])
    assert n > 0 and rec["manager"] == "llm:openai:fake-model"
    info = json.loads((out / "run.json").read_text())
    assert info["counts"]["manager_fallbacks"] == n and info["fingerprint"]["workflow"]["manager"] == "llm"
    assert f"{n} fallbacks to the rules" in res.output
    bad = CliRunner().invoke(
        app,
        [
            "generate",
            "--teacher",
            "openai:fake-model",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--out",
            str(tmp_path / "b"),
            "--manager",
            "magic",
        ],
    )
    assert bad.exit_code == 2 and "--manager 'magic': expected one of rules, llm" in bad.output


def test_llm_manager_is_a_registry_entry():
    assert set(MANAGERS) == {"rules", "llm"} and isinstance(MANAGERS["llm"](None), LLMManager)
