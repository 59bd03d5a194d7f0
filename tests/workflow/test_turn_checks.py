"""Turn checks (empty, echo, wrong role): retried once with a reminder, then a warning or an error."""

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
from wikihowagent.workflow.checks import ECHO, EMPTY, WRONG_ROLE, check_turn
from wikihowagent.workflow.graph import WorkflowOptions, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.prompts import load_prompts


def run(teacher_script_fn, learner_script_fn, n_steps=2):
    teacher = ScriptedChatModel(script=teacher_script_fn)
    learner = ScriptedChatModel(script=learner_script_fn)
    opts = WorkflowOptions()
    graph = build_graph(teacher, learner, load_prompts(), opts)
    tut = make_tutorial(n_steps)
    state = asyncio.run(graph.ainvoke(initial_state(tut), config={"recursion_limit": recursion_limit(opts)}))
    return to_record(tut, state, "run", "t", "l", "x", opts), teacher


@pytest.mark.parametrize(
    "role,reply,other,problem",
    [
        ("teacher", "", "Ready.", EMPTY),
        ("teacher", "   ", "Ready.", EMPTY),
        ("teacher", "Could you explain why step one matters?", "Could you explain why step one matters?", ECHO),
        ("teacher", "could you explain why step 1 matters", "Could you explain why step one matters?", ECHO),
        ("teacher", "Thank you for the instruction.", "Okay, next step please.", WRONG_ROLE),
        # seen on the embedded model: the teacher repeats the next step the learner made up
        (
            "teacher",
            "Next, observe the color of the soil.",
            "Thank you for the instruction. Next step, observe the color of the soil.",
            ECHO,
        ),
        ("teacher", "Yes, next.", "Yes, next. What else?", None),
        ("teacher", "Learner: sounds good", "Ready.", WRONG_ROLE),
        ("learner", "Teacher: now do step 2.", "Do step 1.", WRONG_ROLE),
        ("learner", "Thank you for the instruction.", "Do step 1 with care.", None),
        ("teacher", "Step 1: connect the red clamp to the positive terminal.", "What does step one involve?", None),
    ],
)
def test_check_turn(role, reply, other, problem):
    assert check_turn(role, reply, other) == problem


def test_echo_retried_once_with_a_reminder_then_fixed():
    calls = []

    def teacher(prompt):
        calls.append(prompt)
        if "Why does step one matter?" in prompt and "Your previous reply" not in prompt:
            return "Why does step one matter?"  # echoes the learner
        return teacher_script(prompt)

    record, _ = run(teacher, learner_says("Ready.", "Why does step one matter?"))
    clar = [t for t in record.turns if t.kind == "clarification"][0]
    assert clar.text == "Teaching step 1." and clar.retried == [ECHO] and clar.warnings == []
    assert "Your previous reply repeated the learner's words" in calls[2]
    assert record.warnings == [] and record.error is None


def test_wrong_role_kept_with_a_warning_after_the_retry():
    record, teacher = run(lambda p: "Thank you for the instruction.", learner_says("Ready."))
    taught = [t for t in record.turns if t.role == "teacher" and t.kind == "model"]
    assert all(t.retried == [WRONG_ROLE] and t.warnings == [WRONG_ROLE] for t in taught)
    assert record.warnings[0] == f"turn 2 (teacher): {WRONG_ROLE}"
    assert record.error is None and record.finished  # a warning does not fail the conversation
    assert len(teacher.prompts) == 2 * len(taught)  # exactly one retry per bad reply


def test_empty_reply_retried_then_fails_the_conversation():
    record, teacher = run(lambda p: "", learner_says("Ready."))
    assert record.error == "teacher: empty reply (also after a retry)" and record.stop_reason == "error"
    assert len(teacher.prompts) == 2
    # An empty reply fixed by the retry is a good turn.
    replies = iter(["", "Teaching step 1.", "Teaching step 2."])
    record, _ = run(lambda p: next(replies), learner_says("Ready."))
    assert record.finished and record.turns[2].retried == [EMPTY] and record.error is None


@pytest.mark.parametrize("empty", ["", None])
def test_empty_server_reply_is_not_a_complete_run(tmp_path, empty):
    """An OpenAI-compatible server answering "" / null for teacher turns."""

    def reply(prompt):
        return empty if "Step 2 of" in prompt else scripted_reply(prompt)

    out = tmp_path / "run"
    args = [
        "generate",
        "--teacher",
        "openai:fake-model",
        "--base-url",
        "",
        "--out",
        str(out),
        "--max-tutorials",
        "1",
        "--retries",
        "0",
    ]
    with FakeOpenAI(reply=reply) as srv:
        args[4] = srv.base_url
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 1, res.output
        again = CliRunner().invoke(app, args)  # the resume re-runs the failed conversation: still not complete
        assert again.exit_code == 1, again.output
    rec = [o for _, o in iter_jsonl(out / "conversations.jsonl")][0]
    assert rec["error"] == "teacher: empty reply (also after a retry)" and not rec["finished"]
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "incomplete" and info["counts"]["failed"] == 1
    assert info["counts"]["turn_retries"] == 0  # the failed turn is not in the record; the error is
    assert "empty reply" in again.output


def test_echo_check_shortcut_gives_the_same_answers_as_the_full_matching():
    """is_echo skips the quadratic matching when too few characters are shared: never a different answer."""
    import random
    from difflib import SequenceMatcher

    from wikihowagent.workflow.checks import ECHO_SIMILARITY, _norm, is_echo

    def full(reply, other):
        a, b = _norm(reply), _norm(other)
        if not a or not b:
            return False
        if a == b or (len(b) >= 20 and b in a and len(a) <= 1.3 * len(b)):
            return True
        m = SequenceMatcher(None, a, b, autojunk=False)
        if len(a.split()) >= 4 and m.find_longest_match(0, len(a), 0, len(b)).size >= ECHO_SIMILARITY * len(a):
            return True
        return m.ratio() >= ECHO_SIMILARITY

    rng = random.Random(7)
    words = "step water boil the a to of and pan heat salt add stir wait next please thanks done why".split()
    pairs = []
    for _ in range(3000):
        x = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        y = rng.choice([x, x[: rng.randint(0, len(x))], " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))])
        pairs += [(x, y), (y, x)]
    assert [is_echo(x, y) for x, y in pairs] == [full(x, y) for x, y in pairs]
    assert any(full(x, y) for x, y in pairs) and not all(full(x, y) for x, y in pairs)
