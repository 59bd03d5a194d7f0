"""Chat-model backends: `local` (embedded llama.cpp), `ollama:<tag>`, `openai:<model>`, and aliases.

    from wikihowagent.backends import make_chat_model, BackendError, resolve_spec, check_backend, shutdown_local_servers
    from wikihowagent.backends import capabilities   # what a provider or a chat model can do (Capabilities)

Layout: errors.py (BackendError), spec.py (ResolvedSpec, Capabilities, the alias file), registry.py (provider
name -> module and capabilities; resolve/check/make dispatch; `capabilities`), one module per provider (local.py + model_files.py, ollama.py,
openai_compat.py), __main__.py (`python -m wikihowagent.backends --prepare | --smoke`).

Importing this package has no side effects: no server starts and no model file is touched until
`make_chat_model('local', ...)` (or `ensure_local_model()`) is called.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import BackendError
from .registry import capabilities, check_backend, is_embedded, make_chat_model, preferred_judge_scoring, resolve_spec
from .spec import Capabilities, ResolvedSpec, load_aliases


def normalize_ollama_host(value: str | None = None) -> str:
    """OLLAMA_HOST in any of its forms -> http(s)://host:port (see backends/ollama.py)."""
    from .ollama import normalize_ollama_host as _normalize

    return _normalize(value)


def shutdown_local_servers() -> None:
    """Stop the embedded llama.cpp server(s) of this process, if any (also runs at exit)."""
    mod = sys.modules.get(f"{__name__}.local")
    if mod is not None:  # never started one if the module was never imported
        mod.shutdown_local_servers()


def ensure_local_model() -> Path:
    """Assemble and verify the embedded model's GGUF (once); returns its path."""
    from .model_files import ensure_local_model as _ensure

    return _ensure()


__all__ = [
    "BackendError",
    "Capabilities",
    "ResolvedSpec",
    "capabilities",
    "check_backend",
    "ensure_local_model",
    "is_embedded",
    "load_aliases",
    "make_chat_model",
    "normalize_ollama_host",
    "preferred_judge_scoring",
    "resolve_spec",
    "shutdown_local_servers",
]
