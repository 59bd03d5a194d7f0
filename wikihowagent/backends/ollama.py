"""The `ollama:<tag>` provider: `langchain-ollama` against OLLAMA_HOST (default http://127.0.0.1:11434).

ChatOllama has no retry setting, so `make` returns a ChatOllama subclass whose `_generate`/`_agenerate`
retry transport errors and 429/5xx with exponential backoff + jitter (still a plain BaseChatModel).
"""

from __future__ import annotations

import os
import random
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import FALLBACK_HINT, BackendError
from .probe import get_json, reason
from .spec import AliasFile, ResolvedSpec, Target, unknown_spec

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import ChatResult

    from wikihowagent.config import LocalModelSettings, ModelSettings

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


def normalize_ollama_host(value: str | None = None) -> str:
    """OLLAMA_HOST in any of its forms (host, host:port, :port, URL) -> http(s)://host:port."""
    raw = (value if value is not None else os.environ.get("OLLAMA_HOST", "")).strip()
    if not raw:
        return DEFAULT_OLLAMA_HOST
    if "://" not in raw:
        raw = "http://" + raw
    u = urlsplit(raw)
    scheme = u.scheme or "http"
    host = u.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::"):  # a bind-all address: connect locally
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    try:
        port = u.port
    except ValueError:
        raise BackendError(
            f"OLLAMA_HOST={value or os.environ.get('OLLAMA_HOST')!r} is not a valid host[:port] or URL"
        ) from None
    port = port or (443 if scheme == "https" else 11434)
    return f"{scheme}://{host}:{port}{u.path.rstrip('/')}"


def resolve(given: str, rest: str, base_url: str | None, af: AliasFile) -> Target:
    if not rest:
        raise unknown_spec(given, af, "ollama needs a tag, e.g. ollama:openchat:7b")
    return Target(model=rest, base_url=normalize_ollama_host(base_url) if base_url else normalize_ollama_host())


def _host(resolved: ResolvedSpec, base_url: str | None) -> str:
    return normalize_ollama_host(base_url) if base_url else (resolved.base_url or normalize_ollama_host())


def _has(tags: Any, tag: str) -> bool:
    want = {tag, tag if ":" in tag else f"{tag}:latest"}
    models = tags.get("models", []) if isinstance(tags, dict) else []
    for m in models:
        for key in ("name", "model"):
            name = str(m.get(key, "")) if isinstance(m, dict) else ""
            if name in want or (":" not in tag and name.split(":")[0] == tag):
                return True
    return False


def judge_scoring(resolved: ResolvedSpec) -> str | None:
    """No measured default `--judge-scoring` for these models: the backend's abilities decide."""
    return None


def check(resolved: ResolvedSpec, base_url: str | None, need: str) -> None:
    host, tag = _host(resolved, base_url), resolved.model
    try:
        tags = get_json(f"{host}/api/tags")
    except (OSError, ValueError) as exc:
        raise BackendError(
            f"Ollama is not reachable at {host} ({need}; {reason(exc)}). Start it with 'ollama serve' "
            f"and 'ollama pull {tag}', set OLLAMA_HOST, {FALLBACK_HINT}."
        ) from None
    if not _has(tags, tag):
        raise BackendError(f"Ollama at {host} does not have model '{tag}' ({need}): run 'ollama pull {tag}'.")


def _backoff(attempt: int) -> float:
    return min(20.0, 1.0 * 2.0**attempt) * (0.5 + random.random())  # noqa: S311 - jitter, not crypto


def _retryable(exc: BaseException) -> bool:
    import httpx

    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


_OLLAMA_CLS: type[BaseChatModel] | None = None


def _ollama_class() -> type[BaseChatModel]:
    """ChatOllama + `max_retries` (built lazily so importing this module stays cheap)."""
    global _OLLAMA_CLS
    if _OLLAMA_CLS is not None:
        return _OLLAMA_CLS
    import asyncio

    from langchain_ollama import ChatOllama

    class RetryingChatOllama(ChatOllama):
        """ChatOllama whose non-streaming calls retry transport errors and 429/5xx with backoff."""

        max_retries: int = 2

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: CallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            for attempt in range(self.max_retries + 1):
                try:
                    return ChatOllama._generate(self, messages, stop=stop, run_manager=run_manager, **kwargs)
                except Exception as exc:
                    if attempt >= self.max_retries or not _retryable(exc):
                        raise
                    time.sleep(_backoff(attempt))
            raise AssertionError("unreachable")  # pragma: no cover

        async def _agenerate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            for attempt in range(self.max_retries + 1):
                try:
                    return await ChatOllama._agenerate(self, messages, stop=stop, run_manager=run_manager, **kwargs)
                except Exception as exc:
                    if attempt >= self.max_retries or not _retryable(exc):
                        raise
                    await asyncio.sleep(_backoff(attempt))
            raise AssertionError("unreachable")  # pragma: no cover

    _OLLAMA_CLS = RetryingChatOllama
    return _OLLAMA_CLS


def make(
    resolved: ResolvedSpec, settings: ModelSettings, local: LocalModelSettings, base_url: str | None
) -> BaseChatModel:
    return _ollama_class()(
        model=resolved.model,
        base_url=_host(resolved, base_url),
        temperature=settings.temperature,
        seed=settings.seed,
        num_predict=settings.max_tokens,
        num_ctx=settings.num_ctx,  # Ollama's default context (2-4k) would silently cut long prompts
        client_kwargs={"timeout": settings.timeout_s},
        max_retries=settings.max_retries,
    )
