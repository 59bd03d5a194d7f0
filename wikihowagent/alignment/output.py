"""Writing outputs all-or-nothing: a staged output directory swapped into place, or several single files."""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .problems import AlignInputError


class OutputDirError(AlignInputError):
    """`--out` exists but holds files that are not ours: it is not replaced."""


def _is_owned(rel: str, owned: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pat) for pat in owned)


def foreign_entries(dest: Path, owned: Iterable[str]) -> list[str]:
    """Entries of an existing output directory that this program did not write (relative paths, `/`-separated;
    `owned` holds names or glob patterns such as `figures/*.png`). A sub-directory counts as ours when
    everything in it is."""
    owned = tuple(owned)
    dest = Path(dest)
    if not dest.is_dir():
        return []
    out: list[str] = []
    for p in sorted(dest.rglob("*")):
        rel = p.relative_to(dest).as_posix()
        if p.is_dir() and not p.is_symlink():
            continue  # judged by its contents
        if not _is_owned(rel, owned):
            out.append(rel)
    return out


class StagedOutput:
    """Write a directory of outputs so that it appears complete or not at all.

    The destination directory is *ours*: it is replaced as a whole. Files are written into a temporary
    sibling directory (same filesystem); `commit()` then swaps the directories: the old destination (if
    any) is renamed aside, the new one renamed into place, and the old one removed. A reader therefore sees
    the old set or the new set, never a mix (if the process dies between the two renames, the destination
    is briefly absent and the previous results are left in the `.<name>.old-*` sibling). Any exception
    before `commit()` leaves the destination untouched (use as a context manager).

    To avoid deleting somebody's files, an existing destination that holds anything not matching `owned`
    (names or glob patterns) is refused with `OutputDirError` before anything is written."""

    def __init__(self, dest: Path, owned: Iterable[str] = ()):
        self.dest = Path(dest)
        self.owned = tuple(owned)
        if self.dest.exists() and not self.dest.is_dir():
            raise OutputDirError(f"{self.dest}: exists and is not a directory")
        foreign = foreign_entries(self.dest, self.owned)
        if foreign:
            listed = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise OutputDirError(
                f"{self.dest}: holds files this command did not write ({listed}); it would be "
                "replaced as a whole, so choose another output directory or empty it"
            )
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        # a private box beside the destination; the staged directory inside it is made by a plain mkdir, so
        # it gets the usual permissions (mkdtemp's would be 0700)
        self._box = Path(tempfile.mkdtemp(prefix=f".{self.dest.name}.tmp-", dir=self.dest.parent))
        self.tmp = self._box / self.dest.name
        self.tmp.mkdir()
        self.written: list[str] = []
        self.committed = False

    def path(self, rel: str) -> Path:
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel not in self.written:
            self.written.append(rel)
        return p

    def write_text(self, rel: str, text: str) -> None:
        self.path(rel).write_text(text, encoding="utf-8")

    def commit(self) -> list[Path]:
        if not self.dest.exists():
            os.rename(self.tmp, self.dest)
        else:
            aside = Path(tempfile.mkdtemp(prefix=f".{self.dest.name}.old-", dir=self.dest.parent))
            os.rename(self.dest, aside / self.dest.name)
            try:
                os.rename(self.tmp, self.dest)
            except BaseException:
                os.rename(aside / self.dest.name, self.dest)  # put the previous results back
                aside.rmdir()
                raise
            shutil.rmtree(aside, ignore_errors=True)
        self.committed = True
        shutil.rmtree(self._box, ignore_errors=True)
        return [self.dest / rel for rel in self.written]

    def abort(self) -> None:
        shutil.rmtree(self._box, ignore_errors=True)

    def __enter__(self) -> StagedOutput:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.committed:
            self.abort()


def write_files_atomically(files: dict[Path, str]) -> None:
    """Write several single files (e.g. a sheet and its companion) all-or-nothing: each goes to a temp
    name beside its target, and only when all are written are they renamed into place."""
    staged: list[tuple[Path, Path]] = []
    try:
        for target, text in files.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            staged.append((Path(name), target))
        for tmp, target in staged:
            os.replace(tmp, target)
        staged = []
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
