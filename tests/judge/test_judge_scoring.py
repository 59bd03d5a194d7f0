"""--judge-scoring weighted|json|sampled, --judge-rationale, the parser's echo rule, re-judging failed rubrics."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.backends import Capabilities
from wikihowagent.judge.rubric_judge import parse_scores
from wikihowagent.judge.scoring import SCORE_TOKENS, text_score, weighted_score
from wikihowagent.testing import ScriptedChatModel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"


def flat(text: str) -> str:
    return " ".join(text.split())


def entries(*positions):
    """[(token, {candidate: p})] -> OpenAI logprobs content."""
    return {
        "content": [
            {
                "token": tok,
                "logprob": math.log(top.get(tok, 1e-9)),
                "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top.items()],
            }
            for tok, top in positions
        ]
    }


def test_weighted_mean_renormalised_over_digits():
    dist, why = weighted_score(entries(("4", {"4": 0.5, "5": 0.3, "3": 0.1, "The": 0.1})), rationale=False)
    assert why is None
    assert dist.mass == pytest.approx(0.9)
    assert dist.probs == pytest.approx([0, 0, 0.1 / 0.9, 0.5 / 0.9, 0.3 / 0.9])
    assert dist.mean == pytest.approx((3 * 0.1 + 4 * 0.5 + 5 * 0.3) / 0.9)
    assert dist.argmax == 4


def test_weighted_split_tokenisation_and_space_prefixed_digits():
    # a separate whitespace token first, then " 4" and "4" both counted as 4
    dist, why = weighted_score(
        entries((" ", {" ": 0.9, "4": 0.1}), ("4", {" 4": 0.4, "4": 0.2, " 5": 0.4})), rationale=False
    )
    assert why is None
    assert dist.probs == pytest.approx([0, 0, 0, 0.6, 0.4])
    assert dist.mean == pytest.approx(4.4)
    # a short label before the digit is allowed ("Clarity: 3")
    dist, _ = weighted_score(
        entries(("Cl", {"Cl": 1.0}), ("arity", {"arity": 1.0}), (":", {":": 1.0}), (" 3", {" 3": 0.5, " 2": 0.5})),
        rationale=False,
    )
    assert dist.mean == pytest.approx(2.5)


def test_weighted_rationale_reads_the_final_score_token():
    reply = [
        ("The", {"The": 1.0}),
        (" teacher", {" teacher": 1.0}),
        (" gave", {" gave": 1.0}),
        (" 5", {" 5": 0.9, " 4": 0.1}),
        (" steps", {" steps": 1.0}),
        (".", {".": 1.0}),
        ("\n", {"\n": 1.0}),
        ("Score", {"Score": 1.0}),
        (":", {":": 1.0}),
        (" ", {" ": 1.0}),
        ("2", {"2": 0.8, "3": 0.2}),
    ]
    dist, why = weighted_score(entries(*reply), rationale=True)
    assert why is None and dist.mean == pytest.approx(2.2) and dist.argmax == 2
    # without a final "Score: k" the earlier digit is not taken
    dist, why = weighted_score(entries(*reply[:6]), rationale=True)
    assert dist is None and "Score: k" in why


def test_weighted_low_digit_mass_and_prose_are_failures():
    dist, why = weighted_score(entries(("4", {"4": 0.2, "The": 0.8})), rationale=False)
    assert dist is None and "threshold" in why
    dist, why = weighted_score(
        entries(("The", {"The": 1.0}), (" score", {" score": 1.0}), (" is", {" is": 1.0}), (" 4", {" 4": 1.0})),
        rationale=False,
    )
    assert dist is None and "single score digit" in why


def _tok(*pieces):
    """Certain tokens, the first digit with some doubt: [("1", {"1": .9, "2": .1}), ("0", {"0": 1.0})]."""
    out, doubt = [], True
    for t in pieces:
        if doubt and t.strip() in "12345" and t.strip():
            out.append((t, {t: 0.9, "2" if t.strip() != "2" else "3": 0.1}))
            doubt = False
        else:
            out.append((t, {t: 1.0}))
    return out


@pytest.mark.parametrize(
    "pieces",
    [
        ("1", "0"),
        ("3", "/", "1", "0"),
        ("2", ".", "5"),
        ("4", " because", " it"),
        ("Clarity", ":", " ", "4", "/", "5"),
        ("3", "/", "5", ":", " ", "4"),
    ],
)
def test_weighted_digit_followed_by_more_is_not_a_score(pieces):
    # a tokenizer that splits numbers into digits (Qwen's) writes "10" as "1", "0": the "1" is not a score
    dist, why = weighted_score(entries(*_tok(*pieces)), rationale=False)
    assert dist is None and "single score digit" in why, (pieces, dist)


def test_weighted_digit_closed_by_end_of_text_or_line_break():
    # what the embedded Qwen answers: the digit, then its end-of-text token (an empty string), finish "stop"
    dist, why = weighted_score(entries(("5", {"5": 0.6, "4": 0.3, "3": 0.1}), ("", {"": 1.0})), rationale=False)
    assert why is None and dist.argmax == 5
    # a line break closes the score even when the token limit cut the reply afterwards
    dist, why = weighted_score(entries(*_tok("4", "\n", "The", " teacher")), rationale=False, complete=False)
    assert why is None and dist.argmax == 4
    for ok in (("4", "."), ("**", "4", "**"), ("Clarity", ":", " ", "3")):
        assert weighted_score(entries(*_tok(*ok)), rationale=False)[1] is None, ok
    # cut off right after the digit: what followed is unknown, so no score
    dist, why = weighted_score(entries(*_tok(" ", "4")), rationale=False, complete=False)
    assert dist is None and "cut off" in why
    # with a rationale, the final "Score: k" must close its line too
    dist, why = weighted_score(entries(*_tok("Good", ".", "\n", "Score", ":", " ", "3", "/", "5")), rationale=True)
    assert dist is None and "Score: k" in why


def _rubric_fake(reply):
    return lambda prompt: [
        (tok, {tok: 0.9, "5" if tok != "5" else "4": 0.1} if tok.strip().isdigit() else {tok: 1.0}) for tok in reply
    ]


@pytest.mark.parametrize("reply", [["1", "0"], ["3", "/", "1", "0"], ["2", ".", "5"]], ids=["10", "3/10", "2.5"])
def test_evaluate_weighted_counts_number_replies_as_failures_and_asks_again(tmp_path, reply):
    run = _run(tmp_path)
    with FakeOpenAI(logprobs=_rubric_fake(reply)) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--metrics",
                "Clarity",
            ]
        )
        asked = len(srv.requests)
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert all(r["metrics"]["Clarity"] is None and r["judge"]["failures"] == ["Clarity"] for r in recs), recs
    assert "0 of 3 rubric scores read, 3 failed" in flat(res.output), res.output
    assert asked == 3 * 3  # each conversation's rubric asked three times (two retries)
    assert res.exit_code == 1


def test_evaluate_weighted_reads_label_digit_end_of_text_within_the_token_limit(tmp_path):
    run = _run(tmp_path)
    with FakeOpenAI(logprobs=_rubric_fake(["Clarity", ":", " ", "4", ""])) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--metrics",
                "Clarity",
            ]
        )
    assert res.exit_code == 0, res.output
    assert "3 of 3 rubric scores read, 0 failed" in flat(res.output), res.output


def test_sampled_reply_parsing():
    assert text_score(" 4", False) == 4 and text_score("Score: 3", False) == 3
    assert text_score("I think 4 or 5", False) is None
    assert text_score("The teacher gave 5 steps.\nScore: 2", True) == 2
    for bad in ("10", "3/10", "2.5", "4 because it is clear", "Score: 4/5", "3/5: 4"):
        assert text_score(bad, False) is None, bad
    assert text_score("Good.\nScore: 3/5", True) is None and text_score("Score: 4.5", True) is None
    assert text_score("4\nThe teacher", False, complete=False) == 4 and text_score("4.", False) == 4
    assert text_score("Score: 4", False, complete=False) is None  # cut off: "/5" may have followed


# ---------------------------------------------------------------------------- reading judge replies


def test_parser_ignores_echoed_rubric_levels():
    reply = "Clarity:\n5 - Excellent\n1 - Very poor\nI would rate Clarity as 2 overall."
    found, problems = parse_scores(reply, ["Clarity", "Depth"])
    assert found == {} and set(problems) == {"Clarity", "Depth"}


def test_parser_ambiguous_reply_is_a_failure_but_numbered_lists_still_parse():
    found, problems = parse_scores("Clarity: 5\nOn reflection, Clarity: 2", ["Clarity"])
    assert found == {} and "ambiguous" in problems["Clarity"]
    found, _ = parse_scores("1. Clarity: 4\n2. Depth: 3", ["Clarity", "Depth"])
    assert found == {"Clarity": 4, "Depth": 3}


# ---------------------------------------------------------------------------- evaluate, end to end


def _run(tmp_path):
    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    return run


def _fake_judge(prompt: str):
    """Weighted judge: p(5) grows with the conversation's length, always two tokens (" ", digit)."""
    convo = prompt.split("Conversation:")[-1].split("Criterion:")[0]
    q = min(0.9, len(convo) / 2000)
    return [(" ", {" ": 1.0}), ("4", {"5": q, "4": 0.9 - q, "3": 0.05, "Sure": 0.05})]


