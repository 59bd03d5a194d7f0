"""The paper's topic -> domain table (`wikihowagent/data/domains.csv`) and how a tutorial gets its topic and domain.

The topic of an article is its crawl folder under the corpus root (e.g. `Relationship-Issues`); without
one (a JSON/JSONL input, or a folder named after a domain as in the bundled sample) it is the most specific
breadcrumb category that is a topic of the table (of that domain, under a domain folder), else the most
specific category. The domain is the folder's when it is named after a domain; else the table's domain of
the topic; else the first breadcrumb category (most specific first) that is a topic or a domain name of
the table; else `categories[1]`, and the topic is counted as unmapped.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from wikihowagent.config import resource_path
from wikihowagent.errors import WikihowagentError

ROOT_CATEGORIES = {"categories", "wikihow"}


class DomainTableError(WikihowagentError, ValueError):
    """A bad --domains file; the message is one line naming the file (and row)."""


def default_domains_path() -> Path:
    return resource_path("data", "domains.csv")


def norm(name: str) -> str:
    """`Relationship Issues`, `relationship-issues` and ` Relationship-Issues ` are one topic; so are
    `Cars & Other Vehicles` and `Cars and Other Vehicles`."""
    return "-".join(name.replace("_", " ").replace("-", " ").replace("&", " and ").split()).casefold()


def domain_of(categories: list[str]) -> str:
    """`categories[1]`: the first breadcrumb category after the root (the fallback domain)."""
    cats = [c for c in categories if c.strip()]
    if cats and cats[0].strip().lower() in ROOT_CATEGORIES:
        cats = cats[1:]
    return cats[0] if cats else ""


@dataclass(frozen=True)
class Placement:
    topic: str
    domain: str
    mapped: bool  # False: the domain is the categories[1] fallback


class DomainTable:
    """Topic -> domain, looked up by normalized name; domain names are known too."""

    def __init__(self, rows: list[tuple[str, str]], source: str = "") -> None:
        self.source = source
        self.topics: dict[str, tuple[str, str]] = {}  # norm(topic) -> (topic as spelled in the table, domain)
        self.domains: dict[str, str] = {}  # norm(domain) -> domain
        for domain, topic in rows:
            self.topics.setdefault(norm(topic), (topic, domain))
            self.domains.setdefault(norm(domain), domain)

    @classmethod
    def read(cls, path: Path | None = None) -> DomainTable:
        path = Path(path) if path is not None else default_domains_path()
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise DomainTableError(f"{path}: no such file") from None
        except UnicodeDecodeError:
            raise DomainTableError(f"{path}: not UTF-8 text") from None
        except OSError as exc:
            raise DomainTableError(f"{path}: cannot read ({exc.strerror})") from None
        lines = [
            (n, line)
            for n, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if not lines:
            raise DomainTableError(f"{path}: empty file (expected a CSV with columns Domain,Topic)")
        reader = csv.DictReader(io.StringIO("\n".join(line for _, line in lines)))
        header = {(h or "").strip().lower(): h for h in reader.fieldnames or []}
        if "domain" not in header or "topic" not in header:
            raise DomainTableError(
                f"{path}: line {lines[0][0]}: expected columns Domain and Topic, "
                f"got {', '.join(reader.fieldnames or [])}"
            )
        rows = []
        for (lineno, _), row in zip(lines[1:], reader, strict=False):
            domain, topic = (row.get(header["domain"]) or "").strip(), (row.get(header["topic"]) or "").strip()
            if not domain or not topic:
                raise DomainTableError(f"{path}: line {lineno}: empty Domain or Topic")
            rows.append((domain, topic))
        if not rows:
            raise DomainTableError(f"{path}: no rows (header only)")
        return cls(rows, str(path))

    def topic_entry(self, name: str) -> tuple[str, str] | None:
        return self.topics.get(norm(name))

    def domain_name(self, name: str) -> str | None:
        return self.domains.get(norm(name))

    def place(self, categories: list[str], folder: str | None) -> Placement:
        """Topic and domain of an article from its crawl folder (None: no folder) and breadcrumb."""
        crumbs = [c.strip() for c in categories if c.strip()]
        if crumbs and crumbs[0].lower() in ROOT_CATEGORIES:
            crumbs = crumbs[1:]
        specific_first = crumbs[::-1]
        # A folder named after a domain is a domain folder (the bundled sample's layout), unless it names a topic
        # as well: spelled as that topic ("Health", "Relationships"), or not spelled as the domain
        # ("Pets-and-Animals" is a topic, "Pets & Animals" the domain).
        folder_domain = None
        if folder and (d := self.domain_name(folder)):
            entry = self.topic_entry(folder)
            spelled = folder.strip().casefold()
            if entry is None or (spelled == d.casefold() and spelled != entry[0].casefold()):
                folder_domain = d
        if folder and folder_domain is None:
            entry = self.topic_entry(folder)
            topic = entry[0] if entry else folder
        else:  # no folder, or a folder named after a domain (the bundled sample's layout)
            entry = next(
                (e for c in specific_first if (e := self.topic_entry(c)) and folder_domain in (None, e[1])), None
            )
            topic = entry[0] if entry else (specific_first[0] if specific_first else (folder or ""))
        if folder_domain:
            return Placement(topic, folder_domain, True)
        if entry:
            return Placement(topic, entry[1], True)
        for c in specific_first:
            if e := self.topic_entry(c):
                return Placement(topic, e[1], True)
            if d := self.domain_name(c):
                return Placement(topic, d, True)
        return Placement(topic, domain_of(categories), False)


def folder_of(path: str) -> str | None:
    """The crawl folder in a path `.../<Topic>/<Title>/<Title>.json` or `.../<Topic>/<Title>.json`."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if len(parts) >= 3 and parts[-2] == PurePosixPath(parts[-1]).stem:
        return parts[-3]
    if len(parts) >= 2 and parts[-2] != PurePosixPath(parts[-1]).stem:
        return parts[-2]
    return None


@lru_cache(maxsize=1)
def default_table() -> DomainTable:
    return DomainTable.read()


def record_domain(categories: list[str], source_path: str = "") -> str:
    """The paper's domain for a conversation record that has none (e.g. the paper's released records):
    from the crawl folder in its `source_tutorial_path` and its breadcrumb, with the bundled table."""
    table = default_table()
    folder = folder_of(source_path) if source_path else None
    if folder and not (table.topic_entry(folder) or table.domain_name(folder)):
        folder = None  # e.g. an absolute path's unrelated parent directory
    return table.place(categories, folder).domain
