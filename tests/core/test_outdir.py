"""Output folders (wikihowagent/outdir.py): a folder replaced as a whole never loses a file its command did not
write, and every command that writes refuses an output path it cannot use in one line (exit 2)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import typer
from fake_servers import FakeOpenAI
from helpers import FIXTURE_RUN, one_line_error, run_copy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from wikihowagent import outdir
from wikihowagent.cli import app
from wikihowagent.console import HelpCommand
from wikihowagent.errors import OutputDirError
from wikihowagent.layout import OUTPUT_MANIFEST
from wikihowagent.outdir import StagedDir, check_writable, write_files_atomically

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import make_run, sheet_rows, write_sheet  # noqa: E402

WRITES = {"result.txt": "new", "figs/a.png": "png"}


def write_output(dest: Path, tool: str = "tool", inputs=(), holders=(), text: str = "new") -> list[Path]:
    with StagedDir(dest, tool, inputs=inputs, holders=holders) as staged:
        staged.write_text("result.txt", text)
        staged.write_text("figs/a.png", "png")
        return staged.commit()


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry below `root` (symlinks not followed): file -> its bytes, symlink -> its target, folder."""
    out: dict[str, tuple] = {}
    for top, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = Path(top) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", p.read_bytes())
    return out


# ------------------------------------------------------------------------------------------------------
# StagedDir over folder layouts

DESTS = ["absent", "empty", "previous", "old_version", "other_tool", "file", "dangling", "link_previous"]
FOLDERS = {"empty", "previous", "old_version", "link_previous"}  # a folder (the user may have put files in)
REPLACEABLE = {"absent", "empty", "previous", "link_previous"}  # what the tool replaces when nothing is added
FOREIGN = ["notes.txt", "figs/mine.png", "sub/deep/x.tex", "result.txt.bak", ".hidden", "LINK"]
INPUTS = ["apart", "file_input", "inside_dest", "dest_inside", "same", "link_to_dest"]
OVERLAPS = {"inside_dest", "dest_inside", "same", "link_to_dest"}
STALE = [".out.old", ".out.tmp-x", ".out.old-y", ".out.tmp", ".out"]


def build_layout(root: Path, dest_kind: str, foreign: list[str], inputs: list[str], stale: list[str]):
    """-> (dest, input paths, the inputs kept): the layout under root/work, a user folder root/user."""
    work, user = root / "work", root / "user"
    work.mkdir()
    user.mkdir()
    (user / "u.txt").write_text("the user's")
    dest = work / "out"
    if dest_kind == "empty":
        dest.mkdir()
    elif dest_kind == "previous":
        write_output(dest, text="old")
    elif dest_kind == "old_version":  # the tool's file names, but no manifest: nothing tells whose they are
        (dest / "figs").mkdir(parents=True)
        (dest / "result.txt").write_text("old")
        (dest / "figs" / "a.png").write_text("old png")
    elif dest_kind == "other_tool":
        write_output(dest, "other")
    elif dest_kind == "file":
        dest.write_text("a file of the user's")
    elif dest_kind == "dangling":
        dest.symlink_to(root / "nowhere")
    elif dest_kind == "link_previous":
        write_output(root / "elsewhere" / "site", text="old")
        dest.symlink_to(root / "elsewhere" / "site")
    if dest_kind in FOLDERS:
        for name in foreign:
            if name == "LINK":
                (dest / "link").symlink_to(user)  # never followed: u.txt is never removed
            else:
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                (dest / name).write_text("the user's")
    for name in stale:
        if name == ".out":
            (work / name).write_text("the user's")
        else:
            (work / name).mkdir()
            (work / name / "thesis.tex").write_text("the user's")
    kept, paths = [], []
    for kind in inputs:
        if kind == "inside_dest" and dest_kind not in FOLDERS:
            continue
        kept.append(kind)
        if kind == "apart":
            (root / "in").mkdir(exist_ok=True)
            (root / "in" / "data.txt").write_text("input")
            paths.append(root / "in")
        elif kind == "file_input":
            (root / "sheet.csv").write_text("input")
            paths.append(root / "sheet.csv")
        elif kind == "inside_dest":
            (dest / "in").mkdir(exist_ok=True)
            (dest / "in" / "data.txt").write_text("input")
            paths.append(dest / "in")
        elif kind == "dest_inside":
            paths.append(work)
        elif kind == "same":
            paths.append(dest)
        else:  # link_to_dest
            if not (root / "alias").is_symlink():
                (root / "alias").symlink_to(dest)
            paths.append(root / "alias")
    return dest, paths, kept


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example("link_previous", [], ["dest_inside"], [])  # --out a symlink inside an input, naming a folder elsewhere
@given(
    st.sampled_from(DESTS),
    st.lists(st.sampled_from(FOREIGN), unique=True, max_size=3),
    st.lists(st.sampled_from(INPUTS), unique=True, max_size=3),
    st.lists(st.sampled_from(STALE), unique=True, max_size=3),
)
def test_staged_folder_never_loses_a_file_it_did_not_write(dest_kind, foreign, inputs, stale):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dest, paths, kept = build_layout(root, dest_kind, foreign, inputs, stale)
        real = Path(os.path.realpath(dest))
        before = snapshot(root)
        expect_refused = (
            dest_kind not in REPLACEABLE
            or (dest_kind in FOLDERS and bool(foreign))
            or "inside_dest" in kept  # its files are the user's, and it is an input
            or bool(OVERLAPS & set(kept))
        )
        try:
            written = write_output(dest, inputs=paths)
        except OutputDirError as exc:
            assert expect_refused, exc
            assert "\n" not in str(exc)
            assert snapshot(root) == before  # nothing changed, nothing staged
            return
        assert not expect_refused
        after = snapshot(root)
        inside = real.relative_to(root).as_posix()
        outside = {k: v for k, v in before.items() if not (k == inside or k.startswith(inside + "/"))}
        assert {k: v for k, v in after.items() if not (k == inside or k.startswith(inside + "/"))} == outside
        assert sorted(p.relative_to(dest).as_posix() for p in written) == sorted(WRITES)
        assert sorted(snapshot(real)) == sorted([*WRITES, "figs", OUTPUT_MANIFEST])
        assert (dest / "result.txt").read_text() == "new"
        if dest_kind == "link_previous":
            assert dest.is_symlink()  # the folder it names was replaced, the link kept


