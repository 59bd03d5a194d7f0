"""--judge-scoring checklist: items as data, strict yes/no reading, P(yes) from log-probabilities,
rubric scores from item scores, the per-item record, bad input."""

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
from wikihowagent.judge.checklist import (
    ChecklistError,
    answer_word,
    chosen_steps,
    conversation_items,
    fill,
    headline,
    load_checklist,
    read_answer,
    rubric_score,
)
from wikihowagent.judge.rubric_judge import load_rubrics

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"
RUBRICS = list(load_rubrics())
BUNDLED = Path(__file__).resolve().parents[2] / "wikihowagent" / "data" / "checklists.json"


def flat(text: str) -> str:
    return " ".join(text.split())


def entries(*positions):
    return [
        {
            "token": tok,
            "logprob": math.log(top.get(tok, 1e-9)),
            "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top.items()],
        }
        for tok, top in positions
    ]


# ---------------------------------------------------------------------------- the items file


def _write(tmp_path, mutate):
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    mutate(data)
    p = tmp_path / "checklists.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def test_bundled_checklist_is_valid_and_every_rubric_has_two_to_five_items_with_both_polarities():
    cl = load_checklist(None, RUBRICS)
    assert set(cl.rubric_items) == set(RUBRICS)
    assert all(2 <= len(v) <= 5 for v in cl.rubric_items.values())
    pols = {it.polarity for v in cl.rubric_items.values() for it in v}
    assert pols == {"yes-good", "yes-bad"}
    assert {r for t in cl.steps for r in t.rubrics} == {"Progress", "Truthfulness", "Relevance", "Depth"}
    assert cl.ident.startswith(cl.version + "@")


# Each version of the bundled checklist and the first 12 hex of its content hash: every score records both, so
# an edit of the file (even of its description) must come with a new version, and an old version never changes.
BUNDLED_VERSIONS = {"1": "53198f1a733e", "2": "41ae84bc0375"}


def test_the_bundled_checklist_changes_its_version_with_its_content():
    cl = load_checklist(None, RUBRICS)
    assert cl.version in BUNDLED_VERSIONS, f"new checklist version {cl.version}: add it with {cl.sha256[:12]}"
    assert BUNDLED_VERSIONS[cl.version] == cl.sha256[:12], (
        f"checklists.json changed but is still version {cl.version}: change its version (and the CHANGELOG)"
    )


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda d: d["rubric_items"].__setitem__("Humour", d["rubric_items"]["Clarity"]), "'Humour': unknown rubric"),
        (lambda d: d["rubric_items"].pop("Depth"), "rubric 'Depth' has no items"),
        (lambda d: d["rubric_items"].__setitem__("Depth", []), "'Depth': needs 2-5 items, has 0"),
        (lambda d: d["step_items"]["items"][0].__setitem__("rubrics", ["Progess"]), "unknown rubric 'Progess'"),
        (
            lambda d: d["step_items"]["items"][0].__setitem__("text", "Did they teach {step_title}?"),
            "unknown placeholder {step_title}",
        ),
        (lambda d: d["rubric_items"]["Clarity"][0].__setitem__("polarity", "good"), "polarity must be one of"),
        (lambda d: d.pop("version"), "version must be a non-empty string"),
    ],
)
def test_bad_checklist_files_are_one_line_errors_naming_the_file(tmp_path, mutate, expect):
    p = _write(tmp_path, mutate)
    with pytest.raises(ChecklistError) as exc:
        load_checklist(p, RUBRICS)
    msg = str(exc.value)
    assert expect in msg and str(p) in msg and "\n" not in msg


def test_braces_and_quotes_in_items_and_tutorials_are_literal_text(tmp_path):
    odd = "Does the teacher say \"{not a field}\" or {{x}} or '%s'?"
    p = _write(tmp_path, lambda d: d["rubric_items"]["Clarity"][0].__setitem__("text", odd))
    cl = load_checklist(p, RUBRICS)
    steps = ['Mix {salt} and "paint" {headline}. Then wait.', "Dry it."]
    items, _ = conversation_items(cl, steps, ["Clarity", "Progress"])
    qs = [i.question for i in items]
    assert odd in qs
    taught = [q for q in qs if q.startswith("Did the teacher teach")]
    assert taught[0] == 'Did the teacher teach this step of the tutorial: «Mix {salt} and "paint" {headline}.»?'
    assert fill("«{step}»", {"step": "{headline}"}) == "«{headline}»"  # values are never re-read as templates


