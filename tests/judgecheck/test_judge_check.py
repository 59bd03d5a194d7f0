"""judge-check: each perturbation on a fixed conversation, the analysis, end to end against a fake
OpenAI-compatible server returning logprobs; step coverage and echo rate."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from helpers import HOSTILE_JSON, append_line, one_line_error
from typer.testing import CliRunner

from wikihowagent.judgecheck import perturbations as P
from wikihowagent.judgecheck.core import bootstrap_ci, win
from wikihowagent.metrics.coverage import echo_rate, step_coverage
from wikihowagent.records import Conversation, Turn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"
RUBRICS = ["Clarity", "Truthfulness", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness"]


def conv(cid="c1", title="Boil an Egg", turns=None, steps=None) -> Conversation:
    turns = turns or [
        ("teacher", "Let's begin: Boil an Egg. BEGIN", "begin"),
        ("learner", "I am ready.", "model"),
        ("teacher", "Put 2 eggs in a pot. Always use cold water.", "model"),
        ("learner", "How much water?", "model"),
        ("teacher", "Cover the eggs with 3 cm of water. Do not use hot water.", "model"),
        ("learner", "Next step please.", "model"),
        ("teacher", "Boil for 10 minutes before cooling them.", "model"),
        ("learner", "Done, thanks.", "model"),
        ("teacher", "We've reached the end of the tutorial. Bye! FINISHED", "finish"),
        ("learner", "Bye!", "model"),
    ]
    msgs = [Turn(role=r, text=t, kind=k) for r, t, k in turns]
    return Conversation.from_turns(
        msgs,
        steps
        or ["Put the eggs in a pot. Use a pot large enough.", "Cover the eggs with water.", "Boil for 10 minutes."],
        title,
        completed=True,
        conversation_id=cid,
        run="r",
        where="x",
    )


OTHER = conv(
    "c2",
    "Water a Plant",
    [
        ("teacher", "Check the soil with a finger.", "model"),
        ("learner", "OK", "model"),
        ("teacher", "Water until it drains.", "model"),
    ],
)


def teacher(c):
    return [m.text for m in c.messages if m.role == "teacher" and m.kind == "model"]


def learner(c):
    return [m.text for m in c.messages if m.role == "learner"]


def perts():
    return {p.name: p for p in P.load_perturbations(None, RUBRICS)}


def test_each_perturbation_changes_what_it_names():
    c, ps = conv(), perts()
    out = {name: P.perturb(p, c, [c, OTHER]) for name, p in ps.items()}
    # fixed texts stay everywhere
    for name, pc in out.items():
        assert pc.messages[0].kind == "begin" and pc.messages[-2].kind == "finish", name
        assert pc.lines == [f"{m.role.capitalize()}: {m.text}" for m in pc.messages]
    assert teacher(out["skip_steps"]) == [teacher(c)[0], teacher(c)[2]]
    assert "Next step please." not in learner(out["skip_steps"])  # the reply to the skipped turn goes too
    assert teacher(out["wrong_facts"]) == [
        "Put 13 eggs in a pot. Never use hot water.",
        "Cover the eggs with 16 cm of water. Do use cold water.",
        "Boil for 37 minutes after cooling them.",
    ]
    assert teacher(out["off_topic"]) == [
        "Check the soil with a finger.",
        "Water until it drains.",
        "Check the soil with a finger.",
    ]
    assert teacher(out["terse"]) == ["Put 2 eggs in.", "Cover the eggs with.", "Boil for 10 minutes."]
    assert learner(out["passive_learner"])[:-1] == ["OK."] * 4 and learner(out["passive_learner"])[-1] == "OK."
    assert sorted(teacher(out["shuffled"])) == sorted(teacher(c)) and teacher(out["shuffled"]) != teacher(c)
    assert teacher(out["repeat"]) == ["Put 2 eggs in a pot."] * 3
    # the learner side is untouched except by passive_learner
    assert learner(out["terse"]) == learner(c)


def test_perturbation_not_applicable_and_file_errors(tmp_path):
    c = conv(turns=[("teacher", "Hello there.", "model"), ("learner", "Hi", "model")])
    ps = perts()
    assert P.perturb(ps["wrong_facts"], c, [c]) is None  # nothing to falsify
    assert P.perturb(ps["off_topic"], c, [c]) is None  # no other tutorial
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"x": {"kind": "nope", "targets": ["Clarity"]}}))
    with pytest.raises(P.PerturbationError, match=r"p\.json: perturbation 'x': unknown kind 'nope'"):
        P.load_perturbations(bad, RUBRICS)
    bad.write_text(json.dumps({"x": {"kind": "terse", "targets": ["Wit"]}}))
    with pytest.raises(P.PerturbationError, match="targets Wit are not rubrics"):
        P.load_perturbations(bad, RUBRICS)


@pytest.mark.parametrize(("line", "why"), HOSTILE_JSON)
def test_a_hostile_conversation_line_is_one_warning_and_every_other_line_is_used(tmp_path, monkeypatch, line, why):
    from wikihowagent.cli import app
    from wikihowagent.judgecheck import metric_check

    monkeypatch.setattr(metric_check, "check_metrics", lambda: ["METEOR", "Words"])  # no embedding model here
    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)  # 3 scorable conversations
    lineno = append_line(run / "conversations.jsonl", line)
    out = tmp_path / "jc"
    res = CliRunner().invoke(app, ["judge-check", "--metrics", "--no-figures", "--out", str(out), str(run)])
    assert res.exit_code == 0, res.output
    problem = f"warning: {run / 'conversations.jsonl'}:{lineno}: malformed JSON ({why})"
    assert res.output.splitlines().count(problem) == 1
    with open(out / "metric_sensitivity.csv", newline="") as fh:
        terse = [r for r in csv.DictReader(fh) if r["perturbation"] == "terse"]
    assert {int(r["n"]) + int(r["not_applicable"]) for r in terse} == {3}


@pytest.mark.parametrize(("text", "why"), HOSTILE_JSON)
def test_a_hostile_perturbation_file_is_refused_in_one_line(tmp_path, text, why):
    from wikihowagent.cli import app

    bad = tmp_path / "perturbations.json"
    bad.write_text(text)
    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    args = ["judge-check", "--metrics", "--perturbations", str(bad), "--out", str(tmp_path / "jc"), str(run)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    one_line_error(res, f"{bad}: malformed JSON ({why})")


def test_win_and_bootstrap():
    assert (win(4.2, 3.0), win(3.0, 3.0), win(2.0, 3.5)) == (1.0, 0.5, 0.0)
    lo, hi = bootstrap_ci([1.0] * 10)
    assert lo == hi == 1.0
    lo, hi = bootstrap_ci([1.0, 0.0] * 10)
    assert lo < 0.5 < hi


def test_step_coverage_sees_an_echoing_teacher():
    good = conv()
    assert step_coverage(good) == 1.0 and echo_rate(good) == 0.0
    echo = conv(
        turns=[
            ("teacher", "Put the eggs in a pot.", "model"),
            ("learner", "Thank you for the instruction. I will begin by stating my goals.", "model"),
            ("teacher", "Thank you for the instruction. I will begin by stating the goals.", "model"),
            ("learner", "OK", "model"),
            ("teacher", "Boil for 10 minutes.", "model"),
        ]
    )
    assert step_coverage(echo) == pytest.approx(2 / 3)  # step 2 (cover with water) never taught
    assert echo_rate(echo) == pytest.approx(1 / 2)


def _fake_judge(prompt: str):
    """p(5) grows with the length of the conversation shown: shortened lessons score lower."""
    convo = prompt.split("Conversation:")[-1].split("Criterion:")[0]
    q = min(0.9, len(convo) / 600)
    return [("4", {"5": q, "4": 0.9 - q, "3": 0.05, "Hmm": 0.05})]


def test_judge_check_end_to_end_against_fake_server(tmp_path):
    from wikihowagent.cli import app

    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    out = tmp_path / "check"
    with FakeOpenAI(logprobs=_fake_judge) as srv:
        args = [
            "judge-check",
            str(run),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
        ]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        n_requests = len(srv.requests)
        rows = list(csv.DictReader((out / "sensitivity.csv").open()))
        assert set(rows[0]) >= {"rubric", "perturbation", "n", "accuracy", "ci_low", "ci_high"}
        cells = {(r["rubric"], r["perturbation"]) for r in rows}
        assert ("Engagement", "passive_learner") in cells and ("Clarity", "terse") in cells
        terse = next(r for r in rows if (r["rubric"], r["perturbation"]) == ("Clarity", "terse"))
        assert float(terse["accuracy"]) == 1.0 and int(terse["n"]) == 3
        cons = list(csv.DictReader((out / "consistency.csv").open()))
        assert [r["rubric"] for r in cons] == RUBRICS and all(int(r["n"]) == 3 for r in cons)
        assert (
            (out / "summary.md")
            .read_text()
            .startswith("# judge-check: openai:fake-model (weighted, prompt tutorial-first)")
        )
        assert (out / "sensitivity.png").stat().st_size > 0
        # resumable: a rerun asks nothing again and writes the same table
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0 and len(srv.requests) == n_requests, res.output
        assert "0 judge passes made" in " ".join(res.output.split())


def _fake_both(prompt: str):
    """The absolute fake judge above, and a pairwise one that prefers the longer conversation."""
    if "Conversation A:" not in prompt:
        return _fake_judge(prompt) if "Conversation:" in prompt else [("A", {"A": 0.5, "B": 0.5})]
    a = prompt.split("Conversation A:")[1].split("Conversation B:")[0]
    b = prompt.split("Conversation B:")[1].split("Criterion:")[0]
    pa = 0.8 if len(a) > len(b) else (0.2 if len(a) < len(b) else 0.5)
    return [("A" if pa >= 0.5 else "B", {"A": pa, "B": 1 - pa})]


def test_judge_check_pairwise_next_to_the_absolute_judge(tmp_path):
    from wikihowagent.cli import app

    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    out = tmp_path / "check"
    with FakeOpenAI(logprobs=_fake_both) as srv:
        base = [
            "judge-check",
            str(run),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
        ]
        assert CliRunner().invoke(app, base).exit_code == 0
        res = CliRunner().invoke(app, base + ["--pairwise"])
        assert res.exit_code == 0, res.output
        text = " ".join(res.output.split())
        assert "A/B token log-probabilities" in text and "position consistency" in text
        n_requests = len(srv.requests)
        res = CliRunner().invoke(app, base + ["--pairwise"])
        assert res.exit_code == 0 and len(srv.requests) == n_requests + 1, res.output  # only the reading probe
    rows = list(csv.DictReader((out / "pairwise_sensitivity.csv").open()))
    assert set(rows[0]) >= {
        "rubric",
        "perturbation",
        "n",
        "accuracy",
        "ci_low",
        "ci_high",
        "position_consistency",
        "absolute_accuracy",
    }
    terse = next(r for r in rows if (r["rubric"], r["perturbation"]) == ("Clarity", "terse"))
    assert float(terse["accuracy"]) == 1.0 and float(terse["position_consistency"]) == 1.0
    assert float(terse["absolute_accuracy"]) == 1.0
    # only the targeted rubrics were asked
    asked = {
        (json.loads(x)["second"], k)
        for x in (out / "pair-judgments.jsonl").read_text().splitlines()
        for k in json.loads(x)["p_first"]
        if json.loads(x)["first"] == "original"
    }
    assert ("terse", "Clarity") in asked and ("terse", "Engagement") not in asked
    summary = (out / "pairwise_summary.md").read_text()
    assert summary.startswith("# judge-check --pairwise: openai:fake-model (pairwise, logprobs)")
    assert "The absolute judge (weighted) on the same cells" in summary
    # both rules and the absolute judge, with CIs, and a recommendation comparing them as the last line
    last = summary.strip().splitlines()[-1]
    assert re.fullmatch(
        r"Recommendation: .*\((pairwise, agree|pairwise, average \(tie band 0\)|absolute, weighted) "
        r"[0-9.]+ \[[0-9.]+, [0-9.]+\](; .*){2}; n = 3 conversations\)\.",
        last,
    ), last
    assert "absolute, weighted" in last and "pairwise, agree" in last and "pairwise, average" in last
    assert "Recommendation: " in res.output


# --------------------------------------------------------------------------------------------------
# Pairwise: both verdict rules, the modes' mean accuracy with a paired bootstrap, the recommendation
# --------------------------------------------------------------------------------------------------


def _biased_records(n: int, preference: float, bias: float, seed: int = 3) -> dict:
    """Pair judgments of a simulated judge on `terse` (Clarity, Depth): the original is better by log-odds
    `preference`, and whichever conversation is shown first gets log-odds `bias` more in both orders."""
    import math

    import numpy as np

    from wikihowagent.compare.engine import record_key
    from wikihowagent.records import PairwiseRecord

    rng = np.random.default_rng(seed)

    def sig(x):
        return round(1 / (1 + math.exp(-x)), 4)

    out = {}
    for i in range(n):
        cid = f"c{i}"
        for first, second, sign in (("original", "terse", 1), ("terse", "original", -1)):
            r = PairwiseRecord(
                tutorial_id=cid,
                first=first,
                second=second,
                first_conversation=cid,
                second_conversation=cid,
                evaluator="sim",
                reading="logprobs",
                p_first={k: sig(sign * preference + bias + rng.normal(0, 0.02)) for k in ("Clarity", "Depth")},
            )
            out[record_key(r)] = r
    return out


def test_pairwise_accuracy_under_both_rules_with_a_simulated_position_bias(tmp_path):
    """Known truth: the original is better (log-odds 0.2) and the judge's pull to the first shown (log-odds
    1.0) hides it from the `agree` rule (every pair a tie: accuracy 0.5, position consistency 0); the
    `average` rule recovers it (accuracy 1), with CIs, and the summary ends with a recommendation."""
    from wikihowagent.judgecheck.core import CheckStats, analyse_pairwise

    terse = [perts()["terse"]]
    records = _biased_records(12, 0.2, 1.0)
    res = analyse_pairwise(
        tmp_path, records, terse, RUBRICS, "sim", "logprobs", {f"c{i}" for i in range(12)}, CheckStats(), figures=False
    )
    t = res.table.set_index("rubric")
    assert list(t.loc[["Clarity", "Depth"], "accuracy"]) == [0.5, 0.5]
    assert list(t.loc[["Clarity", "Depth"], "accuracy_averaged"]) == [1.0, 1.0]
    assert res.position_consistency == 0.0
    assert {"averaged_ci_low", "averaged_ci_high", "ties_averaged"} <= set(res.table.columns)
    agree, averaged = res.modes
    assert (agree.mode, agree.mean, agree.ci_low, agree.ci_high) == ("pairwise, agree", 0.5, 0.5, 0.5)
    assert averaged.mode == "pairwise, average (tie band 0)" and averaged.mean == averaged.ci_low == 1.0
    last = (tmp_path / "pairwise_summary.md").read_text().strip().splitlines()[-1]
    assert last.startswith("Recommendation among the pairwise rules") and "use pairwise, average (tie band 0):" in last
    # a tie band wider than the judge's lean: nothing is left to recover
    wide = analyse_pairwise(
        tmp_path,
        records,
        terse,
        RUBRICS,
        "sim",
        "logprobs",
        {f"c{i}" for i in range(12)},
        CheckStats(),
        figures=False,
        tie_band=0.2,
    )
    assert wide.modes[1].mean == 0.5 and "no mode is reliably above chance" in wide.recommendation


def test_mode_means_share_the_resampled_conversations_and_the_recommendation_follows_the_paired_difference():
    from wikihowagent.judgecheck.accuracy import mean_accuracy_samples
    from wikihowagent.judgecheck.pairwise_check import compare_modes

    convs = [f"c{i}" for i in range(20)]
    good = [{c: 1.0 for c in convs}, {c: (1.0 if i % 4 else 0.0) for i, c in enumerate(convs)}]  # 1.0 and 0.75
    chance = [{c: (1.0 if i % 2 else 0.0) for i, c in enumerate(convs)}, {c: 0.5 for c in convs[:10]}]  # missing cells
    means, samples = mean_accuracy_samples({"good": good, "chance": chance}, n_boot=500)
    assert means == {"good": 0.875, "chance": 0.5}
    assert samples["good"].shape == samples["chance"].shape == (500,)
    accs, line = compare_modes({"absolute, weighted": good, "pairwise, agree": chance})
    assert [a.mode for a in accs] == ["absolute, weighted", "pairwise, agree"]
    assert line.startswith("Recommendation: use absolute, weighted: more accurate than pairwise, agree by 0.375")
    assert line.endswith(
        "(absolute, weighted 0.875 [0.775, 0.975]; pairwise, agree 0.500 "
        f"[{accs[1].ci_low:.3f}, {accs[1].ci_high:.3f}]; n = 20 conversations)."
    )
    # paired: a mode never better on any conversation loses even by a small margin (0.8125 vs 0.875) ...
    nearly = [{c: (1.0 if i % 4 else 0.5) for i, c in enumerate(convs)}, good[1]]
    _, line = compare_modes({"absolute, weighted": good, "pairwise, average (tie band 0)": nearly})
    assert line.startswith(
        "Recommendation: use absolute, weighted: more accurate than pairwise, average (tie band 0) by 0.062"
    )
    # ... while the same mean, right on other conversations, is no reliable difference
    other = [{c: (1.0 if (i + 1) % 4 else 0.0) for i, c in enumerate(convs)}, {c: 1.0 for c in convs}]
    _, line = compare_modes({"absolute, weighted": good, "pairwise, average (tie band 0)": other})
    assert line.startswith("Recommendation: no reliable difference between") and "(0.000 [" in line
    _, line = compare_modes({"pairwise, agree": chance})
    assert "no mode is reliably above chance" in line


def test_skip_steps_drops_every_turn_of_the_skipped_steps_when_turns_carry_step_indices():
    rows = [
        ("teacher", "Let's begin. BEGIN", "begin", 0),
        ("learner", "Ready.", "model", 0),
        ("teacher", "Step A: fill the pot.", "model", 0),
        ("learner", "How full?", "model", 0),
        ("teacher", "Half full.", "clarification", 0),
        ("learner", "Next.", "model", 0),
        ("teacher", "Step B: add salt.", "model", 1),
        ("learner", "Why salt?", "model", 1),
        ("teacher", "For taste.", "clarification", 1),
        ("learner", "Then step C?", "model", 1),
        ("teacher", "Step C: heat it.", "model", 2),
        ("learner", "OK.", "model", 2),
        ("teacher", "Step D: serve.", "model", 3),
        ("learner", "Done.", "model", 3),
        ("teacher", "That's all. FINISHED", "finish", 3),
        ("learner", "Bye!", "model", 3),
    ]
    msgs = [Turn(role=r, text=t, kind=k, step=s) for r, t, k, s in rows]
    c = Conversation.from_turns(
        msgs, ["A", "B", "C", "D"], "Pot", completed=True, conversation_id="s", run="r", where="x"
    )
    out = P.perturb(perts()["skip_steps"], c, [c])
    texts = [m.text for m in out.messages]
    # steps 1 and 3 vanish entirely (teaching, clarification, the learner's turns); steps 0 and 2 stay whole
    assert texts == [
        "Let's begin. BEGIN",
        "Ready.",
        "Step A: fill the pot.",
        "How full?",
        "Half full.",
        "Next.",
        "Step C: heat it.",
        "OK.",
        "That's all. FINISHED",
        "Bye!",
    ]
    # a two-step lesson with nothing taught for step 1 cannot be perturbed
    short = Conversation.from_turns(
        msgs[:6] + msgs[-2:], ["A", "B"], "Pot", completed=True, conversation_id="t", run="r", where="x"
    )
    assert P.skip_steps(short, [short], {"every": 2}) is None


def test_judge_check_tables_neutralise_hostile_names_and_read_them_back(tmp_path):
    """sensitivity.csv / consistency.csv / posttest_validity.csv are opened in spreadsheets: a perturbation
    named like a formula is written as text (OWASP), and the post-test check reads the exact name back."""
    from wikihowagent.cli import app
    from wikihowagent.judgecheck.posttest_check import judge_accuracy

    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    hostile = '=HYPERLINK("http://x","terse")'
    pfile = tmp_path / "perturbations.json"
    pfile.write_text(
        json.dumps(
            {
                hostile: {"kind": "terse", "targets": ["Clarity"], "params": {"words": 4}},
                "-2+3": {"kind": "skip_steps", "targets": ["Progress"], "params": {}},
            }
        )
    )
    out = tmp_path / "check"
    with FakeOpenAI(logprobs=_fake_judge) as srv:
        res = CliRunner().invoke(
            app,
            [
                "judge-check",
                str(run),
                "--out",
                str(out),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--perturbations",
                str(pfile),
            ],
        )
    assert res.exit_code == 0, res.output
    cells = [row[1] for row in csv.reader((out / "sensitivity.csv").open())][1:]
    assert set(cells) == {"'" + hostile, "'-2+3"}  # shown as text, never run
    assert judge_accuracy(out) == {hostile: 1.0}  # read back exactly ("-2+3" did not apply here: no accuracy)
