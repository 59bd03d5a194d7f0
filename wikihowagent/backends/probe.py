"""A small JSON GET for the providers' reachability checks (stdlib only, short timeout)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

CHECK_TIMEOUT_S = 3.0


def get_json(url: str, headers: dict[str, str] | None = None, timeout: float = CHECK_TIMEOUT_S) -> Any:
    req = urllib.request.Request(url, headers={"Accept": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - user-configured URL
        return json.loads(resp.read().decode("utf-8") or "null")


def reason(exc: BaseException) -> str:
    """A short one-line reason for a failed request."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    r = getattr(exc, "reason", None) or exc
    return " ".join(str(r).split()) or type(exc).__name__