def _evaluate(args):
    from wikihowagent.cli import app

    return CliRunner().invoke(app, ["evaluate", *args])


def test_evaluate_weighted_default_on_openai_compatible_server(tmp_path):
    run = _run(tmp_path)
    with FakeOpenAI(logprobs=_fake_judge) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--metrics",
                "Clarity,Truthfulness,Engagement",
            ]
        )
        assert res.exit_code == 0, res.output
        assert all(r.get("logprobs") and r.get("top_logprobs") == 20 for r in srv.requests)
        assert all((r.get("max_completion_tokens") or r.get("max_tokens")) == SCORE_TOKENS for r in srv.requests)
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert {r["judge"]["scoring"] for r in recs} == {"weighted"}
    for r in recs:
        for n in ("Clarity", "Truthfulness", "Engagement"):
            v = r["metrics"][n]
            assert 4 < v < 5 and not float(v).is_integer()
            assert sum(r["judge"]["dist"][n]) == pytest.approx(1, abs=1e-3) and r["judge"]["argmax"][n] in (4, 5)
    # prompts: the conversation first, the rubric last (a shared prefix)
    prompt = srv.requests[0]["messages"][-1]["content"]
    assert prompt.index("Conversation:") < prompt.index("Criterion:")
    assert "judge (weighted, prompt tutorial-first): 9 of 9 rubric scores read, 0 failed" in flat(res.output), (
        res.output
    )
    summary = (run / "summary.csv").read_text()
    assert "weighted" in summary


