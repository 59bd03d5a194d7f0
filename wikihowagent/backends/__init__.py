"""Chat-model backends: `local` (embedded llama.cpp), `ollama:<tag>`, `openai:<model>`, and aliases.

    from wikihowagent.backends import make_chat_model, BackendError, resolve_spec, check_backend, shutdown_local_servers

Importing this package has no side effects: no server starts and no model file is touched until
`make_chat_model('local', ...)` (or `ensure_local_model()`) is called.
"""

from __future__ import annotations

from .factory import (
    BackendError,
    ResolvedSpec,
    check_backend,
    load_aliases,
    make_chat_model,
    normalize_ollama_host,
    resolve_spec,
)


def shutdown_local_servers() -> None:
    """Stop the embedded llama.cpp server(s) of this process, if any (also runs at exit)."""
    import sys

    mod = sys.modules.get("wikihowagent.backends.local")
    if mod is not None:  # never started one if the module was never imported
        mod.shutdown_local_servers()


def ensure_local_model():  # -> pathlib.Path
    """Assemble and verify the embedded model's GGUF (once); returns its path."""
    from .model_files import ensure_local_model as _ensure

    return _ensure()


__all__ = [
    "BackendError",
    "ResolvedSpec",
    "check_backend",
    "ensure_local_model",
    "load_aliases",
    "make_chat_model",
    "normalize_ollama_host",
    "resolve_spec",
    "shutdown_local_servers",
]
