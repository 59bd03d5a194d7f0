"""The tutorial loader: three input forms, filters, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikihowagent.corpus.core import LoadReport, TutorialError, domain_of, load_tutorials, strip_citations


def article(title="How to Knit", domain="Hobbies & Leisure", methods=None):
    return {
        "title": title,
        "path": f"x/{title}.json",
        "categories": ["Categories", domain, "Crafts"],
        "introduction": "Intro text.",
        "methods": methods
        if methods is not None
        else [
            {"title": "Part 1 of 2:Start", "steps": ["Cast on. Loop the yarn.", "Knit a row. Keep it loose."]},
            {"title": "Part 2 of 2:Finish", "steps": ["Bind off. Cut the yarn."]},  # single step: skipped
        ],
        "qa": [],
        "tips": [],
        "warnings": [],
        "things_youll_need": [],
        "references": [],
    }


def write_tree(root: Path, arts):
    for a in arts:
        p = root / a["categories"][1] / a["title"] / f"{a['title']}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(a))


def test_bundled_sample_is_the_default():
    report = LoadReport()
    tuts = load_tutorials(report=report)
    assert len(tuts) >= 12
    assert len({t.domain for t in tuts}) >= 6
    assert report.skipped == {"one step": 1}
    assert all(len(t.steps) >= 2 for t in tuts)
    assert tuts == load_tutorials()  # deterministic order and ids
    assert len({t.tutorial_id for t in tuts}) == len(tuts)
    # The sample's citation debris is stripped.
    assert not any("XResearch source" in s for t in tuts for s in t.steps)


def test_three_input_forms_agree(tmp_path):
    arts = [article("How to Knit"), article("How to Bake", "Food & Cooking")]
    write_tree(tmp_path / "tree", arts)
    (tmp_path / "one.json").write_text(json.dumps(arts))
    (tmp_path / "lines.jsonl").write_text("\n".join(json.dumps(a) for a in arts) + "\n")
    (tmp_path / "single.json").write_text(json.dumps(arts[0]))
    for src in ("tree", "one.json", "lines.jsonl"):
        tuts = load_tutorials(tmp_path / src)
        assert sorted(t.title for t in tuts) == ["How to Bake", "How to Knit"], src
        t = next(t for t in tuts if t.title == "How to Knit")
        assert t.method_id == 0 and t.method_title == "Part 1 of 2:Start"
        assert t.domain == "Hobbies & Leisure" and t.summary == "Intro text."
        assert t.categories == ["Categories", "Hobbies & Leisure", "Crafts"]
    assert len(load_tutorials(tmp_path / "single.json")) == 1


def test_domain_filter_and_cap(tmp_path):
    write_tree(
        tmp_path,
        [article("How to Knit"), article("How to Bake", "Food & Cooking"), article("How to Fry", "Food & Cooking")],
    )
    assert {t.title for t in load_tutorials(tmp_path, domains=["food & cooking"])} == {"How to Bake", "How to Fry"}
    assert len(load_tutorials(tmp_path, max_tutorials=2)) == 2
    assert load_tutorials(tmp_path, domains=["Health"]) == []


def test_ids_are_stable_and_depend_on_source_and_method(tmp_path):
    two = article(methods=[{"title": "A", "steps": ["a. a.", "b. b."]}, {"title": "B", "steps": ["c. c.", "d. d."]}])
    write_tree(tmp_path, [two])
    ids = [t.tutorial_id for t in load_tutorials(tmp_path)]
    assert len(set(ids)) == 2 and ids == [t.tutorial_id for t in load_tutorials(tmp_path)]


@pytest.mark.parametrize(
    "content,needle",
    [
        ("{not json", "malformed JSON"),
        (json.dumps({"methods": []}), "missing field 'title'"),
        (json.dumps({"title": "How to X"}), "missing field 'methods'"),
        (json.dumps(article(methods=[{"title": "M", "steps": ["ok. ok.", 3]}])), "step 2 is not text"),
        (json.dumps(article(methods=[{"title": "M"}])), "missing field 'steps'"),
    ],
)
def test_bad_article_names_the_file(tmp_path, content, needle):
    bad = tmp_path / "Cat" / "Bad" / "Bad.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(content)
    with pytest.raises(TutorialError) as err:
        load_tutorials(tmp_path)
    msg = str(err.value)
    assert str(bad) in msg and needle in msg and "\n" not in msg


def test_bad_jsonl_line_is_named(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps(article()) + "\n{oops\n")
    with pytest.raises(TutorialError, match=r"a\.jsonl:2: malformed JSON"):
        load_tutorials(f)


def test_skip_invalid_keeps_the_good_articles(tmp_path):
    write_tree(tmp_path, [article("How to Knit")])
    bad = tmp_path / "Cat" / "Bad" / "Bad.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"title": "Bad"}))
    (tmp_path / "Cat" / "zz.json").write_text("{broken")
    report = LoadReport()
    tuts = load_tutorials(tmp_path, skip_invalid=True, report=report)
    assert [t.title for t in tuts] == ["How to Knit"]
    assert len(report.invalid) == 2 and "Bad.json" in report.invalid[0] and "zz.json" in report.invalid[1]
    lines = tmp_path / "a.jsonl"
    lines.write_bytes(json.dumps(article()).encode() + b"\n{oops\n\xff\xfe\n")
    report = LoadReport()
    assert len(load_tutorials(lines, skip_invalid=True, report=report)) == 1
    assert [p.split(": ", 1)[1] for p in report.invalid] == [
        "malformed JSON (Expecting property name enclosed in double quotes)",
        "not UTF-8 text",
    ]


def test_missing_path(tmp_path):
    for name in ("nope.json", "nope.jsonl", "nope"):
        with pytest.raises(TutorialError, match="no such file"):
            load_tutorials(tmp_path / name)


def test_non_utf8_jsonl_is_one_line(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_bytes(b"\xff\xfe{}\n")
    with pytest.raises(TutorialError, match=r"a\.jsonl:1: not UTF-8 text"):
        load_tutorials(f)


def test_strip_citations_and_domain():
    s = "Keep it moist.[3]XResearch source Then wait.[6]XTrustworthy SourceMayo ClinicEducational site...Go to source Done.[2]"
    assert strip_citations(s) == "Keep it moist. Then wait. Done."
    assert domain_of(["Categories", "Health", "Sleep"]) == "Health"
    assert domain_of(["Health"]) == "Health" and domain_of([]) == ""