def test_weighted_below_threshold_counted_and_not_scored(tmp_path):
    run = _run(tmp_path)
    with FakeOpenAI(logprobs=lambda p: [("Sure", {"Sure": 0.7, "4": 0.3})]) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--metrics",
                "Clarity",
            ]
        )
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert all(r["metrics"]["Clarity"] is None and r["judge"]["failures"] == ["Clarity"] for r in recs)
    assert "0 of 3 rubric scores read, 3 failed" in flat(res.output)
    assert res.exit_code == 1  # every rubric failed: loud, non-zero


def test_weighted_on_backend_without_logprobs_fails_before_any_work(tmp_path, monkeypatch):
    from test_evaluation import evaluate_app

    run = _run(tmp_path)
    app = evaluate_app(monkeypatch, lambda spec, *a, **k: ScriptedChatModel(script=lambda p: "4", prompts=[]))
    res = CliRunner().invoke(app, ["evaluate", str(run), "--judge-scoring", "weighted", "--no-figures"])
    assert res.exit_code == 2
    lines = [ln for ln in flat(res.output).splitlines() if ln.strip()]
    assert len(lines) == 1 and "ScriptedChatModel" in lines[0] and "json, sampled" in lines[0], res.output
    assert not (run / "scores.jsonl").exists()


