"""--judge-prompt: prompt variants as data (wikihowagent/data/judge_prompts.json), the truncation rule, provenance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.judge.prompt_variants import (
    CUT_MARK,
    DEFAULT_PROMPT,
    LEGACY_PROMPT,
    PromptError,
    get_prompt,
    load_prompts,
    shorten,
)
from wikihowagent.judge.rubric_judge import load_rubrics
from wikihowagent.judge.scoring import rubric_prompt
from wikihowagent.records import Conversation, Turn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"


def conv(n_messages: int = 6, chars: int = 100) -> Conversation:
    msgs = [
        Turn(role="teacher" if i % 2 == 0 else "learner", text=f"m{i} " + "x" * chars, kind="model")
        for i in range(n_messages)
    ]
    return Conversation.from_turns(
        msgs,
        ["Mix the paint.", "Paint the wall."],
        "Painting a wall",
        completed=True,
        conversation_id="c1",
        run="r",
        where="t:1",
        title="How to Paint",
    )


def test_bundled_variants_load_and_include_the_old_layout_and_three_alternatives():
    prompts = load_prompts()
    assert LEGACY_PROMPT in prompts and DEFAULT_PROMPT in prompts
    assert len(prompts) >= 4
    plain = prompts["plain"]
    assert plain.message_chars == 600 and plain.tutorial == "reference" and plain.system
    assert plain.ask == "Answer with one digit from 1 to 5."


def test_tutorial_first_is_the_layout_before_variants():
    """The legacy variant renders exactly the prompt the weighted judge sent before --judge-prompt existed."""
    c = conv()
    r = load_rubrics()["Clarity"]
    messages, note = rubric_prompt(c, r, False, get_prompt("tutorial-first"))
    assert note is None and [role for role, _ in messages] == ["human"]
    levels = "\n".join(f"{k} - {r.levels[k]}" for k in ("5", "4", "3", "2", "1"))
    convo = "\n".join(f"{m.role.capitalize()}: {m.text}" for m in c.messages)
    expected = (
        "You are an expert in pedagogy. A teacher was asked to teach the tutorial below to a learner, "
        "step by step, in a conversation. Judge the conversation on one criterion.\n\n"
        "Tutorial:\nPainting a wall\nStep 1: Mix the paint.\nStep 2: Paint the wall.\n\n"
        f"Conversation:\n{convo}\n\n"
        f"Criterion: Clarity (judge the teacher): {r.question}\n{levels}\n\n"
        "Answer with the Clarity score only: one digit from 1 to 5."
    )
    assert messages[0][1] == expected


def test_plain_shows_the_tutorial_only_to_rubrics_judged_against_it():
    c = conv(chars=700)
    rubrics = load_rubrics()
    plain = get_prompt("plain")
    msgs, note = rubric_prompt(c, rubrics["Clarity"], False, plain)
    assert msgs[0] == ("system", plain.system)
    user = msgs[1][1]
    assert "Tutorial:" not in user and "5 - " in user and user.endswith("Answer with one digit from 1 to 5.")
    assert user.count(CUT_MARK) == 6 and note == "prompt: 6 message(s) cut"
    user_t = rubric_prompt(c, rubrics["Truthfulness"], False, plain)[0][1][1]
    assert user_t.index("Conversation:") < user_t.index("Tutorial:") < user_t.index("Criterion:")
    # the conversation part is shared by every rubric (a cacheable prefix)
    assert user_t.startswith(user.split("Criterion:")[0].rstrip())
    assert "5 - " not in rubric_prompt(c, rubrics["Clarity"], False, get_prompt("plain-brief"))[0][1][1]


def test_head_tail_rule_keeps_start_and_end_and_says_what_it_left_out():
    p = get_prompt("plain-head-tail")
    c = conv(n_messages=40, chars=500)
    s = shorten(c, p)
    assert sum(len(x) + 1 for x in s.lines) <= p.conversation_chars + 60  # the marker line aside
    assert s.lines[: p.head_messages] == [f"{m.role.capitalize()}: {m.text}" for m in c.messages[: p.head_messages]]
    assert s.lines[-1].startswith("Learner: m39 ")  # the end is always there (Progress)
    marker = s.lines[p.head_messages]
    assert marker == f"[... {s.left_out} messages left out ...]" and s.left_out > 0
    assert len(s.lines) - 1 + s.left_out == 40
    assert "left out of the middle" in s.note
    # a short conversation is untouched
    short = shorten(conv(n_messages=4), p)
    assert short.left_out == 0 and short.note is None
    # even a last message longer than the whole budget is kept
    huge = conv(n_messages=6, chars=20000)
    assert shorten(huge, p).lines[-1].startswith("Learner: m5 ")


def test_bad_prompt_files_are_one_line_errors(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(
        json.dumps(
            {
                "x": {
                    "description": "",
                    "system": "",
                    "intro": "",
                    "tutorial": "some",
                    "order": "tutorial-first",
                    "levels": True,
                    "ask": "a",
                }
            }
        )
    )
    with pytest.raises(PromptError, match=r"p.json: variant 'x': tutorial must be one of all, reference, none"):
        load_prompts(bad)
    bad.write_text("{")
    with pytest.raises(PromptError, match=r"p.json:1: malformed JSON"):
        load_prompts(bad)
    ok = json.loads((Path(__file__).resolve().parents[2] / "wikihowagent" / "data" / "judge_prompts.json").read_text())
    ok["plain"]["message_chars"] = 3
    bad.write_text(json.dumps(ok))
    with pytest.raises(PromptError, match="message_chars must be null or an integer >= 50"):
        load_prompts(bad)
    with pytest.raises(PromptError, match="unknown variant 'nope'; valid: tutorial-first, plain"):
        get_prompt("nope")


def _judge(prompt: str):
    return [(" ", {" ": 1.0}), ("4", {"4": 0.6, "3": 0.4})]


def _evaluate(args):
    from wikihowagent.cli import app

    return CliRunner().invoke(app, ["evaluate", *args])


def test_evaluate_records_the_variant_and_rejudges_when_it_changes(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "run_small", run)
    common = ["--evaluator", "openai:fake-model", "--no-figures", "--metrics", "Clarity,Truthfulness"]
    with FakeOpenAI(logprobs=_judge) as srv:
        res = _evaluate([str(run), "--base-url", srv.base_url, *common, "--judge-prompt", "plain"])
        assert res.exit_code == 0, res.output
        assert all(r["messages"][0]["role"] == "system" for r in srv.requests)
        assert "prompt plain" in res.output
        n = len(srv.requests)
        res = _evaluate([str(run), "--base-url", srv.base_url, *common, "--judge-prompt", "plain"])
        assert res.exit_code == 0 and len(srv.requests) == n  # resumed: nothing judged again
        res = _evaluate([str(run), "--base-url", srv.base_url, *common, "--judge-prompt", "tutorial-first"])
        assert res.exit_code == 0, res.output
        assert "re-judged because the --judge-prompt variant changed" in " ".join(res.output.split())
        assert all(r["messages"][0]["role"] == "user" for r in srv.requests[n:]) and len(srv.requests) > n
    last = {}
    for line in (run / "scores.jsonl").read_text().splitlines():
        rec = json.loads(line)
        last[rec["conversation_id"]] = rec
    assert {r["judge"]["prompt"] for r in last.values()} == {"tutorial-first"}


def test_judge_prompt_with_json_scoring_is_refused(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "run_small", run)
    with FakeOpenAI(logprobs=_judge) as srv:
        res = _evaluate(
            [
                str(run),
                "--base-url",
                srv.base_url,
                "--evaluator",
                "openai:fake-model",
                "--no-figures",
                "--metrics",
                "Clarity",
                "--judge-scoring",
                "json",
                "--judge-prompt",
                "plain",
            ]
        )
    assert res.exit_code == 2 and "--judge-prompt applies to --judge-scoring weighted or sampled" in res.output


def test_judge_check_keeps_variants_apart(tmp_path):
    from wikihowagent.cli import app
    from wikihowagent.judgecheck.core import JUDGMENTS

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "run_small", run)
    out = tmp_path / "check"
    with FakeOpenAI(logprobs=_judge) as srv:
        args = [
            "judge-check",
            str(run),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--no-figures",
        ]
        res = CliRunner().invoke(app, [*args, "--judge-prompt", "plain-brief"])
        assert res.exit_code == 0, res.output
        n = len(srv.requests)
        res = CliRunner().invoke(app, [*args, "--judge-prompt", "plain"])
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == 2 * n  # nothing of the other variant was reused
    recs = [json.loads(x) for x in (out / JUDGMENTS).read_text().splitlines()]
    assert {r["judge_prompt"] for r in recs} == {"plain", "plain-brief"}
    assert "prompt plain)" in (out / "summary.md").read_text()


def _scores_line(cid: str, prompt: str, scoring: str = "weighted") -> str:
    return (
        json.dumps(
            {
                "conversation_id": cid,
                "run": "r",
                "metrics": {"Clarity": 4.2, "Depth": 3.1},
                "judge": {"evaluator": "local", "scoring": scoring, "prompt": prompt},
            }
        )
        + "\n"
    )


def test_align_reads_the_variant_and_refuses_to_mix_variants(tmp_path):
    from wikihowagent.alignment.problems import Problems
    from wikihowagent.alignment.sources import read_llm_scores

    one = tmp_path / "one" / "scores.jsonl"
    one.parent.mkdir()
    one.write_text(_scores_line("c1", "plain") + _scores_line("c2", "plain"))
    llm = read_llm_scores([one], Problems())
    assert llm.judges == ["local (weighted, prompt plain)"]
    old = tmp_path / "old" / "scores.jsonl"  # written before --judge-prompt: the tutorial-first layout
    old.parent.mkdir()
    old.write_text(_scores_line("c3", ""))
    assert read_llm_scores([old], Problems()).judges == ["local (weighted, prompt tutorial-first)"]
    problems = Problems()
    both = read_llm_scores([one, old], problems)
    assert len(both.rows) == 3 and len(both.judges) == 2
    assert (
        "2 score files: LLM scores by 2 judge configurations (local (weighted, prompt plain): 2 conversations; "
        "local (weighted, prompt tutorial-first): 1 conversations); the tables mix them"
    ) in "\n".join(problems.lines())


def test_a_shortened_prompt_is_noted_but_not_printed_as_a_judge_failure(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "run_small", run)
    lines = (run / "conversations.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["turns"][2]["text"] += " More detail." * 80  # over plain's 600 characters
    first["conversation"][2] += " More detail." * 80
    (run / "conversations.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with FakeOpenAI(logprobs=_judge) as srv:
        res = _evaluate(
            [
                str(run),
                "--base-url",
                srv.base_url,
                "--evaluator",
                "openai:fake-model",
                "--no-figures",
                "--metrics",
                "Clarity",
                "--judge-prompt",
                "plain",
            ]
        )
    assert res.exit_code == 0 and "judge failure" not in res.output, res.output
    rec = next(
        json.loads(x)
        for x in (run / "scores.jsonl").read_text().splitlines()
        if json.loads(x)["conversation_id"] == "c1"
    )
    assert rec["judge"]["notes"] == ["prompt: 1 message(s) cut"] and rec["judge"]["failures"] == []
