"""The package as a user installs it: `python -m build` makes the sdist and the wheel, `twine check` accepts both,
and each, installed (not editable) into a fresh virtual environment, runs the pipeline from a folder outside the
clone: `--version`, `stats`, `tutorials`, `generate` (against a fake OpenAI-compatible server on loopback),
`evaluate`, `judge-check`, `align` on the paper's development human study (where it is beside the clone) and
`report`. Each finds its bundled files (rubrics, prompts, personas, tutorials, perturbations, report assets)
inside the installed package, and no path of the clone appears in anything they print or write.

The fresh environments reuse this environment's installed dependencies (a .pth file naming its site-packages;
the package itself is installed with --no-deps), so nothing is downloaded. About 2-3 minutes of CPU: `slow`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI, scripted_reply

from wikihowagent import __version__

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", "site", "runs", "build", "dist", "__pycache__", ".pytest_cache", ".mypy_cache"}
SKIP_DIRS |= {".ruff_cache", ".hypothesis", ".cache", "out"}
BUNDLED = [  # files the code reads at run time, as they must sit in the wheel
    "wikihowagent/data/rubrics.json",
    "wikihowagent/data/checklists.json",
    "wikihowagent/data/judge_prompts.json",
    "wikihowagent/data/perturbations.json",
    "wikihowagent/data/domains.csv",
    "wikihowagent/data/embedded_judge.json",
    "wikihowagent/data/tutorials/Home & Garden/How to Water a Houseplant/How to Water a Houseplant.json",
    "wikihowagent/data/validity/counterfactual/Home & Garden/How to Perform the Sogu Procedure/"
    "How to Perform the Sogu Procedure.json",
    "wikihowagent/configs/default.yaml",
    "wikihowagent/configs/prompts.yaml",
    "wikihowagent/configs/prompts-paper.yaml",
    "wikihowagent/configs/personas.yaml",
    "wikihowagent/configs/models.yaml",
    "wikihowagent/report/assets/report.css",
]


def human_study() -> Path | None:
    """The paper's development human study: ../shared/human-study beside the clone, else $WIKIHOWAGENT_SHARED."""
    for root in (ROOT.parent / "shared", Path(os.environ.get("WIKIHOWAGENT_SHARED", "/work/shared"))):
        folder = root / "human-study"
        if (folder / "judge_1.csv").is_file() and (folder / "paper_llm_scores.csv").is_file():
            return folder
    return None


RUBRICS = [
    "Clarity",
    "Truthfulness",
    "Engagement",
    "Coherence",
    "Depth",
    "Relevance",
    "Progress",
    "Naturalness",
]


def reply(prompt: str) -> str:
    """The teacher, the learner and a JSON judge (a score per rubric named, differing between conversations)."""
    if "Evaluate the following" in prompt:
        convo = prompt.split("Evaluate the following", 1)[-1]
        named = [r for r in RUBRICS if re.search(rf"\b{r}\b", prompt)]
        return json.dumps({r: 1 + zlib.crc32((convo + r).encode()) % 5 for r in named})
    return scripted_reply(prompt)