def test_step_items_capped_for_long_tutorials_and_none_for_zero_steps():
    cl = load_checklist(None, RUBRICS)
    items, note = conversation_items(cl, [f"Step number {i}. More." for i in range(60)], RUBRICS)
    steps = {i.id.split(":")[1] for i in items if i.id.startswith("step:")}
    assert len(steps) == cl.max_steps and {"1", "60"} <= steps
    assert note == f"checklist: step items for {cl.max_steps} of 60 steps (max_steps {cl.max_steps}, evenly spaced)"
    items, note = conversation_items(cl, [], RUBRICS)
    assert not [i for i in items if i.id.startswith("step:")] and "no steps" in note
    assert chosen_steps(3, 12) == [0, 1, 2] and chosen_steps(5, 1) == [0]


def test_items_that_show_the_tutorial_come_last_and_step_items_serve_several_rubrics():
    cl = load_checklist(None, RUBRICS)
    items, _ = conversation_items(cl, ["A. b.", "C. d."], RUBRICS)
    flags = [i.tutorial for i in items]
    assert flags == sorted(flags) and any(flags)
    taught = next(i for i in items if i.id == "step:1:step-taught")
    assert set(taught.rubrics) == {"Progress", "Depth"}
    assert headline("Fill a container with salt. Use fine salt.", 160) == "Fill a container with salt."


# ---------------------------------------------------------------------------- reading an answer


@pytest.mark.parametrize(
    "text, word",
    [
        ("Yes", "yes"),
        (" no", "no"),
        ("YES.", "yes"),
        ("No!", "no"),
        ("**Yes**", "yes"),
        ("yes\n", "yes"),
        ("Yes, but only partly", None),
        ("Y", None),
        ("yes/no", None),
        ("Yes and no", None),
        ("", None),
        ("No. The teacher", None),
        ("Maybe", None),
        ("Yes yes", None),
        ("N", None),
        ("Yess", None),
    ],
)
def test_strict_yes_no_reading(text, word):
    assert answer_word(text) == word


def test_p_yes_folds_case_and_space_variants_and_normalises_over_the_two():
    a = read_answer(
        entries(("Yes", {"Yes": 0.5, " yes": 0.1, "YES": 0.05, "No": 0.2, " no": 0.05, "The": 0.1})),
        "Yes",
        complete=True,
    )
    assert a.problem is None
    assert a.mass == pytest.approx(0.9)
    assert a.p_yes == pytest.approx(0.65 / 0.9)


def test_low_yes_no_mass_is_a_failure_not_a_half():
    a = read_answer(entries(("Yes", {"Yes": 0.3, "The": 0.7})), "Yes", complete=True)
    assert a.p_yes is None and a.low_mass and "threshold" in a.problem


def test_cut_off_or_ambiguous_replies_are_not_answers_and_answer_only_reading_without_logprobs():
    assert read_answer(entries(("Yes", {"Yes": 1.0})), "Yes", complete=False).p_yes is None
    assert read_answer(entries(("Yes", {"Yes": 0.9}), (",", {",": 1.0})), "Yes,", complete=True).p_yes is None
    assert read_answer([], "No", complete=True).p_yes == 0.0
    assert read_answer([], "Yes.", complete=True).p_yes == 1.0
    assert read_answer([], "Yes, mostly", complete=True).p_yes is None


try:
    from hypothesis import given
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:

    @given(st.text(max_size=12))
    def test_any_reply_read_as_an_answer_is_exactly_one_yes_or_no_word(text):
        word = answer_word(text)
        if word is not None:
            core = text.strip().strip("*").strip().rstrip(".!").strip().strip("*").strip().lower()
            assert core == word


# ---------------------------------------------------------------------------- scores


def test_rubric_score_is_one_plus_four_times_the_weighted_mean_and_needs_half_the_items():
    rs = rubric_score("X", [("rubric:X:a", 1.0), ("rubric:X:b", 0.5)])
    assert rs.score == pytest.approx(1 + 4 * 0.75)
    rs = rubric_score("X", [("rubric:X:a", 1.0), ("rubric:X:b", 0.0)], {"rubric:X:a": 3, "rubric:X:b": 1})
    assert rs.score == pytest.approx(1 + 4 * 0.75)
    rs = rubric_score("X", [("rubric:X:a", 1.0), ("rubric:X:b", None), ("rubric:X:c", None)])
    assert rs.score is None and "only 1 of 3" in rs.problem
    # step items of one template share its weight: 10 steps do not outweigh one rubric item
    goods = [("rubric:X:a", 0.0)] + [(f"step:{k}:t", 1.0) for k in range(1, 11)]
    assert rubric_score("X", goods).score == pytest.approx(1 + 4 * 0.5)


