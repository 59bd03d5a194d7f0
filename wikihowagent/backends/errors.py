"""The backends' error type: one line a user can act on."""

from __future__ import annotations

from wikihowagent.errors import WikihowagentError

# Appended to "cannot reach / no key" errors of the remote providers.
FALLBACK_HINT = "or use --teacher local"


class BackendError(WikihowagentError, RuntimeError):
    """A backend problem the user can fix; str(exc) is one line, fit to print as is."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class ModelCacheError(BackendError):
    """The embedded model's cache folder cannot be used as set (a file, not a folder; not writable): bad input
    the user fixes by naming another folder, so the `model` commands exit 2 on it."""
