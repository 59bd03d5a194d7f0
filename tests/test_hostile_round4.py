"""Fourth hostile round: the newest surfaces (a console that cannot print Unicode, checklist files, the yes/no
reading, the validity-set maker, the likelihood post-test, cancellation, the report, help). Each test either
failed on the code before its fix or keeps a probe that held, so that it keeps holding."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from helpers import one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.backends import Capabilities
from wikihowagent.cli import app
from wikihowagent.config import resource_path
from wikihowagent.judge.checklist import ChecklistError, load_checklist, read_answer
from wikihowagent.judge.rubric_judge import load_rubrics

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = resource_path("data", "checklists.json")
DEAD_URL = "http://127.0.0.1:9/v1"  # nothing listens: a test that reached a judge would fail, not hang
RUBRICS = list(load_rubrics())
runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m wikihowagent ARGS` in a subprocess (its own stdout encoding, its own signals)."""
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "wikihowagent", *args], capture_output=True, env=full, timeout=timeout, check=False
    )


# ------------------------------------------------------------------ item 1: a console that cannot print Unicode


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_evaluate_on_a_non_utf8_console_prints_an_ascii_table_and_succeeds(tmp_path, encoding):
    run = run_copy(tmp_path)
    res = cli(
        "evaluate", str(run), "--no-judge", "--metrics", "Completion,BLEU", "--no-figures",
        env={"PYTHONIOENCODING": encoding, "COLUMNS": "100"},
    )  # fmt: skip
    out, err = res.stdout.decode(encoding), res.stderr.decode(encoding)
    assert res.returncode == 0, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert out.isascii() and err.isascii()
    assert "+/-" in out and "Evaluation summary" in out  # the mean +/- sd, not a '?'
    widths = {len(line) for line in out.splitlines() if line.startswith(("|", "+"))}
    assert len(widths) == 1, out  # "+/-" is measured before the table is laid out: its columns line up
    assert (run / "summary.csv").is_file() and "wrote" in err


