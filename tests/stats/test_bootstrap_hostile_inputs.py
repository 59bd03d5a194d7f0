"""The bootstrap's bounds: --seed and --bootstrap out of range are refused by the parser of compare, align and
evaluate; the bounds themselves are accepted; memory does not grow with the resamples, chunked draws are one call's."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from helpers import _compare_args, evaluate_args, flat, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


def _align_args(tmp_path: Path, *extra: str) -> list[str]:
    sheet = tmp_path / "h.csv"
    sheet.write_text("conversation_id,Clarity\nx,3\n")
    return ["align", "-H", str(sheet), "--scores", str(tmp_path), "--out", str(tmp_path / "al"), *extra]


@pytest.mark.parametrize("command", ["compare", "align", "evaluate"])
@pytest.mark.parametrize("option,value", [("--seed", "-1"), ("--bootstrap", "100001"), ("--bootstrap", "-1")])
def test_seed_and_bootstrap_out_of_bounds_are_refused_by_the_parser(tmp_path, command, option, value):
    # (not the 1,000,000,000: on a regression that would ask numpy for tens of GiB on a shared machine)
    args = {
        "compare": lambda: _compare_args(tmp_path, option, value),
        "align": lambda: _align_args(tmp_path, option, value),
        "evaluate": lambda: evaluate_args(run_copy(tmp_path), out=tmp_path / "out") + [option, value],
    }[command]()
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert f"Invalid value for '{option}'" in flat(res) and "Traceback" not in res.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "al").exists()


def test_the_bounds_themselves_are_accepted(tmp_path):
    run = run_copy(tmp_path)
    res = runner.invoke(app, evaluate_args(run, out=tmp_path / "out") + ["--seed", "0", "--bootstrap", "100000"])
    assert res.exit_code == 0, res.output


def test_bootstrap_memory_does_not_grow_with_the_resamples(monkeypatch):
    """100,000 resamples of 50 tutorials x 2 runs: the resample matrix alone would be 40 MB (and its gathered
    sums 80 MB); drawn in chunks the peak stays a few MB, and the CI is the same as unchunked."""
    from wikihowagent.stats import bootstrap, paired

    runs = [{f"t{g}": (float(g % 7 + r), 1 + g % 3) for g in range(50)} for r in range(2)]
    tracemalloc.start()
    try:
        ci = paired.bootstrap_mean_ci(runs, n_boot=100_000, seed=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 25e6, peak
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 10**12)  # one chunk: the draws of one rng.integers call
    assert paired.bootstrap_mean_ci(runs, n_boot=100_000, seed=3) == ci


def test_chunked_resamples_are_the_draws_of_one_call(monkeypatch):
    import numpy as np

    from wikihowagent.stats import bootstrap

    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 7)
    got = np.concatenate(list(bootstrap.resamples(np.random.default_rng(1), 3, 1001)))
    assert (got == np.random.default_rng(1).integers(0, 3, size=(1001, 3))).all()
