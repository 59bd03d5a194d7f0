"""Issue 18 item 18: installing prints no setuptools deprecation wall (project.license is an SPDX string)."""

from __future__ import annotations

import os
import tomllib
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_license_is_an_spdx_string_without_deprecation_warnings(monkeypatch):
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["license"] == "MIT"
    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), os.path.join(ROOT, "pyproject.toml"))
    license_warnings = [str(w.message) for w in caught if "license" in str(w.message).lower()]
    assert not license_warnings, license_warnings[0][:300]
    assert dist.metadata.license_expression == "MIT"