def test_sampled_mode_mean_and_spread(tmp_path, monkeypatch):
    from test_evaluation import evaluate_app

    run = _run(tmp_path)
    seen: list[str] = []

    class Seeded(ScriptedChatModel):
        def bind(self, **kw):  # record the sampling parameters of each call
            seen.append(json.dumps({k: kw[k] for k in ("temperature", "seed")}))
            return self

    answers = iter(["4", "5", "4", "hmm", "4"] * 100)
    app = evaluate_app(monkeypatch, lambda spec, *a, **k: Seeded(script=lambda p: next(answers), prompts=[]))
    res = CliRunner().invoke(
        app, ["evaluate", str(run), "--judge-scoring", "sampled", "--metrics", "Clarity", "--no-figures"]
    )
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    for r in recs:
        assert r["judge"]["scoring"] == "sampled"
        assert r["metrics"]["Clarity"] == pytest.approx(4.25) and r["judge"]["dist"]["Clarity"] == [0, 0, 0, 0.75, 0.25]
        assert r["judge"]["spread"]["Clarity"] == pytest.approx(math.sqrt(0.1875), abs=1e-3)
    assert len({json.loads(s)["seed"] for s in seen}) == 5 and all(json.loads(s)["temperature"] > 0 for s in seen)


# ---------------------------------------------------------------------------- failed rubrics judged again


def test_failed_rubrics_are_judged_again_and_all_failed_exits_nonzero(tmp_path, monkeypatch):
    from test_evaluation import evaluate_app

    run = _run(tmp_path)
    prose = evaluate_app(
        monkeypatch, lambda spec, *a, **k: ScriptedChatModel(script=lambda p: "What a lovely conversation.", prompts=[])
    )
    res = CliRunner().invoke(prose, ["evaluate", str(run), "--judge-scoring", "json", "--no-figures"])
    assert res.exit_code == 1 and "failed on every rubric" in flat(res.output), res.output
    assert "error" in flat(res.output)
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert all(len(r["judge"]["failures"]) == 8 for r in recs)

    def good(p: str) -> str:
        names = re.findall(r'"([A-Za-z]+)": <score>', p)
        return json.dumps({n: 3 for n in names})

    works = evaluate_app(monkeypatch, lambda spec, *a, **k: ScriptedChatModel(script=good, prompts=[]))
    # --no-retry-failed keeps earlier failures as they are
    res = CliRunner().invoke(
        works, ["evaluate", str(run), "--judge-scoring", "json", "--no-figures", "--no-retry-failed"]
    )
    assert "0 scored, 3 already scored" in flat(res.output), res.output
    res = CliRunner().invoke(works, ["evaluate", str(run), "--judge-scoring", "json", "--no-figures"])
    assert res.exit_code == 0, res.output
    assert "3 conversations' failed rubrics judged again" in flat(res.output)
    from wikihowagent.runs import read_scores

    final = read_scores(run / "scores.jsonl")
    assert all(not r.judge_failures and r.metrics["Clarity"] == 3 for r in final.values())
    assert all(not r.judge.notes for r in final.values())
    res = CliRunner().invoke(works, ["evaluate", str(run), "--judge-scoring", "json", "--no-figures"])
    assert "0 scored, 3 already scored" in flat(res.output) and res.exit_code == 0


def test_failure_kind_is_typed_not_read_from_the_reply_words(tmp_path):
    """A reply that says "threshold" is a parse failure (asked again), not the low-mass kind (never asked
    again): the kind travels with the problem (errors.Note), it is not found by looking for a word."""
    run = _run(tmp_path)
    with FakeOpenAI(logprobs=lambda p: [("threshold", {"threshold": 1.0})]) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--metrics",
                "Clarity",
            ]
        )
        asked = len(srv.requests)
    assert asked == 3 * 3, asked  # each conversation's rubric asked three times (two retries)
    assert "(3 parse)" in flat(res.output), res.output
    from wikihowagent.errors import kind_of

    assert kind_of(weighted_score(entries(("4", {"4": 0.2, "The": 0.8})), rationale=False)[1], "parse") == "low-mass"


# ---------------------------------------------------------------------------- the default mode


class _Llm:
    def __init__(self, logprobs: bool, metadata: dict | None = None):
        self.capabilities, self.metadata = Capabilities(logprobs=logprobs), metadata


