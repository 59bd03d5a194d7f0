"""The learner's post-test: the graph node, the pre-test cache, parsing, the metrics and `evaluate --posttest-learner`."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest
from fake_servers import FakeOpenAI
from helpers import learner_says, make_tutorial, teacher_script
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.generation.core import to_record
from wikihowagent.jsonlio import iter_jsonl
from wikihowagent.layout import POSTTESTS, PRETESTS
from wikihowagent.metrics import computational as M
from wikihowagent.metrics import posttest as P
from wikihowagent.records import Conversation, PostTest, TestAnswer, Turn
from wikihowagent.records_io import read_posttests
from wikihowagent.runs import PretestCache, read_scores
from wikihowagent.testing import ScriptedChatModel
from wikihowagent.workflow.graph import WorkflowOptions, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.posttest import MAX_STEPS, PostTester, parse_steps
from wikihowagent.workflow.prompts import load_prompts

FIXTURES = "tests/fixtures/evaluation"
PAPER_FILE = f"{FIXTURES}/T-llama3_L-llama3_E-llama3_123.json"


# ------------------------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    "reply, steps, problem",
    [
        ("", [], "empty reply"),
        ("   \n\n  ", [], "empty reply"),
        ("I really enjoyed the lesson, thank you!", [], "one line without a step list"),
        (
            "Sure, here is what I remember:\nIt was about salt and some paint, I think.",
            [],
            "one line without a step list",
        ),
        (
            "Here are the steps:\n1. Fill a container.\n2. Add paint\n   - stir well\n3. Dry it",
            ["Fill a container.", "Add paint stir well", "Dry it"],
            None,
        ),
        ("**1.** Mix\n**2.** Bake", ["Mix", "Bake"], None),
        ("- Mix\n- Bake", ["Mix", "Bake"], None),
        ("1. Mix 2. Bake 3. Cool", ["Mix", "Bake", "Cool"], None),
        ("Sure: 1) mix it 2) bake it", ["mix it", "bake it"], None),
        ("1. Boil water", ["Boil water"], None),
        ("Step 1: wash\nStep 2: dry", ["wash", "dry"], None),
        ("1.5 cups of flour\n2 eggs", ["1.5 cups of flour", "2 eggs"], None),
        ("\n".join("1. the same step" for _ in range(200)), ["the same step"], None),  # a looping model
    ],
)
def test_parse_steps(reply, steps, problem):
    assert parse_steps(reply)[:2] == (steps, problem)


@pytest.mark.parametrize(
    "reply, steps, abstained",
    [
        ("1. Boil water\n2. not taught\n3. Not taught.\n4. (don't know)\n5. Add salt", ["Boil water", "Add salt"], 3),
        ("1. not taught\n2. Not taught\n3. I don't know", [], 3),  # nothing recalled: a step list, scored 0
        ("1. Do not know when to stop stirring\n2. Mix", ["Do not know when to stop stirring", "Mix"], 0),  # a step
        ("- unknown\n- Bake", ["Bake"], 1),
    ],
)
def test_abstentions_are_counted_not_steps(reply, steps, abstained):
    assert parse_steps(reply) == (steps, None, abstained)


def test_two_hundred_abstentions_are_not_a_step_list():
    steps, problem, _ = parse_steps("\n".join(f"{i}. not taught" for i in range(1, 201)))
    assert steps == [] and problem == f"200 lines: not a step list (more than {MAX_STEPS})"


def test_prompt_registry():
    from wikihowagent.workflow.posttest import PROMPTS, PostTestPromptError, get_prompt, posttest_messages

    # v2's recorded version is the one every earlier run and pre-test cache carries: unchanged wording.
    assert get_prompt(None).version == PROMPTS["v2"].version == "v2-f2aaaa2e2f"
    assert PROMPTS["v3"].version.startswith("v3-") and PROMPTS["v3"].version != PROMPTS["v2"].version
    with pytest.raises(PostTestPromptError, match=r"--posttest-prompt 'v9': not a post-test prompt \(known: v2, v3\)"):
        get_prompt("v9")
    turns = [Turn(role="teacher", text="Step 1: mix."), Turn(role="learner", text="ok")]
    msgs = posttest_messages("How to Bake", "", turns, 3, PROMPTS["v3"])
    assert "not taught" in msgs[1].content and "Teacher: Step 1: mix.\nYou: ok" in msgs[1].content


def test_two_hundred_lines_are_not_a_step_list():
    steps, problem, _ = parse_steps("\n".join(f"{i}. do thing {i}" for i in range(1, 201)))
    assert steps == [] and problem == f"200 lines: not a step list (more than {MAX_STEPS})"


# ------------------------------------------------------------------------------------------ the graph


class MemoryCache:
    def __init__(self):
        self.d = {}

    def get(self, learner, key, version):
        return self.d.get((learner, key, version))

    def put(self, learner, key, version, answer):
        self.d[(learner, key, version)] = answer


def learner_with_test(reply="1. Do step number 1.\n2. Do step number 2.\n3. Do step number 3."):
    script = learner_says("I'm ready.")

    def answer(prompt):
        return reply if "steps of the method" in prompt else script(prompt)

    return answer


def run_graph(tutorial, tester_reply=None, cache=None, tid="c1"):
    teacher = ScriptedChatModel(script=teacher_script)
    learner = ScriptedChatModel(script=learner_with_test(*(() if tester_reply is None else (tester_reply,))))
    tester = PostTester(learner, "scripted", cache if cache is not None else MemoryCache())
    options = WorkflowOptions()
    graph = build_graph(teacher, learner, load_prompts(), options, posttest=tester)
    state = asyncio.run(
        graph.ainvoke(initial_state(tutorial, tid), config={"recursion_limit": recursion_limit(options)})
    )
    return state, learner


def test_posttest_runs_after_the_farewell_and_is_not_a_turn():
    tut = make_tutorial(3)
    state, learner = run_graph(tut)
    # The same turns as without the post-test node.
    plain = build_graph(
        ScriptedChatModel(script=teacher_script),
        ScriptedChatModel(script=learner_with_test()),
        load_prompts(),
        WorkflowOptions(),
    )
    plain_state = asyncio.run(plain.ainvoke(initial_state(tut, "c1"), config={"recursion_limit": 100}))
    assert [(t.role, t.text) for t in state["messages"]] == [(t.role, t.text) for t in plain_state["messages"]]
    assert state["messages"][-1].role == "learner" and state["messages"][-2].text.endswith("FINISHED")
    test = state["posttest"]
    assert test.post.steps == [f"Do step number {i}." for i in (1, 2, 3)] and test.post.error is None
    # The post-test sees the conversation from the learner's side, never the tutorial's own step list.
    post_prompt = next(p for p in learner.prompts if "This was your lesson" in p)
    assert "You: I'm ready." in post_prompt and "Teacher: Teaching step 1." in post_prompt
    assert "Do step number 1. It matters." not in post_prompt
    pre_prompt = next(p for p in learner.prompts if "Before any lesson" in p)
    assert "Teaching step" not in pre_prompt and "How to Test" in pre_prompt
    # Both tests ask for the method's own number of steps: recall is compared at one answer length.
    assert "write the 3 steps" in post_prompt and "exactly 3 lines" in post_prompt
    assert "write the 3 steps" in pre_prompt and "exactly 3 lines" in pre_prompt
    rec = to_record(tut, state, "run", "t", "scripted", "now", WorkflowOptions())
    assert rec.posttest == test and all("steps of the method" not in line for line in rec.conversation)


def test_pretest_is_taken_once_per_learner_and_tutorial(tmp_path):
    tut = make_tutorial(3)
    with PretestCache(tmp_path) as cache:
        _, first = run_graph(tut, cache=cache, tid="a")
        _, second = run_graph(tut, cache=cache, tid="b")  # another conversation of the same tutorial
    assert sum("Before any lesson" in p for p in first.prompts) == 1
    assert sum("Before any lesson" in p for p in second.prompts) == 0
    # Cached in the directory: a resume (a new process) reuses it.
    assert len(PretestCache(tmp_path)) == 1
    _, third = run_graph(tut, cache=PretestCache(tmp_path), tid="c")
    assert sum("Before any lesson" in p for p in third.prompts) == 0


@pytest.mark.parametrize("reply", ["", "Thanks, that was a great lesson.", "\n".join(f"{i}. x{i}" for i in range(300))])
def test_bad_posttest_reply_is_recorded_not_a_crash(reply):
    state, _ = run_graph(make_tutorial(3), tester_reply=reply)
    assert state["finished"] and not state.get("error")
    assert state["posttest"].post.error and state["posttest"].post.steps == []


def test_failed_posttest_call_is_recorded_and_not_cached(tmp_path):
    def script(prompt):
        if "steps of the method" in prompt:
            raise RuntimeError("server down")
        return "Understood."

    tester = PostTester(ScriptedChatModel(script=script), "scripted", PretestCache(tmp_path))
    test = asyncio.run(tester.run("k", "How to X", "X", [Turn(role="teacher", text="hi")], 3))
    assert test.post.error.startswith("call failed: RuntimeError") and test.pre.error.startswith("call failed")
    assert not (tmp_path / PRETESTS).exists()


def test_test_replies_are_not_cut_by_the_conversations_reply_cap(tmp_path):
    """generate --max-tokens 128 cut 4 of 26 six-step post-tests mid-list (BENCHMARKS "post-test"): the test
    calls get room for N steps whatever the conversation's cap, on the wire."""
    from wikihowagent.backends.registry import make_chat_model
    from wikihowagent.config import LocalModelSettings, ModelSettings
    from wikihowagent.workflow.posttest import REPLY_TOKENS_EXTRA, REPLY_TOKENS_PER_STEP

    with FakeOpenAI(reply=lambda body: "1. a\n2. b") as srv:
        for cap, want in ((128, REPLY_TOKENS_PER_STEP * 6 + REPLY_TOKENS_EXTRA), (2000, 2000)):
            model = make_chat_model(
                "openai:fake-model",
                ModelSettings(max_tokens=cap, max_retries=0),
                LocalModelSettings(),
                base_url=srv.base_url,
            )
            srv.requests.clear()
            tester = PostTester(model, "openai:fake-model", PretestCache(tmp_path / str(cap)))
            asyncio.run(tester.run("k", "How to X", "X", [Turn(role="teacher", text="hi")], 6))
            sent = [r.get("max_tokens", r.get("max_completion_tokens")) for r in srv.requests]
            assert sent == [want, want], cap  # the post-test and the pre-test; a larger cap is never lowered
            assert model.max_tokens == cap  # the conversation's model is untouched


