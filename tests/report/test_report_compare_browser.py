"""The report's "Head to head" page in a real browser (Chromium via Playwright, as test_report_browser.py):
`compare` on three runs against a fake judge, then `report --compare DIR`; the page opens from file://
with no console error and no remote request, shows the Bradley–Terry ranking in order, the heatmap, the
win rates and every verdict, and the index links to it."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from test_compare import fake_pair_judge, make_run
from typer.testing import CliRunner

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, Path]:
    from wikihowagent.cli import app
    from wikihowagent.report.core import build_report

    root = tmp_path_factory.mktemp("runs")
    runs = [make_run(root, n, range(5)) for n in ("weak", "strong", "mid")]
    cmp = tmp_path_factory.mktemp("cmp")
    with FakeOpenAI(logprobs=fake_pair_judge()) as srv:
        res = CliRunner().invoke(
            app,
            [
                "compare",
                *map(str, runs),
                "--out",
                str(cmp),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--bootstrap",
                "100",
                "--metrics",
                "Clarity,Depth",
            ],
        )
        assert res.exit_code == 0, res.output
    out = build_report([root], tmp_path_factory.mktemp("site") / "report", compare=cmp).out
    return out, cmp


def test_head_to_head_page_in_chromium(site, tmp_path):
    from playwright.sync_api import sync_playwright

    site_dir, cmp = site
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors, remote = [], []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
            page.goto((site_dir / "index.html").as_uri())
            page.click("nav >> text=Head to head")
            page.wait_for_selector("#bt-overall")
            assert page.url.endswith("head-to-head.html")
            ranking = page.eval_on_selector_all("#bt-overall tbody tr", "trs => trs.map(tr => tr.cells[0].textContent)")
            ranks = page.eval_on_selector_all("#bt-overall tbody tr", "trs => trs.map(tr => tr.cells[1].textContent)")
            assert dict(zip(ranking, ranks, strict=False)) == {"strong": "1", "mid": "2", "weak": "3"}
            assert page.eval_on_selector("img", "i => i.complete && i.naturalWidth > 0")
            n_verdicts = len(list(csv.DictReader((cmp / "pairwise.csv").open())))
            assert page.eval_on_selector_all("#verdicts tbody tr", "trs => trs.length") == n_verdicts == 3 * 5 * 2
            assert "A/B token log-probabilities" in page.inner_text("#head-to-head")
            assert "Verdict rule `agree`" in page.inner_text("#head-to-head")  # which rule made the verdicts
            assert (
                page.eval_on_selector_all("#verdicts thead th", "ths => ths.map(th => th.textContent)")[-1]
                == "verdict_rule"
            )
            assert page.eval_on_selector_all("#position tbody tr", "trs => trs.length") == 3  # 2 rubrics + overall
            page.screenshot(path=str(tmp_path / "head-to-head.png"), full_page=True)
            assert errors == [] and remote == []
        finally:
            browser.close()


def test_report_refuses_a_directory_that_is_no_compare_output(tmp_path):
    from wikihowagent.report.core import ReportError, build_report

    with pytest.raises(ReportError, match="no pairwise.csv"):
        build_report([tmp_path], tmp_path / "site", compare=tmp_path)
