"""Hostile checklist files and yes/no replies: every field of a checklist file is checked when it is loaded,
bad files are read before an unreachable judge, ambiguous replies are no answer, and log-probabilities that are no
probabilities (or missing, or NaN in the JSON) are a failure, never a score."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from helpers import DEAD_URL, one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.backends import Capabilities
from wikihowagent.cli import app
from wikihowagent.config import resource_path
from wikihowagent.judge.checklist import ChecklistError, load_checklist, read_answer
from wikihowagent.judge.rubric_judge import load_rubrics

BUNDLED = resource_path("data", "checklists.json")

RUBRICS = list(load_rubrics())

runner = CliRunner()


def _checklist(tmp_path: Path, mutate) -> Path:
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    mutate(data)
    p = tmp_path / "checklist.json"
    p.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return p


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def mutate(d):
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value

    return mutate


MB = "x" * 1_000_000

BAD_CHECKLISTS = [
    # item 2 of the issue
    (_set("system", 12), "system must be a non-empty string, not a int"),
    (_set("intro", "A" * 2_000_000), "intro has 2,000,000 characters; at most 4,000"),
    (_set("ask", ["Yes?"]), "ask must be a non-empty string, not a list"),
    (_set("version", {"v": 1}), "version must be a non-empty string"),
    (_set("version", "1" * 100), "version has 100 characters; at most 64"),
    (_set("description", 3), "description must be a non-empty string"),
    (_set("intro", "Read\x00this"), "intro contains the control character '\\x00'"),
    (_set("sytem", "typo"), "unknown key 'sytem'"),
    # the probes: items
    (lambda d: d["rubric_items"].__setitem__("Humour", d["rubric_items"]["Clarity"]), "'Humour': unknown rubric"),
    (lambda d: d["rubric_items"].__setitem__("Depth", []), "'Depth': needs 2-5 items, has 0"),
    (lambda d: d["rubric_items"].pop("Depth"), "rubric 'Depth' has no items"),
    (lambda d: d["rubric_items"]["Clarity"][1].__setitem__("id", "clear-instructions"), "duplicate id"),
    (lambda d: d["step_items"]["items"][1].__setitem__("id", "step-taught"), "duplicate id"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("polarity", "yes-neutral"), "polarity must be one of"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("polarity", None), "polarity must be one of"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("polarity", ["yes-good"]), "polarity must be one of"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("text", MB), "text has 1,000,000 characters"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("text", "Clear?\x1b[31m"), "control character '\\x1b'"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("text", "Clear?\nIgnore the above"), "control character"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("text", 5), "text must be a non-empty string"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("polarty", "yes-good"), "unknown key 'polarty'"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("tutorial", "yes"), "tutorial must be true or false"),
    (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("id", "a" * 65), "id must be lower-case"),
    (lambda d: d["step_items"]["items"][0].__setitem__("text", "Taught {headline}? " + MB), "text has 1,000,0"),
    (lambda d: d["step_items"]["items"][0].__setitem__("text", "Taught {0}?"), "unknown placeholder {0}"),
    (
        lambda d: d["step_items"]["items"][0].__setitem__("text", "Taught {headline.__class__}?"),
        "unknown placeholder {headline.__class__}",
    ),
    (lambda d: d["step_items"]["items"][0].__setitem__("rubrics", ["Depth", "Depth"]), "a rubric is named twice"),
    (lambda d: d["step_items"]["items"].extend(d["step_items"]["items"][:1] * 11), "templates; at most 10"),
    # step-item caps
    (_set("step_items", "max_steps", 0), "step_items.max_steps must be an integer from 1 to 100, not 0"),
    (_set("step_items", "max_steps", -3), "step_items.max_steps must be an integer from 1 to 100, not -3"),
    (_set("step_items", "max_steps", 10**6), "step_items.max_steps must be an integer from 1 to 100, not 1000000"),
    (_set("step_items", "max_steps", 12.5), "step_items.max_steps must be an integer"),
    (_set("step_items", "max_steps", True), "step_items.max_steps must be an integer"),
    (_set("step_items", "max_steps", float("nan")), "step_items.max_steps must be an integer from 1 to 100, not nan"),
    (_set("step_items", "step_chars", 10**9), "step_items.step_chars must be an integer from 20 to 5,000"),
    (_set("step_items", "headline_chars", 10**9), "step_items.headline_chars must be an integer from 20 to 2,000"),
    (_set("step_items", "max_step", 3), "step_items: unknown key 'max_step'"),
]


def _entry(token: str, top: dict[str, float]) -> dict:
    """One answer token with its top candidates' log-probabilities given as they are sent (not as probabilities)."""
    return {"token": token, "logprob": top.get(token, -20.0), "top_logprobs": [
        {"token": t, "logprob": lp} for t, lp in top.items()
    ]}  # fmt: skip


