"""End to end: the `annotate export` and `align` command functions, outputs, figures, atomic writing."""

from __future__ import annotations

import csv
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import make_run, sheet_rows, write_sheet  # noqa: E402

from wikihowagent.alignment import core as report  # noqa: E402
from wikihowagent.alignment.command import align, annotate_export  # noqa: E402
from wikihowagent.alignment.problems import Problems  # noqa: E402
from wikihowagent.alignment.sources import read_llm_scores  # noqa: E402
from wikihowagent.layout import OUTPUT_MANIFEST  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_app() -> typer.Typer:
    app = typer.Typer()
    annotate = typer.Typer()
    annotate.command("export")(annotate_export)
    app.add_typer(annotate, name="annotate")
    app.command("align")(align)
    return app


@pytest.fixture
def study(tmp_path):
    """Three runs x 20 tutorials; two judges close to the LLM, one of them with blanks and a bad cell."""
    rng = np.random.default_rng(42)
    runs = tmp_path / "runs"
    tuts = [f"tut{i:02d}" for i in range(20)]
    for name, model in (("r-qwen", "qwen"), ("r-gemma", "gemma"), ("r-llama", "llama")):
        make_run(runs, name, tuts, teacher=model, learner=model, rng=rng)
    llm = read_llm_scores([runs], Problems())
    cids = list(llm.rows)
    base = np.stack([llm.rows[c].values for c in cids])
    runs_of = [llm.rows[c].run for c in cids]
    j1 = np.clip(base + rng.integers(-1, 2, base.shape), 1, 5).astype(float)
    j2 = np.clip(base - rng.integers(0, 2, base.shape), 1, 5).astype(float)
    j2[rng.random(j2.shape) < 0.1] = np.nan
    rows1 = [r | {"filename": run} for r, run in zip(sheet_rows(cids, j1), runs_of, strict=False)]
    rows2 = [r | {"filename": run} for r, run in zip(sheet_rows(cids, j2), runs_of, strict=False)]
    rows2[4]["depth"] = "good"
    h1 = write_sheet(tmp_path / "judge1.csv", rows1)
    h2 = write_sheet(tmp_path / "judge2.csv", rows2)
    return tmp_path, runs, h1, h2


def assert_png(path: Path):
    from PIL import Image

    assert path.is_file() and path.read_bytes()[:8] == PNG_MAGIC
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        assert im.size[0] > 300 and im.size[1] > 200


