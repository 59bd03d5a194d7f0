"""Write one benchmark's section of BENCHMARKS.md, keeping the others."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
HEADER = "# Benchmarks\n\nEach section is rewritten by its script (`scripts/bench_*.py`); numbers from one run each.\n"


def write_section(name: str, body: str) -> None:
    text = BENCHMARKS.read_text(encoding="utf-8") if BENCHMARKS.exists() else HEADER
    section = f"## {name}\n\n_{date.today().isoformat()}_\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(name)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _m: section + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + section
    BENCHMARKS.write_text(text, encoding="utf-8")


def read_section(name: str) -> str:
    """The body of section `name` of BENCHMARKS.md ("" if absent)."""
    text = BENCHMARKS.read_text(encoding="utf-8") if BENCHMARKS.exists() else ""
    m = re.search(rf"^## {re.escape(name)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1) if m else ""