@pytest.mark.parametrize("command", ["compare", "evaluate", "judge-check", "align", "report"])
def test_help_on_a_non_utf8_console(command):
    res = cli(command, "--help", env={"PYTHONIOENCODING": "ascii", "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr.decode("ascii", "replace")
    out = res.stdout.decode("ascii")
    assert "Usage:" in out and "Traceback" not in res.stderr.decode("ascii")


def test_the_ascii_fallback_of_a_character_and_a_styled_text():
    from rich.text import Text

    from wikihowagent.console import _ascii_rich_text, ascii_text

    assert ascii_text("45.2 ± 3.1 ↑ – café Ｙｅｓ …") == "45.2 +/- 3.1 ^ - cafe Yes ..."
    assert ascii_text("中文") == "??" and ascii_text("plain") == "plain"
    t = Text.assemble("1.0 ± 2 ", ("↑", "green"))
    a = _ascii_rich_text(t)
    assert a.plain == "1.0 +/- 2 ^" and [(s.start, s.end, str(s.style)) for s in a.spans] == [(10, 11, "green")]


# ------------------------------------------------------------------ item 2: checklist files, every field checked


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


# ------------------------------------------------------------------ item 3: named files before any server


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
    sys.path.insert(0, str(Path(__file__).parent))
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


@pytest.mark.parametrize("option", ["--rubrics", "--perturbations", "--config", "--tutorials"])
def test_judge_check_reads_its_named_files_before_the_unreachable_judge(tmp_path, option):
    run = run_copy(tmp_path)
    bad = tmp_path / ("bad.yaml" if option == "--config" else "bad.json")
    bad.write_text("{not: [valid" if option == "--config" else "{not json")
    if option == "--tutorials":
        bad = tmp_path / "missing-set"
    extra = ["--posttest-learner", "openai:m"] if option == "--tutorials" else []
    res = runner.invoke(
        app,
        ["judge-check", str(run), "--out", str(tmp_path / "o"), "--evaluator", "openai:m", "--base-url", DEAD_URL]
        + [option, str(bad), *extra],
    )
    assert res.exit_code != 0, res.output
    line = one_line_error(res, str(bad))
    assert "not reachable" not in line
    assert not (tmp_path / "o" / "judgments.jsonl").exists()


# ------------------------------------------------------------------ the yes/no reading


def _entry(token: str, top: dict[str, float]) -> dict:
    """One answer token with its top candidates' log-probabilities given as they are sent (not as probabilities)."""
    return {"token": token, "logprob": top.get(token, -20.0), "top_logprobs": [
        {"token": t, "logprob": lp} for t, lp in top.items()
    ]}  # fmt: skip


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


# ------------------------------------------------------------------ the validity-set maker


@pytest.fixture(scope="module")
def wn():
    from wikihowagent.metrics.computational import load_wordnet

    return load_wordnet()


def _maker():
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_validity_set as MV

    return MV


def _article(steps, title="How to Cook Soup", categories=("Categories", "Food & Cooking")) -> dict:
    return {
        "title": title,
        "path": "x/a.json",
        "categories": list(categories),
        "methods": [{"title": "M", "steps": steps}],
    }


def _source(tmp_path: Path, *articles: dict) -> Path:
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    for i, a in enumerate(articles):
        (src / f"a{i}.json").write_text(json.dumps(a, ensure_ascii=False), encoding="utf-8")
    return src


@pytest.mark.parametrize("n", [0, 1, 60])
def test_a_tutorial_with_0_1_or_60_steps_is_said_and_left_out(tmp_path, capsys, n):
    MV = _maker()
    src = _source(tmp_path, _article([f"Stir the soup for {i} minutes." for i in range(n)]))
    assert MV.main(["--tutorials", str(src), "--out", str(tmp_path / "o")]) == 2
    out, err = capsys.readouterr()
    assert f"has {n} step" in out and "nothing written" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "steps",
    [
        ["把汤搅拌五分钟。", "加入盐。", "关火。"],
        ["Помешайте суп 5 минут.", "Добавьте соль."],
        ["حرك الحساء لمدة 5 دقائق.", "أضف الملح."],
        ["Say you are sorry.", "Mean what you say."],
    ],
)
def test_non_latin_scripts_and_nothing_to_change_are_transformed_or_said(wn, steps):
    from wikihowagent.corpus import counterfactual as CF

    out = CF.transform_article(_article(steps, title="如何"), "a.json", 0, wn)
    assert out.article["counterfactual"]["methods"][0]["order"] != [1, 2, 3][: len(steps)]
    for name, why in out.article["counterfactual"]["not_applied"].items():
        assert any(f"transform '{name}' not applied ({why})" in n for n in out.notes)
    assert "names" in out.article["counterfactual"]["not_applied"]  # no English thing to rename: said


def test_zero_width_characters_cannot_hide_a_name_from_the_renaming(wn):
    from wikihowagent.corpus import counterfactual as CF

    out = CF.transform_article(
        _article(["Stir the so\u200bup for 5 minutes.", "Salt the s\u2060oup."]), "a.json", 0, wn
    )
    text = " ".join(out.article["methods"][0]["steps"]).lower()
    assert "soup" in out.article["counterfactual"]["names"] and "so" not in text.split()
    assert "\u200b" not in text and "\u2060" not in text


def test_a_megabyte_step_looks_each_word_up_once(wn, monkeypatch):
    """A 1 MB step was quadratic (a regex over everything before each word, WordNet counts for every word
    again): about 60 s CPU for 100 KB. Each distinct word is now looked up once."""
    from wikihowagent.corpus import counterfactual as CF

    calls: list[str] = []
    real = CF.noun_dominant

    def once(w, word):
        assert word not in calls, f"{word!r} looked up again"  # fails at once on the quadratic code
        calls.append(word)
        return real(w, word)

    monkeypatch.setattr(CF, "noun_dominant", once)
    big = "Stir the soup. " + "soup and water with salt " * 40_000  # 1 MB
    out = CF.transform_article(_article([big, "Salt it for 3 minutes."]), "a.json", 0, wn, ["names"])
    assert len(calls) == len(set(calls)) <= 10, calls
    assert {"soup", "water", "salt"} <= set(out.article["counterfactual"]["names"])


def test_the_sentence_start_check_is_the_old_regex(wn):
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from wikihowagent.corpus.counterfactual import _sentence_start

    old = re.compile(r"(?:^|[.!?:;]\s+|\(\s*)$")

    @settings(max_examples=500, deadline=None)
    @given(st.text(alphabet="ab .!?:;(\t\n\u2003", max_size=10), st.integers(0, 10))
    def check(text, k):
        k = min(k, len(text))
        assert _sentence_start(text, k) == bool(old.search(text[:k]))

    check()


@pytest.mark.parametrize("seed", ["-7", str(10**30)])
def test_negative_and_huge_seeds_are_seeds(tmp_path, seed):
    MV = _maker()
    src = _source(tmp_path, _article(["Stir the soup for 5 minutes.", "Salt the soup.", "Serve the soup."]))
    for out in ("o1", "o2"):
        assert MV.main(["--tutorials", str(src), "--out", str(tmp_path / out), "--seed", seed]) == 0
    (a,), (b,) = (list((tmp_path / o).rglob("*.json")) for o in ("o1", "o2"))
    ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ja["path"].startswith(str(tmp_path / "o1")) and {**ja, "path": ""} == {**jb, "path": ""}  # deterministic
    assert ja["counterfactual"]["seed"] == int(seed)


@pytest.mark.parametrize("hostile", ["../../../escaped", "..", "/etc", "a\x00b", "x" * 5000])
def test_a_domain_or_title_read_from_an_article_stays_one_folder_in_out(tmp_path, hostile):
    MV = _maker()
    src = _source(
        tmp_path,
        _article(["Stir the soup.", "Salt the soup."], title=hostile, categories=("Categories", hostile)),
    )
    out = tmp_path / "deep" / "o"
    for transforms in ("names,order", "names,title"):
        assert MV.main(["--tutorials", str(src), "--out", str(out), "--transforms", transforms, "--force"]) == 0
        (f,) = [p for p in tmp_path.rglob("*.json") if "in" not in p.relative_to(tmp_path).parts]
        assert f.resolve().is_relative_to(out.resolve()) and len(f.relative_to(out).parts) == 3, f
        assert all(len(p.encode()) <= 255 for p in f.relative_to(out).parts)


def test_the_output_folder_is_a_file_under_a_file_or_not_writable(tmp_path, capsys, monkeypatch):
    """As root, permission bits do not stop a write: "not writable" is a write that fails (as on a read-only
    mount), simulated here; the old set is kept."""
    MV = _maker()
    src = _source(tmp_path, _article(["Stir the soup for 5 minutes.", "Salt the soup."]))
    (tmp_path / "afile").write_text("x")
    for out, say in ((tmp_path / "afile", "exists and is not a folder"), (tmp_path / "afile" / "o", "is a file")):
        assert MV.main(["--tutorials", str(src), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert say in err and len(err.splitlines()) == 1 and "Traceback" not in err
    out = tmp_path / "o"
    assert MV.main(["--tutorials", str(src), "--out", str(out)]) == 0
    (old,) = list(out.rglob("*.json"))
    before = old.read_bytes()

    def read_only(self, *a, **k):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(Path, "write_text", read_only)
    assert MV.main(["--tutorials", str(src), "--out", str(out), "--force", "--seed", "3"]) == 2
    err = capsys.readouterr().err
    assert "cannot write (Read-only file system)" in err and len(err.splitlines()) == 1
    assert old.read_bytes() == before  # the old set is kept


# ------------------------------------------------------------------ the likelihood post-test against a hostile server


class EchoServer:
    """A /v1/completions server on 127.0.0.1 whose reply to an echo request is `reply(prompt)` (a dict sent as
    JSON, or "reset": the connection is closed mid-reply, or "hang": no reply within the client's timeout)."""

    def __init__(self, reply):
        import threading
        from http.server import BaseHTTPRequestHandler

        from fake_servers import LocalServer

        self.requests: list[dict] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                got = reply(body["prompt"])
                if got == "reset":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [')  # then the connection closes mid-reply
                    return
                if got == "hang":
                    outer.release.wait(10)
                    return
                data = json.dumps(got).encode()
                self.send_response(200 if not isinstance(got, dict) or "status" not in got else got["status"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = LocalServer(("127.0.0.1", 0), Handler)
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        import threading

        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def _echo(prompt: str, lp=-1.0, *, tokens=None, values=None, offsets=None, extra=" x") -> dict:
    """An honest echo reply (whitespace-led words), with any of its arrays replaced."""
    import re

    toks = [(m.start(), m.group(0)) for m in re.finditer(r"\s*\S+|\s+$", prompt)] + [(len(prompt), extra)]
    return {
        "choices": [
            {
                "text": prompt + extra,
                "index": 0,
                "logprobs": {
                    "tokens": tokens if tokens is not None else [t for _, t in toks],
                    "token_logprobs": values if values is not None else [None] + [lp] * (len(toks) - 1),
                    "text_offset": offsets if offsets is not None else [o for o, _ in toks],
                    "top_logprobs": None,
                },
            }
        ]
    }


def _shuffled_tokens(p):
    r = _echo(p)
    lp = r["choices"][0]["logprobs"]
    lp["tokens"] = [t.upper() if i > 3 else t for i, t in enumerate(lp["tokens"])]
    return r


def _ignores_echo(p):  # only the one generated token, at the end of the prompt
    return {
        "choices": [{"text": " x", "logprobs": {"tokens": [" x"], "token_logprobs": [-1.0], "text_offset": [len(p)]}}]
    }


HOSTILE_ECHO = [
    (_shuffled_tokens, "do not join back to the text sent"),
    (lambda p: _echo(p, tokens=["1.", " Fold"] * 40), "log-probabilities for 80 tokens"),
    (lambda p: _echo(p, tokens=[t.replace(" ", "") for t in _echo(p)["choices"][0]["logprobs"]["tokens"]]),
     "do not join back to the text sent"),
    (lambda p: {**_echo(p), "choices": [{**_echo(p)["choices"][0], "logprobs": {
        **_echo(p)["choices"][0]["logprobs"], "token_logprobs": [None, -1.0]}}]}, "2 log-probabilities for"),
    (lambda p: {**_echo(p), "choices": [{**_echo(p)["choices"][0], "logprobs": {
        **_echo(p)["choices"][0]["logprobs"], "text_offset": [0]}}]}, "1 offsets for"),
    (lambda p: _echo(p, lp=0.5), "log-probability 0.5"),
    (lambda p: _echo(p, lp=float("nan")), "log-probability nan"),
    (lambda p: _echo(p, lp=float("inf")), "log-probability inf"),
    (lambda p: _echo(p, lp="-1"), "log-probability '-1'"),
    (lambda p: _echo(p, lp=True), "log-probability True"),
    (lambda p: {"choices": []}, "no echoed prompt log-probabilities"),
    (lambda p: {"choices": None}, "no echoed prompt log-probabilities"),
    (lambda p: [], "the reply is not a JSON object"),
    (_ignores_echo, "do not join back to the text sent"),
    (lambda p: {"status": 500, "error": {"message": "boom"}}, "HTTP 500"),
    (lambda p: "reset", "the connection failed"),
    (lambda p: _echo(p, offsets=["a"] * 60), "offsets"),
    (lambda p: _echo(p, tokens=[7] * 60), "tokens"),
]  # fmt: skip


@pytest.mark.parametrize("reply, why", HOSTILE_ECHO)
def test_a_hostile_echo_reply_is_a_recorded_failure_never_a_likelihood_gain(reply, why):
    import asyncio

    from wikihowagent.records import Turn
    from wikihowagent.workflow import likelihood as L

    steps = ["Fold the glorp twice.", "Soak it in brine for 7 minutes."]
    turns = [Turn(role="teacher", text="Fold the glorp twice."), Turn(role="learner", text="OK")]
    with EchoServer(reply) as srv:
        taker = L.LikelihoodTaker(L.StepLikelihood(srv.root, "m", "echo", timeout_s=5))
        test = asyncio.run(taker.take("k", "How to Glorp", "", turns, steps))
    assert test.error is not None and why in test.error, test.error
    assert test.post == [] and test.pre == [] and "\n" not in test.error and len(test.error) < 400


def test_an_honest_echo_server_still_gives_a_gain():
    import asyncio

    from wikihowagent.records import Turn
    from wikihowagent.workflow import likelihood as L

    steps = ["Fold the glorp twice.", "Soak it in brine for 7 minutes."]
    with EchoServer(lambda p: _echo(p, lp=-0.5 if "Teacher" in p else -2.0)) as srv:
        taker = L.LikelihoodTaker(L.StepLikelihood(srv.root, "m", "echo", timeout_s=5))
        test = asyncio.run(taker.take("k", "How to Glorp", "", [Turn(role="teacher", text="Fold.")], steps))
    assert test.error is None and L.likelihood_gain(test.post, test.pre) == pytest.approx(1.5)


def test_a_hanging_likelihood_server_is_a_recorded_failure_within_the_timeout():
    import asyncio

    from wikihowagent.records import Turn
    from wikihowagent.workflow import likelihood as L

    with EchoServer(lambda p: "hang") as srv:
        taker = L.LikelihoodTaker(L.StepLikelihood(srv.root, "m", "echo", timeout_s=0.5))
        test = asyncio.run(taker.take("k", "How to Glorp", "", [Turn(role="teacher", text="x")], ["A b.", "C d."]))
    assert test.error is not None and "the connection failed" in test.error and "ReadTimeout" in test.error


def test_grammar_tokens_that_do_not_join_back_are_a_failure():
    import asyncio

    from wikihowagent.workflow import likelihood as L

    text = "1. Fold it.\n2. Dry it.\n"
    probs = [{"token": "1.", "bytes": list(b"1."), "logprob": -1.0}, {"token": " Dry", "bytes": list(b" Dry"),
                                                                      "logprob": -1.0}]  # fmt: skip
    with EchoServer(lambda p: {"content": text, "completion_probabilities": probs}) as srv:
        reader = L.StepLikelihood(srv.root, "m", "grammar", timeout_s=5)
        with pytest.raises(L.LikelihoodError, match="do not join back to the text sent"):
            asyncio.run(reader.score("ctx\n", ["Fold it.", "Dry it."]))


# ------------------------------------------------------------------ cancellation and concurrency


class Gate:
    """Wraps a fake server's reply functions: the `at`-th request (1-based) waits until `release` is set, after
    setting `reached`, so a test can act (Ctrl-C, a second process) while a request is in flight."""

    def __init__(self, at: int):
        import threading

        self.at, self.n = at, 0
        self.lock = threading.Lock()
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, fn):
        def wrapped(*args):
            with self.lock:
                self.n += 1
                mine = self.n
            if mine == self.at:
                self.reached.set()
                self.release.wait(30)
            return fn(*args)

        return wrapped


def _spawn(args: list[str], err: Path) -> subprocess.Popen:
    import signal

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "wikihowagent", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err.open("w"),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _ctrl_c_at(gate: Gate, args: list[str], tmp_path: Path) -> tuple[int, str]:
    """Runs the command in a child process, sends SIGINT while its `gate.at`-th request is in flight, then lets
    the request go on; -> (exit status, stderr)."""
    import signal

    err = tmp_path / f"stderr-{gate.at}.txt"
    proc = _spawn(args, err)
    try:
        while not gate.reached.wait(0.2):
            if proc.poll() is not None:
                pytest.fail(f"ended (status {proc.returncode}) before request {gate.at}: {err.read_text()[-2000:]}")
        proc.send_signal(signal.SIGINT)
        gate.release.set()
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return rc, err.read_text(errors="replace")


def _jsonl(path: Path) -> list[dict]:
    """Every line of a JSONL file parsed (a torn line fails the test); [] for no file."""
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _generated(tmp_path: Path, srv, n: int = 3, name: str = "run") -> Path:
    from fake_servers import scripted_reply  # noqa: F401  (the server's default reply teaches every step)

    out = tmp_path / name
    res = runner.invoke(
        app,
        ["generate", "--teacher", "openai:fake-model", "--base-url", srv.base_url, "--max-tutorials", str(n)]
        + ["--out", str(out), "--retries", "0", "--no-posttest"],
    )
    assert res.exit_code == 0, res.output
    return out


def _posttest_reply(prompt: str) -> str:
    import re

    if "This was your lesson" in prompt or "steps" in prompt.lower() and "list" in prompt.lower():
        return "\n".join(f"{i}. Step {i}: do it carefully." for i in range(1, 4))
    m = re.search(r"Step (\d+) of (\d+)", prompt)
    return f"Step {m.group(1)}: do it carefully." if m else "Understood, please go to the next step."


@pytest.mark.parametrize("at", [1, 3, 6])
def test_ctrl_c_during_evaluate_posttest_learner_keeps_every_line_whole_and_resumes(tmp_path, at):
    gate = Gate(at)
    with FakeOpenAI(reply=_posttest_reply) as srv:
        run = _generated(tmp_path, srv)
        srv.reply = gate(_posttest_reply)
        args = ["evaluate", str(run), "--no-judge", "--no-figures", "--base-url", srv.base_url, "--bootstrap", "0"]
        args += ["--metrics", "Step Recall,Learning Gain", "--posttest-learner", "openai:fake-model"]
        rc, err = _ctrl_c_at(gate, args, tmp_path)
        assert rc == 130, err
        assert "interrupted:" in err and "rerun the same command to resume" in err and "Traceback" not in err, err
        kept = {p.name: _jsonl(p) for p in run.glob("*.jsonl")}  # every line whole
        srv.reply = _posttest_reply
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    scores = _jsonl(run / "scores.jsonl")
    ids = [r["conversation_id"] for r in scores]
    assert sorted(set(ids)) == sorted({c["conversation_id"] for c in _jsonl(run / "conversations.jsonl")})
    assert len(ids) == len(set(ids)), ids  # nothing scored twice
    assert all(r["metrics"]["Step Recall"] is not None for r in scores)
    tests = _jsonl(run / "posttests.jsonl")
    assert len({t["conversation_id"] for t in tests}) == len(tests) == len(ids), tests  # nothing asked twice
    for name, lines in kept.items():  # nothing written before the Ctrl-C was lost
        assert _jsonl(run / name)[: len(lines)] == lines, name


def _seen_model(token, before):
    word = token.strip().lower().strip(".,")
    return -0.5 if word and word in before.lower() else -4.0


@pytest.mark.parametrize("at", [1, 5, 14])
def test_ctrl_c_during_judge_check_posttest_likelihood_keeps_every_line_whole_and_resumes(tmp_path, at):
    gate = Gate(at)
    with FakeOpenAI(reply=_posttest_reply, text_logprob=_seen_model) as srv:
        run = _generated(tmp_path, srv, n=3)
        srv.reply, srv.text_logprob = gate(_posttest_reply), gate(_seen_model)
        out = tmp_path / "check"
        args = ["judge-check", str(run), "--out", str(out), "--posttest-learner", "openai:fake-model"]
        args += ["--base-url", srv.base_url, "--posttest-likelihood", "--no-figures"]
        rc, err = _ctrl_c_at(gate, args, tmp_path)
        assert rc == 130, err
        assert "interrupted:" in err and "Traceback" not in err, err
        kept = {p.name: _jsonl(p) for p in out.glob("*.jsonl")}
        srv.reply, srv.text_logprob = _posttest_reply, _seen_model
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    tests = _jsonl(out / "posttests.jsonl")
    keys = [(t["conversation_id"], t.get("variant")) for t in tests]
    assert len(keys) == len(set(keys)) == 3 * 3, keys  # 3 originals + 6 copies, each once
    for name, lines in kept.items():
        assert _jsonl(out / name)[: len(lines)] == lines, name
    assert (out / "posttest_likelihood_validity.csv").is_file()


@pytest.mark.parametrize("at", [1, 4, 9])
def test_ctrl_c_during_compare_keeps_every_judgment_whole_and_resumes(tmp_path, at):
    sys.path.insert(0, str(Path(__file__).parent))
    from test_compare import fake_pair_judge, make_run

    runs = [make_run(tmp_path, name, range(4)) for name in ("weak", "strong")]
    gate = Gate(at)
    judge = fake_pair_judge()
    with FakeOpenAI(logprobs=gate(judge)) as srv:
        out = tmp_path / "cmp"
        args = ["compare", *map(str, runs), "--out", str(out), "--evaluator", "openai:fake-model"]
        args += ["--base-url", srv.base_url, "--bootstrap", "0", "--metrics", "Clarity,Depth", "--no-figures"]
        rc, err = _ctrl_c_at(gate, args, tmp_path)
        assert rc == 130, err
        assert "interrupted:" in err and "Traceback" not in err, err
        kept = _jsonl(out / "pair-judgments.jsonl")
        srv.logprobs = judge
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    lines = _jsonl(out / "pair-judgments.jsonl")
    assert lines[: len(kept)] == kept
    keys = [(r["tutorial_id"], r["first"], r["second"]) for r in lines]
    assert len(keys) == len(set(keys)) == 4 * 2, keys  # each tutorial in both orders, once


def test_two_evaluates_on_one_run_folder_at_once_the_second_is_refused(tmp_path):
    gate = Gate(1)
    with FakeOpenAI(reply=_posttest_reply) as srv:
        run = _generated(tmp_path, srv)
        srv.reply = gate(_posttest_reply)
        args = ["evaluate", str(run), "--no-judge", "--no-figures", "--base-url", srv.base_url, "--bootstrap", "0"]
        args += ["--metrics", "Step Recall", "--posttest-learner", "openai:fake-model"]
        first = _spawn(args, tmp_path / "first.txt")
        try:
            assert gate.reached.wait(120), (tmp_path / "first.txt").read_text()
            second = cli(*args)  # while the first holds the scores file
            gate.release.set()
            assert first.wait(timeout=120) == 0, (tmp_path / "first.txt").read_text()
        finally:
            gate.release.set()
            if first.poll() is None:
                first.kill()
                first.wait()
    err = second.stderr.decode()
    assert second.returncode == 2 and "Traceback" not in err, err
    assert [ln for ln in err.splitlines() if ln.startswith("error:")] and "another" in err, err
    ids = [r["conversation_id"] for r in _jsonl(run / "scores.jsonl")]
    assert len(ids) == len(set(ids)) == 3


@pytest.mark.parametrize("trouble", ["500", "reset", "hang"])
def test_a_judge_server_that_fails_mid_run_keeps_the_scores_and_a_rerun_completes(tmp_path, trouble):
    """A server that answers 500, resets the connection mid-reply or hangs past the request timeout: the
    command stops with one line naming the server's failure, keeps the scores made before, and the same
    command against a sound server completes them, each once."""
    import threading

    sys.path.insert(0, str(Path(__file__).parent))
    from test_checklist import _yes_no_judge

    run = run_copy(tmp_path)
    cfg = tmp_path / "fast.yaml"
    cfg.write_text("model: {timeout_s: 1, max_retries: 0}\n")
    calls = []
    stop = threading.Event()

    def failing(prompt):  # called first for every request: the 5th and later answer 500
        calls.append(prompt)
        return trouble == "500" and len(calls) > 4 and not stop.is_set()

    def judge(prompt):
        if len(calls) > 4 and not stop.is_set():
            if trouble == "hang":
                stop.wait(5)
            if trouble == "reset":
                raise ConnectionResetError  # the connection closes with no reply (kept in srv.server.errors)
        return _yes_no_judge(prompt)

    with FakeOpenAI(logprobs=judge, fail_when=failing) as srv:
        args = ["evaluate", str(run), "--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--no-figures"]
        args += ["--judge-scoring", "checklist", "--metrics", "Clarity", "--config", str(cfg), "--retries", "0"]
        res = runner.invoke(app, args)
        stop.set()
        assert res.exit_code != 0, res.output
        assert "Traceback" not in res.output and "rerun" in res.output, res.output
        kept = _jsonl(run / "scores.jsonl")
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    lines = _jsonl(run / "scores.jsonl")
    assert lines[: len(kept)] == kept
    ids = [r["conversation_id"] for r in lines]
    assert len(ids) == len(set(ids)) == 3 and all(r["metrics"]["Clarity"] is not None for r in lines)


# ------------------------------------------------------------------ the report: per-item view and trust box

XSS = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def _checklist_run(tmp_path: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_checklist import _yes_no_judge

    run = run_copy(tmp_path)
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:
        res = runner.invoke(
            app,
            ["evaluate", str(run), "--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--no-figures"]
            + ["--judge-scoring", "checklist", "--metrics", "Progress,Clarity"],
        )
        assert res.exit_code == 0, res.output
    return run


def _site_text(site: Path) -> dict[str, str]:
    return {
        str(p.relative_to(site)): p.read_text(encoding="utf-8") for p in site.rglob("*") if p.suffix in (".html", ".js")
    }


def _no_constant(name: str):
    pytest.fail(f"{name} in the report's data")


def _chunks(site: Path) -> dict:
    import re

    out = {}
    for p in sorted((site / "data").glob("conv-*.js")):
        m = re.fullmatch(r"reportChunk\(\d+, (.*)\);\n", p.read_text(encoding="utf-8"), re.S)
        out.update(json.loads(m.group(1), parse_constant=_no_constant))
    return out


def test_html_and_script_in_items_steps_and_turns_stay_text_in_the_report(tmp_path):
    run = _checklist_run(tmp_path)
    lines = (run / "conversations.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        if "tutorial" in rec:
            rec["tutorial"]["steps"] = [XSS + s for s in rec["tutorial"]["steps"]]
        for t in rec.get("turns", []):
            t["text"] = XSS + t["text"]
        rec["title"] = XSS
        out.append(json.dumps(rec))
    (run / "conversations.jsonl").write_text("\n".join(out) + "\n")
    scores = _jsonl(run / "scores.jsonl")
    for r in scores:
        for it in r["judge"]["items"]:
            it["question"] = XSS + it["question"]
        r["judge"]["notes"] = [XSS]
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    site = tmp_path / "site"
    for name, text in _site_text(site).items():
        if name.endswith(".html"):
            assert "<script>alert" not in text and "<img src=x" not in text, name  # escaped where it is shown
    data = _chunks(site)  # the data files are JSON handed to a function (DOM text, never markup)
    assert any(XSS in row[2] for c in data.values() for row in c.get("checklist", []))
    for js in ("report.js", "conversation.js"):
        src = (site / js).read_text() if (site / js).exists() else next(iter(site.rglob(js))).read_text()
        assert "innerHTML" not in src and "insertAdjacentHTML" not in src and "document.write" not in src


def test_impossible_item_probabilities_are_left_out_of_the_report(tmp_path):
    run = _checklist_run(tmp_path)
    scores = _jsonl(run / "scores.jsonl")
    for r in scores:
        its = r["judge"]["items"]
        its[0]["p_yes"], its[1]["good"], its[2]["mass"] = float("nan"), 7.0, float("inf")
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))  # NaN, Infinity as Python writes
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    data = _chunks(tmp_path / "site")  # fails on a NaN or Infinity in the page data
    for c in data.values():
        for row in c.get("checklist", []):
            assert all(v is None or (isinstance(v, (int, float)) and 0 <= v <= 1) for v in row[4:7]), row


def test_a_hundred_thousand_items_on_one_conversation(tmp_path):
    run = _checklist_run(tmp_path)
    scores = _jsonl(run / "scores.jsonl")
    item = scores[0]["judge"]["items"][0]
    scores[0]["judge"]["items"] = [{**item, "id": f"rubric:Clarity:x{i}"} for i in range(100_000)]
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    data = _chunks(tmp_path / "site")
    assert max(len(c.get("checklist", [])) for c in data.values()) <= 100_000


def test_a_tampered_measured_figures_file_is_one_line_in_the_trust_box(tmp_path, monkeypatch):
    from wikihowagent.report import measured

    run = _checklist_run(tmp_path)
    scores = run / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"openai:fake-model"', '"local"'))  # as if judged by `local`
    good = json.loads(measured.measured_path().read_text())
    cases = {
        "html": lambda d: d["modes"]["checklist"][0].update(what=XSS[:190]),
        "huge mode": lambda d: d["modes"].update({"x" * 5000: d["modes"]["checklist"]}),
        "no figures": lambda d: d["modes"].update(checklist=[]),
        "no modes": lambda d: d.update(modes={}),
        "n huge": lambda d: d["modes"]["checklist"][0].update(n=10**400),
        "a list": lambda d: d.update(modes=[1, 2]),
    }
    for name, change in cases.items():
        data = json.loads(json.dumps(good))
        change(data)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        monkeypatch.setattr(measured, "measured_path", lambda p=path: p)
        site = tmp_path / f"site-{name}"
        res = runner.invoke(app, ["report", str(run), "--out", str(site)])
        assert res.exit_code == 0, (name, res.output)
        index = (site / "index.html").read_text()
        assert "<script>alert" not in index, name
        if name != "html":
            assert "measured figures are not available: " in index and f"{name}.json" in index, name


# ------------------------------------------------------------------ help at any width


@pytest.mark.parametrize("columns", [1, 20, 10_000])
@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_help_at_any_terminal_width_shows_every_option_whole(command, columns):
    """COLUMNS=1 printed only the panels' corners and COLUMNS=20 cut the help into 2-letter columns; help is now
    laid out at least 60 wide (and at most 100), every option name whole."""
    import typer

    res = cli(command, "--help", env={"COLUMNS": str(columns)})
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    lines = out.splitlines()
    assert "Usage:" in out and max(len(ln) for ln in lines) == min(100, max(60, columns)), out[:2000]
    click_cmd = typer.main.get_command(app).commands[command]
    for p in click_cmd.params:
        for name in p.opts if p.param_type_name == "option" else []:
            if name.startswith("--"):
                assert any(name in ln.split() or f"{name}," in ln for ln in lines) or name in out, name