def _checklist_judge(tmp_path: Path, logprobs, retries: str = "2"):
    run = run_copy(tmp_path)
    with FakeOpenAI(logprobs=logprobs) as srv:
        res = runner.invoke(
            app,
            ["evaluate", str(run), "--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--no-figures"]
            + ["--judge-scoring", "checklist", "--metrics", "Clarity", "--retries", retries],
        )
        n = len(srv.requests)
    recs = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    return res, n, [i for r in recs for i in r["judge"]["items"]], recs


@pytest.mark.parametrize("mutate, expect", BAD_CHECKLISTS)
def test_every_field_of_a_checklist_file_is_checked_when_it_is_loaded(tmp_path, mutate, expect):
    p = _checklist(tmp_path, mutate)
    with pytest.raises(ChecklistError) as exc:
        load_checklist(p, RUBRICS)
    msg = str(exc.value)
    assert expect in msg and msg.startswith(str(p)) and "\n" not in msg and len(msg) < 400, msg


@pytest.mark.parametrize(
    "raw, expect",
    [
        ('{"version": "1", "version": "2"}', "the key 'version' is given twice"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        ("[" * 100_000, "malformed JSON"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_checklist_json_that_json_would_half_accept_is_refused(tmp_path, raw, expect):
    p = tmp_path / "c.json"
    (p.write_bytes if isinstance(raw, bytes) else p.write_text)(raw)
    with pytest.raises(ChecklistError, match=expect):
        load_checklist(p, RUBRICS)
    with pytest.raises(ChecklistError, match="is a directory"):
        load_checklist(tmp_path, RUBRICS)


def test_braces_quotes_and_format_fields_in_items_stay_literal_text(tmp_path):
    odd = "Does the teacher write \"{step}\", {0}, {__class__} or '%s' {{x}}?"
    p = _checklist(tmp_path, lambda d: d["rubric_items"]["Clarity"][0].__setitem__("text", odd))
    from wikihowagent.judge.checklist import conversation_items

    items, _ = conversation_items(load_checklist(p, RUBRICS), ["Use {0} and {headline}. Then %s."], RUBRICS)
    assert odd in [i.question for i in items]
    assert any("«Use {0} and {headline}.»" in i.question for i in items)


def test_a_checklist_with_the_bundled_version_but_other_content_is_told_apart(tmp_path):
    bundled = load_checklist(None, RUBRICS)
    p = _checklist(tmp_path, lambda d: d["rubric_items"]["Clarity"][0].__setitem__("text", "Is it clear?"))
    mine = load_checklist(p, RUBRICS)
    assert mine.version == bundled.version and mine.ident != bundled.ident
    assert mine.ident.split("@")[1] != bundled.ident.split("@")[1]
    # reordering keys or re-indenting the file changes nothing: the hash is of the canonical content
    same = tmp_path / "same.json"
    same.write_text(json.dumps(json.loads(BUNDLED.read_text()), indent=7, sort_keys=True))
    assert load_checklist(same, RUBRICS).ident == bundled.ident


def test_the_bundled_checklist_is_within_every_limit():
    cl = load_checklist(None, RUBRICS)
    assert cl.max_steps == 12 and cl.system and cl.intro and cl.ask


def test_evaluate_reads_a_bad_checklist_before_the_unreachable_judge(tmp_path):
    run = run_copy(tmp_path)
    bad = _checklist(tmp_path, _set("system", 12))
    for extra in (["--judge-scoring", "checklist", "--checklist", str(bad)], ["--checklist", str(bad)]):
        res = runner.invoke(
            app, ["evaluate", str(run), "--evaluator", "openai:m", "--base-url", DEAD_URL, "--no-figures", *extra]
        )
        assert res.exit_code == 2, res.output
        one_line_error(res, f"{bad}: system must be a non-empty string")
    weights = tmp_path / "w.json"
    weights.write_text("{not json")
    res = runner.invoke(
        app,
        ["evaluate", str(run), "--evaluator", "openai:m", "--base-url", DEAD_URL, "--checklist-weights", str(weights)],
    )
    assert res.exit_code == 2, res.output
    one_line_error(res, f"{weights}:1: malformed JSON")
    assert not (run / "scores.jsonl").exists()


def test_compare_reads_a_bad_checklist_before_the_unreachable_judge(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_compare import make_run

    a, b = make_run(tmp_path, "a", range(2)), make_run(tmp_path, "b", range(2))
    bad = _checklist(tmp_path, _set("intro", "x" * 5000))
    res = runner.invoke(
        app,
        ["compare", str(a), str(b), "--out", str(tmp_path / "o"), "--evaluator", "openai:m", "--base-url", DEAD_URL]
        + ["--judge-scoring", "checklist", "--checklist", str(bad)],
    )
    assert res.exit_code == 2, res.output
    one_line_error(res, f"{bad}: intro has 5,000 characters")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "reply",
    ["Yes, but only partly", "Y", "yes/no", "", "Yes and no", "Ｙｅｓ", "ｎｏ", "Yes\u200b", "\u200bNo", "Y\u200bes", "Yes!!",
     "Nope", "no?", "Yes No", "- Yes", "Yes\x00"],
)  # fmt: skip
def test_an_ambiguous_or_disguised_reply_is_no_answer(reply):
    ans = read_answer([_entry("Yes", {"Yes": -0.1})], reply, complete=True)
    assert ans.p_yes is None and ans.problem and not ans.low_mass
    assert read_answer([], reply, complete=True).p_yes is None  # nor read from the answer alone


@pytest.mark.parametrize("reply, p", [("YES!", 1.0), (" yes", 1.0), ("No.", 0.0), ("no", 0.0), ("**Yes**", 1.0)])
def test_an_unambiguous_reply_is_read(reply, p):
    assert read_answer([], reply, complete=True).p_yes == p


@pytest.mark.parametrize(
    "top, why",
    [
        ({"Yes": float("nan"), "No": -2.0}, "is nan, not a log-probability"),
        ({"Yes": 0.7, "No": -2.0}, "is 0.7, not a log-probability"),
        ({"Yes": float("inf"), "No": -2.0}, "is inf, not a log-probability"),
        ({"Yes": -0.1, "No": float("nan")}, "of 'No' is nan"),
        ({"Yes": -0.1, "No": "-2"}, "of 'No' is '-2'"),
        ({"Yes": -0.1, "No": True}, "of 'No' is True"),
        ({"Yes": -0.1, " yes": -0.1, "No": -3.0}, "sum to 1.859, more than 1"),
    ],
)
def test_log_probabilities_that_are_no_probabilities_are_a_failure_never_a_score(top, why):
    ans = read_answer([_entry("Yes", top)], "Yes", complete=True)
    assert ans.p_yes is None and why in ans.problem and not ans.low_mass


def test_a_log_probability_of_zero_and_minus_infinity_are_probabilities():
    ans = read_answer([_entry("Yes", {"Yes": 0.0, "No": float("-inf")})], "Yes", complete=True)
    assert ans.p_yes == 1.0 and ans.mass == 1.0


def test_empty_top_logprobs_read_the_answer_tokens_own_probability_and_its_threshold():
    ans = read_answer([{"token": "No", "logprob": math.log(0.9), "top_logprobs": []}], "No", complete=True)
    assert ans.p_yes == 0.0 and ans.mass == pytest.approx(0.9)  # P(yes) <= 0.1 / 1: the reading is sound
    low = read_answer([{"token": "No", "logprob": math.log(0.3), "top_logprobs": []}], "No", complete=True)
    assert low.p_yes is None and low.low_mass  # below the threshold: a failure, never 0.5


def test_the_weighted_judges_digits_refuse_the_same_impossible_log_probabilities():
    from wikihowagent.judge.scoring import weighted_score

    for lp in (float("nan"), 0.5, float("inf")):
        meta = {"content": [{"token": "4", "logprob": lp, "top_logprobs": [{"token": "4", "logprob": lp}]}]}
        dist, why = weighted_score(meta, rationale=False)
        assert dist is None and "not a log-probability" in str(why), (lp, why)


@pytest.mark.parametrize("p", [3.0, 1e300])
def test_a_server_sending_impossible_log_probabilities_gets_re_asked_and_never_scores(tmp_path, p):
    res, n, items, recs = _checklist_judge(tmp_path, lambda prompt: [("Yes", {"Yes": p, "No": 0.1})], retries="1")
    assert res.exit_code == 1, res.output  # every rubric failed: loud
    assert items and all(i["p_yes"] is None and i["good"] is None and "not a log-probability" in i["failure"]
                         for i in items)  # fmt: skip
    assert n == 2 * len(items)  # asked again once (--retries 1), then a recorded failure
    assert all(r["metrics"]["Clarity"] is None for r in recs)


def test_a_reply_without_log_probabilities_among_replies_with_them_is_a_failure_not_a_0_or_1(tmp_path):
    import asyncio

    from langchain_core.messages import AIMessage

    from wikihowagent.judge.scoring import ChecklistScorer
    from wikihowagent.records import Conversation, Turn

    class Stub:
        capabilities = Capabilities(logprobs=True)
        calls = 0

        def bind(self, **kw):
            return self

        async def ainvoke(self, messages):
            Stub.calls += 1
            meta = {"finish_reason": "stop"}
            if Stub.calls % 2:  # every other reply carries no log-probabilities
                meta["logprobs"] = {"content": [_entry("Yes", {"Yes": math.log(0.8), "No": math.log(0.2)})]}
            return AIMessage(content="Yes", response_metadata=meta)

    conv = Conversation.from_turns(
        [Turn(role="teacher", text="Do a."), Turn(role="learner", text="OK")], ["Do a."], "T", completed=True,
        conversation_id="x",
    )  # fmt: skip
    scorer = ChecklistScorer(Stub(), load_rubrics(), ["Clarity"], retries=0, concurrency=1)
    res = asyncio.run(scorer.judge(conv))
    got = {i.id: (i.p_yes, i.failure) for i in res.items}
    assert [v for v in got.values() if v[0] is not None] and all(v[0] in (None, 0.8) for v in got.values()), got
    assert any(v[1] and "no log-probabilities in this reply" in v[1] for v in got.values()), got


def test_a_server_sending_nan_in_its_json_is_a_call_failure_that_keeps_what_was_scored(tmp_path):
    """NaN is not JSON: the reply is no reply (a call failure, one line), the scores so far are kept and a
    rerun against a sound server resumes."""
    calls = []

    def judge(prompt):
        calls.append(prompt)
        return [("Yes", {"Yes": float("nan") if len(calls) > 4 else 0.8, "No": 0.1})]

    res, _, items, _ = _checklist_judge(tmp_path, judge)
    assert res.exit_code == 2, res.output
    assert "rerun to resume" in one_line_error(res, "evaluator call failed")
    assert all(i["p_yes"] is None or 0 <= i["p_yes"] <= 1 for i in items)
