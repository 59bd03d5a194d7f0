"""Benchmark `wikihowagent report`: build time and size for N synthetic conversations (default 10,000 in 5
runs), and the time until Chromium shows the conversation table (Playwright, file://).

    python -m benchmarks report [--n 10000] [--runs 5] [--write-md]   # rewrites "report" in BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, Section, cli, timed, write_section


def dir_size(d: Path) -> tuple[int, int]:
    files = [p for p in d.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def browser_times(site: Path, repeats: int = 3) -> dict[str, float]:
    """Medians in seconds. `table`: navigation start to the first table rows on screen (performance.now() when
    Playwright sees them); `filter`/`sort`: the synchronous JavaScript of one change event / one click on a
    column head over all rows (filter + sort + render 100 rows), timed inside the page; `conversation`:
    navigation start to the turns on screen."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {"table": [], "filter": [], "sort": [], "conversation": []}
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=["--no-sandbox"])
        for _ in range(repeats):
            page = b.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))  # noqa: B023 - the page lives in this iteration only
            page.goto((site / "index.html").as_uri(), wait_until="commit")
            page.wait_for_selector("#conv-table tbody tr")
            out["table"].append(page.evaluate("performance.now()") / 1000)
            out["filter"].append(
                page.evaluate("""() => {
                const s = document.getElementById('f-status'); s.value = '0';
                const t = performance.now(); s.dispatchEvent(new Event('change')); return performance.now() - t; }""")
                / 1000
            )
            heads = page.eval_on_selector_all("#conv-table thead th", "ths => ths.map(t => t.textContent)")
            out["sort"].append(
                page.evaluate(
                    """i => {
                const th = document.querySelectorAll('#conv-table thead th')[i];
                const t = performance.now(); th.click(); return performance.now() - t; }""",
                    heads.index("Clarity"),
                )
                / 1000
            )
            href = page.locator("#conv-table tbody tr >> nth=0").locator("a").get_attribute("href")
            page.goto((site / "conversation.html").as_uri() + "#" + href.split("#", 1)[1], wait_until="commit")
            page.wait_for_selector(".turn")
            out["conversation"].append(page.evaluate("performance.now()") / 1000)
            assert not errors, errors
            page.close()
        b.close()
    return {k: sorted(v)[len(v) // 2] for k, v in out.items()}  # median


class Phases:
    """Wall time of the build's phases (the report's own functions, wrapped)."""

    def __init__(self) -> None:
        import wikihowagent.report.core as core

        self.t: dict[str, float] = {}
        for name, label in (
            ("load_inputs", "read"),
            ("_write_chunks", "chunks"),
            ("_write_index_data", "table data"),
            ("_write_figures", "figures + tables"),
        ):
            setattr(core, name, self._timed(getattr(core, name), label))

    def _timed(self, fn, label):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.t[label] = self.t.get(label, 0.0) + time.perf_counter() - t0

        return wrapper


def _synthetic_sweep(make_run: Callable[..., Any], sweep: Path, runs: int, per_run: int) -> None:
    """`runs` evaluated runs of `per_run` conversations each in `sweep`, each teacher a little better than the last."""
    for r in range(runs):
        make_run(
            sweep,
            f"T-model{r}_L-model{r}",
            per_run,
            teacher=f"model{r}",
            seed=r,
            tutorials=per_run,
            bias=0.2 * r - 0.4,
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "report"))
    from report_builders import make_run

    from wikihowagent.report.core import build_report

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        per_run = args.n // args.runs
        t0 = time.perf_counter()
        _synthetic_sweep(make_run, tmp / "sweep", args.runs, per_run)
        t_data = time.perf_counter() - t0
        input_mb = sum(p.stat().st_size for p in (tmp / "sweep").rglob("*.jsonl")) / 1e6
        phases = Phases()
        t0 = time.perf_counter()
        res = build_report([tmp / "sweep"], tmp / "site")
        t_build = time.perf_counter() - t0
        split = ", ".join(f"{k} {v:.1f} s" for k, v in phases.t.items())
        phases.t.clear()
        t_cli = timed(cli("report", str(tmp / "sweep"), "--out", str(tmp / "site-cli"))).seconds
        files, size = dir_size(res.out)
        index_mb = (res.out / "data" / "index.js").stat().st_size / 1e6
        chunk_kb = max(p.stat().st_size for p in (res.out / "data").glob("conv-*.js")) / 1e3
        # a small report, for the ratio
        make_run(tmp / "small", "T-small_L-small", 100, teacher="small")
        small = build_report([tmp / "small" / "T-small_L-small"], tmp / "site-small")
        tb = browser_times(res.out)
        ts = browser_times(small.out)
    load = os.getloadavg()[0]
    body = f"""One run (load average {load:.1f} at the end); synthetic evaluated runs from `tests/fixtures/report/report_builders.py` (realistic
records: 3-6 steps, clarifications, tokens, 18 metrics, judge replies; {input_mb:.0f} MB of JSONL, built in
{t_data:.1f} s, not counted). Browser times are medians of 3 page loads in Debian's Chromium via Playwright:
page times from navigation start (the page's `performance.now()`), filter and sort as the JavaScript time of
one change event / one click on a column head over all rows (filter, sort, render the first 100), timed in
the page.

| What | {args.n:,} conversations ({args.runs} runs) | 100 conversations | ratio |
|---|---|---|---|
| build, in-process | {t_build:.1f} s ({split}) | – | – |
| `wikihowagent report` end to end (fresh process, imports included) | {t_cli:.1f} s | – | – |
| site size | {size / 1e6:.1f} MB in {files} files (table data {index_mb:.1f} MB, largest conversation chunk {chunk_kb:.0f} kB) | {small.bytes / 1e6:.1f} MB | {size / small.bytes:.0f}x |
| time until the table shows | {tb["table"]:.2f} s | {ts["table"]:.2f} s | {tb["table"] / ts["table"]:.1f}x |
| filter by status (all rows) | {tb["filter"] * 1000:.1f} ms | {ts["filter"] * 1000:.1f} ms | {tb["filter"] / ts["filter"]:.1f}x |
| sort by a metric (all rows) | {tb["sort"] * 1000:.1f} ms | {ts["sort"] * 1000:.1f} ms | {tb["sort"] / ts["sort"]:.1f}x |
| open a conversation page (one {chunk_kb:.0f} kB chunk) | {tb["conversation"] * 1000:.0f} ms | {ts["conversation"] * 1000:.0f} ms | {tb["conversation"] / ts["conversation"]:.1f}x |

The table renders 100 rows a page, so its cost grows with the rows filtered and sorted in JavaScript, not with
the DOM; conversation text stays in chunks of 250 loaded on demand."""
    print(body)
    if args.write_md:
        headline = (
            f"{args.n:,} conversations: built in {t_cli:.0f} s, the table shows {tb['table']:.2f} s after opening "
            f"(100 conversations: {ts['table']:.2f} s)"
        )
        write_section(Section("report", "report", headline, "python -m benchmarks report", body))


if __name__ == "__main__":
    main()