# ------------------------------------------------------------------------------------------------------
# The manifest and the swap


def test_a_damaged_or_hostile_manifest_is_refused_and_nothing_is_removed(tmp_path):
    dest = tmp_path / "out"
    write_output(dest)
    manifest = dest / OUTPUT_MANIFEST
    (dest / "notes.txt").write_text("mine")
    for text in (
        "{not json",
        json.dumps({"format": 1, "tool": "tool", "files": ["../notes.txt"], "folders": []}),
        json.dumps({"format": 1, "tool": "tool", "files": ["/etc/passwd"], "folders": []}),
        json.dumps({"format": 1, "tool": "tool", "files": "result.txt", "folders": []}),
        json.dumps({"format": 9, "tool": "tool", "files": [], "folders": []}),
        "[" * 100_000,
    ):
        manifest.write_text(text)
        with pytest.raises(OutputDirError, match=f"{OUTPUT_MANIFEST} is damaged"):
            write_output(dest)
        assert (dest / "notes.txt").read_text() == "mine"
    # a manifest that lists the user's file by name (a folder of the same tool) is its word: but a symlinked
    # folder in place of a listed one is never followed
    write_output(tmp_path / "o2")
    shutil.rmtree(tmp_path / "o2" / "figs")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "a.png").write_text("the user's")
    (tmp_path / "o2" / "figs").symlink_to(tmp_path / "mine")
    with pytest.raises(OutputDirError, match=r"holds files tool did not write \(figs\)"):
        write_output(tmp_path / "o2")
    assert (tmp_path / "mine" / "a.png").read_text() == "the user's"


