"""Product text speaks to users: no internal issue numbers or work-note names (a branch's note) anywhere in the
repository's text (README, docs, BENCHMARKS, data files, help texts, code comments and docstrings, tests): a
reader cannot look them up. Say what the thing is instead (the checklist judge, the static checks). This file
names the patterns, so it is the one file not scanned. No other file is exempt, not even a data file whose content
is hashed into a recorded version (wikihowagent/data/checklists.json): reword it and change its version."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ISSUE = "iss" + "ue"  # spelled apart so this file does not match itself
PATTERNS = [
    re.compile(rf"\b{ISSUE}s? \d+", re.I),  # the word and a number, any case
    re.compile(r"(?<![\w&/#.])#\d{1,2}(?![\w-])"),  # a hash and one or two digits (not CSS colours, not anchors)
    re.compile(r"\bh\d{2}(?:prep|[a-z])\b"),  # branch notes: h, two digits, a suffix
    re.compile(r"\bi\d{2}'s\b"),  # i, two digits, 's
]
SKIP_SUFFIXES = {".png", ".gguf", ".ico", ".woff", ".woff2", ".jpg", ".pdf"}


def tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [REPO / f for f in out.split("\n") if f and Path(f).suffix not in SKIP_SUFFIXES and (REPO / f).is_file()]


def work_notes(text: str) -> list[str]:
    return [m.group(0) for p in PATTERNS for m in p.finditer(text)]


def test_no_issue_numbers_or_work_notes_in_the_repository():
    found = []
    for path in tracked_text_files():
        rel = path.relative_to(REPO).as_posix()
        if rel == "tests/project/test_no_work_notes.py":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), start=1):
            if hits := work_notes(line):
                found.append(f"{rel}:{n}: {', '.join(hits)}")
    assert not found, "internal issue numbers / work notes:\n" + "\n".join(found[:40])


def test_the_patterns_find_what_they_look_for_and_leave_colours_and_anchors():
    hits = work_notes(
        f"the checklist judge ({ISSUE} 30); {ISSUE.title()} 11's goal; see #31; item #15) h29prep h29c; i21's runs"
    )
    assert hits == [f"{ISSUE} 30", f"{ISSUE.title()} 11", "#31", "#15", "h29prep", "h29c", "i21's"]
    assert work_notes("color:#222; a.html#0/x; judge#2; [x](#section-1); h1 h2 {margin}; Python 3.11") == []
