"""The likelihood post-test (workflow/likelihood.py): log-probabilities of a given text, read by echo (vLLM's
/v1/completions) or by a grammar (llama.cpp's /completion), against a fake server with a known model."""

from __future__ import annotations

import asyncio
import re

import pytest
from fake_servers import FakeOpenAI

from wikihowagent.workflow import likelihood as L


def seen_model(token, before):
    """A learner that finds a word it has seen before more probable: -0.5 nats if seen, else -4."""
    word = token.strip().lower().strip(".,")
    return -0.5 if word and word in before.lower() else -4.0


STEPS = ["Fold the glorp twice.", "Soak it in brine for 7 minutes."]


def chat(prompt):
    """A teacher that states step k as "Step k: <text>", and a learner whose post-test lists what it was taught."""
    m = re.search(r"Step (\d+) of (\d+): (.*)", prompt)
    if m and "This was your lesson" not in prompt:
        return f"Step {m.group(1)}: {m.group(3)}"
    if "This was your lesson" in prompt:
        return "\n".join(f"{i}. {t}" for i, t in enumerate(re.findall(r"Teacher: Step \d+: (.*)", prompt), 1))
    return "Understood, please go to the next step."


@pytest.mark.parametrize("transport", L.TRANSPORTS)
def test_steps_taught_are_more_probable_and_the_gain_is_known(transport):
    with FakeOpenAI(text_logprob=seen_model) as srv:
        reader = L.StepLikelihood(srv.base_url[:-3], "fake-model", transport)
        lesson = "Teacher: Fold the glorp twice.\nYou: OK.\nTeacher: Soak it in brine for 7 minutes.\nYou: OK."
        post = asyncio.run(reader.score(L.contexts("How to Glorp", "", 2, lesson), STEPS))
        pre = asyncio.run(reader.score(L.contexts("How to Glorp", "", 2, None), STEPS))
    assert post.tokens == pre.tokens == [4, 7]
    # every word of the steps is in the lesson: -0.5 each; before it, "glorp" (in the title) and
    assert post.means == [pytest.approx(-0.5), pytest.approx(-0.5)]
    # ("it" and "in" are in "Its 2 steps, in order")
    assert pre.means[0] == pytest.approx((-4 * 3 - 0.5) / 4) and pre.means[1] == pytest.approx((-4 * 5 - 0.5 * 2) / 7)
    gain = L.likelihood_gain(post.means, pre.means)
    assert gain == pytest.approx(((-0.5 - pre.means[0]) + (-0.5 - pre.means[1])) / 2) and gain > 0
    body = srv.requests[0]
    if transport == "echo":
        assert (
            body["echo"] is True
            and body["logprobs"] == 1
            and body["prompt"].endswith("1. Fold the glorp twice.\n2. Soak it in brine for 7 minutes.\n")
        )
    else:
        assert body["grammar"] == 'root ::= "1. Fold the glorp twice.\\n2. Soak it in brine for 7 minutes.\\n"'
        assert body["post_sampling_probs"] is False and body["n_probs"] == 1 and body["temperature"] == 0.0


def test_half_the_lesson_gives_half_the_gain():
    with FakeOpenAI(text_logprob=seen_model) as srv:
        reader = L.StepLikelihood(srv.base_url[:-3], "fake-model", "grammar")
        half = asyncio.run(reader.score(L.contexts("How to Glorp", "", 2, "Teacher: Fold the glorp twice."), STEPS))
        pre = asyncio.run(reader.score(L.contexts("How to Glorp", "", 2, None), STEPS))
    assert half.means[0] == pytest.approx(-0.5) and half.means[1] == pytest.approx(pre.means[1])  # untaught: as before
    assert 0 < L.likelihood_gain(half.means, pre.means) < 2


def test_a_server_without_echo_or_grammar_is_one_line():
    with FakeOpenAI() as srv:  # serves chat only
        reader = L.StepLikelihood(srv.base_url[:-3], "fake-model", "echo")
        with pytest.raises(L.LikelihoodError, match=r"/v1/completions: HTTP 404"):
            asyncio.run(reader.score("ctx\n", STEPS))
    with FakeOpenAI(text_logprob=lambda t, b: 0.7) as srv:  # a positive log-probability is not one
        reader = L.StepLikelihood(srv.base_url[:-3], "fake-model", "grammar")
        with pytest.raises(L.LikelihoodError, match=r"log-probability 0.7 of a token of step 1: not a number <= 0"):
            asyncio.run(reader.score("ctx\n", STEPS))
    with pytest.raises(L.LikelihoodError, match="likelihood transport 'beam'"):
        L.StepLikelihood("http://x", "m", "beam")


