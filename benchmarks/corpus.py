"""Benchmark the corpus loader: `stats` and `tutorials` on a synthetic crawl tree (default 20,000 articles,
one folder per topic of wikihowagent/data/domains.csv), time and peak memory of each command in a fresh process, and
the same on a tree ten times smaller: streaming means peak memory must not grow with the corpus.

Each article has 4 methods of 3-7 steps (~30 words each, with citation debris), one method in ten has a
single step, one in fifty only citation debris, and 1 % of the articles are duplicates of another.

    python -m benchmarks corpus [--n 20000] [--write-md]   # rewrite the "corpus" section
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import tempfile
import time
from pathlib import Path

from benchmarks.harness import ROOT, Section, cli, timed, write_section

WORDS = (
    "hold the handle firmly and turn it slowly until the part clicks into place then check that "
    "nothing moves before you continue with the rest of the work"
).split()


def topics() -> list[tuple[str, str]]:
    lines = [
        ln
        for ln in (ROOT / "wikihowagent" / "data" / "domains.csv").read_text(encoding="utf-8").splitlines()
        if not ln.startswith("#")
    ]
    return [(r["Domain"], r["Topic"]) for r in csv.DictReader(lines)]


def build(root: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    table = topics()
    prev: dict = {}
    for i in range(n):
        domain, topic = table[i % len(table)]
        title = f"How to Do Thing {i}"
        methods = []
        for m in range(4):
            k = 1 if rng.random() < 0.1 else rng.randint(3, 7)
            steps = [" ".join(rng.choices(WORDS, k=30)) + f".[{s + 1}]XResearch source" for s in range(k)]
            if rng.random() < 0.02:
                steps = ["[1]", "[2]XResearch source"]
            methods.append({"title": f"Method {m + 1} of 4:Part {m}", "steps": steps})
        art = {
            "title": title,
            "categories": ["Categories", domain, topic.replace("-", " ")],
            "introduction": " ".join(rng.choices(WORDS, k=60)),
            "methods": methods,
            "qa": [{"question": "Why?", "answer": "Because."}] * rng.randint(0, 3),
            "tips": ["A tip."] * 2,
            "warnings": ["Careful."],
            "things_youll_need": [{"method": "x", "items": ["a", "b"]}],
            "references": [],
        }
        d = root / topic / title
        if i % 100 == 99:  # a duplicate of the previous article, filed under another topic folder
            art = prev
            d = root / table[(i + 7) % len(table)][1] / f"{prev['title']} (copy)"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{d.name}.json").write_text(json.dumps(art), encoding="utf-8")
        prev = art


def run(args: list[str]) -> tuple[float, float, str]:
    """Seconds and peak RSS (MB) of one fresh `wikihowagent ...` process, and the last line it printed."""
    proc = timed(cli(*args))
    err = proc.stderr.strip()
    return proc.seconds, proc.peak_mb, err.splitlines()[-1] if err else ""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--write-md", action="store_true")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (a.n // 10, a.n):
            tree = Path(tmp) / f"crawl{n}"
            t0 = time.perf_counter()
            build(tree, n)
            build_s = time.perf_counter() - t0
            size = sum(f.stat().st_size for f in tree.rglob("*.json")) / 1e6
            for cmd in (
                ["stats", "--tutorials", str(tree), "--out", str(Path(tmp) / f"stats{n}"), "--graph"],
                ["tutorials", "--tutorials", str(tree)],
            ):
                secs, rss, summary = run(cmd)
                rows.append((n, size, build_s, cmd[0], secs, rss, summary))
                print(
                    f"{n} articles ({size:.0f} MB): {cmd[0]} {secs:.1f} s, peak RSS {rss:.0f} MB | {summary}",
                    flush=True,
                )
            stats_md = (Path(tmp) / f"stats{a.n}" / "stats.md").read_text(encoding="utf-8") if n == a.n else ""
    small = {r[3]: r for r in rows if r[0] == a.n // 10}
    big = {r[3]: r for r in rows if r[0] == a.n}
    lines = [
        "Synthetic crawl tree (one folder per topic of `wikihowagent/data/domains.csv`, 4 methods "
        "per article with citation debris, 10 % single-step and 2 % debris-only methods, 1 % duplicate articles); "
        "each command in a fresh process (imports included), shared machine.",
        "",
        "| articles | tree | command | time | articles/s | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for n, size, _, cmd, secs, rss, _ in rows:
        lines.append(f"| {n:,} | {size:.0f} MB | `{cmd}` | {secs:.1f} s | {n / secs:,.0f} | {rss:.0f} MB |")
    lines += [
        "",
        "Ten times the articles: "
        + ", ".join(
            f"`{c}` {big[c][4] / small[c][4]:.1f}x the time, {big[c][5] / small[c][5]:.2f}x the peak memory"
            for c in big
        )
        + ". Both stream the articles (`stats` keeps only counters per group; `tutorials`, piped, prints each "
        "tutorial as it is read); `stats` includes a fixed ~5 s for matplotlib and its four figures.",
        "",
        f"`stats` summary on {a.n:,} articles: " + stats_md.split("\n")[2],
    ]
    body = "\n".join(lines)
    print(body)
    if a.write_md:
        headline = f"{a.n:,} articles: " + ", ".join(
            f"`{c}` {big[c][4]:.0f} s, peak {big[c][5]:.0f} MB ({big[c][5] / small[c][5]:.2f}x the peak of a tenth)"
            for c in big
        )
        write_section(Section("corpus", "stats, tutorials", headline, "python -m benchmarks corpus", body))


if __name__ == "__main__":
    main()
