"""Corpus statistics: the paper's Table 4 / Appendix C for any corpus, per domain and per topic, with
the sunburst of domains and topics (Fig. 2) and the step-count histogram.

One streaming pass over the articles; per group only counters are kept (steps per tutorial as a
histogram), so memory does not grow with the corpus.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.corpus.core import (
    SKIP_NO_STEPS,
    SKIP_ONE_STEP,
    CorpusArticle,
    LoadReport,
    TutorialError,
    iter_articles,
    load_tutorials,
)
from wikihowagent.corpus.sampling import Per, balanced_sample, check_domains_file_used
from wikihowagent.domains import DomainTable, DomainTableError
from wikihowagent.layout import (
    PROBLEMS_TXT,
    STATS_DOMAINS_CSV,
    STATS_MD,
    STATS_TOPICS_CSV,
    STEPS_HISTOGRAM_PNG,
    SUNBURST_PNG,
)
from wikihowagent.markdown import markdown_table
from wikihowagent.outdir import check_writable
from wikihowagent.records import make_tutorial_id

COLUMNS = [
    "id",
    "domain",
    "topics",
    "articles",
    "methods",
    "tutorials",
    "skipped_no_usable_step",
    "skipped_one_step",
    "steps",
    "steps_per_tutorial_mean",
    "steps_per_tutorial_median",
    "steps_per_tutorial_max",
    "words_per_step",
    "qa",
    "tips",
    "warnings",
    "things_youll_need",
]


@dataclass
class Group:
    articles: int = 0
    methods: int = 0
    tutorials: int = 0
    skipped: Counter = field(default_factory=Counter)
    step_hist: Counter = field(default_factory=Counter)  # steps per tutorial -> tutorials
    words: int = 0  # words in the tutorials' steps
    qa: int = 0
    tips: int = 0
    warnings: int = 0
    things: int = 0  # items of "things you'll need"
    topics: set = field(default_factory=set)

    def add(
        self, art: CorpusArticle, methods: list[tuple[int, str, list[str]]], skipped: list[tuple[int, str]]
    ) -> None:
        raw = art.raw
        self.articles += 1
        self.methods += len(methods) + len(skipped)
        self.tutorials += len(methods)
        self.skipped.update(reason for _, reason in skipped)
        for _, _, steps in methods:
            self.step_hist[len(steps)] += 1
            self.words += sum(len(s.split()) for s in steps)
        self.qa += _count(raw.get("qa"))
        self.tips += _count(raw.get("tips"))
        self.warnings += _count(raw.get("warnings"))
        things = raw.get("things_youll_need")
        if isinstance(things, list):
            self.things += sum(
                len(t["items"]) if isinstance(t, dict) and isinstance(t.get("items"), list) else 1 for t in things
            )
        self.topics.add(art.topic)

    @property
    def steps(self) -> int:
        return sum(k * v for k, v in self.step_hist.items())

    def row(self, id_: str, domain: str, topic: str | None = None) -> dict[str, object]:
        n = self.tutorials
        row: dict[str, object] = {"id": id_, "domain": domain}
        if topic is None:
            row["topics"] = len(self.topics)
        else:
            row = {"id": id_, "domain": domain, "topic": topic}
        row |= {
            "articles": self.articles,
            "methods": self.methods,
            "tutorials": n,
            "skipped_no_usable_step": self.skipped[SKIP_NO_STEPS],
            "skipped_one_step": self.skipped[SKIP_ONE_STEP],
            "steps": self.steps,
            "steps_per_tutorial_mean": round(self.steps / n, 2) if n else "",
            "steps_per_tutorial_median": _median(self.step_hist) if n else "",
            "steps_per_tutorial_max": max(self.step_hist) if n else "",
            "words_per_step": round(self.words / self.steps, 1) if self.steps else "",
            "qa": self.qa,
            "tips": self.tips,
            "warnings": self.warnings,
            "things_youll_need": self.things,
        }
        return row


def _count(value: object) -> int:
    return len(value) if isinstance(value, list) else 0


def _median(hist: Counter) -> float:
    n = sum(hist.values())
    lo, hi = (n - 1) // 2, n // 2  # 0-based ranks of the middle value(s)
    seen, vals = 0, []
    for k in sorted(hist):
        for rank in (lo, hi):
            if seen <= rank < seen + hist[k]:
                vals.append(k)
        seen += hist[k]
    return (vals[0] + vals[1]) / 2


@dataclass
class CorpusStats:
    domains: dict[str, Group] = field(default_factory=lambda: defaultdict(Group))
    topics: dict[tuple[str, str], Group] = field(default_factory=lambda: defaultdict(Group))
    total: Group = field(default_factory=Group)
    domain_ids: dict[str, int] = field(default_factory=dict)  # the paper's domain IDs (Appendix C order)

    @classmethod
    def for_table(cls, table: DomainTable) -> CorpusStats:
        return cls(domain_ids={d: i for i, d in enumerate(sorted(set(table.domains.values())), start=1)})

    def add(
        self, art: CorpusArticle, methods: list[tuple[int, str, list[str]]], skipped: list[tuple[int, str]]
    ) -> None:
        for g in (self.domains[art.domain], self.topics[(art.domain, art.topic)], self.total):
            g.add(art, methods, skipped)

    def domain_rows(self) -> list[dict[str, object]]:
        order = sorted(self.domains, key=lambda d: (self.domain_ids.get(d, 10**6), d))
        rows = [self.domains[d].row(str(self.domain_ids.get(d, "-")), d) for d in order]
        return rows + [self.total.row("", "Total")]

    def topic_rows(self) -> list[dict[str, object]]:
        order = sorted(
            self.topics, key=lambda k: (self.domain_ids.get(k[0], 10**6), k[0], -self.topics[k].articles, k[1])
        )
        return [self.topics[k].row(str(self.domain_ids.get(k[0], "-")), k[0], k[1]) for k in order]


# --------------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------------


def write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


MD_HEADS = [
    ("id", "ID"),
    ("domain", "Domain"),
    ("topics", "Topics"),
    ("articles", "Articles"),
    ("methods", "Methods"),
    ("tutorials", "Tutorials (≥ 2 steps)"),
    ("skipped_no_usable_step", "Skipped: no step"),
    ("skipped_one_step", "Skipped: 1 step"),
    ("steps_per_tutorial_mean", "Steps/tut. mean"),
    ("steps_per_tutorial_median", "median"),
    ("steps_per_tutorial_max", "max"),
    ("words_per_step", "Words/step"),
    ("qa", "QA"),
    ("tips", "Tips"),
    ("warnings", "Warnings"),
    ("things_youll_need", "Things you'll need"),
]


def markdown(stats: CorpusStats, source: str, report: LoadReport, sample: str = "") -> str:
    def table(rows, heads):
        return markdown_table([h for _, h in heads], [[str(r[k]) for k, _ in heads] for r in rows])

    topic_heads = [h for h in MD_HEADS if h[0] != "topics"]
    topic_heads.insert(2, ("topic", "Topic"))
    lines = [f"# Corpus statistics: {source}", ""]
    if sample:
        lines += [f"Sample: {sample}.", ""]
    lines += [
        report.summary() + ".",
        "",
        "## Per domain (the paper's Table 4 / Appendix C; IDs as in the paper)",
        "",
        table(stats.domain_rows(), MD_HEADS),
        "## Per topic",
        "",
        table(stats.topic_rows(), topic_heads),
    ]
    if report.unmapped:
        lines += ["## Unmapped topics (domain = categories[1])", ""]
        lines += [f"- {t}: {n} articles" for t, n in report.unmapped.most_common()] + [""]
    return "\n".join(lines)


def _radial_labels(ax: Any, wedges: Any, names: list[str], size: int) -> None:
    """Each wedge's name written radially just outside the ring (flipped on the left half to read upright)."""
    import math

    for w, name in zip(wedges, names, strict=True):
        mid = (w.theta1 + w.theta2) / 2
        x, y = math.cos(math.radians(mid)), math.sin(math.radians(mid))
        flip = 90 < mid % 360 < 270
        ax.text(
            1.02 * x,
            1.02 * y,
            name,
            rotation=mid + 180 if flip else mid,
            rotation_mode="anchor",
            ha="right" if flip else "left",
            va="center",
            fontsize=size,
        )