def test_gbnf_literal_escapes():
    assert L.gbnf_literal('a "b"\\c\nd') == 'root ::= "a \\"b\\"\\\\c\\nd"'


def test_judge_check_takes_the_likelihood_posttest_and_resumes(tmp_path):
    """judge-check --posttest-learner --posttest-likelihood on a fake server: the original's lesson makes the
    steps more probable than half a lesson (skip_steps) or another tutorial's (off_topic)."""

    import pandas as pd
    from typer.testing import CliRunner

    from wikihowagent.cli import app
    from wikihowagent.layout import POSTTESTS
    from wikihowagent.records_io import read_posttest_variants

    runner = CliRunner()
    with FakeOpenAI(reply=chat, text_logprob=seen_model) as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(tmp_path / "run"),
                "--max-tutorials",
                "4",
                "--retries",
                "0",
            ],
        )
        assert res.exit_code == 0, res.output
        args = [
            "judge-check",
            str(tmp_path / "run"),
            "--out",
            str(tmp_path / "check"),
            "--posttest-learner",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--posttest-likelihood",
        ]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        reads = [r for r in srv.requests if r.get("echo")]
        assert len(reads) == 12 + 4  # 12 post-tests (4 originals, 8 copies) + one title-only read per tutorial
        again = runner.invoke(app, args)
        assert again.exit_code == 0 and len([r for r in srv.requests if r.get("echo")]) == 16  # nothing twice
    assert "likelihood post-test: echo on" in res.output
    table = pd.read_csv(tmp_path / "check" / "posttest_likelihood_validity.csv").set_index("perturbation")
    assert table.loc["skip_steps", "accuracy"] == 1.0 and table.loc["off_topic", "accuracy"] == 1.0
    assert (table["mean_recall_original"] > table["mean_recall_perturbed"]).all()
    assert (table["coverage_original"] > table["coverage_perturbed"]).all()  # the copies removed teaching
    tests = read_posttest_variants(tmp_path / "check" / POSTTESTS)
    assert all(
        t.likelihood is not None and t.likelihood.error is None and t.likelihood.transport == "echo"
        for t in tests.values()
    )
    assert "Likelihood post-test" in (tmp_path / "check" / "posttest_validity.md").read_text()


def test_posttest_likelihood_needs_a_learner(tmp_path):
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    res = CliRunner().invoke(
        app,
        ["judge-check", "tests/fixtures/evaluation/run_small", "--out", str(tmp_path / "o"), "--posttest-likelihood"],
    )
    assert res.exit_code == 2 and "--posttest-likelihood: give --posttest-learner" in res.output


def test_likelihood_gain_is_a_registered_metric_read_from_the_record():
    from wikihowagent.metrics import computational as M
    from wikihowagent.records import Conversation, LikelihoodTest, PostTest, TestAnswer, Turn

    conv = Conversation.from_turns(
        [Turn(role="teacher", text="Fold it.")], ["Fold it.", "Soak it."], "How to X", conversation_id="c"
    )
    with_lt = conv.model_copy(
        update={
            "posttest": PostTest(
                post=TestAnswer(steps=["Fold it."]),
                likelihood=LikelihoodTest(transport="echo", post=[-0.5, -2.0], pre=[-3.0, None]),
            )
        }
    )
    failed = conv.model_copy(update={"posttest": PostTest(likelihood=LikelihoodTest(error="HTTP 404"))})
    scores = M.Scorers("default", [M.LIKELIHOOD_GAIN]).score([with_lt, failed, conv])
    assert [s.metrics[M.LIKELIHOOD_GAIN] for s in scores] == [pytest.approx(2.5), None, None]
    with pytest.raises(ValueError, match="not a number in"):
        LikelihoodTest(post=[0.5])


