"""The built documentation site for the docs tests: `site/` as `make docs` left it (or $WIKIHOWAGENT_SITE).

A missing site is built once (`mkdocs build --strict`, this checkout's code first on the path); a site that
exists is used as it is, so a command or option changed without rebuilding the docs fails
tests/project/test_docs.py. `make test` builds the site first (`make docs`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def build(dest: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is installed by `make docs` (requirements-docs.txt)")
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(dest)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"


def site() -> Path:
    path = Path(os.environ.get("WIKIHOWAGENT_SITE") or REPO / "site")
    if not (path / "index.html").is_file():
        build(path)
    return path