def test_align_end_to_end(study):
    tmp, runs, h1, h2 = study
    out = tmp / "out"
    result = CliRunner().invoke(
        make_app(),
        [
            "align",
            "--human",
            str(h1),
            "-H",
            str(h2),
            "--scores",
            str(runs),
            "--out",
            str(out),
            "--bootstrap",
            "300",
            "--by",
            "model",
        ],
    )
    assert result.exit_code == 0, result.output
    for name in (
        "correlations.csv",
        "correlations.md",
        "descriptives.csv",
        "agreement.csv",
        "agreement_pairs.csv",
        "paired_scores.csv",
        "problems.txt",
    ):
        assert (out / name).is_file(), name
    for fig in ("score_distributions.png", "correlation_heatmap.png", "correlation_heatmap_by_model.png"):
        assert_png(out / "figures" / fig)
    with open(out / "correlations.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["group"] for r in rows[:9]] == ["all"] * 9
    assert {r["group"] for r in rows[9:]} == {"qwen", "gemma", "llama"} and len(rows) == 36
    clarity = rows[0]
    assert clarity["metric"] == "Clarity" and int(clarity["n"]) == 60
    assert float(clarity["pearson_ci_low"]) < float(clarity["pearson_r"]) < float(clarity["pearson_ci_high"])
    assert clarity["pearson_stars"] == "**"
    # the written numbers are scipy's on the written paired scores
    from scipy import stats

    with open(out / "paired_scores.csv", newline="") as fh:
        paired = list(csv.DictReader(fh))
    for row in rows[:9]:
        m = row["metric"]
        pairs = [(float(p[f"human_{m}"]), float(p[f"llm_{m}"])) for p in paired if p[f"human_{m}"] and p[f"llm_{m}"]]
        h, l_ = map(np.array, zip(*pairs, strict=False))
        assert int(row["n"]) == len(pairs)
        for col, fn in (
            ("pearson_r", stats.pearsonr),
            ("spearman_rho", stats.spearmanr),
            ("kendall_tau", stats.kendalltau),
        ):
            ref = fn(h, l_)
            assert float(row[col]) == pytest.approx(ref.statistic, rel=1e-8)
            assert float(row[col.split("_")[0] + "_p"]) == pytest.approx(ref.pvalue, rel=1e-8)
    with open(out / "agreement.csv", newline="") as fh:
        ag = list(csv.DictReader(fh))
    assert len(ag) == 8 * 4 and ag[0]["krippendorff_alpha_ordinal"]
    assert f"{h2}:6: column 'depth': 'good' is not a number; cell left out" in result.stderr
    assert f"{h2}:6: column 'depth': 'good' is not a number" in (out / "problems.txt").read_text()
    assert "Pearson r" in result.stdout and "Krippendorff" in result.stdout
    md = (out / "correlations.md").read_text()
    assert "## model: qwen" in md and "Krippendorff" in md and "## Left out" in md


def test_align_single_judge_no_agreement_and_by_run(study):
    tmp, runs, h1, _ = study
    out = tmp / "single"
    result = CliRunner().invoke(
        make_app(),
        [
            "align",
            "-H",
            str(h1),
            "--runs-dir",
            str(runs),
            "--out",
            str(out),
            "--bootstrap",
            "0",
            "--by",
            "run",
            "--no-figures",
        ],
    )
    assert result.exit_code == 0, result.output
    assert not (out / "agreement.csv").exists() and not (out / "figures").exists()
    text = (out / "correlations.csv").read_text()
    assert "run,r-qwen,Clarity,20," in text


def test_align_nothing_computable_writes_nothing(tmp_path):
    sheet = write_sheet(tmp_path / "j.csv", sheet_rows(["x1", "x2", "x3"], np.full((3, 8), 4.0)))
    make_run(tmp_path / "runs", "r", ["a"])
    out = tmp_path / "out"
    result = CliRunner().invoke(
        make_app(), ["align", "-H", str(sheet), "--scores", str(tmp_path / "runs" / "r"), "--out", str(out)]
    )
    assert result.exit_code == 1
    assert "nothing could be computed" in result.stderr
    assert f"{sheet}:2: column 'conversation_id': x1 has no LLM score; left out" in result.stderr
    assert not out.exists() and not list(tmp_path.glob(".out.tmp-*"))


def test_all_equal_ratings_are_named_when_nothing_else_could_be_computed(tmp_path):
    """Metrics only (`evaluate --no-judge`) against people who gave every conversation a 4: the warnings above
    "nothing could be computed" say why."""
    rng = np.random.default_rng(3)
    tuts = [f"t{i}" for i in range(8)]
    ids = make_run(tmp_path / "runs", "r", tuts, {t: {"METEOR": float(rng.random())} for t in tuts})
    sheet = write_sheet(tmp_path / "j.csv", sheet_rows([ids[t] for t in tuts], np.full((8, 8), 4.0)))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        make_app(), ["align", "-H", str(sheet), "--scores", str(tmp_path / "runs" / "r"), "--out", str(out)]
    )
    assert result.exit_code == 1 and "nothing could be computed (see the warnings above)" in result.stderr
    for target in ("Clarity", "Naturalness", "Overall"):
        assert (
            f"warning: {target}: the people's ratings are constant (all 4): no correlation for any metric; left out "
            "of metric_alignment.md"
        ) in result.stderr.splitlines()
    assert not out.exists()


def test_align_bad_option_values(study):
    tmp, runs, h1, _ = study
    result = CliRunner().invoke(make_app(), ["align", "-H", str(h1), "--by", "colour"])
    assert result.exit_code == 2 and "--by" in result.output + result.stderr


