"""Load WikiHow articles (the paper's crawl schema) and turn their methods into tutorials.

Three input forms: a directory tree of article JSON files (`ROOT/<Category>/<Title>/<Title>.json`), one
JSON file (an article, a list of articles, or `{"articles": [...]}`), or a JSONL file (one article per
line). Each method with at least two steps is one `Tutorial`. Order is deterministic: files sorted by
relative path, articles in file order, methods in article order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.config import resource_path
from wikihowagent.records import Tutorial, make_tutorial_id

ROOT_CATEGORIES = {"categories", "wikihow"}
MIN_STEPS = 2

# Crawl debris after a sentence, e.g. "[6]XTrustworthy SourceMayo Clinic...Go to source",
# "[3]XResearch source", "[1]XExpert SourceJane DoeExpert Interview. 5 June 2020." and bare "[4]".
_CITATION = re.compile(
    r"\[\d+\]X(?:Trustworthy Source.*?Go to source|Research source|Expert Source.*?Expert Interview\."
    r"(?:\s*\d{1,2} \w+ \d{4}\.)?)?|\[\d+\]"
)


class TutorialError(ValueError):
    """Bad tutorial input; the message is one line naming the file (and line/record)."""


def default_tutorials_path() -> Path:
    return resource_path("data", "tutorials")


def strip_citations(text: str) -> str:
    return re.sub(r"\s{2,}", " ", _CITATION.sub("", text)).strip()


@dataclass
class LoadReport:
    articles: int = 0
    methods: int = 0
    skipped_short: int = 0  # methods with fewer than MIN_STEPS steps
    skipped_domain: int = 0
    invalid: list[str] = field(default_factory=list)  # one-line problems (when skip_invalid)


def _articles(path: Path) -> Iterator[tuple[str, str, Any]]:
    """Yield (where, source key, raw article) from any of the three input forms.

    An unreadable file or line is yielded as a TutorialError in place of the article, so that callers
    can stop or skip it like any other bad article.
    """
    if not path.exists():
        raise TutorialError(f"{path}: no such file or directory")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.json") if p.is_file())
        if not files:
            raise TutorialError(f"{path}: no *.json article files found")
        for f in files:
            yield str(f), f.relative_to(path).as_posix(), _read_json(f)
    elif path.suffix == ".jsonl":
        with path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                where = f"{path}:{lineno}"
                try:
                    obj: Any = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    obj = TutorialError(f"{where}: not UTF-8 text")
                except json.JSONDecodeError as exc:
                    obj = TutorialError(f"{where}: malformed JSON ({exc.msg})")
                yield where, f"{path.name}:{lineno}", obj
    else:
        data = _read_json(path)
        if isinstance(data, dict) and "articles" in data:
            data = data["articles"]
        if isinstance(data, list):
            for i, obj in enumerate(data):
                yield f"{path} (article {i})", f"{path.name}#{i}", obj
        else:
            yield str(path), path.name, data


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return TutorialError(f"{path}: malformed JSON at line {exc.lineno} ({exc.msg})")
    except UnicodeDecodeError:
        return TutorialError(f"{path}: not UTF-8 text")
    except OSError as exc:
        return TutorialError(f"{path}: cannot read ({exc.strerror})")


def _validate(where: str, art: Any) -> None:
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
        if not steps:
            raise TutorialError(f"{label} ('{method['title']}'): 'steps' is empty")
        for s_idx, step in enumerate(steps):
            if not isinstance(step, str) or not step.strip():
                raise TutorialError(f"{label} ('{method['title']}'): step {s_idx + 1} is empty or not text")


def domain_of(categories: list[str]) -> str:
    cats = [c for c in categories if c.strip()]
    if cats and cats[0].strip().lower() in ROOT_CATEGORIES:
        cats = cats[1:]
    return cats[0] if cats else ""


def load_tutorials(
    path: Path | None = None,
    *,
    domains: Iterable[str] = (),
    max_tutorials: int | None = None,
    clean_citations: bool = True,
    skip_invalid: bool = False,
    report: LoadReport | None = None,
) -> list[Tutorial]:
    """All tutorials of `path` (default: the bundled sample), filtered and capped, in a stable order.

    A bad article raises TutorialError, or with `skip_invalid` is recorded in `report.invalid` and skipped.
    """
    path = Path(path) if path is not None else default_tutorials_path()
    report = report if report is not None else LoadReport()
    wanted = {d.strip().lower() for d in domains}
    out: list[Tutorial] = []
    clean = strip_citations if clean_citations else str.strip
    for doc_id, (where, key, art) in enumerate(_articles(path)):
        try:
            _validate(where, art)
        except TutorialError as exc:
            if not skip_invalid:
                raise
            report.invalid.append(str(exc))
            continue
        report.articles += 1
        categories = list(art.get("categories", []))
        domain = domain_of(categories)
        source = art.get("path") or key
        for method_id, method in enumerate(art["methods"]):
            report.methods += 1
            steps = [clean(s) for s in method["steps"]]
            if len(steps) < MIN_STEPS:
                report.skipped_short += 1
                continue
            if wanted and domain.lower() not in wanted:
                report.skipped_domain += 1
                continue
            out.append(
                Tutorial(
                    tutorial_id=make_tutorial_id(key, method_id),
                    doc_id=doc_id,
                    method_id=method_id,
                    source_tutorial_path=str(source),
                    title=art["title"],
                    method_title=method["title"].strip(),
                    categories=categories,
                    domain=domain,
                    summary=clean(art.get("introduction", "")),
                    steps=steps,
                )
            )
            if max_tutorials is not None and len(out) >= max_tutorials:
                return out
    return out
