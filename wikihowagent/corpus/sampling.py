"""Balanced, reproducible samples of tutorials: N per domain or per topic (the paper's Limitations ask
for domain-balanced evaluation)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Literal

from wikihowagent.corpus.core import LoadReport, TutorialError, iter_tutorials
from wikihowagent.domains import DomainTable, DomainTableError
from wikihowagent.records import Tutorial

Per = Literal["domain", "topic"]
PER_CHOICES = ("domain", "topic")


def balanced_sample(tutorials: list[Tutorial], n: int, per: Per = "domain", seed: int = 0) -> list[Tutorial]:
    """Up to `n` tutorials of each domain (or topic), drawn with `seed`; all of a smaller group.

    The draw of a group depends only on the seed and that group's tutorials (its name seeds its own
    generator), so adding a domain to the corpus does not change the others' samples. The result keeps
    the input order.
    """
    if n < 1:
        raise ValueError("--sample must be at least 1")
    if per not in PER_CHOICES:
        raise ValueError(f"--per must be one of {', '.join(PER_CHOICES)}, not {per!r}")
    groups: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(tutorials):
        groups[getattr(t, per)].append(i)
    keep: set[int] = set()
    for name, idx in groups.items():
        rng = random.Random(f"{seed}\x00{per}\x00{name}")
        keep.update(idx if len(idx) <= n else rng.sample(idx, n))
    return [t for i, t in enumerate(tutorials) if i in keep]


def select_tutorials(
    path: Path | None,
    *,
    domains: Iterable[str] = (),
    topics: Iterable[str] = (),
    domains_file: Path | None = None,
    sample: int | None = None,
    per: Per = "domain",
    seed: int = 0,
    max_tutorials: int | None = None,
    clean_citations: bool = True,
    skip_invalid: bool = False,
    report: LoadReport | None = None,
) -> Iterator[Tutorial]:
    """What `generate` / `tutorials` run on: load with the filters, then the balanced sample, then the cap.

    Streams unless sampling (a sample needs every candidate). Raises TutorialError (bad input or --domains
    file, one line) or ValueError (bad --sample / --per) while iterating.
    """
    try:
        table = DomainTable.read(domains_file) if domains_file is not None else None
    except DomainTableError as exc:
        raise TutorialError(str(exc)) from None
    report = report if report is not None else LoadReport()
    items: Iterable[Tutorial] = iter_tutorials(
        path,
        domains=domains,
        topics=topics,
        clean_citations=clean_citations,
        skip_invalid=skip_invalid,
        report=report,
        table=table,
    )
    if sample is not None:
        items = balanced_sample(list(items), sample, per, seed)
    yield from islice(items, max_tutorials)
    if domains_file is not None and max_tutorials is None:
        check_domains_file_used(domains_file, report)


def check_domains_file_used(domains_file: Path, report: LoadReport) -> None:
    """A --domains file that places no article (every one fell back to categories[1]) is an error."""
    if report.articles and sum(report.unmapped.values()) == report.articles:
        raise TutorialError(
            f"{domains_file}: none of its topics or domains matches any of the {report.articles} "
            f"articles (all fell back to categories[1])"
        )
