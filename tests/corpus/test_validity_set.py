"""The counterfactual validity set (wikihowagent/corpus/counterfactual.py, scripts/make_validity_set.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from wikihowagent.corpus import counterfactual as CF
from wikihowagent.corpus.core import load_tutorials
from wikihowagent.metrics.computational import load_wordnet

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import make_validity_set as MV  # noqa: E402

EGGS = {
    "title": "How to Hard Boil Eggs",
    "path": "x/eggs.json",
    "categories": ["Categories", "Food & Cooking", "Eggs"],
    "introduction": "Eggs are easy.",
    "methods": [
        {
            "title": "On the Stove",
            "steps": [
                "Place the eggs in a saucepan. Use a pot large enough.",
                "Cover the eggs with cold water. Add water to cover them by 1 inch.",
                "Bring the water to a boil. This takes 8 to 12 minutes.",
                "Move the eggs to an ice bath. Leave them for five minutes.",
            ],
        }
    ],
    "qa": [{"question": "Why eggs?", "answer": "Eggs."}],
    "tips": ["Eggs keep."],
    "warnings": [],
    "things_youll_need": [{"method": "On the Stove", "items": ["Eggs", "Saucepan"]}],
    "references": ["r"],
}


@pytest.fixture(scope="module")
def wn():
    return load_wordnet()


def steps_of(n):
    return [f"Stir the soup for {i + 1} minutes. Use a spoon." for i in range(n)]


def test_same_seed_same_output_other_seed_differs(wn):
    a = CF.transform_article(json.loads(json.dumps(EGGS)), "eggs.json", 0, wn).article
    b = CF.transform_article(json.loads(json.dumps(EGGS)), "eggs.json", 0, wn).article
    c = CF.transform_article(json.loads(json.dumps(EGGS)), "eggs.json", 1, wn).article
    assert a == b
    assert a["counterfactual"]["names"] != c["counterfactual"]["names"]


def test_each_transform_is_applied(wn):
    out = CF.transform_article(json.loads(json.dumps(EGGS)), "eggs.json", 0, wn)
    art, rec = out.article, out.article["counterfactual"]
    assert out.notes == [] and rec["not_applied"] == {}
    # names: eggs, saucepan, water, ice... become invented words, in the title too, consistently
    names = rec["names"]
    assert {"egg", "saucepan", "water"} <= set(names)
    assert art["title"].startswith("How to Perform the ") and art["title"].endswith(" Procedure")  # opaque
    assert art["methods"][0]["title"].startswith("The ") and "Stove" not in art["methods"][0]["title"]
    no_title = CF.transform_article(json.loads(json.dumps(EGGS)), "eggs.json", 0, wn, ["names"]).article
    assert no_title["title"] == f"How to Hard Boil {no_title['counterfactual']['names']['egg'].capitalize()}s"
    text = " ".join(art["methods"][0]["steps"]).lower()
    assert "egg" not in text and "saucepan" not in text and names["saucepan"] in text
    assert all(not wn.synsets(w) for w in names.values())  # not English words
    # quantities: every number times one factor (8 to 12 -> 8f to 12f; "five" -> 5f)
    f = rec["quantity_factor"]
    assert f in CF.FACTORS and f"{8 * f} to {12 * f} minutes" in text and f"for {5 * f} minutes" in text
    # order: a fixed permutation that is not the identity
    order = rec["methods"][0]["order"]
    assert sorted(order) == [1, 2, 3, 4] and order != [1, 2, 3, 4]
    # contradiction: one step's words swapped for antonyms (cold -> hot)
    k = rec["methods"][0]["contradicted_step"]
    assert "antonyms" in rec["methods"][0]["contradiction"]
    assert "hot" in text and "cold" not in art["methods"][0]["steps"][order.index(k)].lower()
    # the Q&A, tips and references are dropped (they name the original things)
    assert art["qa"] == [] and art["tips"] == [] and art["references"] == [] and art["things_youll_need"] == []


def test_order_only_and_negation_fallback(wn):
    art = {"title": "How to Wait", "methods": [{"title": "M", "steps": ["Stir the soup.", "Salt the soup."]}]}
    out = CF.transform_article(art, "wait.json", 0, wn, ["order", "contradiction"])
    steps = out.article["methods"][0]["steps"]
    assert out.article["counterfactual"]["methods"][0]["order"] == [2, 1]
    assert any(s.startswith("Do not ") for s in steps)  # no antonym anywhere: negated, and recorded
    assert "negated" in out.article["counterfactual"]["methods"][0]["contradiction"]


def test_nothing_to_change_is_said_not_silent(wn, tmp_path, capsys):
    art = {
        "title": "How to Apologize",
        "path": "x/a.json",
        "categories": ["Categories", "Relationships"],
        "methods": [{"title": "M", "steps": ["Say you are sorry.", "Mean what you say."]}],
    }
    out = CF.transform_article(art, "a.json", 0, wn, ["names", "quantities"])
    assert any("'names' not applied (no object or tool name to change)" in n for n in out.notes)
    assert any("'quantities' not applied (no quantity to change)" in n for n in out.notes)
    assert set(out.article["counterfactual"]["not_applied"]) == {"names", "quantities"}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text(json.dumps(art))
    assert MV.main(["--tutorials", str(tmp_path / "in"), "--out", str(tmp_path / "o1")]) == 0
    assert "transform 'quantities' not applied" in capsys.readouterr().out
    assert MV.main(["--tutorials", str(tmp_path / "in"), "--out", str(tmp_path / "o2"), "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "a.json" in err and "not applied" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("n", [1, 40])
def test_bad_step_counts(wn, tmp_path, capsys, n):
    art = {
        "title": "How to Cook Soup",
        "path": "x/soup.json",
        "categories": ["Categories", "Food & Cooking"],
        "methods": [{"title": "Cooking", "steps": steps_of(n)}],
    }
    with pytest.raises(
        CF.ValiditySetError,
        match=rf"soup.json: method 'Cooking' has {n} steps?: a validity "
        r"tutorial needs 2 to 30 steps",
    ):
        CF.transform_article(art, "soup.json", 0, wn)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "soup.json").write_text(json.dumps(art))
    assert MV.main(["--tutorials", str(tmp_path / "in"), "--out", str(tmp_path / "o"), "--strict"]) == 2
    err = capsys.readouterr().err
    assert f"has {n} step" in err and "soup.json" in err and len(err.splitlines()) == 1
    assert MV.main(["--tutorials", str(tmp_path / "in"), "--out", str(tmp_path / "o")]) == 2  # nothing left
    assert "skipped: " in capsys.readouterr().out


def test_unknown_transform_and_existing_out(tmp_path, capsys):
    assert MV.main(["--transforms", "names,colour", "--out", str(tmp_path / "o")]) == 2
    assert "'colour' is not a transform" in capsys.readouterr().err
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "x.json").write_text("{}")
    assert MV.main(["--out", str(tmp_path / "o")]) == 2
    assert "--force" in capsys.readouterr().err


def test_shipped_set_is_the_scripts_output(tmp_path):
    """wikihowagent/data/validity/counterfactual is exactly what the script makes from the bundled tutorials (seed 0),
    and loads as 22 tutorials of 2..30 steps."""
    MV.main(["--out", str(tmp_path / "cf")])
    shipped = ROOT / "wikihowagent" / "data" / "validity" / "counterfactual"
    made = {p.relative_to(tmp_path / "cf"): p.read_text() for p in (tmp_path / "cf").rglob("*.json")}
    have = {
        p.relative_to(shipped): p.read_text().replace(
            str(shipped.relative_to(ROOT / "wikihowagent")), str(tmp_path / "cf")
        )
        for p in shipped.rglob("*.json")
    }
    assert made == have
    tuts = load_tutorials(shipped)
    assert len(tuts) == 22 and all(CF.MIN_STEPS <= len(t.steps) <= CF.MAX_STEPS for t in tuts)


# ------------------------------------------------------------------ judge-check --posttest-learner --tutorials

from fake_servers import FakeOpenAI  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from wikihowagent.cli import app  # noqa: E402

VALIDITY = str(ROOT / "wikihowagent" / "data" / "validity" / "counterfactual")
BUNDLED = str(ROOT / "wikihowagent" / "data" / "tutorials")


def _attentive(prompt):
    """Teacher prompts get the step; the post-test recalls every step the teacher taught."""
    import re

    m = re.search(r"Step (\d+) of (\d+): (.*)", prompt)
    if m and "This was your lesson" not in prompt:
        return f"Step {m.group(1)}: {m.group(3)}"
    if "This was your lesson" in prompt:
        taught = re.findall(r"Teacher: Step \d+: (.*)", prompt)
        return "\n".join(f"{i}. {t}" for i, t in enumerate(taught, 1)) or "I learned nothing."
    if "Before any lesson" in prompt:
        return "I have no idea."
    return "Understood, please go to the next step."


def _generate(runner, srv, out, n, *extra):
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


def test_judge_check_splits_the_posttest_validity_by_tutorial_set(tmp_path):
    runner = CliRunner()
    with FakeOpenAI(reply=_attentive) as srv:
        _generate(runner, srv, tmp_path / "bundled", 3)
        _generate(runner, srv, tmp_path / "cf", 3, "--tutorials", VALIDITY)
        res = runner.invoke(
            app,
            [
                "judge-check",
                str(tmp_path / "bundled"),
                str(tmp_path / "cf"),
                "--out",
                str(tmp_path / "check"),
                "--posttest-learner",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--tutorials",
                VALIDITY,
                "--tutorials",
                BUNDLED,
            ],
        )
        assert res.exit_code == 0, res.output
        # off_topic copies are taught from a conversation of the same set: a counterfactual conversation's
        # copy shows only counterfactual teaching (its invented words), a bundled one's none of them
        cf_titles = {t.title for t in load_tutorials(VALIDITY)}
        posts = [r for r in srv.requests if "This was your lesson" in r["messages"][-1]["content"]]
        assert posts
    assert "--tutorials " in res.output and "one step" in res.output  # the bundled set's skipped method is said
    import pandas as pd

    by_set = pd.read_csv(tmp_path / "check" / "posttest_validity_by_set.csv")
    assert list(by_set.columns[:3]) == ["tutorials", "perturbation", "n"]
    assert sorted(zip(by_set["tutorials"], by_set["perturbation"], strict=True)) == [
        ("counterfactual", "off_topic"),
        ("counterfactual", "skip_steps"),
        ("tutorials", "off_topic"),
        ("tutorials", "skip_steps"),
    ]
    assert (by_set["n"] == 3).all() and (by_set["accuracy"] > 0.8).all()
    overall = pd.read_csv(tmp_path / "check" / "posttest_validity.csv")
    assert list(overall.columns[:3]) == ["perturbation", "n", "accuracy"] and (overall["n"] == 6).all()
    assert "Per tutorial set" in (tmp_path / "check" / "posttest_validity.md").read_text()
    assert "counterfactual: skip_steps" in res.output
    assert cf_titles  # the set loaded


def test_off_topic_donor_is_of_the_same_set():
    from wikihowagent.judge.rubric_judge import load_rubrics
    from wikihowagent.judgecheck.perturbations import load_perturbations
    from wikihowagent.judgecheck.posttest_check import PostTestCheck, variants
    from wikihowagent.records import Conversation, Turn

    def conv(cid, title, text):
        turns = [Turn(role="teacher", text=text, step=0), Turn(role="learner", text="OK.")]
        return Conversation.from_turns(turns, ["a", "b"], title, conversation_id=cid, title=title)

    convs = [conv("a1", "How A", "alpha"), conv("b1", "How B", "beta"), conv("a2", "How C", "gamma")]
    perts = [p for p in load_perturbations(None, list(load_rubrics(None))) if p.kind == "off_topic"]
    sets = {"a1": "x", "a2": "x", "b1": "y"}
    jobs = dict(((c.conversation_id, v), c) for v, c in variants(convs, perts, PostTestCheck(), sets))
    teach = lambda c: [m.text for m in c.messages if m.role == "teacher"]  # noqa: E731
    assert teach(jobs[("a1", "off_topic")]) == ["gamma"] and teach(jobs[("a2", "off_topic")]) == ["alpha"]
    assert ("b1", "off_topic") not in jobs  # alone in its set: not applicable
    jobs = dict(((c.conversation_id, v), c) for v, c in variants(convs, perts, PostTestCheck()))
    assert teach(jobs[("a1", "off_topic")]) == ["beta"]  # without sets: any other conversation, as before


def test_tutorials_bad_input_is_one_line(tmp_path):
    runner = CliRunner()
    run = str(ROOT / "tests" / "fixtures" / "evaluation" / "run_small")
    res = runner.invoke(app, ["judge-check", run, "--out", str(tmp_path / "o"), "--tutorials", VALIDITY])
    assert res.exit_code == 2 and "--tutorials: give --posttest-learner" in res.output
    long = {
        "title": "How to Cook Soup",
        "path": "x/soup.json",
        "categories": ["Categories", "Food & Cooking"],
        "methods": [{"title": "Cooking", "steps": steps_of(40)}],
    }
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "soup.json").write_text(json.dumps(long))
    res = runner.invoke(
        app,
        [
            "judge-check",
            run,
            "--out",
            str(tmp_path / "o"),
            "--posttest-learner",
            "openai:fake-model",
            "--base-url",
            "http://127.0.0.1:9",
            "--tutorials",
            str(tmp_path / "long"),
        ],
    )
    assert res.exit_code == 2 and "method 'Cooking' has 40 steps: a validity tutorial needs 2 to 30" in res.output
    assert "Traceback" not in res.output
    with FakeOpenAI(reply=_attentive) as srv:
        res = runner.invoke(
            app,
            [
                "judge-check",
                run,
                "--out",
                str(tmp_path / "o"),
                "--posttest-learner",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--tutorials",
                VALIDITY,
            ],
        )
    assert res.exit_code == 2 and "--tutorials counterfactual: none of the" in res.output