def sunburst(stats: CorpusStats, path: Path, max_topic_labels: int = 150) -> None:
    """Fig. 2: inner ring domains (by their paper ID, named in the legend), outer ring their topics, sized by
    articles; topic names written radially outside the ring."""

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    domains = sorted(stats.domains, key=lambda d: (stats.domain_ids.get(d, 10**6), d))
    cmap = plt.get_cmap("tab20")
    inner, inner_colors, outer, outer_colors, outer_names = [], [], [], [], []
    for i, d in enumerate(domains):
        color = cmap(i % 20)
        inner.append(stats.domains[d].articles)
        inner_colors.append(color)
        topics = sorted(((t, g) for (dd, t), g in stats.topics.items() if dd == d), key=lambda x: -x[1].articles)
        for t, g in topics:
            outer.append(g.articles)
            outer_colors.append((*color[:3], 0.55))
            outer_names.append(f"{t} ({g.articles})")
    fig, ax = plt.subplots(figsize=(13, 11))
    wedges, _ = ax.pie(
        outer,
        radius=1.0,
        colors=outer_colors,
        wedgeprops={"width": 0.3, "edgecolor": "white"},
        startangle=90,
        counterclock=False,
    )
    if len(outer) <= max_topic_labels:
        _radial_labels(ax, wedges, outer_names, size=7 if len(outer) <= 40 else 5)
    ids = [str(stats.domain_ids.get(d, "-")) for d in domains]
    inner_wedges, _ = ax.pie(
        inner,
        radius=0.7,
        colors=inner_colors,
        labels=ids,
        labeldistance=0.72,
        textprops={"fontsize": 8},
        wedgeprops={"width": 0.4, "edgecolor": "white"},
        startangle=90,
        counterclock=False,
    )
    ax.legend(
        inner_wedges,
        [f"{i} {d} ({stats.domains[d].articles})" for i, d in zip(ids, domains, strict=True)],
        loc="center left",
        bbox_to_anchor=(1.15, 0.5),
        fontsize=8,
        frameon=False,
        title="domain (articles)",
    )
    ax.set_title(f"{len(domains)} domains (inner) and {len(stats.topics)} topics (outer), by articles", pad=60)
    ax.set(aspect="equal")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def step_histogram(stats: CorpusStats, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hist = stats.total.step_hist
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = sorted(hist)
    ax.bar(xs, [hist[x] for x in xs], color="#4c72b0")
    ax.set_xlabel("steps per tutorial")
    ax.set_ylabel("tutorials")
    ax.set_title(f"{stats.total.tutorials} tutorials, {stats.total.steps} steps")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# --------------------------------------------------------------------------------------------------
# The command's work
# --------------------------------------------------------------------------------------------------


@dataclass
class StatsResult:
    stats: CorpusStats
    table: object  # a rich Table (per domain)
    written: list[Path]


def _write_stats(
    out: Path, stats: CorpusStats, source: str, report: LoadReport, sample_note: str, figures: bool
) -> list[Path]:
    """domains.csv, topics.csv, stats.md, problems.txt [, sunburst.png, steps_histogram.png] in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / STATS_DOMAINS_CSV, out / STATS_TOPICS_CSV, out / STATS_MD, out / PROBLEMS_TXT]
    write_csv(written[0], stats.domain_rows())
    write_csv(written[1], stats.topic_rows())
    written[2].write_text(markdown(stats, source, report, sample_note), encoding="utf-8")
    problems = (
        report.invalid
        + report.duplicates
        + [f"unmapped topic {t}: {n} articles (domain = categories[1])" for t, n in report.unmapped.most_common()]
    )
    written[3].write_text("".join(p + "\n" for p in problems), encoding="utf-8")
    if figures:
        written += [out / SUNBURST_PNG, out / STEPS_HISTOGRAM_PNG]
        sunburst(stats, written[-2])
        step_histogram(stats, written[-1])
    return written


def run_stats(
    source: Path,
    out: Path,
    *,
    domains_file: Path | None = None,
    graph: bool = False,
    graph_articles: bool = False,
    sample: int | None = None,
    per: Per = "domain",
    seed: int = 0,
    figures: bool = True,
    skip_invalid: bool = False,
    report: LoadReport | None = None,
    console=None,
) -> StatsResult:
    """One streaming pass over `source` (two with --sample: draw, then describe the drawn tutorials) ->
    domains.csv, topics.csv, stats.md, sunburst.png, steps_histogram.png, problems.txt [, graph.*] in `out`.

    Raises TutorialError (bad input, bad --domains file, nothing to describe) or ValueError (bad --sample).
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from wikihowagent.corpus.graph import GraphBuilder, write_graph

    report = report if report is not None else LoadReport()
    if source.is_dir() and out.resolve().is_relative_to(source.resolve()):
        raise TutorialError(
            f"--out {out}: inside the corpus {source} (its .json files would be read as articles "
            "by every later command on it); choose a folder outside it"
        )
    check_writable(out)  # a file or a folder this user cannot write: before the corpus is read
    try:
        table = DomainTable.read(domains_file)
    except DomainTableError as exc:
        raise TutorialError(str(exc)) from None
    keep: set[str] | None = None
    sample_note = ""
    if sample is not None:
        drawn = balanced_sample(load_tutorials(source, skip_invalid=skip_invalid, table=table), sample, per, seed)
        keep = {t.tutorial_id for t in drawn}
        sample_note = f"{len(keep)} tutorials, up to {sample} per {per}, seed {seed}"
    stats = CorpusStats.for_table(table)
    builder = GraphBuilder(graph_articles) if graph else None
    progress = Progress(
        SpinnerColumn(),
        TextColumn("stats", style="bold"),
        TextColumn("{task.completed} articles"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with progress:
        task = progress.add_task("stats", total=None)
        for art in iter_articles(source, skip_invalid=skip_invalid, report=report, table=table):
            progress.advance(task)
            methods, skipped = art.methods, art.skipped
            if keep is not None:
                methods = [m for m in methods if make_tutorial_id(art.key, m[0]) in keep]
                skipped = []
                if not methods:
                    continue
            stats.add(art, methods, skipped)
            if builder:
                builder.add(art, len(methods))
    if not stats.total.articles:
        raise TutorialError(f"{source}: no articles to describe")
    if domains_file is not None:
        check_domains_file_used(domains_file, report)
    written = _write_stats(out, stats, str(source), report, sample_note, figures)
    if builder:
        written += write_graph(builder.graph, out)
    return StatsResult(stats, terminal_table(stats), written)


def terminal_table(stats: CorpusStats):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    heads = [
        ("id", "ID"),
        ("domain", "Domain"),
        ("topics", "Top."),
        ("articles", "Art."),
        ("methods", "Meth."),
        ("tutorials", "Tut."),
        ("skipped", "Skip"),
        ("steps_per_tutorial_mean", "Steps"),
        ("words_per_step", "Words"),
    ]
    t = Table(
        title="Per domain: articles, methods, tutorials (>= 2 steps), methods skipped, steps per "
        "tutorial, words per step (all columns: stats.md)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1),
    )
    for key, head in heads:
        t.add_column(head, no_wrap=True, min_width=len(head), justify="left" if key == "domain" else "right")
    for row in stats.domain_rows():
        row["skipped"] = int(row["skipped_no_usable_step"]) + int(row["skipped_one_step"])  # type: ignore[call-overload]  # rows are typed dict[str, object]; these two are ints
        t.add_row(*[Text(str(row[k])) for k, _ in heads])
    return t