def test_an_entry_that_appears_while_computing_is_refused_or_kept(tmp_path, monkeypatch):
    dest = tmp_path / "out"
    write_output(dest, text="old")
    staged = StagedDir(dest, "tool")
    staged.write_text("result.txt", "new")
    (dest / "notes.txt").write_text("mine")  # after the first check
    with pytest.raises(OutputDirError, match=r"holds files tool did not write \(notes.txt\)"):
        with staged:
            staged.commit()
    assert (dest / "result.txt").read_text() == "old" and (dest / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # one that appears between the last check and the swap is not removed: it stays in the aside folder
    (dest / "notes.txt").unlink()
    staged = StagedDir(dest, "tool")
    staged.write_text("result.txt", "new")
    real_check = outdir.check_replaceable

    def check_then_a_user_writes(*args, **kwargs):
        real_check(*args, **kwargs)
        (dest / "notes.txt").write_text("mine")

    monkeypatch.setattr(outdir, "check_replaceable", check_then_a_user_writes)
    with staged:
        staged.commit()
    assert (dest / "result.txt").read_text() == "new" and not (dest / "notes.txt").exists()
    (aside,) = [p for p in tmp_path.iterdir() if p.name.startswith(".out.old-")]
    assert snapshot(aside) == {"out": ("dir",), "out/notes.txt": ("file", b"mine")}


def test_staged_folder_gets_the_usual_permissions_and_a_failed_swap_puts_the_old_one_back(tmp_path, monkeypatch):
    dest = tmp_path / "out"
    write_output(dest, text="old")
    mask = os.umask(0)
    os.umask(mask)
    assert dest.stat().st_mode & 0o777 == 0o777 & ~mask  # not mkdtemp's 0700
    real_rename, calls = os.rename, []

    def flaky(src, dst):
        calls.append(src)
        if len(calls) == 2:
            raise OSError("disk gone")
        return real_rename(src, dst)

    staged = StagedDir(dest, "tool")
    staged.write_text("result.txt", "new")
    monkeypatch.setattr(os, "rename", flaky)
    with pytest.raises(OSError, match="disk gone"), staged:
        staged.commit()
    monkeypatch.undo()
    assert (dest / "result.txt").read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_check_writable_names_the_path_and_why(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    (tmp_path / "d").mkdir()
    cases = [
        (tmp_path / "f", True, "exists and is not a directory"),
        (tmp_path / "f" / "sub", True, "cannot be made: " + str(tmp_path / "f") + " is not a directory"),
        (tmp_path / "link", True, "a symbolic link to nothing"),
        (tmp_path / "d", False, "is a directory (expected a file name)"),
    ]
    for path, folder, why in cases:
        with pytest.raises(OutputDirError) as err:
            check_writable(path, "--out", folder=folder)
        assert str(err.value) == f"--out {path}: {why}" or str(err.value).startswith(f"--out {path}: {why}")
    check_writable(tmp_path / "new" / "deeper")
    check_writable(tmp_path / "f", folder=False)


def test_several_files_all_or_nothing(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.png"
    a.write_text("old")

    def broken(path: Path) -> None:
        assert path.suffix == ".png" and path.parent == tmp_path  # the writer goes by the suffix
        path.write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_files_atomically({a: "new\r\n", b: broken})
    assert a.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]
    assert write_files_atomically({a: "new\r\n", b: lambda p: p.write_bytes(b"png")}) == [a, b]
    assert a.read_bytes() == b"new\r\n" and b.read_bytes() == b"png"


# ------------------------------------------------------------------------------------------------------
# Every command that writes: --out at an existing file, or at a folder this user cannot write


def _sweep_file(root: Path, out: Path, url: str) -> Path:
    path = root / "grid.yaml"
    path.write_text(
        "name: grid\nmax_tutorials: 1\n"
        f"out: {json.dumps(str(out))}\n"
        f"models:\n  a: {{spec: 'openai:fake-model', base_url: '{url}'}}\n"
        "grid:\n  teachers: [a]\n"
    )
    return path


def _judge(url: str) -> list[str]:
    return ["--evaluator", "openai:fake-model", "--base-url", url]


# each command with inputs it can use (tests/fixtures/alignment/builders.py: runs with scores, a matching sheet;
# the fake OpenAI-compatible server as every model), so that the output path is the one thing wrong
COMMANDS = {
    "evaluate": lambda r, out, url: ["evaluate", str(r / "run"), "--out", str(out), "--no-judge", "--no-figures"],
    "align": lambda r, out, url: ["align", "-H", str(r / "sheet.csv"), "--scores", str(r), "--out", str(out)],
    "report": lambda r, out, url: ["report", str(r / "run"), "--out", str(out)],
    "judge-check": lambda r, out, url: ["judge-check", str(r / "run"), "--out", str(out), *_judge(url)],
    "compare": lambda r, out, url: ["compare", str(r / "run"), str(r / "run2"), "--out", str(out), *_judge(url)],
    "stats": lambda r, out, url: ["stats", "--out", str(out), "--no-figures"],
    "annotate": lambda r, out, url: ["annotate", "export", str(r / "run"), "--out", str(out / "sheet.csv")],
    "sweep slurm": lambda r, out, url: ["sweep", "slurm", str(_sweep_file(r, r / "sweep", url)), "--out", str(out)],
    "sweep run": lambda r, out, url: ["sweep", "run", str(_sweep_file(r, out, url))],
    "chat": lambda r, out, url: [
        *("chat", "--model", "openai:fake-model", "--base-url", url, "--tutorial", "4f115a7f59dc20db"),
        *("--out", str(out)),
    ],
}


def _judge_logprobs(prompt: str):
    """A judge for compare (a verdict A or B) and judge-check (a score 1-5) with log-probabilities."""
    if "Conversation A:" in prompt:
        return [("A", {"A": 0.6, "B": 0.3})]
    return [("4", {"5": 0.3, "4": 0.5, "3": 0.1})]


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI(logprobs=_judge_logprobs) as srv:
        yield srv


def _inputs(root: Path) -> Path:
    tutorials = [f"t{i}" for i in range(6)]
    ids = make_run(root, "run", tutorials, teacher="qwen", learner="qwen")
    make_run(root, "run2", tutorials, teacher="gemma", learner="gemma", rng=np.random.default_rng(1))
    values = np.random.default_rng(2).integers(1, 6, (len(ids), 8)).astype(float)
    write_sheet(root / "sheet.csv", sheet_rows(list(ids.values()), values, run="run"))
    return root


@pytest.mark.parametrize("command", list(COMMANDS))
def test_out_at_an_existing_file_is_one_line(tmp_path, command, server):
    root = _inputs(tmp_path / "in")
    afile = tmp_path / "afile"
    afile.write_text("the user's")
    res = CliRunner().invoke(app, COMMANDS[command](root, afile, server.base_url), input="/quit\n")
    assert res.exit_code == 2, res.output
    one_line_error(res, str(afile), "not a directory")
    assert afile.read_text() == "the user's"


def _drop_write_permission() -> list[str] | None:
    """The prefix that runs a command without the power to write into a folder it may not write (root
    overrides permissions: its capabilities are dropped), [] for a user without it, None if neither works."""
    if os.geteuid() != 0:
        return []
    capsh = shutil.which("capsh")
    if capsh:
        return [capsh, "--drop=cap_dac_override,cap_dac_read_search", "--", "-c"]
    return None


@pytest.fixture(scope="module")
def unprivileged():
    prefix = _drop_write_permission()
    if prefix is None:
        pytest.skip("running as root and capsh is missing: root writes into any folder, so there is nothing to test")
    with tempfile.TemporaryDirectory() as tmp:
        ro = Path(tmp) / "ro"
        ro.mkdir(mode=0o555)
        probe = subprocess.run([*prefix, f"touch {shlex.quote(str(ro / 'x'))}"] if prefix else ["touch", ro / "x"])
        ro.chmod(0o755)
        if probe.returncode == 0:
            pytest.skip("the dropped capabilities still write into a read-only folder (a capsh without effect)")

    def run(args: list[str], **kw) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "wikihowagent", *args]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "COLUMNS": "200"}
        full = [*prefix, "exec " + shlex.join(cmd)] if prefix else cmd
        return subprocess.run(full, capture_output=True, text=True, env=env, timeout=300, **kw)

    return run


