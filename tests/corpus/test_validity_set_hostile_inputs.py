"""Hostile input to the validity-set maker (scripts/make_validity_set.py): tutorials with 0, 1 or 60 steps,
non-Latin scripts, hidden characters, a megabyte step, odd seeds, hostile domains and titles, an unusable output
folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import ROOT


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