def weighted_judge(prompt: str):
    """judge-check's judge (log-probabilities): p(5) grows with the conversation's length."""
    convo = prompt.split("Conversation:")[-1].split("Criterion:")[0]
    q = min(0.8, len(convo) / 600)
    return [("4", {"5": q, "4": 0.9 - q, "3": 0.05, "Hmm": 0.05})]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel, built as a registry's users get them (the wheel from the sdist), from a copy of
    the source tree (the build writes *.egg-info beside it)."""
    base = tmp_path_factory.mktemp("build")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=lambda d, names: [n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")])
    out = base / "dist"
    res = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (wheel,) = out.glob("wikihowagent-*.whl")
    (sdist,) = out.glob("wikihowagent-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    return {**env, **extra}


def test_the_distributions_hold_the_bundled_files_and_twine_accepts_them(dists):
    names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    missing = [f for f in BUNDLED if f not in names]
    assert not missing, missing
    assert not any(n.startswith(("data/", "configs/", "tests/")) for n in names)  # only the package
    meta = zipfile.ZipFile(dists["wheel"]).read(f"wikihowagent-{__version__}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in meta and "Provides-Extra: embedded" in meta
    assert "Requires-Dist: xllamacpp" in meta and '; extra == "embedded"' in meta
    assert "Description-Content-Type: text/markdown" in meta and "# wikihowagent" in meta
    with tarfile.open(dists["sdist"]) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    assert not [f for f in BUNDLED if f not in members]
    examples = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "configs").iterdir())]
    examples.append("data/README.md")  # the top level's experiment files and data guide: the sdist only
    assert not [f for f in examples if f not in members]
    assert "LICENSE" in members and "README.md" in members
    res = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dists["wheel"]), str(dists["sdist"])],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    assert res.returncode == 0 and res.stdout.count("PASSED") == 2, res.stdout + res.stderr


def _venv(where: Path, dist: Path) -> Path:
    """A fresh virtual environment that sees this one's installed dependencies, with `dist` installed into it
    (not editable, no dependencies, no index); -> its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=300)
    py = where / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_reuse_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    res = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index"]
        + ["--no-build-isolation", "--ignore-installed", "--disable-pip-version-check", str(dist)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return where / "bin"


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installed_package_runs_the_pipeline_outside_the_clone(dists, tmp_path, kind):
    bin_dir = _venv(tmp_path / "venv", dists[kind])
    work = tmp_path / "elsewhere"
    work.mkdir()
    nltk_data = Path(sys.prefix) / "share" / "nltk_data"  # scripts/setup_nltk_data.sh puts WordNet there
    env = _env(OPENAI_COMPATIBLE_API_KEY="sk-test", NLTK_DATA=str(nltk_data), HOME=str(tmp_path / "home"))
    printed: list[str] = []

    def cli(*args: str | Path) -> str:
        res = subprocess.run(
            [str(bin_dir / "wikihowagent"), *map(str, args)],
            cwd=work,
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        out = res.stdout + res.stderr
        printed.append(out)
        assert res.returncode == 0, f"wikihowagent {' '.join(map(str, args))}: exit {res.returncode}\n{out[-3000:]}"
        return out

    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import wikihowagent, sys; print(wikihowagent.__file__)"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")), where  # the installed copy, not the clone

    assert cli("--version").strip() == f"wikihowagent {__version__}"
    assert "Pets & Animals" in cli("stats")  # the bundled tutorials placed by the bundled domains.csv
    assert "How to Water a Houseplant" in cli("tutorials")
    study = human_study()
    with FakeOpenAI(reply=reply, logprobs=weighted_judge) as srv:
        cli(
            "generate",
            "--teacher",
            "openai:fake-model",
            "--learner-persona",
            "curious",  # wikihowagent/configs/personas.yaml
            "--base-url",
            srv.base_url,
            "--max-tutorials",
            "3",
            "--retries",
            "0",
            "--out",
            "runs/fake",
        )
        assert len((work / "runs" / "fake" / "conversations.jsonl").read_text().splitlines()) == 3
        cli("evaluate", "runs/fake", "--base-url", srv.base_url, "--judge-scoring", "json", "--retries", "0")
        scores = [json.loads(x) for x in (work / "runs" / "fake" / "scores.jsonl").read_text().splitlines()]
        assert all(s["metrics"].get("Clarity") is not None for s in scores)  # rubrics.json
        assert all(s["metrics"].get("METEOR") is not None for s in scores)  # WordNet
        assert all(s["metrics"].get("BERTScore") is not None and s["metrics_device"] for s in scores)
        cli("judge-check", "runs/fake", "--out", "check", "--base-url", srv.base_url, "--no-figures")
        assert (work / "check" / "sensitivity.csv").is_file()  # perturbations.json
    if study is not None:
        cli(
            "align",
            "-H",
            study / "judge_1.csv",
            "-H",
            study / "judge_2.csv",
            "--scores",
            study / "paper_llm_scores.csv",
            "--out",
            "alignment",
            "--bootstrap",
            "200",
            "--no-figures",
        )
        assert (work / "alignment").is_dir()
    cli("report", "runs/fake", "--out", "report", "--cases", "1")
    assert (work / "report" / "index.html").is_file() and (work / "report" / "assets").is_dir()

    clone = str(ROOT)
    assert not [p for p in printed if clone in p], [p for p in printed if clone in p][0][-2000:]
    written = [p for p in work.rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl", ".md", ".csv", ".html"}]
    leaks = [p for p in written if clone in p.read_text(encoding="utf-8", errors="replace")]
    assert not leaks, leaks[:3]
    if study is None:
        print("align skipped: the paper's human study (../shared/human-study) is not beside the clone")