# ---------------------------------------------------------------------------- evaluate, end to end


def _run(tmp_path):
    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    return run


def _evaluate(args):
    from wikihowagent.cli import app

    return CliRunner().invoke(app, ["evaluate", *args])


def _yes_no_judge(prompt: str):
    """Yes to questions about the teacher's steps, no to fault questions (p 0.8)."""
    q = prompt.split("Question:")[-1]
    yes = 0.8 if ("teach this step" in q or "consistent" in q) else 0.3
    word = "Yes" if yes >= 0.5 else "No"
    return [(word, {"Yes": yes * 0.95, " yes": yes * 0.05, "No": (1 - yes) * 0.9, "no": (1 - yes) * 0.1})]


def test_evaluate_checklist_on_openai_compatible_server_records_every_item(tmp_path):
    run = _run(tmp_path)
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--judge-scoring",
                "checklist",
                "--metrics",
                "Progress,Truthfulness,Clarity",
            ]
        )
        assert res.exit_code == 0, res.output
        assert all(r.get("logprobs") and r.get("top_logprobs") == 20 for r in srv.requests)
        prompts = [r["messages"][-1]["content"] for r in srv.requests]
    for p in prompts:  # the conversation first, the question last
        assert p.index("Conversation:") < p.index("Question:")
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    bundled = load_checklist(None, RUBRICS).ident
    for r in recs:
        j = r["judge"]
        assert j["scoring"] == "checklist" and j["checklist"] == bundled and j["reading"] == "logprobs"
        assert j["prompt"] == "checklist " + j["checklist"] and j["checklist_weights"] == "uniform"
        items = {i["id"]: i for i in j["items"]}
        taught = items["step:1:step-taught"]
        assert taught["p_yes"] == pytest.approx(0.8) and taught["mass"] == pytest.approx(1.0)
        assert taught["rubrics"] == ["Progress"]  # Depth not asked
        bad = items["rubric:Clarity:unclear-message"]
        assert bad["polarity"] == "yes-bad" and bad["good"] == pytest.approx(0.7)
        clar = [i["good"] for i in j["items"] if "Clarity" in i["rubrics"]]
        assert r["metrics"]["Clarity"] == pytest.approx(1 + 4 * sum(clar) / len(clar), abs=1e-3)
    assert len(prompts) == sum(len(r["judge"]["items"]) for r in recs)


def test_checklist_without_logprobs_reads_the_answer_and_says_so(tmp_path, monkeypatch):
    from test_evaluation import evaluate_app

    from wikihowagent.testing import ScriptedChatModel

    run = _run(tmp_path)
    replies = iter(["Yes", "Yes, but only partly", "No"] * 500)
    app = evaluate_app(monkeypatch, lambda spec, *a, **k: ScriptedChatModel(script=lambda p: next(replies), prompts=[]))
    res = CliRunner().invoke(
        app, ["evaluate", str(run), "--judge-scoring", "checklist", "--metrics", "Clarity", "--no-figures"]
    )
    assert res.exit_code == 0, res.output
    assert "read from the reply only" in flat(res.output)
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    for r in recs:
        assert r["judge"]["reading"] == "answer"
        for i in r["judge"]["items"]:
            assert i["p_yes"] in (0.0, 1.0) and i["mass"] is None
        assert all(not any(x.startswith("Yes,") for x in raws[-1:]) for raws in r["judge"]["raw"].values())


def test_checklist_options_refused_with_other_modes_and_bad_checklist_is_one_line(tmp_path):
    run = _run(tmp_path)
    res = _evaluate(
        [str(run), "--evaluator", "openai:x", "--judge-scoring", "weighted", "--checklist-weights", "w.json"]
    )
    assert res.exit_code == 2 and "apply to --judge-scoring checklist" in flat(res.output)
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:  # without --judge-scoring they choose checklist
        res = _evaluate(
            [str(run), "--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--checklist-weights", "w.json"]
        )
    assert res.exit_code == 2 and "w.json" in flat(res.output) and "apply to" not in flat(res.output), res.output
    bad = _write(tmp_path, lambda d: d["rubric_items"].pop("Depth"))
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--judge-scoring",
                "checklist",
                "--checklist",
                str(bad),
            ]
        )
    assert res.exit_code == 2 and "rubric 'Depth' has no items" in flat(res.output), res.output


