"""The counterfactual validity set (wikihowagent/corpus/counterfactual.py, scripts/make_validity_set.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from wikihowagent.corpus import counterfactual as CF
from wikihowagent.corpus.core import load_tutorials
from wikihowagent.evaluation.metrics import load_wordnet

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_validity_set as MV  # noqa: E402

EGGS = {
    "title": "How to Hard Boil Eggs", "path": "x/eggs.json", "categories": ["Categories", "Food & Cooking", "Eggs"],
    "introduction": "Eggs are easy.",
    "methods": [{"title": "On the Stove", "steps": [
        "Place the eggs in a saucepan. Use a pot large enough.",
        "Cover the eggs with cold water. Add water to cover them by 1 inch.",
        "Bring the water to a boil. This takes 8 to 12 minutes.",
        "Move the eggs to an ice bath. Leave them for five minutes.",
    ]}],
    "qa": [{"question": "Why eggs?", "answer": "Eggs."}], "tips": ["Eggs keep."], "warnings": [],
    "things_youll_need": [{"method": "On the Stove", "items": ["Eggs", "Saucepan"]}], "references": ["r"],
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
    assert art["title"] == f"How to Hard Boil {names['egg'].capitalize()}s"
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
    assert art["qa"] == [] and art["tips"] == [] and art["references"] == []


def test_order_only_and_negation_fallback(wn):
    art = {"title": "How to Wait", "methods": [{"title": "M", "steps": ["Stir the soup.", "Salt the soup."]}]}
    out = CF.transform_article(art, "wait.json", 0, wn, ["order", "contradiction"])
    steps = out.article["methods"][0]["steps"]
    assert out.article["counterfactual"]["methods"][0]["order"] == [2, 1]
    assert any(s.startswith("Do not ") for s in steps)  # no antonym anywhere: negated, and recorded
    assert "negated" in out.article["counterfactual"]["methods"][0]["contradiction"]


def test_nothing_to_change_is_said_not_silent(wn, tmp_path, capsys):
    art = {"title": "How to Apologize", "path": "x/a.json", "categories": ["Categories", "Relationships"],
           "methods": [{"title": "M", "steps": ["Say you are sorry.", "Mean what you say."]}]}
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
    art = {"title": "How to Cook Soup", "path": "x/soup.json", "categories": ["Categories", "Food & Cooking"],
           "methods": [{"title": "Cooking", "steps": steps_of(n)}]}
    with pytest.raises(CF.ValiditySetError, match=rf"soup.json: method 'Cooking' has {n} steps?: a validity "
                                                   r"tutorial needs 2 to 30 steps"):
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
    """data/validity/counterfactual is exactly what the script makes from the bundled tutorials (seed 0),
    and loads as 22 tutorials of 2..30 steps."""
    MV.main(["--out", str(tmp_path / "cf")])
    shipped = ROOT / "data" / "validity" / "counterfactual"
    made = {p.relative_to(tmp_path / "cf"): p.read_text() for p in (tmp_path / "cf").rglob("*.json")}
    have = {p.relative_to(shipped): p.read_text().replace(str(shipped.relative_to(ROOT)), str(tmp_path / "cf"))
            for p in shipped.rglob("*.json")}
    assert made == have
    tuts = load_tutorials(shipped)
    assert len(tuts) == 22 and all(CF.MIN_STEPS <= len(t.steps) <= CF.MAX_STEPS for t in tuts)
