"""Output folders: checked before any work, written all or nothing, and never a file lost that the tool did not write.

Every command that writes checks its output path first with `check_writable`: an existing path that is not a
folder (or, for a file output, a folder), or a folder this user cannot write to (also the nearest existing parent of
one still to be made), is refused in one line (`OutputDirError`) before any work. `os_error_line` is the one line
for such an OSError met later (errors.py); `console.HelpCommand` prints either and exits 2 for every command.

A folder that a command replaces as a whole (`align --out`, `report --out`) is written through a `StagedDir`:

- It may not be one of the command's inputs, hold one or lie inside one (as written, and with symlinks resolved). `holders` are input
  folders that may hold it but not be it or lie inside it (a run folder with its own alignment folder). It may not
  be the current folder or one above it.
- It is replaced only when everything in it was written by the same command. The manifest (`OUTPUT_MANIFEST`, a
  hidden JSON file the command writes into every such folder) lists the files and folders it wrote; nothing else
  tells: a folder without a manifest that holds anything (e.g. one written by a version that kept none) is
  refused, and so is a damaged manifest or one of another command. An empty folder has nothing to lose.
- The new folder is written into a fresh private folder beside the destination (`tempfile.mkdtemp`, so a stale or
  foreign `.<name>.*` folder is never reused or removed). It is swapped in by two renames through another fresh
  folder. Of the previous folder, only the entries its manifest lists are removed. An entry that appeared after
  the check stays, in the `.<name>.old-*` folder.
- An exception before `commit()` removes only the private folder.

`write_files_atomically` writes several single files (a sheet and its companion page; the graph's four files).
Each goes to a fresh temporary name beside its target, and all are renamed into place once all are written.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

from wikihowagent.errors import OutputDirError, os_error_line
from wikihowagent.layout import OUTPUT_MANIFEST

MANIFEST_FORMAT = 1
MANIFEST_MAX_BYTES = 16 * 1024 * 1024  # a report of a million conversations lists about 100 kB
LISTED = 5  # foreign entries named in the refusal


# ------------------------------------------------------------------------------------------------------
# Any output path


def _existing_ancestor(path: Path) -> Path:
    p = Path(os.path.abspath(path))
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def _unwritable(folder: Path) -> str | None:
    """Why this user cannot make entries in `folder`, or None."""
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return "permission denied"


def check_writable(path: Path, option: str = "--out", folder: bool = True) -> None:
    """`path` can be written: a folder (`folder`) or a file, existing or to be made (with its parents). Else
    OutputDirError in one line naming `option` and the path."""
    path = Path(path)
    what = f"{option} {path}"
    if path.is_symlink() and not path.exists():
        raise OutputDirError(f"{what}: a symbolic link to nothing ({os.readlink(path)})")
    if path.exists():
        if folder and not path.is_dir():
            raise OutputDirError(f"{what}: exists and is not a directory")
        if not folder and path.is_dir():
            raise OutputDirError(f"{what}: is a directory (expected a file name)")
        target = path if folder else path.parent
        why = _unwritable(target)
        if why:
            raise OutputDirError(
                f"{what}: not writable ({why})" if target == path else f"{what}: {target} is not writable ({why})"
            )
        return
    base = _existing_ancestor(path)
    if not base.is_dir():
        raise OutputDirError(f"{what}: cannot be made: {base} is not a directory")
    why = _unwritable(base)
    if why:
        raise OutputDirError(f"{what}: cannot be made: {base} is not writable ({why})")


def check_apart(out: Path, inputs: Iterable[Path], holders: Iterable[Path] = (), option: str = "--out") -> None:
    """`out` (replaced as a whole) is none of `inputs` and neither holds nor lies inside one; it may lie inside
    one of `holders` but not be it or hold it. Compared as written (absolute) and with symlinks resolved, so that
    neither a symlinked --out nor a symlinked input slips through. Else OutputDirError."""
    for p, may_hold in [*((p, False) for p in inputs), *((p, True) for p in holders)]:
        how = _overlap(out, Path(p), may_hold)
        if how:
            raise OutputDirError(
                f"{option} {out}: {how} {p}; it is replaced as a whole: choose a folder apart from the inputs"
            )


def _overlap(out: Path, other: Path, may_hold: bool) -> str | None:
    for a, b in ((_absolute(out), _absolute(other)), (_real(out), _real(other))):
        if a == b:
            return "is the input"
        if b.is_relative_to(a):
            return "holds the input"
        if a.is_relative_to(b) and not may_hold:
            return "lies inside the input"
    return None


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def _real(path: Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


# ------------------------------------------------------------------------------------------------------
# Folders replaced as a whole


def _entries(root: Path) -> tuple[list[str], list[str]]:
    """(files, folders) below `root` as sorted `/`-separated relative paths; a symlink (also to a folder) and
    anything else that is not a folder counts as a file and is never followed."""
    files: list[str] = []
    folders: list[str] = []
    todo = [""]
    while todo:
        rel = todo.pop()
        with os.scandir(root / rel if rel else root) as it:
            for entry in it:
                name = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    folders.append(name)
                    todo.append(name)
                else:
                    files.append(name)
    return sorted(files), sorted(folders)


def _safe_rel(name: object) -> bool:
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        return False
    p = PurePosixPath(name)
    return not p.is_absolute() and ".." not in p.parts and "." not in name.split("/") and p.as_posix() == name


def read_manifest(folder: Path) -> tuple[str, set[str], set[str]] | None:
    """(tool, files, folders) of `folder`'s manifest; None when it has none. OutputDirError when it is damaged."""
    path = folder / OUTPUT_MANIFEST
    if not os.path.lexists(path):
        return None
    try:
        if path.is_symlink() or not path.is_file():
            raise ValueError("not a plain file")
        if path.stat().st_size > MANIFEST_MAX_BYTES:
            raise ValueError(f"larger than {MANIFEST_MAX_BYTES // 2**20} MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
        tool, files, folders = data["tool"], data["files"], data["folders"]
        if data.get("format") != MANIFEST_FORMAT or not isinstance(tool, str):
            raise ValueError("unknown format")
        if not isinstance(files, list) or not isinstance(folders, list):
            raise ValueError("files and folders must be lists")
        if not all(map(_safe_rel, files)) or not all(map(_safe_rel, folders)):
            raise ValueError("a listed name is not a plain relative path")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise OutputDirError(
            f"{folder}: its file list {OUTPUT_MANIFEST} is damaged ({exc}); choose another folder or empty it"
        ) from None
    return tool, set(files), set(folders)


def _owned(folder: Path, tool: str) -> Callable[[str, bool], bool]:
    """Whether an entry (relative path, is it a folder) of an existing output folder was written by `tool`, as
    the folder's manifest says: without one (or with another command's), nothing was."""
    manifest = read_manifest(folder)
    if manifest is None or manifest[0] != tool:
        return lambda rel, is_folder: False
    _, files, folders = manifest
    return lambda rel, is_folder: rel in (folders if is_folder else files) or (not is_folder and rel == OUTPUT_MANIFEST)


def foreign_entries(folder: Path, tool: str) -> list[str]:
    """Entries of an existing output folder that `tool` did not write (files first, then folders with a
    trailing `/`); [] for a folder that does not exist. OutputDirError for a damaged manifest or an unreadable
    sub-folder."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    owned = _owned(folder, tool)
    try:
        files, folders = _entries(folder)
    except OSError as exc:
        raise OutputDirError(f"{folder}: cannot be read through ({os_error_line(exc) or exc})") from None
    foreign = [f for f in files if not owned(f, False)]
    unlisted = [d for d in folders if not owned(d, True)]
    # a folder is named only when nothing named lies below it (an empty folder of the user's)
    return foreign + [f"{d}/" for d in unlisted if not any(x.startswith(f"{d}/") for x in foreign + unlisted)]


def check_replaceable(
    out: Path, tool: str, inputs: Iterable[Path] = (), holders: Iterable[Path] = (), option: str = "--out"
) -> None:
    """Every rule for a folder replaced as a whole (see the module's docstring), checked before any work;
    OutputDirError naming `option`."""
    out = Path(out)
    real = _real(out)
    if real == real.parent or Path.cwd().resolve().is_relative_to(real):
        raise OutputDirError(
            f"{option} {out}: the current directory (or one above it) cannot be the output folder, which is "
            f"replaced as a whole; name a new one, e.g. {option} {tool}-out"
        )
    check_writable(out, option)
    if out.exists():
        why = _unwritable(real.parent)
        if why:
            raise OutputDirError(f"{option} {out}: {real.parent} is not writable ({why}); it is replaced as a whole")
    check_apart(out, inputs, holders, option)
    foreign = foreign_entries(real, tool)
    if foreign:
        listed = ", ".join(foreign[:LISTED]) + (", ..." if len(foreign) > LISTED else "")
        kept_none = not os.path.lexists(real / OUTPUT_MANIFEST)
        raise OutputDirError(
            f"{option} {out} holds files {tool} did not write ({listed}); it would be replaced as a whole: "
            "choose another directory or empty it"
            + (
                f" (no {OUTPUT_MANIFEST} in it: an output of a version that kept none is not replaced either)"
                if kept_none
                else ""
            )
        )


class StagedDir:
    """A folder written so that it appears complete or not at all, replacing the previous one only when that
    was the same command's (see the module's docstring). Write into `tmp` (or `path(rel)`, `write_text`), then
    `commit()`; use as a context manager, so that an exception leaves the destination as it was."""

    def __init__(
        self,
        dest: Path,
        tool: str,
        inputs: Iterable[Path] = (),
        holders: Iterable[Path] = (),
        option: str = "--out",
    ) -> None:
        self.dest, self.tool, self.option = Path(dest), tool, option
        check_replaceable(self.dest, tool, inputs, holders, option)
        self._real = _real(self.dest)  # a symlink to a folder: the folder it names is replaced
        self._real.parent.mkdir(parents=True, exist_ok=True)
        # a private box beside the destination; the staged folder inside it is made by a plain mkdir, so it gets
        # the usual permissions (mkdtemp's are 0700)
        self._box = Path(tempfile.mkdtemp(prefix=f".{self._real.name}.tmp-", dir=self._real.parent))
        self.tmp = self._box / self._real.name
        self.tmp.mkdir()
        self.committed = False

    def path(self, rel: str) -> Path:
        """The staged file `rel` (a `/`-separated relative path), its folder made."""
        if not _safe_rel(rel):
            raise ValueError(f"not a relative path inside the output folder: {rel!r}")
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write_text(self, rel: str, text: str) -> None:
        self.path(rel).write_text(text, encoding="utf-8")

    def commit(self) -> list[Path]:
        """Write the manifest and swap the staged folder into place; -> the files written (not the manifest).
        OutputDirError (nothing changed) if the destination gained foreign entries since the check."""
        files, folders = _entries(self.tmp)
        files = [f for f in files if f != OUTPUT_MANIFEST]
        manifest = {"format": MANIFEST_FORMAT, "tool": self.tool, "files": files, "folders": folders}
        (self.tmp / OUTPUT_MANIFEST).write_text(json.dumps(manifest, indent=0) + "\n", encoding="utf-8")
        check_replaceable(self.dest, self.tool, option=self.option)  # it may have changed while computing
        real = self._real
        if not os.path.lexists(real):
            os.rename(self.tmp, real)
        else:
            owned = _owned(real, self.tool)
            aside = Path(tempfile.mkdtemp(prefix=f".{real.name}.old-", dir=real.parent))
            os.rename(real, aside / real.name)
            try:
                os.rename(self.tmp, real)
            except BaseException:
                os.rename(aside / real.name, real)  # the previous folder put back
                aside.rmdir()
                raise
            _remove_owned(aside / real.name, owned)
            _rmdir_quietly(aside)
        self.committed = True
        shutil.rmtree(self._box, ignore_errors=True)
        return [self.dest / f for f in files]

    def abort(self) -> None:
        shutil.rmtree(self._box, ignore_errors=True)

    def __enter__(self) -> StagedDir:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self.committed:
            self.abort()


def _remove_owned(folder: Path, owned: Callable[[str, bool], bool]) -> None:
    """Remove from a previous output folder (renamed aside) what it says its command wrote, never following a
    symlink; what else it holds stays, and with it the folder."""
    files, folders = _entries(folder)
    for rel in files:
        if owned(rel, False):
            (folder / rel).unlink(missing_ok=True)
    for rel in sorted(folders, key=lambda r: r.count("/"), reverse=True):
        if owned(rel, True):
            _rmdir_quietly(folder / rel)
    _rmdir_quietly(folder)


def _rmdir_quietly(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty: it holds what this run did not write
        pass


# ------------------------------------------------------------------------------------------------------
# Several single files


def write_files_atomically(files: Mapping[Path, str | Callable[[Path], None]]) -> list[Path]:
    """Write several files all or nothing: each to a fresh temporary name beside its target (same suffix, so a
    writer that goes by it, e.g. matplotlib, writes the right format), and, once all are written, each renamed
    into place. A value is the file's text (UTF-8, line ends as given) or a function writing the file at the
    path it is given. -> the targets."""
    staged: list[tuple[Path, Path]] = []
    try:
        for target, content in files.items():
            target = Path(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent)
            staged.append((Path(name), target))
            if isinstance(content, str):
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                    fh.write(content)
            else:
                os.close(fd)
                content(Path(name))
        for tmp, target in staged:
            os.replace(tmp, target)
        staged = []
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
    return [Path(t) for t in files]
