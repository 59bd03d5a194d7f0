"""The documentation site in a real browser (Debian's Chromium driven by Playwright), and the docs'
screenshots of the report made from a real run.

- The site (site/ as `make docs` built it, see tests/docs_site.py) opens from file://: a page renders,
  the navigation leads to another page, the search finds "Learning Gain", and no request leaves file:/data:/
  blob: (no CDN, no web font).
- The report built from the paper's real conversations (../shared/human-study/conversations: seven real 7B
  models' run files with their judges' scores) shows its overview and a conversation page; the screenshots
  go to the test's temp dir, or to $WIKIHOWAGENT_SCREENSHOTS (docs/images: the images the site shows)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest
from docs_site import REPO, site

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOCAL = ("file:", "data:", "blob:", "about:")


def _paper_conversations() -> Path | None:
    for shared in (REPO.parent / "shared", Path(os.environ.get("WIKIHOWAGENT_SHARED", "/work/shared"))):
        folder = shared / "human-study" / "conversations"
        if any(folder.glob("T-*_L-*_E-*.json")):
            return folder
    return None


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (make browser)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _watch(page) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    remote: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(LOCAL) else None)
    return errors, remote


def _h1(page) -> str:
    return page.locator("article h1").first.text_content().replace("\u00b6", "").strip()  # minus the permalink


def test_docs_site_renders_navigates_and_searches_offline(browser, tmp_path):
    built = site()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, remote = _watch(page)
    page.goto((built / "index.html").as_uri())
    assert _h1(page) == "wikihowagent"
    # navigation: the sidebar's link to Getting started, then the generated CLI reference
    page.locator("nav.md-nav--primary a.md-nav__link", has_text="Getting started").first.click()
    page.wait_for_url("**/getting-started.html")
    assert _h1(page) == "Getting started"
    page.goto((built / "reference" / "cli.html").as_uri())
    assert page.locator("table.cli-params").count() > 10
    # search, from file:// (the offline plugin inlines the index)
    search = page.locator("input.md-search__input")
    search.click()
    page.keyboard.type("Learning Gain", delay=20)  # keystrokes: the search listens to key events
    hits = page.locator(".md-search-result__item")
    hits.first.wait_for(timeout=20000)
    assert "matching document" in page.text_content(".md-search-result__meta")
    assert "learning gain" in hits.first.text_content().lower()
    page.screenshot(path=str(tmp_path / "docs-search.png"))
    hits.first.locator("a").first.click()
    page.wait_for_load_state()
    assert "Learning Gain" in page.locator("article").text_content()
    assert remote == [], f"requests left the machine: {remote}"
    assert errors == [], errors
    page.close()


def _shots(tmp: Path) -> Path:
    path = Path(os.environ.get("WIKIHOWAGENT_SCREENSHOTS") or tmp)
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_report_of_a_real_run_screenshots_for_the_docs(browser, tmp_path):
    from wikihowagent.report.core import build_report

    folder = _paper_conversations()
    if folder is None:
        pytest.skip("the paper's conversations (../shared/human-study/conversations) are not beside the clone")
    files = sorted(folder.glob("T-*_L-*_E-*.json"))
    out = build_report(files, tmp_path / "report", cases=1).out
    shots = _shots(tmp_path)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, remote = _watch(page)
    page.goto((out / "index.html").as_uri())
    page.wait_for_selector("#conv-table tbody tr")
    assert page.locator("#runs tbody tr").count() == len(files)
    assert page.text_content("#count").endswith("conversations")
    page.screenshot(path=str(shots / "docs-report-overview.png"))
    link = page.locator("#conv-table tbody tr >> nth=0").locator("a")
    cid = unquote(link.get_attribute("href").split("/", 1)[1])
    link.click()
    page.wait_for_selector(".turn")
    assert page.locator(".turn").count() > 2 and page.locator(".steps li").count() >= 2
    assert cid in page.locator("body").text_content()
    page.screenshot(path=str(shots / "docs-report-conversation.png"))
    assert remote == [] and errors == []
    page.close()


def test_every_page_of_the_site_loads_with_nothing_fetched_from_outside(browser):
    built = site()
    pages = sorted(p for p in built.rglob("*.html") if p.name != "404.html")
    assert len(pages) >= 20
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, remote = _watch(page)
    for html_file in pages:
        page.goto(html_file.as_uri())
        page.wait_for_load_state("load")
        assert page.locator("article h1").count() == 1, html_file
    assert remote == [], f"requests left the machine: {sorted(set(remote))}"
    assert errors == [], errors
    page.close()
