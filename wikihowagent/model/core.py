"""The embedded model's GGUF in the user cache, for `wikihowagent model`: the cache folder from the environment or
the config (`local.model_dir`), then backends/model_files.py's assembly, check and removal."""

from __future__ import annotations

from pathlib import Path

from wikihowagent.backends import model_files
from wikihowagent.config import load_config


def configured_dir(config: Path | None) -> str:
    """The config's `local.model_dir` ("" = not set; the environment variables win over it in model_files)."""
    return load_config(config).local.model_dir


def prepare(config: Path | None, verify: bool = False) -> Path:
    """Assemble (once) and verify the GGUF, with a progress bar; -> its path. BackendError: one line."""
    return model_files.ensure_with_bar(configured=configured_dir(config), force_verify=verify)


def where(config: Path | None) -> tuple[Path, bool, bool]:
    """-> (the GGUF's path, whether it is there and verified, whether its folder can take it)."""
    path = model_files.model_path(configured_dir(config))
    return path, model_files.is_ready(path), model_files.is_writable(path.parent)


def remove(config: Path | None) -> tuple[Path, list[Path], list[Path]]:
    """Delete the GGUF, its stamp and partial files; -> (the cache folder, the paths removed, the paths left:
    a folder under a partial file's name, which no assembly writes)."""
    configured = configured_dir(config)
    return (model_files.models_dir(configured), *model_files.remove_local_model(configured))
