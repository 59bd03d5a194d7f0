"""Load WikiHow articles (the paper's crawl schema), place them in the paper's domains, and turn their
methods into tutorials.

Three input forms: a directory tree of article JSON files (`ROOT/<Topic>/<Title>/<Title>.json`), one
JSON file (an article, a list of articles, or `{"articles": [...]}`), or a JSONL file (one article per
line). Articles stream one at a time (a tree is walked, never listed whole). Each method with at least two
usable steps is one `Tutorial`; steps are checked after citation stripping, and a method without enough
usable steps is skipped and counted, not an error. The same article seen twice (same `path`, or the same
title and method) is warned about and the first kept. Order is deterministic: files sorted by relative
path, articles in file order, methods in article order.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.config import resource_path
from wikihowagent.domains import DomainTable, default_table, domain_of, folder_of, norm
from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import LONG_LINE, JsonInputError, bounded_lines, parse_json, read_json_file
from wikihowagent.records import Tutorial, make_tutorial_id

__all__ = [
    "CorpusArticle",
    "LoadReport",
    "TutorialError",
    "default_tutorials_path",
    "domain_of",
    "iter_articles",
    "iter_tutorials",
    "load_tutorials",
    "strip_citations",
]

MIN_STEPS = 2
SKIP_NO_STEPS = "no usable step"
SKIP_ONE_STEP = "one step"

# Crawl debris after a sentence, e.g. "[6]XTrustworthy SourceMayo Clinic...Go to source",
# "[3]XResearch source", "[1]XExpert SourceJane DoeExpert Interview. 5 June 2020." and bare "[4]".
_CITATION = re.compile(
    r"\[\d+\]X(?:Trustworthy Source.*?Go to source|Research source|Expert Source.*?Expert Interview\."
    r"(?:\s*\d{1,2} \w+ \d{4}\.)?)?|\[\d+\]"
)


class TutorialError(WikihowagentError, ValueError):
    """Bad tutorial input; the message is one line naming the file (and line/record)."""


def default_tutorials_path() -> Path:
    return resource_path("data", "tutorials")


def strip_citations(text: str) -> str:
    return re.sub(r"\s{2,}", " ", _CITATION.sub("", text)).strip()


@dataclass
class LoadReport:
    articles: int = 0  # valid, distinct articles read
    methods: int = 0  # their methods
    skipped: Counter = field(default_factory=Counter)  # reason -> methods skipped (no usable step, one step)
    empty_steps: int = 0  # steps dropped as empty after citation stripping
    filtered: int = 0  # tutorials left out by --domain / --topic
    invalid: list[str] = field(default_factory=list)  # one-line problems (when skip_invalid)
    duplicates: list[str] = field(default_factory=list)  # one-line warnings; the first occurrence is kept
    unmapped: Counter = field(default_factory=Counter)  # topic -> articles whose domain fell back to categories[1]

    def summary(self) -> str:
        skips = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"
        parts = [f"{self.articles} articles, {self.methods} methods; methods skipped: {skips}"]
        if self.filtered:
            parts.append(f"{self.filtered} tutorials left out by --domain/--topic")
        if self.empty_steps:
            parts.append(f"{self.empty_steps} empty steps dropped")
        if self.duplicates:
            parts.append(f"{len(self.duplicates)} duplicates ignored")
        if self.unmapped:
            parts.append(
                f"{sum(self.unmapped.values())} articles in {len(self.unmapped)} unmapped topics "
                f"(domain = categories[1])"
            )
        return "; ".join(parts)


@dataclass
class CorpusArticle:
    """One valid, distinct article, placed in a topic and domain, with its methods sorted into usable
    (method index, title, cleaned steps) and skipped (method index, reason)."""

    doc_id: int
    where: str
    key: str  # source key for tutorial ids (relative path, file:line, file#index)
    source: str  # the article's own `path` or the key
    raw: dict[str, Any]
    topic: str
    domain: str
    mapped: bool
    methods: list[tuple[int, str, list[str]]]
    skipped: list[tuple[int, str]]

    def tutorials(self, clean) -> Iterator[Tutorial]:
        categories = list(self.raw.get("categories", []))
        for method_id, title, steps in self.methods:
            yield Tutorial(
                tutorial_id=make_tutorial_id(self.key, method_id),
                doc_id=self.doc_id,
                method_id=method_id,
                source_tutorial_path=str(self.source),
                title=self.raw["title"],
                method_title=title,
                categories=categories,
                topic=self.topic,
                domain=self.domain,
                summary=clean(self.raw.get("introduction", "")),
                steps=steps,
            )


def _walk(root: Path, above: tuple[tuple[int, int], ...] = ()) -> Iterator[Path]:
    """*.json files under `root` in sorted relative-path order, one directory listing at a time. A directory
    that cannot be read, or a symbolic link back to a directory above it, is a one-line TutorialError."""
    try:
        st = root.stat()
        if (st.st_dev, st.st_ino) in above:
            raise TutorialError(
                f"{root}: symbolic link loop (it leads back to a directory above it); remove the "
                "link or pass the folder below it"
            )
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
        kinds = [(e, e.is_dir(), e.name.endswith(".json") and e.is_file()) for e in entries]
    except OSError as exc:
        where = exc.filename or root
        raise TutorialError(f"{where}: cannot read ({exc.strerror})") from None
    for e, is_dir, is_json in kinds:
        if is_dir:
            yield from _walk(Path(e.path), (*above, (st.st_dev, st.st_ino)))
        elif is_json:
            yield Path(e.path)


def _articles(path: Path) -> Iterator[tuple[str, str, str | None, Any]]:
    """Yield (where, source key, crawl folder or None, raw article) from any of the three input forms.

    An unreadable file or line is yielded as a TutorialError in place of the article, so that callers
    can stop or skip it like any other bad article.
    """
    if not path.exists():
        raise TutorialError(f"{path}: no such file or directory")
    if path.is_dir():
        found = False
        for f in _walk(path):
            found = True
            rel = f.relative_to(path)
            folder = rel.parts[0] if len(rel.parts) >= 2 and rel.parts[0] != f.stem else None
            yield str(f), rel.as_posix(), folder, _read_json(f)
        if not found:
            raise TutorialError(f"{path}: no *.json article files found")
    elif path.suffix == ".jsonl":
        with path.open("rb") as fh:
            for lineno, raw in enumerate(bounded_lines(fh), start=1):
                if raw is not None and not raw.strip():
                    continue
                where = f"{path}:{lineno}"
                if raw is None:
                    yield where, f"{path.name}:{lineno}", None, TutorialError(f"{where}: {LONG_LINE}")
                    continue
                try:
                    obj: Any = parse_json(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    obj = TutorialError(f"{where}: not UTF-8 text")
                except JsonInputError as exc:
                    obj = TutorialError(f"{where}: {exc.brief}")
                yield where, f"{path.name}:{lineno}", None, obj
    else:
        data = _read_json(path)
        if isinstance(data, dict) and "articles" in data:
            data = data["articles"]
        if isinstance(data, list):
            for i, obj in enumerate(data):
                yield f"{path} (article {i})", f"{path.name}#{i}", None, obj
        else:
            yield str(path), path.name, None, data


def _read_json(path: Path) -> Any:
    try:
        return read_json_file(path)
    except JsonInputError as exc:
        return TutorialError(exc.located(path))
    except OSError as exc:
        return TutorialError(f"{path}: cannot read ({exc.strerror})")


def _validate(where: str, art: Any) -> None:
    """Structure only: a method whose steps are empty is skipped later, not an error."""
    if isinstance(art, TutorialError):
        raise art
    if not isinstance(art, dict):
        raise TutorialError(f"{where}: expected an article object, got {type(art).__name__}")
    for key, typ in (("title", str), ("methods", list)):
        if key not in art:
            raise TutorialError(f"{where}: missing field '{key}'")
        if not isinstance(art[key], typ):
            raise TutorialError(f"{where}: field '{key}' must be a {typ.__name__}")
    cats = art.get("categories", [])
    if not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
        raise TutorialError(f"{where}: field 'categories' must be a list of strings")
    if not isinstance(art.get("introduction", ""), str):
        raise TutorialError(f"{where}: field 'introduction' must be a string")
    for m_idx, method in enumerate(art["methods"]):
        label = f"{where}: method {m_idx + 1}"
        if not isinstance(method, dict):
            raise TutorialError(f"{label}: expected an object")
        if not isinstance(method.get("title"), str):
            raise TutorialError(f"{label}: missing field 'title'")
        steps = method.get("steps")
        if not isinstance(steps, list):
            raise TutorialError(f"{label}: missing field 'steps' (a list of strings)")
        for s_idx, step in enumerate(steps):
            if not isinstance(step, str):
                raise TutorialError(f"{label} ('{method['title']}'): step {s_idx + 1} is not text")


def _sort_methods(
    where: str,
    raw_methods: list[dict[str, Any]],
    method_keys: list[tuple[str, str]],
    seen_methods: dict[tuple[str, str], str],
    clean: Callable[[str], str],
    report: LoadReport,
) -> tuple[list[tuple[int, str, list[str]]], list[tuple[int, str]]]:
    """An article's methods sorted into usable (method index, title, cleaned steps) and skipped (method index,
    reason); a method already seen in an earlier article is left out as a duplicate. Counts go to `report`."""
    methods, skipped = [], []
    for method_id, method in enumerate(raw_methods):
        mkey = method_keys[method_id]
        if mkey in seen_methods:
            report.duplicates.append(
                f"{where}: method {method_id + 1} ('{method['title']}') is the same as in "
                f"{seen_methods[mkey]}; first kept"
            )
            continue
        report.methods += 1
        cleaned = [clean(s) for s in method["steps"]]
        steps = [s for s in cleaned if s]
        report.empty_steps += len(cleaned) - len(steps)
        if len(steps) < MIN_STEPS:
            reason = SKIP_NO_STEPS if not steps else SKIP_ONE_STEP
            report.skipped[reason] += 1
            skipped.append((method_id, reason))
            continue
        methods.append((method_id, method["title"].strip(), steps))
    return methods, skipped


def iter_articles(
    path: Path | None = None,
    *,
    clean_citations: bool = True,
    skip_invalid: bool = False,
    report: LoadReport | None = None,
    table: DomainTable | None = None,
) -> Iterator[CorpusArticle]:
    """Every valid, distinct article of `path` (default: the bundled sample), streamed, placed in a
    topic and domain (`table`: default `wikihowagent/data/domains.csv`).

    A bad article raises TutorialError, or with `skip_invalid` is recorded in `report.invalid` and skipped.
    """
    path = Path(path) if path is not None else default_tutorials_path()
    report = report if report is not None else LoadReport()
    table = table if table is not None else default_table()
    clean = strip_citations if clean_citations else str.strip
    seen_paths: dict[str, str] = {}
    seen_methods: dict[tuple[str, str], str] = {}
    for doc_id, (where, key, folder, art) in enumerate(_articles(path)):
        try:
            _validate(where, art)
        except TutorialError as exc:
            if not skip_invalid:
                raise
            report.invalid.append(str(exc))
            continue
        source = art.get("path") or key
        if art.get("path"):
            if art["path"] in seen_paths:
                report.duplicates.append(
                    f"{where}: same article (path {art['path']}) as {seen_paths[art['path']]}; first kept"
                )
                continue
            seen_paths[art["path"]] = where
        title_key = norm(art["title"])
        method_keys = [(title_key, norm(m["title"])) for m in art["methods"]]
        dup_of = [seen_methods[k] for k in method_keys if k in seen_methods]
        if art["methods"] and len(dup_of) == len(method_keys):
            report.duplicates.append(f"{where}: same article (title and methods) as {dup_of[0]}; first kept")
            continue
        if folder is None and art.get("path"):
            folder = folder_of(str(art["path"]))
            if folder and not (table.topic_entry(folder) or table.domain_name(folder)):
                folder = None
        place = table.place(art.get("categories", []), folder)
        methods, skipped = _sort_methods(where, art["methods"], method_keys, seen_methods, clean, report)
        for mkey in method_keys:  # after the article: two methods of one article never clash
            seen_methods.setdefault(mkey, where)
        report.articles += 1
        if not place.mapped:
            report.unmapped[place.topic or "(no category)"] += 1
        yield CorpusArticle(doc_id, where, key, source, art, place.topic, place.domain, place.mapped, methods, skipped)


def iter_tutorials(
    path: Path | None = None,
    *,
    domains: Iterable[str] = (),
    topics: Iterable[str] = (),
    clean_citations: bool = True,
    skip_invalid: bool = False,
    report: LoadReport | None = None,
    table: DomainTable | None = None,
) -> Iterator[Tutorial]:
    """The tutorials of `path` in a stable order, streamed; `domains`/`topics` keep only those (any case)."""
    report = report if report is not None else LoadReport()
    want_domains = {norm(d) for d in domains}
    want_topics = {norm(t) for t in topics}
    clean = strip_citations if clean_citations else str.strip
    for art in iter_articles(
        path, clean_citations=clean_citations, skip_invalid=skip_invalid, report=report, table=table
    ):
        if (want_domains and norm(art.domain) not in want_domains) or (
            want_topics and norm(art.topic) not in want_topics
        ):
            report.filtered += len(art.methods)
            continue
        yield from art.tutorials(clean)


def load_tutorials(
    path: Path | None = None,
    *,
    domains: Iterable[str] = (),
    topics: Iterable[str] = (),
    max_tutorials: int | None = None,
    clean_citations: bool = True,
    skip_invalid: bool = False,
    report: LoadReport | None = None,
    table: DomainTable | None = None,
) -> list[Tutorial]:
    """All tutorials of `path` (default: the bundled sample), filtered and capped, in a stable order."""
    out: list[Tutorial] = []
    for t in iter_tutorials(
        path,
        domains=domains,
        topics=topics,
        clean_citations=clean_citations,
        skip_invalid=skip_invalid,
        report=report,
        table=table,
    ):
        out.append(t)
        if max_tutorials is not None and len(out) >= max_tutorials:
            break
    return out


def print_load_warnings(console, report) -> None:
    """Bad articles skipped, duplicates ignored and the (first 10) unmapped topics, one literal line each
    (never read as markup)."""
    from wikihowagent.console import print_labeled

    unmapped = [f"{t}: {n} articles, domain = categories[1]" for t, n in report.unmapped.most_common(10)]
    if len(report.unmapped) > 10:
        unmapped.append(f"... and {len(report.unmapped) - 10} more topics (all in `wikihowagent stats`)")
    for label, items in (
        ("skipped:", report.invalid),
        ("duplicate:", report.duplicates),
        ("unmapped topic:", unmapped),
    ):
        for problem in items:
            print_labeled(console, label, "yellow", problem)


def empty_message(source: Path, domain, topic) -> str:
    where = [f"domain(s) {', '.join(domain)}"] if domain else []
    where += [f"topic(s) {', '.join(topic)}"] if topic else []
    return f"{source}: no tutorials with >= 2 steps" + (f" in {' and '.join(where)}" if where else "")