def assert_one_line(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert proc.returncode == 2, proc.stderr


@pytest.mark.parametrize("command", list(COMMANDS))
def test_out_at_a_folder_the_user_cannot_write_is_one_line(tmp_path, command, unprivileged, server):
    root = _inputs(tmp_path / "in")
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "kept.txt").write_text("the user's")
    ro.chmod(0o555)
    try:
        proc = unprivileged(COMMANDS[command](root, ro, server.base_url), input="/quit\n")
    finally:
        ro.chmod(0o755)
    assert_one_line(proc, str(ro), "not writable (permission denied)")
    assert sorted(p.name for p in ro.iterdir()) == ["kept.txt"]


def test_a_folder_met_later_that_cannot_be_written_is_one_line(tmp_path, unprivileged):
    """evaluate without --out writes into the run folder: read-only, it is one line and exit 2 (the net of every
    command, console.HelpCommand), not a PermissionError traceback."""
    run = run_copy(tmp_path, "run")
    run.chmod(0o555)
    try:
        proc = unprivileged(["evaluate", str(run), "--no-judge", "--no-figures", "--metrics", "Completion"])
    finally:
        run.chmod(0o755)
    assert_one_line(proc, str(run), "permission denied")
    assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in FIXTURE_RUN.iterdir())


def test_every_command_turns_an_unusable_path_into_one_line():
    """console.HelpCommand: an OSError saying that a path cannot be used -> one line, exit 2; any other
    (a full disk: cli.main's own line) passes through."""
    t = typer.Typer()

    @t.command(cls=HelpCommand)
    def write(code: int) -> None:
        raise OSError(code, os.strerror(code), "/some/out/file.csv")

    @t.command(cls=HelpCommand)
    def other() -> None:
        raise OutputDirError("--out x: exists and is not a directory")

    res = CliRunner().invoke(t, ["write", "13"])
    assert res.exit_code == 2
    assert one_line_error(res) == "error: /some/out/file.csv: permission denied"
    res = CliRunner().invoke(t, ["write", "30"])
    assert res.exit_code == 2 and "read-only file system" in one_line_error(res)
    res = CliRunner().invoke(t, ["write", "28"])
    assert isinstance(res.exception, OSError) and res.exception.errno == 28
    res = CliRunner().invoke(t, ["other"])
    assert res.exit_code == 2 and one_line_error(res) == "error: --out x: exists and is not a directory"
