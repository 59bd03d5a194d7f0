"""scripts/bench_seams.py's counters (issue 29's size must-show), on small files with a known answer."""

from __future__ import annotations

import subprocess
import sys

from helpers import load_script

SOURCE = (
    '''
import os
from wikihowagent.runs import SCORES


def short():
    """A docstring
    of three
    lines."""
    from wikihowagent import records
    import json
    return records, json


def long_one(a,
             b):
    """Doc."""
'''
    + "    x = 1\n" * 61
    + """
    def inner():
        from . import sibling
        import wikihowagent.config
        return sibling
    return inner


async def exactly_sixty():
"""
    + "    y = 2\n" * 60
)


def test_long_functions_count_the_body_after_the_docstring(tmp_path):
    b = load_script("bench_seams")
    f = tmp_path / "m.py"
    f.write_text(SOURCE)
    found = b.long_functions(f)
    assert [x.split(" ", 1)[1] for x in found] == ["long_one (67 lines)"]  # 61 + a blank line + 5 more
    assert b.long_functions(f, limit=59) == [
        *found,
        f"{f}:{SOURCE.splitlines().index('async def exactly_sixty():') + 1} exactly_sixty (60 lines)",
    ]


def test_lazy_own_imports_are_the_package_imports_inside_functions(tmp_path):
    b = load_script("bench_seams")
    f = tmp_path / "m.py"
    f.write_text(SOURCE)
    lines = SOURCE.splitlines()
    want = [
        lines.index("    from wikihowagent import records") + 1,
        lines.index("        from . import sibling") + 1,
        lines.index("        import wikihowagent.config") + 1,
    ]
    assert b.lazy_own_imports(f) == sorted(f"{f}:{n}" for n in want)  # the nested function's once each


def test_size_formats_with_the_repository_config_before_counting(tmp_path):
    """The same code written two ways counts the same once formatted."""
    b = load_script("bench_seams")
    ruff = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True)
    if ruff.returncode != 0:
        import pytest

        pytest.skip("ruff is not installed")
    for name, text in (("one", "x = [1,\n  2,\n     3]\n"), ("two", "x = [1, 2, 3]\n")):
        root = tmp_path / name
        for folder in b.SIZED:
            (root / folder).mkdir(parents=True)
            (root / folder / "m.py").write_text(text)
    one = b.measure_size(tmp_path / "one", b.ROOT / "pyproject.toml")
    two = b.measure_size(tmp_path / "two", b.ROOT / "pyproject.toml")
    assert one.raw != two.raw and one.formatted == two.formatted == {f: 1 for f in b.SIZED}