def test_per_step_on_a_real_llama_cpp_reply():
    """The tokens and log-probabilities the embedded server (Qwen2.5-Coder-1.5B, llama.cpp /completion with a
    one-sentence grammar, n_probs 1, post_sampling_probs false) returned for "1. Boil the water.\\n2. Pour it.\\n"
    after "Method: How to make tea\\n\\nIts 2 steps, in order:\\n": the number tokens belong to no step, a
    step's ".\\n" to it, the end-of-text token (no bytes) to none."""
    reply = [
        ("1", -0.5108),
        (".", -0.0713),
        (" Bo", -1.6048),
        ("il", -0.0160),
        (" the", -2.7200),
        (" water", -0.0751),
        (".\n", -1.9501),
        ("2", -0.0227),
        (".", -0.0003),
        (" Pour", -0.6507),
        (" it", -1.9112),
        (".\n", -8.6082),
        ("", -10.6682),
    ]
    text, spans = L.forced_text(["Boil the water.", "Pour it."])
    assert text == "".join(t for t, _ in reply)
    offsets = [sum(len(t) for t, _ in reply[:i]) for i in range(len(reply))]
    means, counts = L.per_step(offsets, [t for t, _ in reply], [v for _, v in reply], spans, 0)
    assert counts == [5, 3]
    assert means == [
        pytest.approx((-1.6048 - 0.0160 - 2.7200 - 0.0751 - 1.9501) / 5),
        pytest.approx((-0.6507 - 1.9112 - 8.6082) / 3),
    ]


def test_evaluate_takes_the_likelihood_posttest_beside_each_posttest_and_resumes(tmp_path):
    """evaluate --posttest-learner --posttest-likelihood: a run whose records carry their own post-test (by the
    same learner) and a run without one both get the likelihood post-test (once per conversation, the
    title-only read once per tutorial), stored in posttests.jsonl, scored as Likelihood Gain; a rerun asks
    nothing again, and a run scored before without it is rescored for that metric only."""
    import json

    from typer.testing import CliRunner

    from wikihowagent.cli import app
    from wikihowagent.layout import POSTTESTS
    from wikihowagent.records_io import read_posttests

    runner = CliRunner()
    runs = {"own": tmp_path / "own", "none": tmp_path / "none"}
    with FakeOpenAI(reply=chat, text_logprob=seen_model) as srv:
        for name, extra in (("own", ["--posttest", "--learner", "openai:fake-model"]), ("none", ["--no-posttest"])):
            gen = ["generate", "--teacher", "openai:fake-model", "--base-url", srv.base_url, "--max-tutorials", "2"]
            res = runner.invoke(app, [*gen, "--out", str(runs[name]), "--retries", "0", *extra])
            assert res.exit_code == 0, res.output
        base = ["evaluate", *map(str, runs.values()), "--no-judge", "--no-figures", "--base-url", srv.base_url]
        base += ["--posttest-learner", "openai:fake-model", "--bootstrap", "0"]
        res = runner.invoke(app, base)  # first without the likelihood post-test: the metric is empty
        assert res.exit_code == 0, res.output

        def echo_reads():
            return len([r for r in srv.requests if r.get("echo")])

        def chats():
            return len([r for r in srv.requests if "messages" in r])

        assert echo_reads() == 0
        before = chats()
        res = runner.invoke(app, [*base, "--posttest-likelihood"])
        assert res.exit_code == 0, res.output
        assert echo_reads() == 2 * (2 + 2)  # per run: 2 lessons + 2 title-only reads (one per tutorial)
        assert chats() == before  # the post-tests themselves are not taken again
        assert "likelihood post-tests taken (openai:fake-model): 2, 0 could not be read" in res.output
        lines = {n: len((r / "scores.jsonl").read_text().splitlines()) for n, r in runs.items()}
        res = runner.invoke(app, [*base, "--posttest-likelihood"])  # resumed: nothing asked, nothing rescored
        assert res.exit_code == 0 and echo_reads() == 8 and chats() == before, res.output
        assert lines == {n: len((r / "scores.jsonl").read_text().splitlines()) for n, r in runs.items()}
    for name, run in runs.items():
        tests = read_posttests(run / POSTTESTS)
        assert len(tests) == 2 and all(t.likelihood_read and t.likelihood.transport == "echo" for t in tests.values())
        lines = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
        last = {r["conversation_id"]: r for r in lines}
        gains = [r["metrics"]["Likelihood Gain"] for r in last.values()]
        assert len(last) == 2 and all(g is not None and g > 0 for g in gains), (name, gains)
        assert all(r["metrics"]["Step Recall"] is not None for r in last.values())


def test_evaluate_posttest_likelihood_needs_a_learner():
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    res = CliRunner().invoke(app, ["evaluate", "tests/fixtures/evaluation/run_small", "--posttest-likelihood"])
    assert res.exit_code == 2 and "--posttest-likelihood: give --posttest-learner" in res.output
