"""The corpus stage: the paper's domains and topics, skip rules, duplicates, balanced samples, `stats`
numbers computed by hand, the knowledge graph files, and the `tutorials` / `stats` commands."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.corpus.core import LoadReport, TutorialError, iter_articles, load_tutorials
from wikihowagent.corpus.sampling import balanced_sample, select_tutorials
from wikihowagent.domains import DomainTable, default_domains_path, record_domain

PAPER_CSV = Path("/work/shared/paper/tasks_per_topic_domain.csv")


def art(title, cats, methods=None, path=None, **extra):
    a = {
        "title": title,
        "categories": ["Categories", *cats],
        "introduction": "Intro.",
        "methods": methods if methods is not None else [{"title": "Main", "steps": ["One two three.", "Four five."]}],
    }
    if path:
        a["path"] = path
    return a | extra


def put(root: Path, folder: str, a: dict) -> Path:
    p = root / folder / a["title"] / f"{a['title']}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(a), encoding="utf-8")
    return p


def table_rows() -> list[tuple[str, str]]:
    lines = [ln for ln in default_domains_path().read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    return [(r["Domain"], r["Topic"]) for r in csv.DictReader(lines)]


# ------------------------------------------------------------------ mapping


def test_shipped_table_is_the_papers_with_its_notice():
    text = default_domains_path().read_text(encoding="utf-8")
    assert "Apache License" in text and "WikiHowAgent authors" in text
    rows = table_rows()
    assert len(rows) == 81 and len({d for d, _ in rows}) == 17
    if PAPER_CSV.exists():  # the shipped copy is the paper's table, row for row
        with PAPER_CSV.open(encoding="utf-8") as fh:
            assert rows == [(r["Domain"], r["Topic"]) for r in csv.DictReader(fh)]


def test_every_topic_folder_of_the_table_maps_to_its_domain(tmp_path):
    rows = table_rows()
    for i, (_, topic) in enumerate(rows):  # breadcrumbs that would say otherwise: the folder wins
        put(tmp_path, topic, art(f"How to Do {i}", ["Unrelated Things"]))
    report = LoadReport()
    got = {a.topic: a.domain for a in iter_articles(tmp_path, report=report)}
    assert got == dict((t, d) for d, t in rows)
    assert not report.unmapped


def test_topic_from_categories_without_folder_and_unmapped_fallback(tmp_path):
    lines = tmp_path / "a.jsonl"
    lines.write_text(
        "\n".join(
            json.dumps(a)
            for a in [
                art("How to Flirt", ["Relationships", "Dating", "Flirting Online"]),  # a crumb that is a topic
                art("How to Weave", ["Crafty Things", "Baskets"]),  # nothing known: categories[1]
                art("How to Sketch", ["Hobbies and Crafts", "Drawing", "Pencil"]),
            ]
        )
        + "\n"
    )
    report = LoadReport()
    tuts = load_tutorials(lines, report=report)
    assert [(t.topic, t.domain) for t in tuts] == [
        ("Dating", "Relationships"),
        ("Baskets", "Crafty Things"),
        ("Drawing", "Hobbies & Leisure"),
    ]
    assert report.unmapped == Counter({"Baskets": 1})
    # A folder not in the table is the topic, counted as unmapped; its domain falls back to categories[1].
    put(tmp_path / "tree", "Underwater-Basket-Weaving", art("How to Weave", ["Crafty Things", "Baskets"]))
    report = LoadReport()
    [t] = load_tutorials(tmp_path / "tree", report=report)
    assert (t.topic, t.domain) == ("Underwater-Basket-Weaving", "Crafty Things")
    assert report.unmapped == Counter({"Underwater-Basket-Weaving": 1}) and "1 unmapped topics" in report.summary()


def test_bundled_sample_lands_in_paper_domains():
    paper_domains = {d for d, _ in table_rows()}
    report = LoadReport()
    tuts = load_tutorials(report=report)
    assert {t.domain for t in tuts} <= paper_domains and not report.unmapped
    assert {t.domain for t in tuts if t.title == "How to Teach a Dog to Sit"} == {"Pets & Animals"}
    assert {t.topic for t in tuts if t.title == "How to Teach a Dog to Sit"} == {"Dogs"}


def test_paper_records_get_the_paper_domain():
    # The paper's released records carry the crawl path and the breadcrumb, no domain.
    assert (
        record_domain(
            ["Categories", "Relationships", "Relationship Issues"],
            "/data/wikihow/Relationship-Issues/How to X/How to X.json",
        )
        == "Relationships"
    )
    assert record_domain(["Categories", "Education and Communications", "Studying"]) == "Education"
    assert record_domain(["Categories", "Mystery"], "/home/u/x/How to Y/How to Y.json") == "Mystery"


def test_topic_and_domain_filters_and_domains_file(tmp_path):
    put(tmp_path / "c", "Dating", art("How to Flirt", ["Relationships", "Dating"]))
    put(tmp_path / "c", "Drawing", art("How to Sketch", ["Hobbies and Crafts", "Drawing"]))
    assert [t.title for t in load_tutorials(tmp_path / "c", topics=["dating"])] == ["How to Flirt"]
    assert [t.title for t in load_tutorials(tmp_path / "c", domains=["hobbies & leisure"])] == ["How to Sketch"]
    custom = tmp_path / "mine.csv"
    custom.write_text("Domain,Topic\nLove Life,Dating\n", encoding="utf-8")
    tuts = list(select_tutorials(tmp_path / "c", domains_file=custom))
    assert {t.title: t.domain for t in tuts} == {"How to Flirt": "Love Life", "How to Sketch": "Hobbies and Crafts"}
    # A --domains file that places no article contributes nothing: an error, for tutorials and stats.
    custom.write_text("Domain,Topic\nSpace,Rockets\n", encoding="utf-8")
    for cmd in (["tutorials"], ["stats", "--no-figures", "--out", str(tmp_path / "o")]):
        result = CliRunner().invoke(app, [*cmd, "--tutorials", str(tmp_path / "c"), "--domains", str(custom)])
        assert result.exit_code == 2, result.output
        assert f"{custom}: none of its topics or domains matches any of the 2 articles" in result.output


@pytest.mark.parametrize(
    "content,needle",
    [
        ("", "empty file"),
        ("Domain,Topic\n", "no rows (header only)"),
        ("Area,Subject\nA,B\n", "line 1: expected columns Domain and Topic"),
        ("# note\nDomain,Topic\nHealth,\n", "line 3: empty Domain or Topic"),
    ],
)
def test_bad_domains_file_is_one_line_naming_it(tmp_path, content, needle):
    f = tmp_path / "d [x].csv"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(TutorialError) as err:
        list(select_tutorials(None, domains_file=f))
    assert str(f) in str(err.value) and needle in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------ skip rules


def test_methods_without_usable_steps_are_skipped_not_fatal(tmp_path):
    methods = [
        {"title": "Debris", "steps": ["[3]", "[4]XResearch source"]},  # only citation debris
        {"title": "Empty", "steps": []},
        {"title": "Blank", "steps": ["  ", ""]},
        {"title": "One left", "steps": ["Real step.[2]", "[5]"]},
        {"title": "Good", "steps": ["First.[1]", "   ", "Second."]},
    ]
    put(tmp_path, "Dogs", art("How to Mix", ["Pets and Animals", "Dogs"], methods=methods))
    report = LoadReport()
    tuts = load_tutorials(tmp_path, report=report)
    assert [(t.method_title, t.steps) for t in tuts] == [("Good", ["First.", "Second."])]
    assert tuts[0].method_id == 4
    assert report.skipped == Counter({"no usable step": 3, "one step": 1}) and report.methods == 5
    assert report.empty_steps == 2 + 2 + 1 + 1
    # Without citation stripping the debris is text, so that method is a tutorial.
    raw = load_tutorials(tmp_path, clean_citations=False)
    assert [t.method_title for t in raw] == ["Debris", "One left", "Good"]


# ------------------------------------------------------------------ duplicates


def test_duplicates_in_a_list_a_jsonl_and_two_files_warn_and_keep_the_first(tmp_path):
    a = art("How to Knit", ["Hobbies and Crafts", "Crafts"], path="wikihow/Crafts/How to Knit/How to Knit.json")
    b = art("How to Bake", ["Food and Entertaining", "Cakes"])
    (tmp_path / "list.json").write_text(json.dumps([a, b, a]))
    (tmp_path / "lines.jsonl").write_text("\n".join(json.dumps(x) for x in (a, b, b)) + "\n")
    for name, dup_where in (("list.json", "(article 2)"), ("lines.jsonl", "lines.jsonl:3")):
        report = LoadReport()
        tuts = load_tutorials(tmp_path / name, report=report)
        assert [t.title for t in tuts] == ["How to Knit", "How to Bake"], name
        assert len(report.duplicates) == 1 and dup_where in report.duplicates[0], name
        assert "first kept" in report.duplicates[0]
    # Two files of a tree: same title and methods, different (or no) path field.
    put(tmp_path / "tree", "Crafts", art("How to Knit", ["Hobbies and Crafts", "Crafts"]))
    put(tmp_path / "tree", "Hobbies-and-Crafts", art("How to Knit", ["Hobbies and Crafts"]))
    report = LoadReport()
    tuts = load_tutorials(tmp_path / "tree", report=report)
    assert [t.topic for t in tuts] == ["Crafts"] and report.articles == 1
    assert "Hobbies-and-Crafts" in report.duplicates[0] and "Crafts/How to Knit" in report.duplicates[0]


def test_an_article_with_one_repeated_method_keeps_its_new_ones(tmp_path):
    first = art("How to Knit", ["Crafts"], methods=[{"title": "Cast on", "steps": ["a b.", "c d."]}])
    second = art(
        "How to Knit",
        ["Crafts"],
        methods=[{"title": "Cast on", "steps": ["a b.", "c d."]}, {"title": "Bind off", "steps": ["e f.", "g h."]}],
    )
    same_titles = art(
        "How to Purl",
        ["Crafts"],
        methods=[{"title": "Steps", "steps": ["a b.", "c d."]}, {"title": "Steps", "steps": ["e f.", "g h."]}],
    )
    (tmp_path / "a.json").write_text(json.dumps([first, second, same_titles]))
    report = LoadReport()
    tuts = load_tutorials(tmp_path / "a.json", report=report)
    assert [(t.title, t.method_title) for t in tuts] == [
        ("How to Knit", "Cast on"),
        ("How to Knit", "Bind off"),
        ("How to Purl", "Steps"),
        ("How to Purl", "Steps"),
    ]
    assert len(report.duplicates) == 1 and "method 1 ('Cast on')" in report.duplicates[0]


# ------------------------------------------------------------------ balanced sampling


def corpus_for_sampling(root: Path) -> Path:
    for i in range(5):
        put(root, "Dogs", art(f"How to Pet {i}", ["Pets and Animals", "Dogs"]))
    for i in range(3):
        put(root, "Dating", art(f"How to Date {i}", ["Relationships", "Dating"]))
        put(root, "Love", art(f"How to Love {i}", ["Relationships", "Love"]))
    put(root, "Cakes", art("How to Bake", ["Food and Entertaining", "Cakes"]))
    return root


def test_balanced_sample_per_domain_and_topic_is_seeded(tmp_path):
    tuts = load_tutorials(corpus_for_sampling(tmp_path))
    s = balanced_sample(tuts, 2, "domain", seed=1)
    assert Counter(t.domain for t in s) == {"Pets & Animals": 2, "Relationships": 2, "Food & Cooking": 1}
    assert s == balanced_sample(tuts, 2, "domain", seed=1)
    assert [t for t in tuts if t in s] == s  # input order kept
    draws = {tuple(t.tutorial_id for t in balanced_sample(tuts, 2, "domain", seed=k)) for k in range(8)}
    assert len(draws) > 1
    by_topic = balanced_sample(tuts, 2, "topic", seed=3)
    assert Counter(t.topic for t in by_topic) == {"Dogs": 2, "Dating": 2, "Love": 2, "Cakes": 1}
    # Sample, then cap; the same call gives the same tutorials.
    picked = list(select_tutorials(tmp_path, sample=1, per="topic", seed=5, max_tutorials=3))
    assert len(picked) == 3 and picked == list(
        select_tutorials(tmp_path, sample=1, per="topic", seed=5, max_tutorials=3)
    )
    with pytest.raises(ValueError, match="--per"):
        balanced_sample(tuts, 1, "colour")  # type: ignore[arg-type]


# ------------------------------------------------------------------ stats, by hand


def stats_corpus(root: Path) -> Path:
    put(
        root,
        "Dogs",
        art(
            "How to Walk a Dog",
            ["Pets and Animals", "Dogs"],
            methods=[
                {"title": "A", "steps": ["one two three", "four five", "six"]},  # 3 steps, 6 words
                {
                    "title": "B",
                    "steps": ["one two", "three four", "five six", "seven eight", "nine ten"],
                },  # 5 steps, 10 words
                {"title": "C", "steps": ["alone"]},  # one step: skipped
            ],
            qa=[{"question": "q", "answer": "a"}] * 2,
            tips=["t"],
            warnings=["w", "w2", "w3"],
            things_youll_need=[{"method": "A", "items": ["leash", "bag"]}, {"method": "B", "items": ["treats"]}],
        ),
    )
    put(
        root,
        "House-Training-Cats",
        art(
            "How to Train a Cat",
            ["Pets and Animals", "Cats"],
            methods=[
                {"title": "A", "steps": ["a b c d", "e f g h"]},  # 2 steps, 8 words
                {"title": "B", "steps": ["[1]", "[2]XResearch source"]},  # no usable step
            ],
            tips=["x", "y"],
        ),
    )
    put(
        root,
        "Dating",
        art(
            "How to Ask Someone Out",
            ["Relationships", "Dating"],
            methods=[
                {"title": "A", "steps": ["w w w w w w", "w w w w", "w w", "w w w w w w w w"]},  # 4 steps, 20 words
            ],
        ),
    )
    return root


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_stats_numbers_match_a_hand_count(tmp_path):
    src = stats_corpus(tmp_path / "c")
    out = tmp_path / "out [1]"
    result = CliRunner().invoke(app, ["stats", "--tutorials", str(src), "--out", str(out), "--graph"])
    assert result.exit_code == 0, result.output
    rows = {r["domain"]: r for r in read_csv(out / "domains.csv")}
    pets, rel, total = rows["Pets & Animals"], rows["Relationships"], rows["Total"]
    assert (pets["id"], rel["id"]) == ("13", "14")  # the paper's Appendix C IDs
    assert {
        k: pets[k]
        for k in ("topics", "articles", "methods", "tutorials", "skipped_no_usable_step", "skipped_one_step", "steps")
    } == {
        "topics": "2",
        "articles": "2",
        "methods": "5",
        "tutorials": "3",
        "skipped_no_usable_step": "1",
        "skipped_one_step": "1",
        "steps": "10",
    }
    # steps per tutorial 3, 5, 2: mean 3.33, median 3, max 5; words 6 + 10 + 8 over 10 steps
    assert (
        pets["steps_per_tutorial_mean"],
        pets["steps_per_tutorial_median"],
        pets["steps_per_tutorial_max"],
        pets["words_per_step"],
    ) == ("3.33", "3.0", "5", "2.4")
    assert (pets["qa"], pets["tips"], pets["warnings"], pets["things_youll_need"]) == ("2", "3", "3", "3")
    # all: steps per tutorial 2, 3, 4, 5 -> median 3.5; 44 words over 14 steps
    assert (total["articles"], total["tutorials"], total["steps_per_tutorial_median"], total["words_per_step"]) == (
        "3",
        "4",
        "3.5",
        "3.1",
    )
    topics = {(r["domain"], r["topic"]): r for r in read_csv(out / "topics.csv")}
    assert set(topics) == {
        ("Pets & Animals", "Dogs"),
        ("Pets & Animals", "House-Training-Cats"),
        ("Relationships", "Dating"),
    }
    assert topics[("Pets & Animals", "House-Training-Cats")]["tutorials"] == "1"
    md = (out / "stats.md").read_text(encoding="utf-8")
    assert "| 13 | Pets & Animals | 2 | 2 | 5 | 3 | 1 | 1 | 3.33 | 3.0 | 5 | 2.4 |" in md
    for name in ("sunburst.png", "steps_histogram.png", "graph.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Pets & Animals" in result.output  # the terminal table


def test_stats_with_a_sample_describes_only_the_drawn_tutorials(tmp_path):
    src = corpus_for_sampling(tmp_path / "c")
    out = tmp_path / "o"
    result = CliRunner().invoke(
        app, ["stats", "--tutorials", str(src), "--out", str(out), "--sample", "2", "--no-figures"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["domain"]: r for r in read_csv(out / "domains.csv")}
    assert {d: r["tutorials"] for d, r in rows.items()} == {
        "Food & Cooking": "1",
        "Pets & Animals": "2",
        "Relationships": "2",
        "Total": "5",
    }
    assert "Sample: 5 tutorials, up to 2 per domain, seed 0." in (out / "stats.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------ knowledge graph


def test_graph_files_load_back_and_the_html_is_offline(tmp_path):
    src = stats_corpus(tmp_path / "c")
    out = tmp_path / "o"
    result = CliRunner().invoke(
        app, ["stats", "--tutorials", str(src), "--out", str(out), "--graph", "--graph-articles", "--no-figures"]
    )
    assert result.exit_code == 0, result.output
    g = nx.read_graphml(out / "graph.graphml")
    j = nx.node_link_graph(json.loads((out / "graph.json").read_text(encoding="utf-8")), edges="edges")
    assert set(g.nodes) == set(j.nodes) and set(g.edges) == set(j.edges)
    assert nx.is_directed_acyclic_graph(g) and nx.is_tree(g)
    assert ("root", "domain:pets-and-animals") in g.edges and ("domain:pets-and-animals", "topic:dogs") in g.edges
    assert ("topic:house-training-cats", "category:cats") in g.edges  # the breadcrumb below the topic
    assert g.nodes["root"]["articles"] == 3 and g.nodes["domain:pets-and-animals"]["tutorials"] == 3
    assert sum(1 for _, k in g.nodes(data="kind") if k == "article") == 3
    html = (out / "graph.html").read_text(encoding="utf-8")
    assert "How to Walk a Dog" in html and "<script>" in html
    for remote in ("http://", "https://", "//cdn", "src="):
        assert remote not in html


# ------------------------------------------------------------------ commands


def test_tutorials_exits_2_on_an_empty_file_like_generate(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for cmd in (["tutorials"], ["generate", "--teacher", "openai:x", "--base-url", "http://127.0.0.1:9/v1"]):
        result = CliRunner().invoke(app, [*cmd, "--tutorials", str(empty)])
        assert result.exit_code == 2, (cmd, result.output)
        assert f"{empty}: no tutorials with >= 2 steps" in result.output
    result = CliRunner().invoke(app, ["stats", "--tutorials", str(empty), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and f"{empty}: no articles to describe" in result.output
    (tmp_path / "file").write_text("")
    result = CliRunner().invoke(app, ["stats", "--out", str(tmp_path / "file" / "o"), "--no-figures"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        result.output.strip()
        == f"error: --out {tmp_path / 'file' / 'o'}: cannot be made: {tmp_path / 'file'} is not a directory"
    )


def test_tutorials_skip_invalid_and_literal_warnings(tmp_path):
    good = art("How to Knit", ["Hobbies and Crafts", "Crafts"], path="a[/b]/How to Knit.json")
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps(good) + "\n{broken\n" + json.dumps(good) + "\n")
    result = CliRunner().invoke(app, ["tutorials", "--tutorials", str(f)])
    assert result.exit_code == 2 and "a.jsonl:2: malformed JSON" in result.output
    result = CliRunner().invoke(app, ["tutorials", "--tutorials", str(f), "--skip-invalid"])
    assert result.exit_code == 0, result.output
    assert "skipped: " in result.output and "a.jsonl:2: malformed JSON" in result.output
    assert "duplicate: " in result.output and "(path a[/b]/How to Knit.json)" in result.output
    assert "1 tutorials from 1 articles" in result.output
    assert "unmapped topic: " not in result.output
    assert "\tHobbies & Leisure\tCrafts\t2\tHow to Knit / Main\n" in result.stdout  # tab-separated when piped
    f.write_text(json.dumps(art("How to Weave", ["Crafty [b]Things", "Baskets"])) + "\n")
    result = CliRunner().invoke(app, ["tutorials", "--tutorials", str(f)])
    assert result.exit_code == 0 and "unmapped topic: Baskets: 1 articles, domain = categories[1]" in result.output


def test_stats_on_the_bundled_sample_and_a_crawl_tree(tmp_path):
    result = CliRunner().invoke(app, ["stats", "--out", str(tmp_path / "s"), "--no-figures"])
    assert result.exit_code == 0, result.output
    rows = read_csv(tmp_path / "s" / "domains.csv")
    paper = {d for d, _ in table_rows()}
    assert {r["domain"] for r in rows} - {"Total"} <= paper and rows[-1]["articles"] == "14"
    assert rows[-1]["tutorials"] == "22"
    # A crawl-layout tree, one folder per topic of the paper's table.
    for _domain, t in table_rows()[::9]:
        put(tmp_path / "crawl", t, art(f"How to {t}", ["Something Else"]))
    result = CliRunner().invoke(
        app, ["stats", "--tutorials", str(tmp_path / "crawl"), "--out", str(tmp_path / "k"), "--no-figures"]
    )
    assert result.exit_code == 0, result.output
    got = {(r["domain"], r["topic"]) for r in read_csv(tmp_path / "k" / "topics.csv")}
    assert got == set(table_rows()[::9])
    assert (tmp_path / "k" / "problems.txt").read_text() == ""


def test_domain_table_normalises_names():
    t = DomainTable([("Health", "Men's-Health")], "x")
    assert t.place(["Categories", "Men's Health"], None).domain == "Health"
    assert t.place([], "men's health").topic == "Men's-Health"
    assert DomainTable.read().place(["Categories", "Cars and Other Vehicles"], None).domain == "Automobiles & Vehicles"


def test_generate_runs_a_balanced_sample_and_resumes_it(tmp_path):
    from fake_servers import FakeOpenAI

    from wikihowagent.jsonlio import iter_jsonl

    out = tmp_path / "run"
    args = [
        "generate",
        "--teacher",
        "openai:fake-model",
        "--out",
        str(out),
        "--retries",
        "0",
        "--sample",
        "1",
        "--per",
        "domain",
        "--sample-seed",
        "3",
        "--domain",
        "Food & Cooking",
        "--domain",
        "Health",
    ]
    with FakeOpenAI() as srv:
        env = {"OPENAI_COMPATIBLE_API_KEY": "sk-x"}
        res = CliRunner().invoke(app, [*args, "--base-url", srv.base_url], env=env)
        assert res.exit_code == 0, res.output
        again = CliRunner().invoke(app, [*args, "--base-url", srv.base_url], env=env)
        assert again.exit_code == 0 and "2 already done, 0 to go" in again.output
    records = [o for _, o in iter_jsonl(out / "conversations.jsonl")]
    assert sorted(r["domain"] for r in records) == ["Food & Cooking", "Health"]
    assert all(r["topic"] for r in records)
    info = json.loads((out / "run.json").read_text())
    assert info["filters"]["sample"] == {"n": 1, "per": "domain", "seed": 3}


def test_graph_html_works_in_a_browser_with_the_network_cut(tmp_path):
    """Opened in Chromium with every non-file request refused: no request, no script error; the filter works.
    Needs Playwright and Debian's chromium (see the browser-testing notes); skipped without them."""
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("no /usr/bin/chromium")
    src = stats_corpus(tmp_path / "c")
    result = CliRunner().invoke(
        app,
        ["stats", "--tutorials", str(src), "--out", str(tmp_path / "o"), "--graph", "--graph-articles", "--no-figures"],
    )
    assert result.exit_code == 0, result.output
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=["--no-sandbox"])
        page = browser.new_page()
        errors, remote = [], []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.route(
            "**/*",
            lambda r: r.continue_() if r.request.url.startswith("file:") else (remote.append(r.request.url), r.abort()),
        )
        page.goto((tmp_path / "o" / "graph.html").as_uri())
        assert page.locator("details.domain:visible").count() == 2  # the root is open
        page.fill("#q", "walk a dog")
        shown = page.locator("li.article:not(.hidden)")
        assert shown.count() == 1 and "How to Walk a Dog" in shown.inner_text()
        assert page.locator("details.topic:not(.hidden)").count() == 1
        page.fill("#q", "")
        assert page.locator("details.topic:not(.hidden)").count() == 3
        browser.close()
    assert errors == [] and remote == []


def test_sweep_plans_and_runs_the_same_balanced_sample(tmp_path):
    from wikihowagent.sweep.core import generate_argv, load_sweep

    f = tmp_path / "s.yaml"
    f.write_text(
        "name: s\nsample: 1\nper: domain\nsample_seed: 4\ndomains: [Food & Cooking, Health]\n"
        f"out: {tmp_path / 'sw'}\nhomogeneous: ['openai:m']\n",
        encoding="utf-8",
    )
    res = CliRunner().invoke(app, ["sweep", "plan", str(f)])
    assert res.exit_code == 0, res.output
    assert "2 tutorials per cell" in " ".join(res.output.split())
    sweep = load_sweep(f)
    argv = generate_argv(sweep, sweep.tasks[0], tmp_path / "c.yaml")
    assert argv[argv.index("--sample") : argv.index("--sample") + 6] == [
        "--sample",
        "1",
        "--per",
        "domain",
        "--sample-seed",
        "4",
    ]
    f.write_text(f.read_text() + "per: colour\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["sweep", "plan", str(f)])
    assert res.exit_code == 2
