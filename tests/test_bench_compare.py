"""scripts/bench_compare.py --judge-scoring checklist --report-only: the BENCHMARKS section and the report's Head to
head page from a compare of the embedded judge's checklist verdicts (the embedded server replaced by a fake)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from fake_servers import FakeOpenAI
from helpers import load_script
from test_compare import fake_checklist_judge, make_run
from typer.testing import CliRunner


def test_checklist_verdicts_section_has_bradley_terry_and_position_consistency_one(tmp_path, monkeypatch, capsys):
    from wikihowagent.backends import local
    from wikihowagent.cli import app

    runs = [make_run(tmp_path, n, range(3)) for n in ("weak", "strong", "mid")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_checklist_judge()) as srv:
        monkeypatch.setattr(local, "check", lambda *a, **k: None)
        monkeypatch.setattr(
            local, "get_local_server", lambda *a, **k: SimpleNamespace(alias="fake-model", base_url=srv.base_url)
        )
        res = CliRunner().invoke(app, ["compare", *map(str, runs), "--out", str(out), "--evaluator", "local"])
        assert res.exit_code == 0, res.output
    bc = load_script("bench_compare")
    argv = ["bench_compare.py", *map(str, runs), "--out", str(out), "--judge-scoring", "checklist", "--report-only"]
    monkeypatch.setattr(sys, "argv", [*argv, "--bootstrap", "100", "--report-site", str(tmp_path / "site")])
    assert bc.main() == 0
    md = capsys.readouterr().out
    assert "each verdict from the two conversations' own scores (rule `scores`" in md
    assert "Bradley–Terry, overall, verdict rule scores" in md and "verdict rule agree" not in md
    position = md.split("Position consistency (the same under every rule):")[1]
    overall = next(line for line in position.splitlines() if line.startswith("| overall |"))
    assert overall.split("|")[4].strip() == "1.000"  # position consistency: 1 by construction
    assert (tmp_path / "site" / "head-to-head.html").is_file()
