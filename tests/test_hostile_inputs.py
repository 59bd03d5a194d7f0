"""Tracebacks from `report`, `tutorials` and `stats` on odd inputs become one
line naming the file; `stats --graph` survives control characters and writes its files atomically;
`stats --out` inside the corpus is refused; cases.md escapes titles for Markdown renderers that allow HTML."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import networkx as nx
import pytest
from helpers import FIXTURE_RUN, one_line_error
from typer.testing import CliRunner

from wikihowagent.cli import app

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "report"))
from report_builders import make_run  # noqa: E402

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


# ------------------------------------------------------------------ item 8: report


def test_report_alignment_dir_not_utf8_or_png_directory_is_not_a_traceback(tmp_path):
    bad = tmp_path / "al"
    (bad / "figures").mkdir(parents=True)
    (bad / "correlations.csv").write_bytes(b"metric,n,pearson_r\nClarity\xff,25,0.41\n")
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", str(tmp_path / "s1"), "--alignment", str(bad)])
    assert res.exit_code == 0, res.output
    assert f"{bad / 'correlations.csv'}: not UTF-8" in " ".join(res.output.split())
    dirpng = tmp_path / "al2"
    (dirpng / "figures" / "correlation_heatmap.png").mkdir(parents=True)
    (dirpng / "correlations.csv").write_text("metric,n,pearson_r\nClarity,25,0.41\n")
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", str(tmp_path / "s2"), "--alignment", str(dirpng)])
    assert res.exit_code == 0, res.output
    assert "correlation_heatmap.png: not a file" in " ".join(res.output.split())
    assert "<td>0.41</td>" in (tmp_path / "s2" / "index.html").read_text()


def test_report_out_dot_and_run_json_directory_are_one_line(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", "."])
    assert res.exit_code == 2
    one_line_error(res, "--out .", "current directory")
    assert not any(empty.iterdir()) and not list(tmp_path.glob(".*"))
    run = make_run(tmp_path / "runs", "r", 2)
    (run / "run.json").unlink()
    (run / "run.json").mkdir()
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code in (0, 1)
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert f"{run / 'run.json'}: cannot read" in " ".join(res.output.split())


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


# ------------------------------------------------------------------ items 9, 10: stats


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


# ------------------------------------------------------------------ item 12: cases.md


def test_cases_md_escapes_titles_runs_and_ids(tmp_path):
    from wikihowagent.report.core import build_report

    run = make_run(tmp_path / "runs", "r<b>", 4)
    recs = [json.loads(x) for x in (run / "conversations.jsonl").read_text().splitlines()]
    evil = [
        "<img src=x onerror=alert(1)>",
        "</script><script>alert(2)</script>",
        "[click](javascript:alert(3))",
        "a | b\n# heading",
    ]
    for rec, title in zip(recs, evil, strict=True):
        rec["title"] = title
    (run / "conversations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    for s in scores:
        s["title"] = next(
            (t for r, t in zip(recs, evil, strict=False) if r["conversation_id"] == s["conversation_id"]), ""
        )
    (run / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))
    res = build_report([run], tmp_path / "site", cases=4)
    md = (res.out / "cases.md").read_text()
    assert "<img" not in md and "<script" not in md and "</script" not in md and "<b>" not in md
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in md and "r&lt;b&gt;" in md
    assert "](javascript:" not in md and "\\[click\\]" in md
    assert "\n# heading" not in md and "a \\| b # heading" in md
    for line in md.splitlines():
        if line.startswith("| ") and "conversation.html#" in line:
            assert line.count(" | ") == 4, line  # every row keeps its five cells


# ------------------------------------------------------------------ item 13: piped output


def test_chat_saved_line_prints_the_path_whole_when_piped(tmp_path):
    from fake_servers import FakeOpenAI

    out = tmp_path / ("a-long-directory-name-for-the-chat-run-" * 3) / "chat run"
    with FakeOpenAI() as srv:
        res = runner.invoke(
            app,
            [
                "chat",
                "--role",
                "learner",
                "--model",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--tutorial",
                "4f115a7f59dc20db",
                "--out",
                str(out),
            ],
            input="I'm ready.\n",
        )
    assert res.exit_code == 0, res.output
    saved = [ln[ln.index("saved ") :] for ln in res.output.splitlines() if "saved " in ln]  # after the prompt
    assert len(saved) == 1 and f"to {out / 'conversations.jsonl'}; score it with: wikihowagent evaluate" in saved[0]
    assert saved[0].endswith(f"evaluate {shlex.quote(str(out))}")