def test_outputs_complete_or_not_at_all(study, monkeypatch):
    tmp, runs, h1, h2 = study
    out = tmp / "out"
    report.write_outputs(report.compute([h1, h2], [runs], n_boot=0), out, [h1, h2], figures=False)
    (out / "correlations.csv").write_text("previous results\n")
    before = sorted(p.name for p in out.iterdir())

    def boom(*a, **k):
        raise RuntimeError("figure backend exploded")

    monkeypatch.setattr("wikihowagent.alignment.figures.correlation_heatmap", boom)
    res = report.compute([h1, h2], [runs], n_boot=0)
    with pytest.raises(RuntimeError):
        report.write_outputs(res, out, [h1, h2])
    assert (out / "correlations.csv").read_text() == "previous results\n"
    assert sorted(p.name for p in out.iterdir()) == before
    assert not [p for p in tmp.iterdir() if p.name.startswith(".out.tmp-")]
    monkeypatch.undo()
    # a later successful run replaces the directory as a whole: exactly the new set of files, none of the old
    res = report.compute([h1, h2], [runs], n_boot=0)
    report.write_outputs(res, out, [h1, h2], figures=True)
    (out / "correlations.csv").write_text("stale")
    assert (out / "agreement.csv").is_file() and (out / "figures" / "correlation_heatmap.png").is_file()
    res = report.compute([h1], [runs], n_boot=0)
    written = report.write_outputs(res, out, [h1], figures=False)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == sorted(
        [OUTPUT_MANIFEST, *(p.relative_to(out).as_posix() for p in written)]
    )  # and the manifest: what align wrote there
    assert sorted(p.relative_to(out).as_posix() for p in written) == [
        "correlations.csv",
        "correlations.md",
        "descriptives.csv",
        "pair_order.csv",
        "paired_scores.csv",
        "problems.txt",
    ]
    assert (out / "correlations.csv").read_text().startswith("by,group,metric,n,")
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith(".")) == []  # no staging/aside folders left


def test_output_swap_is_all_or_nothing_and_spares_foreign_files(study, monkeypatch):
    import os

    from wikihowagent.outdir import OutputDirError, StagedDir

    tmp, runs, h1, _ = study
    out = tmp / "out"
    with StagedDir(out, report.TOOL) as previous:
        previous.write_text("correlations.csv", "old")
        previous.write_text("problems.txt", "old")
        previous.commit()
    # the second rename (new folder into place) fails: the old folder is put back, unchanged
    real_rename, calls = os.rename, []

    def flaky_rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:
            raise OSError("disk gone")
        return real_rename(src, dst)

    st = StagedDir(out, report.TOOL)
    st.write_text("correlations.csv", "new")
    monkeypatch.setattr(os, "rename", flaky_rename)
    with pytest.raises(OSError, match="disk gone"):
        with st:
            st.commit()
    monkeypatch.undo()
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MANIFEST, "correlations.csv", "problems.txt"]
    assert (out / "correlations.csv").read_text() == "old"
    assert not [p for p in tmp.iterdir() if p.name.startswith(".out.tmp-")]
    # an --out holding somebody else's files is never replaced, and nothing is staged
    (out / "notes.txt").write_text("mine")
    (out / "figures").mkdir()
    (out / "figures" / "my_plot.png").write_bytes(b"x")
    with pytest.raises(OutputDirError, match=r"holds files align did not write \(figures/my_plot.png, notes.txt\)"):
        StagedDir(out, report.TOOL)
    assert not [p for p in tmp.iterdir() if p.name.startswith(".out.")]
    result = CliRunner().invoke(
        make_app(),
        ["align", "-H", str(h1), "--scores", str(runs), "--out", str(out), "--bootstrap", "0", "--no-figures"],
    )
    assert result.exit_code == 2
    assert f"error: --out {out} holds files align did not write (figures/my_plot.png, notes.txt)" in result.stderr
    assert (out / "notes.txt").read_text() == "mine" and (out / "correlations.csv").read_text() == "old"
    result = CliRunner().invoke(
        make_app(),
        ["align", "-H", str(h1), "--scores", str(runs), "--out", str(runs), "--bootstrap", "0", "--no-figures"],
    )
    assert result.exit_code == 2 and sorted(p.name for p in runs.iterdir()) == ["r-gemma", "r-llama", "r-qwen"]


