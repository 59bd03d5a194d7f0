"""`wikihowagent tutorials` and `wikihowagent stats`: the typer commands (registered by wikihowagent/cli.py),
and the corpus options `generate` shares."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Table
from rich.text import Text

from wikihowagent.console import INPUTS, OUTPUT, SELECTION, make_console, print_error

TutorialsOpt = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=INPUTS, help="Article directory tree, JSON or JSONL file (default: the bundled sample)."
    ),
]
DomainOpt = Annotated[
    list[str] | None,
    typer.Option(rich_help_panel=INPUTS, help="Only tutorials of this domain (one of the paper's 17; repeatable)."),
]
TopicOpt = Annotated[
    list[str] | None,
    typer.Option(
        rich_help_panel=INPUTS,
        help="Only tutorials of this topic (crawl folder, e.g. Relationship-Issues; repeatable).",
    ),
]
DomainsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--domains",
        rich_help_panel=INPUTS,
        metavar="FILE",
        help="Topic -> domain CSV (columns Domain,Topic) replacing wikihowagent/data/domains.csv.",
    ),
]
SampleOpt = Annotated[
    int | None,
    typer.Option(
        rich_help_panel=SELECTION,
        min=1,
        metavar="N",
        help="A balanced sample: N tutorials per domain (or per topic with --per topic).",
    ),
]
PerOpt = Annotated[
    Literal["domain", "topic"], typer.Option(rich_help_panel=SELECTION, help="What --sample balances over.")
]
SampleSeedOpt = Annotated[
    int, typer.Option(rich_help_panel=SELECTION, help="Seed of the --sample draw (same seed, same sample).")
]
SkipInvalidOpt = Annotated[
    bool, typer.Option(rich_help_panel=INPUTS, help="Skip (and list) bad articles instead of stopping.")
]


def _fail(console, message: str) -> None:
    print_error(message, console)
    raise typer.Exit(2)


def tutorials(
    tutorials: TutorialsOpt = None,
    domain: DomainOpt = None,
    topic: TopicOpt = None,
    domains: DomainsFileOpt = None,
    max_tutorials: Annotated[
        int | None, typer.Option(rich_help_panel=SELECTION, min=1, help="Only the first N (after --sample).")
    ] = None,
    sample: SampleOpt = None,
    per: PerOpt = "domain",
    sample_seed: SampleSeedOpt = 0,
    skip_invalid: SkipInvalidOpt = False,
) -> None:
    """List the tutorials an input yields (id, domain, topic, steps, title): a table on a terminal, else
    tab-separated lines as they are read (a 20,000-article crawl streams)."""
    from wikihowagent.corpus.core import (
        LoadReport,
        TutorialError,
        default_tutorials_path,
        empty_message,
        print_load_warnings,
    )
    from wikihowagent.corpus.sampling import select_tutorials

    console = make_console()
    report = LoadReport()
    source = tutorials or default_tutorials_path()
    heads = ("tutorial_id", "domain", "topic", "steps", "title / method")
    table = Table(*heads) if sys.stdout.isatty() else None
    n = 0
    try:
        for t in select_tutorials(
            source,
            domains=domain or (),
            topics=topic or (),
            domains_file=domains,
            sample=sample,
            per=per,
            seed=sample_seed,
            max_tutorials=max_tutorials,
            skip_invalid=skip_invalid,
            report=report,
        ):
            cells = (t.tutorial_id, t.domain, t.topic, str(len(t.steps)), f"{t.title} / {t.method_title}")
            if table is not None:
                table.add_row(*map(Text, cells))
            else:
                if not n:
                    sys.stdout.write("\t".join(heads) + "\n")
                sys.stdout.write("\t".join(c.replace("\t", " ") for c in cells) + "\n")
            n += 1
    except (TutorialError, ValueError) as exc:
        print_load_warnings(console, report)
        _fail(console, str(exc))
    print_load_warnings(console, report)
    if not n:
        _fail(console, empty_message(source, domain, topic))
    if table is not None:
        make_console(stderr=False).print(table)
    console.print(f"{n} tutorials from {report.summary()}")


def stats(
    tutorials: TutorialsOpt = None,
    out: Annotated[
        Path, typer.Option(rich_help_panel=OUTPUT, help="Output directory for the tables and figures.")
    ] = Path("corpus-stats"),
    domains: DomainsFileOpt = None,
    graph: Annotated[
        bool,
        typer.Option(
            "--graph",
            rich_help_panel=OUTPUT,
            help="Also write the topic knowledge graph (GraphML, JSON, PNG, offline HTML).",
        ),
    ] = False,
    graph_articles: Annotated[
        bool, typer.Option("--graph-articles", rich_help_panel=OUTPUT, help="With --graph: articles as leaf nodes.")
    ] = False,
    sample: SampleOpt = None,
    per: PerOpt = "domain",
    sample_seed: SampleSeedOpt = 0,
    no_figures: Annotated[
        bool, typer.Option("--no-figures", rich_help_panel=OUTPUT, help="Skip the sunburst and histogram PNGs.")
    ] = False,
    skip_invalid: SkipInvalidOpt = False,
) -> None:
    """Describe a corpus: the paper's Table 4 per domain and topic (CSV, Markdown, terminal), the sunburst of
    domains and topics (Fig. 2), the steps histogram, and with --graph the topic knowledge graph."""
    from wikihowagent.corpus.core import (
        LoadReport,
        TutorialError,
        default_tutorials_path,
        print_load_warnings,
    )
    from wikihowagent.corpus.corpus_stats import run_stats

    console = make_console()
    source = tutorials or default_tutorials_path()
    report = LoadReport()
    try:
        result = run_stats(
            source,
            out,
            domains_file=domains,
            graph=graph,
            graph_articles=graph_articles,
            sample=sample,
            per=per,
            seed=sample_seed,
            figures=not no_figures,
            skip_invalid=skip_invalid,
            report=report,
            console=console,
        )
    except (TutorialError, ValueError) as exc:
        _fail(console, str(exc))
    except OSError as exc:  # reading errors are TutorialErrors: this is the output directory
        _fail(console, f"{exc.filename or out}: cannot write ({exc.strerror})")
    print_load_warnings(console, report)
    make_console(stderr=False).print(result.table)
    console.print(report.summary())
    for path in result.written:
        console.print(f"wrote {path}")
