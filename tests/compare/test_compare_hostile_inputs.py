"""Hostile input to `compare`: stored pair judgments that are no probabilities, a directory named like a
judgments file, one run given twice by two paths."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from helpers import DEAD_URL, flat, one_line_error
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


def _judged(tmp_path: Path, n: int = 6) -> tuple[list[Path], Path, list[str]]:
    """Two runs judged head to head on `n` tutorials (Clarity) against the fake server; -> runs, out, args."""
    from fake_servers import FakeOpenAI
    from test_compare import fake_pair_judge, make_run

    runs = [make_run(tmp_path, name, range(n)) for name in ("weak", "strong")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_pair_judge()) as srv:
        args = [
            "compare",
            *map(str, runs),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--bootstrap",
            "100",
            "--metrics",
            "Clarity",
        ]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    return runs, out, [a if a != srv.base_url else DEAD_URL for a in args] + ["--from-judgments"]


def test_compare_leaves_out_stored_values_that_are_not_probabilities(tmp_path):
    _, out, args = _judged(tmp_path)
    path = out / "pair-judgments.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    bad = [7.0, -3, float("inf"), float("nan"), True]
    tampered = {}
    for rec in lines:
        t = int(rec["tutorial_id"].split("-")[1])
        if rec["first"] == "weak" and t < len(bad):
            rec["p_first"]["Clarity"] = bad[t]
            tampered[t] = rec
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))  # Infinity, NaN, true as Python writes them
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    text = flat(res)
    for shown in (
        "= 7.0 is not a probability",
        "= -3 is not a probability",
        "= Infinity is not a probability",
        "= NaN is not a probability",
        "= true is not a probability",
    ):
        assert text.count(shown) == 1, (shown, text)
    assert "5 stored P(A better) values were not probabilities in [0, 1]" in text
    assert "5 stored P(A better) values were not probabilities in [0, 1]" in " ".join(
        (out / "summary.md").read_text().split()
    )
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert [r["tutorial_id"] for r in rows] == ["tut-5"]  # the only tutorial judged with probabilities both ways
    assert all(0.0 <= float(r[k]) <= 1.0 for r in rows for k in ("p_ab", "p_ba"))


def test_compare_from_judgments_with_a_directory_named_like_a_judgments_file(tmp_path):
    _, out, args = _judged(tmp_path, n=2)
    (out / "pair-judgments-0-of-2.jsonl").mkdir()
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    one_line_error(res, f"{out / 'pair-judgments-0-of-2.jsonl'}: not a file")


def test_compare_refuses_one_run_given_twice_by_two_paths(tmp_path):
    from test_compare import make_run

    a = make_run(tmp_path, "a", range(2))
    (tmp_path / "link").symlink_to(a)
    for second in (a / "conversations.jsonl", tmp_path / "link"):
        res = runner.invoke(
            app,
            [
                "compare",
                str(a),
                str(second),
                "--out",
                str(tmp_path / "o"),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                DEAD_URL,
            ],
        )
        assert res.exit_code == 2, res.output
        one_line_error(res, f"{a} and {second} are the same run")
    assert not (tmp_path / "o").exists()