def test_judge_check_with_checklist_scoring_resumes_and_names_the_mode(tmp_path):
    from wikihowagent.cli import app

    run = _run(tmp_path)
    out = tmp_path / "check"

    def judge(prompt):  # a teacher that says more is judged better; terse copies lose
        convo = prompt.split("Conversation:")[1].split("Question:")[0]
        good = min(0.95, 0.2 + len(convo) / 1500)
        q = prompt.split("Question: ")[1].split("\n")[0]
        bad = any(
            w in q
            for w in (
                "confusing",
                "contradict",
                "superficial",
                "acknowledge",
                "abruptly",
                "off-topic",
                "stuck",
                "robotic",
            )
        )
        p = 1 - good if bad else good
        return [("Yes" if p >= 0.5 else "No", {"Yes": p, "No": 1 - p})]

    with FakeOpenAI(logprobs=judge) as srv:
        args = [
            "judge-check",
            str(run),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--judge-scoring",
            "checklist",
            "--no-figures",
        ]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        n = len(srv.requests)
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0 and len(srv.requests) == n, res.output
    recs = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert {r["judge_scoring"] for r in recs} == {"checklist"}
    assert {r["judge_prompt"] for r in recs} == {"checklist " + load_checklist(None, RUBRICS).ident}
    assert (out / "summary.md").read_text().startswith("# judge-check: openai:fake-model (checklist")


def test_report_shows_checklist_items_and_the_judge_evidence(tmp_path):
    """The conversation page gets every item (failed ones marked by the page); the overview names the judge,
    its scoring mode and what the run directory holds about it (here: a judge-check), or how to measure it."""
    import re

    from wikihowagent.report.core import build_report

    run = _run(tmp_path)
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--judge-scoring",
                "checklist",
                "--metrics",
                "Progress,Clarity",
            ]
        )
        assert res.exit_code == 0, res.output
    site = build_report([run], tmp_path / "site").out
    index = (site / "index.html").read_text()
    assert "How far to trust the judge" in index and "no evidence about this judge" in index
    assert "wikihowagent judge-check" in index and "--judge-scoring checklist" in index
    text = (site / "data" / "conv-0000.js").read_text()
    chunk = json.loads(re.fullmatch(r"reportChunk\(0, (.*)\);\n", text, re.S).group(1))
    conv = chunk["c1"]
    ids = {row[0] for row in conv["checklist"]}
    assert "step:1:step-taught" in ids and "rubric:Clarity:unclear-message" in ids
    step_row = next(r for r in conv["checklist"] if r[0] == "step:2:step-taught")
    assert step_row[7] == 1 and step_row[5] == pytest.approx(0.8)  # lights tutorial step 2
    assert conv["checklist_reading"] == "logprobs"
    # a judge-check summary in the run directory is the evidence shown
    (run / "judge-check").mkdir()
    (run / "judge-check" / "summary.md").write_text(
        "# judge-check: openai:fake-model (checklist, prompt checklist 1@abc)\n\n3 conversations; mean accuracy over "
        "the 12 targeted rubric x perturbation cells: **0.812** (1 = ...)\n"
    )
    index = (build_report([run], tmp_path / "site2").out / "index.html").read_text()
    assert "judge-check (judge-check/): openai:fake-model (checklist" in index and "mean accuracy 0.812" in index


def _run_with_steps(tmp_path, n_steps):
    run = _run(tmp_path)
    lines = (run / "conversations.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["tutorial"]["steps"] = [f'Do thing {{{i}}} with "care". Then more.' for i in range(n_steps)]
    (run / "conversations.jsonl").write_text(json.dumps(rec) + "\n")
    return run


@pytest.mark.parametrize("n_steps", [0, 60])
def test_tutorials_with_no_steps_or_sixty_steps_are_judged_and_the_cap_recorded(tmp_path, n_steps):
    run = _run_with_steps(tmp_path, n_steps)
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--judge-scoring",
                "checklist",
                "--metrics",
                "Progress",
            ]
        )
        if n_steps == 0:  # such a record is refused when read, one line naming it; never judged
            assert res.exit_code == 2 and "record's tutorial has no steps" in flat(res.output)
            assert not srv.requests
            return
        assert res.exit_code == 0, res.output
    rec = json.loads((run / "scores.jsonl").read_text().splitlines()[-1])
    steps = {i["id"].split(":")[1] for i in rec["judge"]["items"] if i["id"].startswith("step:")}
    cap = load_checklist(None, RUBRICS).max_steps
    if n_steps == 0:
        assert not steps and any("no steps" in n for n in rec["judge"]["notes"])
    else:
        assert len(steps) == cap and any(f"step items for {cap} of 60 steps" in n for n in rec["judge"]["notes"])
        q = next(i["question"] for i in rec["judge"]["items"] if i["id"] == "step:1:step-taught")
        assert '«Do thing {0} with "care".»' in q
    assert 1 <= rec["metrics"]["Progress"] <= 5