def test_default_mode_is_the_providers_measured_choice_unless_a_holistic_option_is_given():
    from wikihowagent.backends.spec import JUDGE_SCORING_METADATA as KEY
    from wikihowagent.judge.scoring import resolve_mode

    embedded = _Llm(True, {KEY: "checklist"})
    assert resolve_mode(None, embedded, "default") == "checklist"
    assert resolve_mode(None, embedded, "default", holistic=True) == "weighted"  # --judge-rationale/-prompt
    assert resolve_mode("weighted", embedded, "default") == "weighted"  # asked for: always that
    assert resolve_mode(None, embedded, "paper") == "json"  # --compat paper keeps the paper's judge
    assert resolve_mode(None, _Llm(True), "default") == "weighted"  # no measured choice: by log-probabilities
    assert resolve_mode(None, _Llm(False), "default") == "json"
    assert resolve_mode(None, _Llm(True, {KEY: "nonsense"}), "default") == "weighted"  # unknown: ignored
    assert resolve_mode(None, _Llm(True, {"other": 1}), "default") == "weighted"


def test_embedded_provider_declares_checklist(monkeypatch, tmp_path):
    """The local provider's chat model carries its measured default (no server started: a stub in its place)."""
    from types import SimpleNamespace

    from wikihowagent.backends import local
    from wikihowagent.backends.spec import JUDGE_SCORING_METADATA as KEY
    from wikihowagent.backends.spec import ResolvedSpec
    from wikihowagent.config import LocalModelSettings, ModelSettings
    from wikihowagent.judge.scoring import preferred_mode

    monkeypatch.setattr(
        local,
        "get_local_server",
        lambda *a, **k: SimpleNamespace(alias="m", base_url="http://127.0.0.1:9/v1", client=local.ServerClient),
    )
    spec = ResolvedSpec(spec="local", provider="local", model="m", display="local")
    llm = local.make(spec, ModelSettings(), LocalModelSettings(), None)
    assert llm.metadata[KEY] == "checklist" and preferred_mode(llm) == "checklist"
    gguf = tmp_path / "other.gguf"  # another GGUF on the local backend: nothing measured, no default named
    gguf.write_bytes(b"GGUF")
    other = ResolvedSpec(spec=f"local:{gguf}", provider="local", model="other", display="x", path=str(gguf))
    assert preferred_mode(local.make(other, ModelSettings(), LocalModelSettings(), None)) is None


def test_the_measured_default_is_known_from_the_spec_alone():
    """backends.preferred_judge_scoring: no model made, no server started (compare decides its judge with it)."""
    from wikihowagent.backends import preferred_judge_scoring

    assert preferred_judge_scoring("local") == "checklist"
    assert preferred_judge_scoring("local:/models/other.gguf") is None
    assert preferred_judge_scoring("ollama:llama3:8b") is None and preferred_judge_scoring("openai:gpt-4o") is None
    assert preferred_judge_scoring("openchat") is None  # an alias: its target's provider decides


def test_evaluate_default_follows_the_judge_and_checklist_options_select_checklist(tmp_path, monkeypatch):
    """A judge whose provider measured checklist best is asked checklist items by default (answer-only here);
    --checklist FILE without --judge-scoring means checklist; --judge-rationale means the rating judge
    (json without log-probabilities) - never a refusal of the default."""
    from test_evaluation import evaluate_app

    from wikihowagent.backends.spec import JUDGE_SCORING_METADATA as KEY

    def judge(spec, *a, **k):
        return ScriptedChatModel(
            script=lambda p: "Yes" if "yes or no" in str(p).lower() else json.dumps({"Clarity": 4}),
            prompts=[],
            metadata={KEY: "checklist"},
        )

    for extra, want in (
        ([], "checklist"),
        (["--checklist", str(Path(__file__).parents[2] / "wikihowagent" / "data" / "checklists.json")], "checklist"),
        (["--judge-scoring", "json"], "json"),
    ):
        run = _run(tmp_path / want / str(len(extra)))
        app = evaluate_app(monkeypatch, judge)
        res = CliRunner().invoke(app, ["evaluate", str(run), "--metrics", "Clarity", "--no-figures", *extra])
        assert res.exit_code == 0, res.output
        recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
        assert recs and all(r["judge"]["scoring"] == want for r in recs), (extra, recs[0]["judge"])
