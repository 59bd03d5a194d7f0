"""Hostile input to `tutorials` and `stats`: a symlink loop is one line, `stats --graph` survives control
characters and writes its files all or nothing, `stats --out` inside the corpus is refused."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from helpers import one_line_error
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


def article(title: str, categories: list[str]) -> dict:
    return {
        "title": title,
        "categories": ["Categories", *categories],
        "introduction": "Intro.",
        "methods": [{"title": "Main", "steps": ["One two three.", "Four five."]}],
    }


def corpus(root: Path, titles: list[str]) -> Path:
    for i, t in enumerate(titles):
        p = root / "Pets" / f"a{i}" / f"a{i}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(article(t, ["Pets and Animals", "Dogs"])), encoding="utf-8")
    return root


def test_tutorials_and_stats_on_a_symlink_loop_say_cannot_read(tmp_path):
    root = corpus(tmp_path / "c", ["How to Walk a Dog"])
    (root / "Pets" / "loop").symlink_to("..")
    res = runner.invoke(app, ["tutorials", "--tutorials", str(root)])
    assert res.exit_code == 2
    one_line_error(res, "symbolic link loop", str(root / "Pets" / "loop"))
    res = runner.invoke(app, ["stats", "--tutorials", str(root), "--out", str(tmp_path / "st")])
    assert res.exit_code == 2
    one_line_error(res, "symbolic link loop")
    assert "cannot write" not in res.output
    (root / "Pets" / "loop").unlink()
    (root / "Pets" / "self").symlink_to("self")  # ELOOP on stat
    res = runner.invoke(app, ["tutorials", "--tutorials", str(root)])
    assert res.exit_code == 2
    one_line_error(res, str(root / "Pets" / "self"), "cannot read")


def test_stats_graph_with_control_characters_in_titles(tmp_path):
    root = corpus(tmp_path / "c", ["How to \x00Feed a Cat\x07", "How to Brush\x1b[31m a Dog", "How to Sit"])
    out = tmp_path / "st"
    res = runner.invoke(
        app, ["stats", "--tutorials", str(root), "--out", str(out), "--graph", "--graph-articles", "--no-figures"]
    )
    assert res.exit_code == 0, res.output
    g = nx.read_graphml(out / "graph.graphml")
    labels = {d["label"] for _, d in g.nodes(data=True)}
    assert "How to \ufffdFeed a Cat\ufffd" in labels and "How to Brush\ufffd[31m a Dog" in labels
    assert json.loads((out / "graph.json").read_text())["nodes"]
    assert not [p for p in out.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]


def test_graph_files_are_written_all_or_nothing(tmp_path, monkeypatch):
    """A failure while writing the graph leaves no truncated graph file behind (and the old ones intact)."""
    from wikihowagent.corpus import graph as graph_mod

    g = nx.DiGraph()
    g.add_node("root", label="WikiHow", kind="root", articles=1, tutorials=1)
    out = tmp_path / "o"
    out.mkdir()
    (out / "graph.graphml").write_text("old")

    def broken_png(_g, path):
        Path(path).write_bytes(b"\x89PNG partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(graph_mod, "_png", broken_png)
    with pytest.raises(OSError):
        graph_mod.write_graph(g, out)
    assert (out / "graph.graphml").read_text() == "old"
    assert sorted(p.name for p in out.iterdir()) == ["graph.graphml"]


def test_stats_out_inside_the_corpus_is_refused(tmp_path):
    root = corpus(tmp_path / "c", ["How to Walk a Dog", "How to Sit"])
    for out in (root / "stats", root, root / "Pets" / "deeper" / "x"):
        res = runner.invoke(app, ["stats", "--tutorials", str(root), "--out", str(out), "--graph", "--no-figures"])
        assert res.exit_code == 2
        one_line_error(res, "--out", "inside the corpus")
        assert not (out / "graph.json").exists()
    res = runner.invoke(app, ["tutorials", "--tutorials", str(root)])
    assert res.exit_code == 0 and "2 tutorials" in " ".join(res.output.split())
    res = runner.invoke(app, ["stats", "--tutorials", str(root), "--out", str(tmp_path / "st"), "--no-figures"])
    assert res.exit_code == 0, res.output