@pytest.mark.parametrize("reply", ["Yes, but only partly", "Y", "yes/no", "Yes and no", "Maybe"])
def test_ambiguous_replies_are_asked_again_and_never_scored(tmp_path, reply):
    run = _run(tmp_path)
    tokens = [(t, {t: 0.9, "No": 0.1}) for t in re.findall(r"\w+|[^\w\s]|\s\w+", reply)]
    with FakeOpenAI(logprobs=lambda p: tokens) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--judge-scoring",
                "checklist",
                "--metrics",
                "Clarity",
                "--retries",
                "1",
            ]
        )
        n_requests = len(srv.requests)
    assert res.exit_code == 1, res.output  # every rubric failed: loud
    recs = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    items = [i for r in recs for i in r["judge"]["items"]]
    assert items and all(i["p_yes"] is None and i["good"] is None and i["failure"] for i in items)
    assert n_requests == 2 * len(items)  # each asked again once
    assert all(r["metrics"]["Clarity"] is None and r["judge"]["failures"] == ["Clarity"] for r in recs)


def test_low_yes_no_mass_is_recorded_as_a_failure_and_not_asked_again(tmp_path):
    run = _run(tmp_path)
    with FakeOpenAI(logprobs=lambda p: [("Yes", {"Yes": 0.3, "The": 0.7})]) as srv:
        res = _evaluate(
            [
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--judge-scoring",
                "checklist",
                "--metrics",
                "Clarity",
            ]
        )
        n_requests = len(srv.requests)
    recs = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    items = [i for r in recs for i in r["judge"]["items"]]
    assert n_requests == len(items)
    assert all(i["mass"] == pytest.approx(0.3) and i["p_yes"] is None for i in items)
    assert "low-mass" in flat(res.output) or "probability threshold" in flat(res.output)


def test_a_refused_item_call_fails_that_item_only():
    """An item the evaluator refuses (e.g. too long with the tutorial) is a failed item; its rubric is still
    scored from the others and counts no failure."""
    import asyncio

    from langchain_core.messages import AIMessage

    from wikihowagent.judge.scoring import ChecklistScorer
    from wikihowagent.records import Conversation, Turn

    class BadRequestError(Exception):
        status_code = 400

    class Stub:
        capabilities = Capabilities(logprobs=False)

        def bind(self, **kw):
            return self

        async def ainvoke(self, messages):
            text = messages[-1][1]
            if "contradict an earlier teacher message" in text:
                raise BadRequestError("context length exceeded")
            return AIMessage(content="Yes", response_metadata={"finish_reason": "stop"})

    rubrics = load_rubrics()
    conv = Conversation.from_turns(
        [Turn(role="teacher", text="Do a."), Turn(role="learner", text="OK")],
        ["Do a."],
        "T",
        completed=True,
        conversation_id="x",
    )
    res = asyncio.run(ChecklistScorer(Stub(), rubrics, ["Truthfulness"]).judge(conv))
    failed = [i for i in res.items if i.failure]
    assert [i.id for i in failed] == ["rubric:Truthfulness:self-contradiction"]
    assert "refused" in failed[0].failure
    assert res.scores["Truthfulness"] is not None and res.failures == [] and res.kinds == {}


def test_report_evidence_commands_for_a_paper_file_write_beside_it(tmp_path):
    """A paper run file is a file, not a folder: the suggested judge-check/align commands write beside it
    (FILE's stem as a folder), never under FILE/, and paths are shell-quoted."""
    import html as html_mod
    import shlex
    import shutil

    from wikihowagent.report.core import build_report

    paper = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "T-llama3_L-llama3_E-llama3_123.json"
    folder = tmp_path / "my runs"
    folder.mkdir()
    target = folder / paper.name
    shutil.copy(paper, target)
    index = html_mod.unescape((build_report([target], tmp_path / "site").out / "index.html").read_text())
    beside = folder / target.stem
    assert f"--out {shlex.quote(str(beside / 'judge-check'))}" in index
    assert f"--out {shlex.quote(str(beside / 'alignment'))}" in index
    assert f"{target}/judge-check" not in index