def test_reply_cap_is_raised_on_every_kind_of_model():
    from langchain_ollama import ChatOllama

    from wikihowagent.backends.calls import with_reply_cap
    from wikihowagent.backends.replicas import PooledChatModel, ReplicaPool

    ollama = ChatOllama(model="m", num_predict=99)
    assert with_reply_cap(ollama, 400).num_predict == 400 and ollama.num_predict == 99
    assert with_reply_cap(ChatOllama(model="m"), 400).num_predict is None  # no cap: nothing to raise
    scripted = ScriptedChatModel(script=lambda p: "x")
    assert with_reply_cap(scripted, 400) is scripted
    pool = PooledChatModel(pool=ReplicaPool([]))
    raised = with_reply_cap(pool, 400)
    assert raised.max_tokens == 400 and raised._capped({"stop": None}) == {"max_tokens": 400, "stop": None}
    assert pool._capped({"stop": None}) == {"stop": None}  # unset: each replica's own cap


# ---------------------------------------------------------------------------------------------- metrics


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_matching_recovers_a_known_assignment():
    """Simulation with known truth: the answer recalls a known subset of the steps (paraphrased = noisy copies),
    in a known order, plus invented steps; recall, extraneous and tau come out exactly."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        n, dim = int(rng.integers(3, 10)), 64
        tut = unit(rng.normal(size=(n, dim)))
        k = int(rng.integers(1, n + 1))
        recalled = rng.choice(n, size=k, replace=False)  # answer position j recalls tutorial step recalled[j]
        n_extra = int(rng.integers(0, 4))
        answer = np.vstack(
            [unit(tut[recalled] + 0.05 * rng.normal(size=(k, dim))), unit(rng.normal(size=(n_extra, dim)))]
        )
        matches = P.match_steps(tut @ answer.T, threshold=0.5)
        assert sorted(matches) == sorted((int(t), j) for j, t in enumerate(recalled))
        assert P.match_steps(tut @ answer.T, threshold=0.5, rule="assign") == matches  # clean data: both rules
        assert P.step_recall(matches, n) == k / n
        assert P.extraneous(tut @ answer.T, threshold=0.5) == pytest.approx(n_extra / (k + n_extra))
        if k >= 2:
            from scipy.stats import kendalltau

            assert P.order_tau(matches) == pytest.approx(kendalltau(recalled, np.arange(k)).statistic)


def test_order_is_one_in_order_and_minus_one_reversed():
    assert P.order_tau([(0, 0), (1, 1), (2, 2)]) == 1.0
    assert P.order_tau([(0, 2), (1, 1), (2, 0)]) == -1.0
    assert P.order_tau([(0, 0)]) is None and P.match_steps(np.zeros((3, 0))) == []


def test_nearest_rule_credits_a_line_only_for_its_own_step():
    """The steps of one procedure resemble each other: a learner who restates step 0 in three lines (the
    similarities measured on "Place the eggs in a single layer..." split by the 1.5B learner) recalled one
    step, not three; the plain assignment credited the extra lines to steps 1 and 2."""
    sim = np.array(
        [
            [0.86, 0.85, 0.75],  # tutorial step 0 vs the three lines
            [0.67, 0.68, 0.66],  # step 1 (never written)
            [0.59, 0.64, 0.44],
        ]
    )  # step 2 (never written)
    assert P.match_steps(sim) == P.match_steps(sim, rule="assign") == [(0, 0), (1, 2), (2, 1)]  # the default
    assert P.match_steps(sim, rule="nearest") == [(0, 0)]
    # a line that is nearest to a step another line already took is not pushed onto a third step
    assert P.match_steps(np.array([[0.9, 0.8], [0.5, 0.6]]), rule="nearest") == [(0, 0)]
    assert P.match_steps(np.array([[0.9, 0.3], [0.5, 0.6]]), rule="nearest") == [(0, 0), (1, 1)]
    with pytest.raises(ValueError, match="matching rule 'best'"):
        P.match_steps(sim, rule="best")


def test_extraneous_counts_invented_steps_not_extra_details():
    # answer 0 and 1 both restate tutorial step 0 (only one can be its match), answer 2 is invented
    sim = np.array([[0.9, 0.7, 0.1], [0.2, 0.1, 0.2]])
    assert P.match_steps(sim) == [(0, 0)] and P.extraneous(sim) == pytest.approx(1 / 3)
    assert P.extraneous(np.zeros((2, 0))) is None


def test_detail_recall_counts_numbers_and_things():
    steps = ["Boil the eggs for 12 minutes in a pot.", "Cool them in ice water."]
    wn = M.load_wordnet()
    d = P.details("\n".join(steps), wn)
    assert {"12 minute", "egg", "pot"} <= d
    assert P.detail_recall(steps, ["Boil eggs twelve minutes in a pot", "cool in ice water"], wn) == 1.0
    assert P.detail_recall(steps, ["Boil for 5 minutes"], wn) == 0.0
    assert P.detail_recall(["Be kind."], ["Be kind."], wn) is None  # no detail to recall


def conv_with(
    test: PostTest | None, steps=("Fill a container with salt.", "Squeeze paint into the salt.", "Shake the container.")
):
    turns = [
        Turn(role="teacher", text="Let's begin. BEGIN", kind="begin"),
        Turn(role="learner", text="ok"),
        Turn(role="teacher", text="Fill a container with salt."),
    ]
    return Conversation.from_turns(turns, list(steps), "Color Salt", completed=True, conversation_id="x", posttest=test)


def test_posttest_metrics_on_conversations():
    scorers = M.Scorers("default", list(M.POSTTEST_METRICS))
    good = PostTest(
        post=TestAnswer(steps=["Put salt in a container", "Shake the container well", "Make a cake"]),
        pre=TestAnswer(steps=["Buy a cake"]),
    )
    none = conv_with(None)
    bad = conv_with(PostTest(post=TestAnswer(text="", error="empty reply"), pre=TestAnswer(steps=["x"])))
    nopre = conv_with(
        PostTest(post=good.post, pre=TestAnswer(text="I don't know", error="one line without a step list"))
    )
    r_good, r_none, r_bad, r_nopre = scorers.score([conv_with(good), none, bad, nopre])
    m = r_good.metrics
    assert m[M.STEP_RECALL] == pytest.approx(2 / 3) and m[M.EXTRANEOUS] == pytest.approx(1 / 3)
    assert m[M.ORDER] == 1.0 and m[M.LEARNING_GAIN] == pytest.approx(2 / 3) and 0 < m[M.DETAIL_RECALL] <= 1
    # No post-test, or an answer that is not a step list: never scored (None, not 0).
    assert all(v is None for v in r_none.metrics.values()) and not any("test" in n for n in r_none.notes)
    assert all(v is None for v in r_bad.metrics.values()) and "post-test: empty reply (not scored)" in r_bad.notes
    assert r_nopre.metrics[M.LEARNING_GAIN] is None and r_nopre.metrics[M.STEP_RECALL] == pytest.approx(2 / 3)
    assert r_nopre.metrics[M.DETAIL_GAIN] is None and any("no Learning Gain or Detail Gain" in n for n in r_nopre.notes)
    # Detail Gain: the tutorial's details in the post-test minus those already in the pre-test.
    assert m[M.DETAIL_GAIN] == pytest.approx(m[M.DETAIL_RECALL])  # "Buy a cake" names none of salt/container/paint
    knew = conv_with(PostTest(post=good.post, pre=TestAnswer(steps=["Get salt", "Get a container", "Get paint"])))
    (r_knew,) = scorers.score([knew])
    assert r_knew.metrics[M.DETAIL_GAIN] < m[M.DETAIL_GAIN] and r_knew.metrics[M.DETAIL_GAIN] <= 0


def test_abstentions_score_as_not_recalled_never_as_invented():
    scorers = M.Scorers("default", [M.STEP_RECALL, M.EXTRANEOUS, M.LEARNING_GAIN])
    pre = TestAnswer(steps=["Put salt in a container"])
    nothing = conv_with(PostTest(post=TestAnswer(abstained=3), pre=pre))  # "not taught" on every line
    some = conv_with(PostTest(post=TestAnswer(steps=["Put salt in a container"], abstained=2), pre=pre))
    r_nothing, r_some = scorers.score([nothing, some])
    assert r_nothing.metrics[M.STEP_RECALL] == 0.0 and r_nothing.metrics[M.EXTRANEOUS] is None
    assert r_nothing.metrics[M.LEARNING_GAIN] == pytest.approx(-1 / 3)
    assert r_some.metrics[M.STEP_RECALL] == pytest.approx(1 / 3) and r_some.metrics[M.EXTRANEOUS] == 0.0


def test_posttest_metrics_are_default_mode_only():
    assert set(M.POSTTEST_METRICS) <= set(M.computational_metrics("default")) and not set(M.POSTTEST_METRICS) & set(
        M.computational_metrics("paper")
    )


# ------------------------------------------------------------------------------- evaluate on a paper file


def posttest_reply(prompt):
    if "This was your lesson" in prompt:
        return "1. Fill a container with salt.\n2. Squeeze paint into it."
    if "Before any lesson" in prompt:
        return "1. Buy colored salt."
    return "Understood."


def test_paper_run_file_gets_posttest_metrics_and_nothing_else_changes(tmp_path):
    runner = CliRunner()
    base = ["evaluate", PAPER_FILE, "--no-judge", "--no-figures"]
    plain = runner.invoke(app, [*base, "--out", str(tmp_path / "plain")])
    assert plain.exit_code == 0, plain.output
    with FakeOpenAI(reply=posttest_reply) as srv:
        args = [
            *base,
            "--out",
            str(tmp_path / "pt"),
            "--posttest-learner",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
        ]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        n_calls = len(srv.requests)
        again = runner.invoke(app, args)  # resumed: no post-test is taken twice
        assert again.exit_code == 0 and len(srv.requests) == n_calls
    assert n_calls == 4  # 2 post-tests + 2 pre-tests (two tutorials)
    name = "T-llama3_L-llama3_E-llama3_123"
    before = read_scores(tmp_path / "plain" / name / "scores.jsonl")
    after = read_scores(tmp_path / "pt" / name / "scores.jsonl")
    assert before.keys() == after.keys()
    for cid, rec in after.items():
        other = {k: v for k, v in rec.metrics.items() if k not in M.POSTTEST_METRICS}
        assert other == {k: v for k, v in before[cid].metrics.items() if k not in M.POSTTEST_METRICS}
        assert all(before[cid].metrics[k] is None for k in M.POSTTEST_METRICS)
        assert rec.metrics[M.STEP_RECALL] is not None and rec.metrics[M.LEARNING_GAIN] is not None
    stored = [o for _, o in iter_jsonl(tmp_path / "pt" / name / POSTTESTS)]
    assert len(stored) == 2 and stored[0]["posttest"]["model"] == "openai:fake-model"


def test_posttest_learner_is_refused_in_paper_mode(tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "evaluate",
            PAPER_FILE,
            "--no-judge",
            "--compat",
            "paper",
            "--posttest-learner",
            "local",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 2 and "not part of the paper" in res.output


# ------------------------------------------------------------------ generate -> evaluate -> report, scripted


def classroom_reply(prompt):
    """Teacher prompts get a lesson; the post-test recalls the first step only (plus an invented one)."""
    m = re.search(r"Step (\d+) of (\d+): (.*)", prompt)
    if m and "This was your lesson" not in prompt:
        return f"Step {m.group(1)}: {m.group(3)}"
    if "This was your lesson" in prompt:
        first = re.search(r"Teacher: Step 1: (.*)", prompt)
        return f"1. {first.group(1) if first else 'nothing'}\n2. Sing a song to the moon."
    if "Before any lesson" in prompt:
        return "I have no idea."
    return "Understood, please go to the next step."


def scripted_generate(runner, srv, out, n, *extra):
    res = runner.invoke(
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
            str(n),
            "--retries",
            "0",
            *extra,
        ],
    )
    assert res.exit_code == 0, res.output
    return res


def abstaining_reply(prompt):
    """classroom_reply, except that in wording v3 the learner says it was taught nothing."""
    if "This was your lesson" in prompt and "not taught" in prompt:
        return "1. not taught\n2. not taught"
    return classroom_reply(prompt)


def test_evaluate_posttest_learner_retests_in_another_wording_and_rescores(tmp_path):
    runner = CliRunner()
    run = tmp_path / "run"
    metrics = ["--no-judge", "--no-figures", "--metrics", "Step Recall,Extraneous,Learning Gain"]
    with FakeOpenAI(reply=abstaining_reply) as srv:
        scripted_generate(runner, srv, run, 2)
        out = tmp_path / "scores"
        base = ["evaluate", str(run), *metrics, "--out", str(out), "--base-url", srv.base_url]
        assert runner.invoke(app, base).exit_code == 0
        scores = out / run.name / "scores.jsonl"
        v2 = read_scores(scores)
        assert all(r.metrics[M.STEP_RECALL] > 0 and r.posttest_matching == P.MATCHING for r in v2.values())
        # A line scored under another matching rule is rescored once, whatever else matches.
        first, *rest = scores.read_text().splitlines()
        old = json.loads(first)
        old.update(
            posttest_matching="nearest" if P.MATCHING != "nearest" else "assign",
            metrics={**old["metrics"], "Step Recall": 0.123},
        )
        scores.write_text("\n".join([json.dumps(old), *rest]) + "\n")
        assert runner.invoke(app, base).exit_code == 0 and read_scores(scores) == v2
        n = len(srv.requests)
        same = runner.invoke(app, [*base, "--posttest-learner", "openai:fake-model"])
        assert same.exit_code == 0 and len(srv.requests) == n  # the records' own post-tests: same model, wording
        assert read_scores(scores) == v2
        args = [*base, "--posttest-learner", "openai:fake-model", "--posttest-prompt", "v3"]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        assert len(srv.requests) - n == 4  # 2 post-tests + 2 pre-tests in wording v3
        v3 = read_scores(scores)
        for cid, rec in v3.items():  # rescored from the new post-test, not kept from the v2 line
            assert rec.metrics[M.STEP_RECALL] == 0.0 and rec.metrics[M.EXTRANEOUS] is None
            assert rec.posttest_source.startswith("openai:fake-model v3-") and v2[cid].posttest_source.startswith(
                "openai:fake-model v2-"
            )
        again = runner.invoke(app, args)  # resumed: nothing asked or rescored
        assert again.exit_code == 0 and len(srv.requests) - n == 4 and read_scores(scores) == v3
        back = runner.invoke(app, [*base, "--posttest-learner", "openai:fake-model"])  # v2 again: the records'
        assert back.exit_code == 0 and len(srv.requests) - n == 4
        assert {k: r.metrics for k, r in read_scores(scores).items()} == {k: r.metrics for k, r in v2.items()}


def test_generate_evaluate_report_show_the_posttest(tmp_path):
    runner = CliRunner()
    run = tmp_path / "run"
    with FakeOpenAI(reply=classroom_reply) as srv:
        res = scripted_generate(runner, srv, run, 2)
        assert "post-tests: 2 taken, 0 without a step list" in res.output
        scripted_generate(runner, srv, tmp_path / "plain", 2, "--no-posttest")
    with_test = [o for _, o in iter_jsonl(run / "conversations.jsonl")]
    without = [o for _, o in iter_jsonl(tmp_path / "plain" / "conversations.jsonl")]
    assert all(o["posttest"] for o in with_test) and not any(o["posttest"] for o in without)
    # The post-test changes nothing of the conversation.
    assert [o["conversation"] for o in with_test] == [o["conversation"] for o in without]
    assert len([o for _, o in iter_jsonl(run / PRETESTS)]) == 2
    res = runner.invoke(app, ["evaluate", str(run), "--no-judge", "--no-figures"])
    assert res.exit_code == 0, res.output
    scores = read_scores(run / "scores.jsonl")
    for rec in scores.values():
        assert rec.metrics[M.STEP_RECALL] > 0 and rec.metrics[M.EXTRANEOUS] == pytest.approx(0.5)
        assert rec.metrics[M.LEARNING_GAIN] is None  # the pre-test answer is not a step list: no gain
        assert rec.posttest_matches and rec.posttest_matches[0][:2] == (0, 0)
    assert "Step Recall" in (run / "summary.md").read_text()
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    data = (tmp_path / "site" / "data" / "conv-0000.js").read_text()
    assert '"posttest_matches":[[0,0,' in data and "Sing a song to the moon." in data
    _check_page_in_chromium(tmp_path / "site", next(iter(scores)))


def _check_page_in_chromium(site, cid):
    """The conversation page shows the post-test beside the tutorial: matched steps marked on both sides."""
    import shutil

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not __import__("os").path.exists(chromium):
        pytest.skip("chromium not installed (scripts/setup_browser.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page, errors = browser.new_page(), []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"file://{site}/conversation.html#0/{cid}")
        page.wait_for_selector(".posttest")
        box = page.inner_text(".posttest")
        assert "Post-test" in box and "= step 1" in box and "no tutorial step" in box
        assert page.locator(".steps > ol > li.recalled").count() == 1  # tutorial step 1, recalled
        assert page.locator(".posttest li.extraneous").count() == 1  # the invented step
        browser.close()
    assert errors == []


def test_align_correlates_the_posttest_with_the_human_ratings():
    from wikihowagent.alignment import schema
    from wikihowagent.alignment.core import automatic_correlations
    from wikihowagent.alignment.sources import LLMScores, ScoreRow

    rng = np.random.default_rng(1)
    ids = [f"c{i}" for i in range(30)]
    ROW_NAMES = schema.row_names()
    human = rng.uniform(1, 5, size=(30, len(ROW_NAMES)))
    llm = LLMScores(
        rows={
            c: ScoreRow(
                c,
                np.full(schema.n_metrics(), np.nan),
                automatic={
                    M.STEP_RECALL: float(human[i, 0] / 5),  # known truth: a linear function of the first rubric
                    **({M.LEARNING_GAIN: float(rng.uniform())} if i % 2 else {}),
                },
            )
            for i, c in enumerate(ids)
        }
    )
    res = automatic_correlations(llm, ids, human, n_boot=200, seed=0)
    first = res[(M.STEP_RECALL, ROW_NAMES[0])]
    assert first.n == 30 and first.coefs["pearson"].value == pytest.approx(1.0)
    assert abs(res[(M.STEP_RECALL, ROW_NAMES[1])].coefs["pearson"].value) < 0.5
    assert res[(M.LEARNING_GAIN, ROW_NAMES[0])].n == 15  # only where the metric was computed


def test_align_correlates_a_posttest_without_a_judge_with_the_human_overall(tmp_path):
    """evaluate --posttest-learner --metrics <post-test> (no judge): the human Overall is the mean of every rated
    rubric (the judge's Overall covers only rubrics both sides have, none here), and the named scores are used."""
    from wikihowagent.alignment import schema
    from wikihowagent.alignment.core import automatic_correlations
    from wikihowagent.alignment.named import unused_inputs
    from wikihowagent.alignment.problems import Problems
    from wikihowagent.alignment.sources import LLMScores, ScoreRow

    rng = np.random.default_rng(2)
    ids = [f"c{i}" for i in range(20)]
    k = schema.n_metrics()
    human = np.full((20, k + 1), np.nan)
    human[:, :k] = rng.uniform(1, 5, size=(20, k))
    human[3, 2] = np.nan  # a blank cell: the mean of the others
    truth = np.nanmean(human[:, :k], axis=1)
    llm = LLMScores(
        rows={
            c: ScoreRow(c, np.full(k, np.nan), automatic={M.LEARNING_GAIN: float(truth[i] / 5)})
            for i, c in enumerate(ids)
        },
        by_source={str(tmp_path / "scores.jsonl"): ids},
    )
    overall = automatic_correlations(llm, ids, human, n_boot=100, seed=0)[(M.LEARNING_GAIN, schema.OVERALL)]
    assert overall.n == 20 and overall.coefs["pearson"].value == pytest.approx(1.0)
    (tmp_path / "scores.jsonl").write_text("")
    assert unused_inputs([], [tmp_path / "scores.jsonl"], [], llm, Problems()) == []


def attentive_reply(prompt):
    """The post-test recalls every step the teacher taught in the conversation shown."""
    if "This was your lesson" in prompt:
        taught = re.findall(r"Teacher: Step \d+: (.*)", prompt)
        return "\n".join(f"{i}. {t}" for i, t in enumerate(taught, 1)) or "I learned nothing."
    return classroom_reply(prompt)


def test_judge_check_posttest_validity(tmp_path):
    runner = CliRunner()
    run = tmp_path / "run"
    with FakeOpenAI(reply=attentive_reply) as srv:
        scripted_generate(runner, srv, run, 4)
        n = len(srv.requests)
        args = [
            "judge-check",
            str(run),
            "--out",
            str(tmp_path / "check"),
            "--posttest-learner",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
        ]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        assert "skip_steps: post-test recall lower" in res.output and "teacher's Step Coverage 1.00 ->" in res.output
        # The originals' post-tests come from the records (same model): only the perturbed copies are asked.
        assert len(srv.requests) - n == 8
        again = runner.invoke(app, args)
        assert again.exit_code == 0 and len(srv.requests) - n == 8  # resumed: nothing asked twice
        # Another wording: the records' v2 post-tests do not count; originals and copies are asked anew.
        v3 = runner.invoke(app, [*args, "--posttest-prompt", "v3"])
        assert v3.exit_code == 0 and len(srv.requests) - n == 8 + 12, v3.output
        prompts = [r["messages"][-1]["content"] for r in srv.requests[-12:]]
        assert all("not taught" in p for p in prompts)
    assert "post-test prompt v3" in (tmp_path / "check" / "posttest_validity.md").read_text()
    versions = {
        json.loads(line)["posttest"]["prompt_version"][:2]
        for line in (tmp_path / "check" / POSTTESTS).read_text().splitlines()
    }
    assert versions == {"v2", "v3"}
    table = (tmp_path / "check" / "posttest_validity.csv").read_text().splitlines()
    assert table[0].startswith("perturbation,n,accuracy")
    rows = {r.split(",")[0]: r.split(",") for r in table[1:]}
    assert set(rows) == {"skip_steps", "off_topic"}
    assert all(float(r[2]) == 1.0 and r[1] == "4" for r in rows.values())
    assert table[0].endswith(",abstained_original,abstained_perturbed,coverage_original,coverage_perturbed")
    assert all(float(r[-3]) == float(r[-4]) == 0.0 for r in rows.values())  # this scripted learner never abstains
    assert all(0.0 <= float(r[-1]) <= float(r[-2]) <= 1.0 for r in rows.values())  # teaching removed, not added


def test_validity_table_reports_abstentions():
    from wikihowagent.judge.rubric_judge import load_rubrics
    from wikihowagent.judgecheck.perturbations import load_perturbations
    from wikihowagent.judgecheck.posttest_check import abstained_shares, validity_table

    perts = [p for p in load_perturbations(None, list(load_rubrics(None))) if p.name == "skip_steps"]
    tests = {
        ("a", "original"): PostTest(post=TestAnswer(steps=["x", "y", "z", "w"])),
        ("a", "skip_steps"): PostTest(post=TestAnswer(steps=["x", "y"], abstained=2)),
        ("b", "original"): PostTest(post=TestAnswer(steps=["x"], abstained=1)),
        ("b", "skip_steps"): PostTest(post=TestAnswer(abstained=2)),
        ("c", "original"): PostTest(post=TestAnswer(error="empty reply")),
        ("c", "skip_steps"): PostTest(post=TestAnswer(steps=["x"])),
    }
    recalls = {
        ("a", "original"): 1.0,
        ("a", "skip_steps"): 0.5,
        ("b", "original"): 0.25,
        ("b", "skip_steps"): 0.0,
        ("c", "original"): None,
        ("c", "skip_steps"): 0.25,
    }
    shares = abstained_shares(tests)
    assert shares == {
        ("a", "original"): 0.0,
        ("a", "skip_steps"): 0.5,
        ("b", "original"): 0.5,
        ("b", "skip_steps"): 1.0,
        ("c", "skip_steps"): 0.0,
    }
    (row,) = validity_table(recalls, perts, None, {"abstained": shares}).to_dict("records")
    assert row["n"] == 2 and row["accuracy"] == 1.0 and row["failed"] == 1
    assert row["abstained_original"] == 0.25 and row["abstained_perturbed"] == 0.5
    assert row["coverage_original"] is None and row["coverage_perturbed"] is None  # not given: not made up


def test_coverage_tells_a_skip_steps_copy_that_removed_teaching_from_one_that_did_not():
    """A teacher that states every step in the turn tagged with it loses half its Step Coverage in the
    skip_steps copy; one that states them all in its first turn (as the embedded 1.5B teacher tends to) loses
    none, so that pair cannot test the post-test, and the validity table says so."""
    from wikihowagent.judge.rubric_judge import load_rubrics
    from wikihowagent.judgecheck.perturbations import load_perturbations
    from wikihowagent.judgecheck.posttest_check import PostTestCheck, coverages, validity_table, variants

    steps = ["Fill the pot with water.", "Add the salt.", "Heat the water until it boils.", "Serve the soup hot."]

    def conv(cid: str, teacher: list[str]) -> Conversation:
        msgs = [Turn(role="teacher", text="Let's begin. BEGIN", kind="begin", step=0)]
        for i, text in enumerate(teacher):
            msgs += [Turn(role="teacher", text=text, step=i), Turn(role="learner", text="OK.", step=i)]
        msgs.append(Turn(role="teacher", text="That's all. FINISHED", kind="finish", step=len(teacher) - 1))
        return Conversation.from_turns(msgs, steps, "Soup", completed=True, conversation_id=cid, run="r", where="x")

    stepwise = conv("stepwise", steps)
    upfront = conv("upfront", [" ".join(steps), "Any questions?", "Take your time.", "Enjoy."])
    perts = [p for p in load_perturbations(None, list(load_rubrics(None))) if p.name == "skip_steps"]
    jobs = variants([stepwise, upfront], perts, PostTestCheck())
    cov = coverages(jobs)
    assert cov[("stepwise", "original")] == 1.0 and cov[("stepwise", "skip_steps")] == 0.5
    assert cov[("upfront", "original")] == cov[("upfront", "skip_steps")] == 1.0
    recalls = {k: 1.0 if k[1] == "original" else 0.5 for k in cov}
    (row,) = validity_table(recalls, perts, None, {"coverage": cov}).to_dict("records")
    assert row["coverage_original"] == 1.0 and row["coverage_perturbed"] == 0.75


@pytest.mark.parametrize("command", [["evaluate", PAPER_FILE, "--no-judge"], ["judge-check", f"{FIXTURES}/run_small"]])
def test_posttest_prompt_without_a_learner_is_one_line(tmp_path, command):
    res = CliRunner().invoke(app, [*command, "--posttest-prompt", "v3", "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "--posttest-prompt: give --posttest-learner" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["generate", "--teacher", "openai:fake-model", "--max-tutorials", "1"],
        ["evaluate", PAPER_FILE, "--no-judge", "--posttest-learner", "openai:fake-model"],
        ["judge-check", f"{FIXTURES}/run_small", "--posttest-learner", "openai:fake-model"],
    ],
)
def test_unknown_posttest_prompt_is_one_line(tmp_path, command):
    res = CliRunner().invoke(
        app, [*command, "--posttest-prompt", "v9", "--out", str(tmp_path / "out")], env={"OPENAI_API_KEY": "unused"}
    )
    assert res.exit_code != 0 and "--posttest-prompt 'v9': not a post-test prompt (known: v2, v3)" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


def test_shards_keep_their_pretests_and_merge_joins_them(tmp_path):
    runner = CliRunner()
    run = tmp_path / "run"
    with FakeOpenAI(reply=classroom_reply) as srv:
        for k in range(2):
            scripted_generate(runner, srv, run, 3, "--shard", f"{k}/2")
    assert runner.invoke(app, ["merge", str(run)]).exit_code == 0
    keys = [o["tutorial_key"] for _, o in iter_jsonl(run / PRETESTS)]
    assert len(keys) == 3 == len(set(keys))


def test_paper_preset_leaves_the_posttest_out():
    from wikihowagent.config import load_config
    from wikihowagent.presets import preset_config

    assert load_config().workflow.posttest is True
    assert load_config(preset=preset_config("paper")).workflow.posttest is False


def test_unknown_posttest_learner_is_one_line(tmp_path):
    res = CliRunner().invoke(
        app, ["evaluate", PAPER_FILE, "--no-judge", "--posttest-learner", "nosuchprovider:x", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "--posttest-learner 'nosuchprovider:x'" in res.output
    assert "Traceback" not in res.output


def test_post_tester_caches_pretests_in_the_directory_and_closes_the_file(tmp_path):
    import gc
    import warnings

    from wikihowagent.workflow.posttest import get_prompt, post_tester

    model = ScriptedChatModel(script=lambda p: "1. Boil water.\n2. Add the egg.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with post_tester(model, "scripted", tmp_path, get_prompt("v3")) as tester:
            test = asyncio.run(tester.run("k1", "Boil an Egg", "Boiling", [], 2))
        del tester
        gc.collect()
    assert test.model == "scripted" and test.prompt_version == get_prompt("v3").version
    assert test.pre is not None and test.pre.steps == ["Boil water.", "Add the egg."]
    assert PretestCache(tmp_path).get("scripted", "k1", get_prompt("v3").version) == test.pre  # stored, read back
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]  # pretests.jsonl was closed


def test_post_testers_are_made_in_one_place():
    """generate, evaluate and judge-check make their PostTester with workflow/posttest.py `post_tester` (model,
    learner spec, the directory of the pre-test cache, wording), never by hand."""
    import ast
    from pathlib import Path

    import wikihowagent

    pkg = Path(wikihowagent.__file__).parent
    made = []
    for path in sorted(pkg.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "PostTester":
                made.append(f"{path.relative_to(pkg)}:{node.lineno}")
    drawn = [m for m in made if m.startswith("workflow/graph.py:")]  # the graph drawing's stand-in, never run
    assert len(drawn) == 1 and [m for m in made if m not in drawn and not m.startswith("workflow/posttest.py:")] == []


@pytest.mark.parametrize("concurrency", [1, 3])
def test_evaluate_posttests_keep_to_the_learners_concurrency(tmp_path, concurrency):
    """`evaluate --posttest-learner` and `judge-check --posttest-learner` ask at most --concurrency tests at once
    (the embedded model's default is its one slot): unbounded, every test queued at the server and its latency_s
    counted the wait."""
    import threading
    import time

    runner = CliRunner()
    run = tmp_path / "run"
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slow_reply(prompt):
        if "This was your lesson" not in prompt:
            return classroom_reply(prompt)
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        return classroom_reply(prompt)

    with FakeOpenAI(reply=slow_reply) as srv:
        scripted_generate(runner, srv, run, 4, "--no-posttest")
        args = ["evaluate", str(run), "--no-judge", "--no-figures", "--out", str(tmp_path / "scores")]
        args += ["--base-url", srv.base_url, "--posttest-learner", "openai:fake-model"]
        res = runner.invoke(app, [*args, "--concurrency", str(concurrency)])
        assert res.exit_code == 0, res.output
        evaluate_most, state["most"] = state["most"], 0
        check = ["judge-check", str(run), "--out", str(tmp_path / "check"), "--base-url", srv.base_url]
        res = runner.invoke(app, [*check, "--posttest-learner", "openai:fake-model", "--concurrency", str(concurrency)])
        assert res.exit_code == 0, res.output
    assert len(read_posttests(tmp_path / "scores" / run.name / "posttests.jsonl")) == 4
    for most in (evaluate_most, state["most"]):  # evaluate's post-tests, then judge-check's
        assert most == 1 if concurrency == 1 else 1 < most <= 3
