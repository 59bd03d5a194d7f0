"""`compare`: the pairwise judge's reading, verdicts from both orders, and the command end to end against a
fake OpenAI-compatible server (resume, shards, bad input)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.compare.pairwise import letter_probability, read_letter, verdict
from wikihowagent.records import Conversation, Turn

RUBRICS = ["Clarity", "Truthfulness", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness"]


@pytest.mark.parametrize(
    "text,letter",
    [
        ("A", "A"),
        (" B.", "B"),
        ("Conversation B", "B"),
        ("**A**", "A"),
        ("Answer: A", "A"),
        ("(B)", "B"),
        ("B\nBecause it teaches every step.", "B"),
    ],
)
def test_read_letter_accepts_one_letter(text, letter):
    assert read_letter(text) == letter


@pytest.mark.parametrize(
    "text",
    [
        "A and B",
        "Both",
        "a",
        "10",
        "",
        "AB",
        "B, but A is close",
        "3/10",
        "Neither",
        "A or B",
        "Tie",
        "A is better",
        "A2",
    ],
)
def test_read_letter_refuses_anything_else(text):
    assert read_letter(text) is None


@pytest.mark.parametrize("text", ["A\nB", "B\n\nActually A is better", "A\n\n(B)", "**B**\nA.", "Answer: A\nB"])
def test_read_letter_refuses_a_reply_naming_both_letters(text):
    # the first letter was read and the second ignored
    assert read_letter(text) is None


def test_letter_probability_refuses_a_reply_naming_both_letters():
    entries = [_entry("A", {"A": 0.9, "B": 0.1}), {"token": "\n", "logprob": 0.0}, {"token": "B", "logprob": 0.0}]
    p, why = letter_probability({"content": entries})
    assert p is None and "other letter" in why
    assert letter_probability({"content": entries[:2] + [{"token": "Because", "logprob": 0.0}]})[0] == 0.9


def test_a_letter_cut_off_by_the_token_limit_is_not_a_verdict():
    assert read_letter("A", complete=False) is None and read_letter("A\n", complete=False) == "A"
    p, why = letter_probability({"content": [_entry("A", {"A": 0.9, "B": 0.1})]}, complete=False)
    assert p is None and "cut off" in why


def _entry(tok, top):
    return {
        "token": tok,
        "logprob": math.log(top.get(tok, 1e-9)),
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top.items()],
    }


def test_letter_probability_renormalises_and_refuses_low_mass_and_late_letters():
    p, why = letter_probability({"content": [_entry("A", {"A": 0.6, " B": 0.2, "The": 0.2})]})
    assert why is None and p == pytest.approx(0.75)
    p, why = letter_probability({"content": [_entry("A", {"A": 0.3, "B": 0.1, "Both": 0.6})]})
    assert p is None and "threshold" in why
    p, why = letter_probability(
        {"content": [_entry("I", {"I": 0.9}), _entry(" think", {" think": 1.0}), _entry(" A", {" A": 1.0})]}
    )
    assert p is None and "no single letter" in why
    p, why = letter_probability(
        {"content": [_entry("Conversation", {"Conversation": 1.0}), _entry(" B", {" B": 0.8, " A": 0.2})]}
    )
    assert p == pytest.approx(0.2)
    assert letter_probability({}) == (None, "no token log-probabilities in the reply")


def test_verdict_needs_both_orders_to_agree():
    v = verdict(0.8, 0.3)  # A first: A; B first: B is worse -> A
    assert (v.winner, v.consistent, v.score) == ("A", True, 1.0) and v.p_a == pytest.approx(0.75)
    assert verdict(0.2, 0.9).winner == "B"
    biased = verdict(0.9, 0.8)  # the first shown wins in both orders: position bias
    assert (biased.winner, biased.consistent, biased.score) == ("tie", False, 0.5)
    assert biased.order_effect == pytest.approx(0.7)


def _biased_judge(preference: float, bias: float, noise: float, rng) -> tuple[float, float]:
    """(p_ab, p_ba) of a simulated log-probability judge: a real preference for A (log-odds `preference`)
    plus the same pull towards whichever conversation is shown first (log-odds `bias`) in both orders."""

    def sig(x: float) -> float:
        return 1 / (1 + math.exp(-x))

    return sig(preference + bias + rng.normal(0, noise)), sig(-preference + bias + rng.normal(0, noise))


def test_the_averaged_rule_recovers_a_preference_a_constant_position_bias_hides():
    """Known truth: A is better in every pair (log-odds 0.3) and the judge favours the first shown (log-odds
    1.5, far larger). `agree` sees only position-inconsistent pairs (all ties); `average` recovers A."""
    import numpy as np

    from wikihowagent.compare.pairwise import VERDICT_RULES, check_tie_band, verdict_rule

    rng = np.random.default_rng(7)
    pairs = [_biased_judge(0.3, 1.5, 0.05, rng) for _ in range(200)]
    assert all(p_ab > 0.5 and p_ba > 0.5 for p_ab, p_ba in pairs)  # the first shown always "wins"
    agree = [verdict(p_ab, p_ba) for p_ab, p_ba in pairs]  # the default rule
    assert {v.winner for v in agree} == {"tie"} and not any(v.consistent for v in agree)
    averaged = [verdict(p_ab, p_ba, "average") for p_ab, p_ba in pairs]
    assert sum(v.winner == "A" for v in averaged) / len(pairs) > 0.95
    assert not any(v.consistent for v in averaged)  # position consistency does not depend on the rule
    # no preference at all: the averaged rule leans either way by the noise only, and a tie band absorbs it
    even = [_biased_judge(0.0, 1.5, 0.01, rng) for _ in range(200)]
    assert 0.3 < sum(verdict(a, b, "average").winner == "A" for a, b in even) / len(even) < 0.7
    assert {verdict(a, b, "average", tie_band=0.02).winner for a, b in even} == {"tie"}
    # a real preference outside the band survives it
    assert verdict(0.9, 0.6, "average", tie_band=0.1).winner == "A"  # P(A) = 0.65
    assert verdict(0.6, 0.9, "average", tie_band=0.1).winner == "B"
    assert verdict(0.7, 0.6, "average", tie_band=0.1).winner == "tie"  # P(A) = 0.55
    assert verdict(0.6, 0.6, "average").winner == "tie"  # exactly even
    assert set(VERDICT_RULES) == {"agree", "average", "scores"}
    assert (
        VERDICT_RULES["average"].label(0.01) == "average (tie band 0.01)"
        and VERDICT_RULES["agree"].label(0.01) == "agree"
    )
    with pytest.raises(ValueError, match="valid: agree, average, scores"):
        verdict_rule("majority")
    with pytest.raises(ValueError, match="tie band"):
        check_tie_band(0.5)


# --------------------------------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------------------------------

QUALITY = {"strong": 3, "mid": 2, "weak": 1}


def _conv(run: str, t: int) -> Conversation:
    q = QUALITY.get(run, 2)
    words = " ".join(["detail"] * (4 * q))
    turns = [Turn(role="teacher", text="Let's begin. BEGIN", kind="begin"), Turn(role="learner", text="Ready.")]
    for s in range(3):
        turns += [Turn(role="teacher", text=f"Step {s + 1} of tutorial {t}: {words}."), Turn(role="learner", text="OK")]
    turns += [Turn(role="teacher", text="We've reached the end. FINISHED", kind="finish")]
    return Conversation.from_turns(
        turns,
        ["Do a.", "Do b.", "Do c."],
        f"Tutorial {t}",
        completed=True,
        conversation_id=f"{run}-{t}",
        tutorial_id=f"tut-{t}",
        teacher="local",
        learner="local",
    )


def make_run(root: Path, name: str, tutorials, evaluator: str | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(
        json.dumps({"name": name, "teacher": "local", "learner": "local", "evaluator": evaluator})
    )
    with (d / "conversations.jsonl").open("w") as fh:
        for t in tutorials:
            fh.write(json.dumps(_conv(name, t).model_dump(mode="json")) + "\n")
    return d


def _length(block: str) -> int:
    return block.count("detail")


def fake_pair_judge(bias: float = 0.0):
    """P(A) grows with how much more detail A's teacher gives than B's; `bias` favours the first shown."""

    def logprobs(prompt: str):
        if "Conversation A:" not in prompt:
            return [("A", {"A": 0.5, "B": 0.5})]  # the reading probe
        a = prompt.split("Conversation A:")[1].split("Conversation B:")[0]
        b = prompt.split("Conversation B:")[1].split("Criterion:")[0]
        d = (_length(a) - _length(b)) / 12
        pa = min(0.95, max(0.05, 1 / (1 + math.exp(-d)) + bias))
        tok = "A" if pa >= 0.5 else "B"
        return [(tok, {"A": pa * 0.9, "B": (1 - pa) * 0.9, "Hmm": 0.1})]

    return logprobs


def _args(srv, *runs, out):
    return [
        "compare",
        *map(str, runs),
        "--out",
        str(out),
        "--evaluator",
        "openai:fake-model",
        "--base-url",
        srv.base_url,
        "--bootstrap",
        "200",
        "--concurrency",
        "2",
    ]


def test_compare_three_runs_end_to_end_resume_and_shards(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(6)) for n in ("weak", "strong", "mid")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_pair_judge()) as srv:
        # two shards first, then the whole: nothing is judged twice
        for k in (0, 1):
            res = CliRunner().invoke(app, _args(srv, *runs, out=out) + ["--shard", f"{k}/2"])
            assert res.exit_code == 0, res.output
            assert "shard judged" in res.output
        n_shards = len(srv.requests)
        assert sorted(p.name for p in out.glob("pair-judgments*.jsonl")) == [
            "pair-judgments-0-of-2.jsonl",
            "pair-judgments-1-of-2.jsonl",
        ]
        res = CliRunner().invoke(app, _args(srv, *runs, out=out))
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == n_shards + 1  # only the reading probe
        assert "A/B token log-probabilities" in res.output
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert len(rows) == 3 * 6 * len(RUBRICS)
    assert set(rows[0]) >= {"tutorial_id", "run_a", "run_b", "rubric", "p_ab", "p_ba", "verdict"}
    pair = next(r for r in rows if (r["run_a"], r["run_b"]) == ("weak", "strong"))
    assert pair["verdict"] == "B" and float(pair["p_ab"]) < 0.5 < float(pair["p_ba"])
    bt = [r for r in csv.DictReader((out / "bradley_terry.csv").open()) if r["rubric"] == "overall"]
    assert [r["run"] for r in sorted(bt, key=lambda r: int(r["rank"]))] == ["strong", "mid", "weak"]
    assert all(float(r["ci_low"]) <= float(r["theta"]) <= float(r["ci_high"]) for r in bt)
    wins = {(r["rubric"], r["run_a"], r["run_b"]): r for r in csv.DictReader((out / "win_rates.csv").open())}
    assert float(wins[("overall", "weak", "strong")]["win_rate_a"]) == 0.0
    pos = {r["rubric"]: r for r in csv.DictReader((out / "position.csv").open())}
    assert float(pos["overall"]["position_consistency"]) == 1.0
    assert (out / "head_to_head.png").stat().st_size > 0
    assert "Bradley–Terry" in (out / "summary.md").read_text()


def test_compare_interrupted_half_way_resumes_without_duplicates(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(3)) for n in ("weak", "strong")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_pair_judge()) as srv:
        assert CliRunner().invoke(app, _args(srv, *runs, out=out)).exit_code == 0
        full = (out / "pair-judgments.jsonl").read_text().splitlines(keepends=True)
        assert len(full) == 6  # 3 tutorials x 2 orders
        (out / "pair-judgments.jsonl").write_text("".join(full[:3]) + full[3][:40])  # killed mid-line
        before = len(srv.requests)
        res = CliRunner().invoke(app, _args(srv, *runs, out=out))
        assert res.exit_code == 0, res.output
        assert len(srv.requests) - before == 1 + 3 * len(RUBRICS)  # the probe + the 3 missing passes
    lines = (out / "pair-judgments.jsonl").read_text().splitlines()
    keys = [tuple(json.loads(x)[k] for k in ("tutorial_id", "first", "second")) for x in lines]
    assert len(keys) == len(set(keys)) == 6
    assert len(list(csv.DictReader((out / "pairwise.csv").open()))) == 3 * len(RUBRICS)


def test_position_bias_is_measured_and_never_a_silent_win(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(4)) for n in ("x", "y")]  # the same quality
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_pair_judge(bias=0.3)) as srv:
        res = CliRunner().invoke(
            app,
            _args(
                srv,
                *runs,
                out=out,
            )
            + ["--metrics", "Clarity,Depth"],
        )
        assert res.exit_code == 0, res.output
    pos = {r["rubric"]: r for r in csv.DictReader((out / "position.csv").open())}
    assert float(pos["Clarity"]["position_consistency"]) == 0.0 and float(pos["Clarity"]["first_preferred"]) == 1.0
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert {r["verdict"] for r in rows} == {"tie"} and {r["rubric"] for r in rows} == {"Clarity", "Depth"}
    assert not (out / "bradley_terry.csv").exists()  # two runs: win rates only


def test_average_rule_ranks_runs_a_biased_judge_ties_and_from_judgments_needs_no_judge(tmp_path):
    """A judge with a strong pull to the first shown (+0.45 on P(A)) and a real preference for more detail:
    under `agree` every verdict is a tie; `--from-judgments --verdict-rule average` re-reads the same
    judgments without asking the judge (no server at all) and ranks strong > mid > weak; the rule is written
    into pairwise.csv and summary.md."""
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(5)) for n in ("weak", "strong", "mid")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_pair_judge(bias=0.45)) as srv:
        res = CliRunner().invoke(app, _args(srv, *runs, out=out) + ["--metrics", "Clarity,Depth"])
        assert res.exit_code == 0, res.output
        base_url = srv.base_url
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert {r["verdict"] for r in rows} == {"tie"} and {r["verdict_rule"] for r in rows} == {"agree"}
    assert "Verdict rule `agree`" in (out / "summary.md").read_text()
    judged = (out / "pair-judgments.jsonl").read_text()
    # the server is gone: --from-judgments must not need it
    args = [
        "compare",
        *map(str, runs),
        "--out",
        str(out),
        "--evaluator",
        "openai:fake-model",
        "--base-url",
        base_url,
        "--bootstrap",
        "200",
        "--metrics",
        "Clarity,Depth",
        "--from-judgments",
        "--verdict-rule",
        "average",
    ]
    import wikihowagent.compare.judging as compare_judging

    reads: list[Path] = []
    real_read = compare_judging.read_pairwise

    def counted(path, *a, **k):
        reads.append(Path(path))
        return real_read(path, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compare_judging, "read_pairwise", counted)
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert reads == [out / "pair-judgments.jsonl"]  # the kind, the reading and the analysis: one read
    assert "no judge asked" in " ".join(res.output.split())
    assert (out / "pair-judgments.jsonl").read_text() == judged
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert {r["verdict_rule"] for r in rows} == {"average (tie band 0)"}
    strong_weak = [r for r in rows if {r["run_a"], r["run_b"]} == {"weak", "strong"}]
    assert all(r["verdict"] == ("B" if r["run_a"] == "weak" else "A") for r in strong_weak)
    bt = [r for r in csv.DictReader((out / "bradley_terry.csv").open()) if r["rubric"] == "overall"]
    assert [r["run"] for r in sorted(bt, key=lambda r: int(r["rank"]))] == ["strong", "mid", "weak"]
    assert "Verdict rule `average`" in (out / "summary.md").read_text()
    pos = {r["rubric"]: r for r in csv.DictReader((out / "position.csv").open())}
    assert float(pos["overall"]["position_consistency"]) < 0.5  # the bias is still reported
    # bad input: one line each
    res = CliRunner().invoke(app, args[:-1] + ["majority"])
    assert res.exit_code == 2 and "unknown verdict rule 'majority'" in res.output
    res = CliRunner().invoke(app, args + ["--shard", "0/2"])
    assert res.exit_code == 2 and "drop --shard" in res.output
    res = CliRunner().invoke(app, args[:-2] + ["--tie-band", "0.05"])  # the default rule, agree, has no band
    assert res.exit_code == 2 and "add --verdict-rule average" in " ".join(res.output.split())
    res = CliRunner().invoke(app, [a if a != str(out) else str(tmp_path / "empty") for a in args])
    assert res.exit_code == 2 and "no pair judgments of judge openai:fake-model" in " ".join(res.output.split())


def test_answer_only_mode_is_said(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(2)) for n in ("weak", "strong")]

    def reply(prompt):
        if "Conversation A:" not in prompt:
            return "A"
        a = prompt.split("Conversation A:")[1].split("Conversation B:")[0]
        return "A" if _length(a) > 20 else "Conversation B"

    with FakeOpenAI(reply=reply) as srv:  # no logprobs
        res = CliRunner().invoke(app, _args(srv, *runs, out=tmp_path / "cmp") + ["--metrics", "Clarity"])
        assert res.exit_code == 0, res.output
    assert "answer-only mode" in " ".join(res.output.split())
    rows = list(csv.DictReader((tmp_path / "cmp" / "pairwise.csv").open()))
    assert [(r["p_ab"], r["p_ba"], r["verdict"]) for r in rows] == [("0.0", "1.0", "B")] * 2


def test_unreadable_replies_are_failures_not_verdicts(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(2)) for n in ("weak", "strong")]
    with FakeOpenAI(reply=lambda p: "A" if "Conversation A:" not in p else "Both are good") as srv:
        res = CliRunner().invoke(
            app, _args(srv, *runs, out=tmp_path / "cmp") + ["--metrics", "Clarity", "--retries", "0"]
        )
    assert res.exit_code == 1
    assert "no readable verdict" in " ".join(res.output.split())
    assert list(csv.DictReader((tmp_path / "cmp" / "pairwise.csv").open())) == []


def test_bad_input_one_line(tmp_path):
    from wikihowagent.cli import app

    a = make_run(tmp_path, "a", range(2))
    b = make_run(tmp_path, "b", range(5, 7))
    c = make_run(tmp_path, "c", range(2), evaluator="ollama:llama3")
    d = make_run(tmp_path, "d", range(2), evaluator="local")

    def run(*args):
        res = CliRunner().invoke(app, ["compare", *map(str, args), "--out", str(tmp_path / "o")])
        return res.exit_code, " ".join(res.output.split())

    code, msg = run(a)
    assert code == 2 and "at least two runs" in msg
    code, msg = run(a, b)
    assert code == 2 and "runs a and b share no tutorial" in msg
    code, msg = run(c, d)
    assert code == 2 and "different judges (c: ollama:llama3; d: local)" in msg and "--evaluator" in msg
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------------------------------
# --judge-scoring checklist: position-free verdicts from each conversation's own scores
# --------------------------------------------------------------------------------------------------


def fake_checklist_judge():
    """Yes/no items: the more detail the teacher gives, the more likely the good answer (either polarity)."""
    from wikihowagent.judge.checklist import load_checklist

    cl = load_checklist(None, RUBRICS)
    bad = {it.text for items in cl.rubric_items.values() for it in items if it.polarity == "yes-bad"}

    def logprobs(prompt: str):
        convo = prompt.split("Conversation:")[1].split("Question:")[0]
        question = prompt.split("Question: ")[1].split("\n")[0]
        good = min(0.95, 0.2 + _length(convo) / 40)
        p_yes = 1 - good if question in bad else good
        return [("Yes" if p_yes >= 0.5 else "No", {"Yes": p_yes, "No": 1 - p_yes})]

    return logprobs


def test_compare_checklist_verdicts_position_free_ranked_and_resumable(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(4)) for n in ("weak", "strong", "mid")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_checklist_judge()) as srv:
        args = _args(srv, *runs, out=out) + ["--judge-scoring", "checklist"]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        prompts = [r["messages"][-1]["content"] for r in srv.requests]
        assert not any("Conversation A:" in p for p in prompts)  # never two conversations in one prompt
        n = len(srv.requests)
        scored = [json.loads(x) for x in (out / "checklist-scores.jsonl").read_text().splitlines()]
        assert len({s["conversation_id"] for s in scored}) == len(scored) == 12  # each conversation judged once
        assert all(s["judge"]["items"] and s["judge"]["scoring"] == "checklist" for s in scored)
        res = CliRunner().invoke(app, args)  # resumed: nothing asked again
        assert res.exit_code == 0 and len(srv.requests) == n, res.output
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert rows and {r["verdict_rule"] for r in rows} == {"scores (tie band 0 points)"}
    pos = {r["rubric"]: r for r in csv.DictReader((out / "position.csv").open())}
    assert float(pos["overall"]["position_consistency"]) == 1.0
    bt = [r for r in csv.DictReader((out / "bradley_terry.csv").open()) if r["rubric"] == "overall"]
    assert [r["run"] for r in sorted(bt, key=lambda r: int(r["rank"]))] == ["strong", "mid", "weak"]
    summary = (out / "summary.md").read_text()
    assert "Verdict rule `scores`" in summary and "each conversation judged alone" in summary
    assert "verdicts from the two conversations' own scores" in summary and "from both orders" not in summary
    # a wide tie band turns every verdict into a tie, from the stored judgments (no judge)
    res = CliRunner().invoke(
        app,
        [
            "compare",
            *map(str, runs),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--judge-scoring",
            "checklist",
            "--from-judgments",
            "--score-tie-band",
            "4",
            "--bootstrap",
            "50",
        ],
    )
    assert res.exit_code == 0, res.output
    assert {r["verdict"] for r in csv.DictReader((out / "pairwise.csv").open())} == {"tie"}
    # no judge chosen: --from-judgments analyses the kind of judgments stored (checklist here)
    base = ["compare", *map(str, runs), "--out", str(out), "--evaluator", "openai:fake-model", "--from-judgments"]
    res = CliRunner().invoke(app, [*base, "--bootstrap", "50"])
    assert res.exit_code == 0, res.output
    assert {r["verdict_rule"] for r in csv.DictReader((out / "pairwise.csv").open())} == {"scores (tie band 0 points)"}
    res = CliRunner().invoke(app, [*base, "--judge-scoring", "pairwise"])  # asked for the other kind: none stored
    assert res.exit_code == 2 and "no pair judgments of judge openai:fake-model" in res.output, res.output


def test_compare_judge_follows_options_then_the_judges_measured_default():
    from wikihowagent.compare.request import CompareError, CompareRequest, chosen_scoring

    def choose(default, **kw):
        return chosen_scoring(CompareRequest(runs=(Path("a"), Path("b")), **kw), default)

    assert choose("checklist") == "checklist"  # the embedded judge's measured default
    assert choose(None) == "pairwise" and choose("weighted") == "pairwise"  # none (or not compare's): pairwise
    assert choose("checklist", judge_scoring="pairwise") == "pairwise"  # asked for: always that
    assert choose(None, judge_scoring="checklist") == "checklist"
    assert choose("checklist", verdict_rule="average") == "pairwise"  # an option only the pairwise judge takes
    assert choose("checklist", reading="answer") == "pairwise" and choose("checklist", tie_band=0.1) == "pairwise"
    assert choose(None, score_tie_band=0.2) == "checklist"  # an option only the checklist judge takes
    assert (
        choose(None, checklist_weights=Path("w.json")) == "checklist"
        and choose(None, verdict_rule="scores") == "checklist"
    )
    with pytest.raises(CompareError, match="pass --judge-scoring checklist or pairwise"):
        choose("checklist", checklist=Path("c.json"), reading="logprobs")


def test_compare_with_the_embedded_judge_makes_checklist_verdicts_by_default(tmp_path, monkeypatch):
    """`compare` with the embedded model as judge and no --judge-scoring: each conversation judged alone by the
    checklist judge (its measured default; the pairwise judge's position consistency with it is 0), never a
    two-conversation prompt. The embedded server is replaced by a fake OpenAI-compatible one."""
    from types import SimpleNamespace

    from wikihowagent.backends import local
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(2)) for n in ("weak", "strong")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_checklist_judge()) as srv:
        monkeypatch.setattr(local, "check", lambda *a, **k: None)
        monkeypatch.setattr(
            local,
            "get_local_server",
            lambda *a, **k: SimpleNamespace(alias="fake-model", base_url=srv.base_url, client=local.ServerClient),
        )
        res = CliRunner().invoke(
            app, ["compare", *map(str, runs), "--out", str(out), "--evaluator", "local", "--bootstrap", "50"]
        )
        assert res.exit_code == 0, res.output
        assert srv.requests and not any("Conversation A:" in r["messages"][-1]["content"] for r in srv.requests)
    assert "judge local (checklist scores" in res.output
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert rows and {r["verdict_rule"] for r in rows} == {"scores (tie band 0 points)"}


def test_compare_checklist_option_mixups_are_one_line(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(2)) for n in ("weak", "strong")]
    base = ["compare", *map(str, runs), "--out", str(tmp_path / "o"), "--evaluator", "openai:x"]
    for extra, expect in (
        (["--judge-scoring", "checklist", "--verdict-rule", "agree"], "rule `scores`"),
        (["--judge-scoring", "checklist", "--pairwise-reading", "answer"], "applies to the pairwise judge"),
        (["--judge-scoring", "pairwise", "--verdict-rule", "scores"], "use it with --judge-scoring checklist"),
        (["--judge-scoring", "pairwise", "--score-tie-band", "0.2"], "use it with --judge-scoring checklist"),
        (["--judge-scoring", "pairwise", "--checklist-weights", "w.json"], "--checklist-weights applies"),
        (["--score-tie-band", "0.2", "--tie-band", "0.1"], "pass --judge-scoring checklist or pairwise"),
        (["--checklist", "c.json", "--verdict-rule", "average"], "pass --judge-scoring checklist or pairwise"),
        (["--judge-scoring", "weighted"], "not 'weighted'"),
    ):
        res = CliRunner().invoke(app, base + extra)
        assert res.exit_code == 2 and expect in " ".join(res.output.split()), res.output


def test_compare_checklist_reuses_the_runs_own_checklist_scores(tmp_path):
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(2)) for n in ("weak", "strong")]
    with FakeOpenAI(logprobs=fake_checklist_judge()) as srv:
        for r in runs:
            res = CliRunner().invoke(
                app,
                [
                    "evaluate",
                    str(r),
                    "--evaluator",
                    "openai:fake-model",
                    "--base-url",
                    srv.base_url,
                    "--judge-scoring",
                    "checklist",
                    "--metrics",
                    "rubric",
                    "--no-figures",
                ],
            )
            assert res.exit_code == 0, res.output
        n = len(srv.requests)
        res = CliRunner().invoke(app, _args(srv, *runs, out=tmp_path / "cmp") + ["--judge-scoring", "checklist"])
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == n  # every conversation's checklist scores were already in its run
    rows = list(csv.DictReader((tmp_path / "cmp" / "pairwise.csv").open()))
    assert {(r["run_a"], r["verdict"]) for r in rows if r["rubric"] == "Progress"} <= {("weak", "B"), ("weak", "tie")}
