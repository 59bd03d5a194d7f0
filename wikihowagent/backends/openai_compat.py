"""The `openai:<model>` provider: `langchain-openai` against OpenAI (OPENAI_API_KEY) or any
OpenAI-compatible server (OPENAI_BASE_URL / --base-url / an alias's base_url), e.g. vLLM.

Transport: async chat completions go through `LeanChatOpenAI` (lean_openai.py: ChatOpenAI's payload and
result, posted by aiohttp instead of the openai SDK + httpx, several times less CPU per request; it honours
HTTP(S)_PROXY / NO_PROXY), unless WIKIHOWAGENT_OPENAI_TRANSPORT=sdk or the proxy that applies is one aiohttp
cannot use (ALL_PROXY only, a SOCKS or https:// proxy URL: the SDK's httpx handles those as before).
Everything else (sync calls, structured output, streaming) is ChatOpenAI's.

Retries: ChatOpenAI's `max_retries` (the openai client's exponential backoff with jitter on connection
errors, 408/409/429/5xx; the lean transport follows the same rules). Keys are read from the environment only when a model is built or checked; they
never enter ResolvedSpec, error messages or logs.
"""

from __future__ import annotations

import os
import urllib.error
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import FALLBACK_HINT, BackendError
from .probe import get_json, reason
from .spec import AliasFile, ResolvedSpec, Target, unknown_spec

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.language_models import BaseChatModel

    from wikihowagent.config import LocalModelSettings, ModelSettings

COMPAT_KEY_ENV = "OPENAI_COMPATIBLE_API_KEY"
TRANSPORT_ENV = "WIKIHOWAGENT_OPENAI_TRANSPORT"  # lean (default) | sdk
OPENAI_API_BASE = "https://api.openai.com/v1"


def openai_base(explicit: str | None) -> str | None:
    base = (explicit or os.environ.get("OPENAI_BASE_URL") or "").strip().rstrip("/")
    return base or None


def _is_openai_api(base: str | None) -> bool:
    return base is None or (urlsplit(base).hostname or "").endswith("api.openai.com")


def key_env(base: str | None) -> str:
    """Which variable holds the key for `base`.

    OPENAI_API_KEY goes only to OpenAI itself or to the server named by OPENAI_BASE_URL (the environment
    pairs the two, as the openai SDK does). Any other server (--base-url, an alias's base_url) gets
    OPENAI_COMPATIBLE_API_KEY, so a real OpenAI key exported for other work never reaches a third host.
    """
    env_base = openai_base(None)
    return "OPENAI_API_KEY" if _is_openai_api(base) or (env_base is not None and base == env_base) else COMPAT_KEY_ENV


def resolve(given: str, rest: str, base_url: str | None, af: AliasFile) -> Target:
    if not rest:
        raise unknown_spec(given, af, "openai needs a model, e.g. openai:gpt-4")
    return Target(model=rest, base_url=openai_base(base_url))


def _base(resolved: ResolvedSpec, base_url: str | None) -> str | None:
    return openai_base(base_url) if base_url else resolved.base_url


def _missing_key(what: str) -> BackendError:
    return BackendError(
        f"OPENAI_API_KEY is not set ({what}). Export it, point OPENAI_BASE_URL at an OpenAI-compatible "
        f"server, {FALLBACK_HINT}."
    )


def judge_scoring(resolved: ResolvedSpec) -> str | None:
    """No measured default `--judge-scoring` for these models: the backend's abilities decide."""
    return None


def check(resolved: ResolvedSpec, base_url: str | None, need: str) -> None:
    base = _base(resolved, base_url)
    env = key_env(base)
    key = os.environ.get(env, "").strip()
    if _is_openai_api(base):
        if not key:
            raise _missing_key(need)
        return  # no network probe of api.openai.com
    assert base is not None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        listing = get_json(f"{base}/models", headers)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise BackendError(
                f"The server at {base} rejected the API key (HTTP {exc.code}; {need}): check {env}."
            ) from None
        raise BackendError(
            f"The OpenAI-compatible server at {base} answered HTTP {exc.code} on /models ({need})."
        ) from None
    except (OSError, ValueError) as exc:
        raise BackendError(
            f"The OpenAI-compatible server is not reachable at {base} ({need}; {reason(exc)}). Start it, "
            f"fix OPENAI_BASE_URL / the base URL, {FALLBACK_HINT}."
        ) from None
    ids = (
        [str(m.get("id")) for m in listing.get("data", []) if isinstance(m, dict)] if isinstance(listing, dict) else []
    )
    if ids and resolved.model not in ids:
        shown = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
        raise BackendError(
            f"The server at {base} does not serve model '{resolved.model}' ({need}); it serves: {shown}."
        )


def lean_transport(base: str | None) -> bool:
    """True if chat completions to `base` may use the lean transport: not disabled by TRANSPORT_ENV, and no
    proxy from the environment applies that aiohttp cannot use (it takes an http:// proxy from HTTP(S)_PROXY,
    as lean_openai does; ALL_PROXY alone, SOCKS or https:// proxies stay with the SDK's httpx)."""
    from .private_api import private_api_ok

    if not private_api_ok():  # the lean transport reuses ChatOpenAI's private API: only on the tested versions
        return False
    if os.environ.get(TRANSPORT_ENV, "lean").strip().lower() == "sdk":
        return False
    import urllib.request

    parts = urlsplit(base or OPENAI_API_BASE)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return True
    return bool(proxies.get(parts.scheme)) and urlsplit(proxies[parts.scheme]).scheme == "http"


def make(
    resolved: ResolvedSpec,
    settings: ModelSettings,
    local: LocalModelSettings,
    base_url: str | None,
    keepalive: int | None = None,
) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    base = _base(resolved, base_url)
    key = os.environ.get(key_env(base), "").strip()
    if not key:
        if _is_openai_api(base):
            raise _missing_key(f"needed for '{resolved.display}'")
        key = "EMPTY"  # vLLM & co. accept any key unless started with --api-key
    kwargs: dict[str, Any] = {}
    if base is not None:
        kwargs["base_url"] = base
    cls = ChatOpenAI
    if lean_transport(base):
        from .lean_openai import LeanChatOpenAI as cls  # one aiohttp session per event loop
    elif keepalive:  # the openai client keeps 100 idle connections: above that, every request reconnects
        import openai
        from openai._constants import DEFAULT_CONNECTION_LIMITS

        limits = type(DEFAULT_CONNECTION_LIMITS)(
            max_connections=max(keepalive, 1000), max_keepalive_connections=keepalive
        )
        kwargs["http_async_client"] = openai.DefaultAsyncHttpxClient(
            base_url=base or OPENAI_API_BASE, timeout=settings.timeout_s, limits=limits
        )
    return cls(
        model=resolved.model,
        api_key=key,
        temperature=settings.temperature,
        seed=settings.seed,
        max_tokens=settings.max_tokens,
        timeout=settings.timeout_s,
        max_retries=settings.max_retries,
        stream_usage=True,
        **kwargs,
    )