def test_out_holding_an_input_is_refused_and_a_run_may_hold_its_own_alignment(study):
    """A human sheet inside --out (even one named like an output, correlations.csv) is never replaced with the
    folder: refused in one line, exit 2. --out inside a --scores run folder stays allowed (the guide's
    `--scores runs/my-run --out runs/my-run/alignment`)."""
    import shutil

    tmp, runs, h1, _ = study
    out = tmp / "out"
    out.mkdir()
    sheet = out / "correlations.csv"
    shutil.copyfile(h1, sheet)
    args = ["align", "--scores", str(runs), "--bootstrap", "0", "--no-figures"]
    result = CliRunner().invoke(make_app(), [*args, "-H", str(sheet), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"error: --out {out}: holds the input {sheet};" in result.stderr
    assert sheet.read_bytes() == h1.read_bytes() and sorted(p.name for p in out.iterdir()) == ["correlations.csv"]
    inside = runs / "r-qwen" / "alignment"
    result = CliRunner().invoke(
        make_app(), ["align", "-H", str(h1), "--scores", str(runs / "r-qwen"), "--out", str(inside), "--bootstrap", "0"]
    )
    assert result.exit_code == 0, result.output
    assert (inside / "correlations.csv").is_file() and (inside / OUTPUT_MANIFEST).is_file()
    (inside / OUTPUT_MANIFEST).unlink()  # as a version that kept no manifest left it: not replaced
    result = CliRunner().invoke(
        make_app(), ["align", "-H", str(h1), "--scores", str(runs / "r-qwen"), "--out", str(inside), "--bootstrap", "0"]
    )
    assert result.exit_code == 2 and f"no {OUTPUT_MANIFEST} in it" in result.stderr
    run = str(runs / "r-qwen")
    result = CliRunner().invoke(make_app(), ["align", "-H", str(h1), "--scores", run, "--out", run, "--bootstrap", "0"])
    assert result.exit_code == 2 and f"error: --out {run}: is the input {run};" in result.stderr


def test_runs_dir_defaults_to_the_config(study, monkeypatch):
    from wikihowagent.config import load_config

    tmp, runs, h1, _ = study
    cfg = tmp / "cfg.yaml"
    cfg.write_text(f"runs_dir: {runs}\n")
    result = CliRunner().invoke(
        make_app(), ["align", "-H", str(h1), "--config", str(cfg), "--bootstrap", "0", "--no-figures"]
    )
    assert result.exit_code == 0, result.output
    assert (runs / "alignment" / "correlations.csv").is_file()  # --scores and --out from the config's runs_dir
    sheet = tmp / "sheet.csv"
    result = CliRunner().invoke(
        make_app(), ["annotate", "export", "--config", str(cfg), "--top", "2", "--out", str(sheet)]
    )
    assert result.exit_code == 0, result.output
    assert "from 3 run(s)" in result.stdout
    # --runs-dir wins over the config
    result = CliRunner().invoke(
        make_app(),
        ["annotate", "export", "--config", str(cfg), "--runs-dir", str(tmp / "nowhere"), "--out", str(tmp / "s2.csv")],
    )
    assert result.exit_code == 1 and "no evaluated runs" in result.stderr
    # neither given: the default config's runs_dir, relative to the working directory
    work = tmp / "work"
    (work / load_config().runs_dir).parent.mkdir(parents=True, exist_ok=True)
    (runs).rename(work / load_config().runs_dir)
    monkeypatch.chdir(work)
    result = CliRunner().invoke(make_app(), ["align", "-H", str(h1), "--bootstrap", "0", "--no-figures"])
    assert result.exit_code == 0, result.output
    assert (work / load_config().runs_dir / "alignment" / "correlations.csv").is_file()
    bad = tmp / "bad.yaml"
    bad.write_text("runs_dir: [1, 2\n")
    result = CliRunner().invoke(make_app(), ["align", "-H", str(h1), "--config", str(bad)])
    assert result.exit_code == 1 and "invalid YAML" in result.stderr


def test_annotate_export_command(tmp_path):
    runs = tmp_path / "runs"
    for name in ("r1", "r2"):
        make_run(runs, name, [f"t{i}" for i in range(10)], rng=np.random.default_rng(len(name)))
    out = tmp_path / "sheet.csv"
    app = make_app()
    result = CliRunner().invoke(
        app, ["annotate", "export", str(runs / "r1"), str(runs / "r2"), "--top", "3", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "Selected 3 of 10 tutorials (top 3) from 2 run(s): 6 conversations." in result.stdout
    assert out.is_file() and out.with_suffix(".html").is_file()
    result = CliRunner().invoke(
        app, ["annotate", "export", "--runs-dir", str(runs), "--random", "2", "--seed", "3", "--out", str(out)]
    )
    assert result.exit_code == 1 and "already exists" in result.stderr
    result = CliRunner().invoke(
        app,
        ["annotate", "export", "--runs-dir", str(runs), "--random", "2", "--seed", "3", "--out", str(out), "--force"],
    )
    assert result.exit_code == 0 and "(random 2, seed 3)" in result.stdout
    result = CliRunner().invoke(app, ["annotate", "export", "--top", "2", "--bottom", "2", "--runs-dir", str(runs)])
    assert result.exit_code == 2


def test_command_module_imports_are_lazy():
    code = (
        "import sys; import wikihowagent.alignment.command as c; "
        "heavy = [m for m in ('numpy', 'scipy', 'pandas', 'matplotlib', 'sklearn', 'krippendorff') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "[]"


def test_aligned_rubrics_are_the_shipped_rubric_file():
    """align compares the rubrics of the shipped rubric file (paper Table 5), in its order; the sheet has a
    column for each."""
    from wikihowagent.alignment.schema import METRICS as ours
    from wikihowagent.alignment.schema import SHEET_METRICS
    from wikihowagent.judge.rubric_judge import load_rubrics

    assert ours == tuple(load_rubrics())
    assert sorted(SHEET_METRICS) == sorted(m.lower() for m in load_rubrics())
    # the paper's sheet layout, from the rubric file's sheet_column (Truthfulness last)
    assert SHEET_METRICS == (
        "clarity",
        "engagement",
        "coherence",
        "depth",
        "relevance",
        "progress",
        "naturalness",
        "truthfulness",
    )


def test_rubric_names_are_spelled_in_the_rubric_file_only():
    """No module of the package spells a rubric name (string literals; docstrings and comments aside): they come
    from wikihowagent/data/rubrics.json. The sheet layout is the file's `sheet_column`, which the judge never sees."""
    import ast

    from wikihowagent.judge.rubric_judge import load_rubrics, rubrics_sha256

    names = {n.lower() for n in load_rubrics()}
    pkg = Path(__file__).resolve().parents[2] / "wikihowagent"
    found = []
    for path in pkg.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr)
        }
        found += [
            f"{path.name}:{n.lineno}: {n.value}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and id(n) not in docs
            and n.value.lower() in names
        ]
    assert not found, found
    rubrics = load_rubrics()
    moved = {n: dataclasses.replace(r, sheet_column=None) for n, r in rubrics.items()}
    assert rubrics_sha256(moved) == rubrics_sha256(rubrics)  # the layout is not part of what was judged


def test_align_head_to_head_against_people(study):
    """pair_order.csv and correlations.md: the pairs of one tutorial's conversations (three runs each) the people
    clearly ordered; a judge whose scores the people follow orders most of them as they did, and against people
    who rate the mirror image of its scores it orders few."""
    tmp, runs, h1, h2 = study
    res = report.compute([h1, h2], [runs], n_boot=200)
    o = res.pair_order["Overall"]
    assert o.pairs >= 10 and o.groups >= 5 and o.accuracy > 0.8 and o.ci_low <= o.accuracy <= o.ci_high
    written = report.write_outputs(res, tmp / "out", [h1, h2], figures=False)
    rows = list(csv.DictReader((tmp / "out" / "pair_order.csv").open()))
    assert [r["metric"] for r in rows][-1] == "Overall" and len(rows) == 9 and tmp / "out" / "pair_order.csv" in written
    assert float(rows[-1]["accuracy"]) == pytest.approx(o.accuracy, abs=1e-3)
    assert "## Head to head against people" in (tmp / "out" / "correlations.md").read_text()
    llm = read_llm_scores([runs], Problems())
    cids = list(llm.rows)
    mirror = 6 - np.stack([llm.rows[c].values for c in cids])
    sheet = write_sheet(
        tmp / "mirror.csv",
        [r | {"filename": llm.rows[c].run} for r, c in zip(sheet_rows(cids, mirror), cids, strict=True)],
    )
    back = report.compute([sheet], [runs], n_boot=0).pair_order["Overall"]
    assert back.pairs >= 10 and back.accuracy < 0.2
