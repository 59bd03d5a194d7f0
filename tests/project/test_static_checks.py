"""ruff (lint + format) and mypy over the repository, with the configuration in pyproject.toml.

Marked `static` (deselect with -m "not static"); runs by default. Skipped where ruff or mypy is not installed
(`make install` installs both from requirements-dev.txt). The rule set and why: docs/developer.md "Static checks".
mypy reuses its cache (.mypy_cache/): about 2 minutes cold on a busy 2-core machine, seconds warm.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.static


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (make install puts it in from requirements-dev.txt)")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_check_is_clean():
    res = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert res.returncode == 0, f"ruff check found problems:\n{res.stdout}{res.stderr}"


def test_ruff_format_is_applied():
    res = _run("ruff", "format", "--check", "--no-cache", ".")
    assert res.returncode == 0, f"files `ruff format` would change:\n{res.stdout}{res.stderr}"


def test_mypy_is_clean():
    res = _run("mypy")  # files and flags from [tool.mypy] in pyproject.toml
    assert res.returncode == 0, f"mypy found problems:\n{res.stdout}{res.stderr}"
