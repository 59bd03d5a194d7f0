"""`LeanChatOpenAI`: ChatOpenAI whose chat-completion calls skip the openai SDK and httpx (the hot path of
`generate` against OpenAI-compatible servers: its client cost per message).

It is a `langchain_openai.ChatOpenAI` in every respect but the transport of a plain async chat completion:
the request body is ChatOpenAI's own payload (`_get_request_payload`: messages, temperature, seed,
max_completion_tokens, stop, logprobs/top_logprobs, extra_body, ...) serialised with orjson and POSTed by
an `aiohttp.ClientSession` (keep-alive pool, no per-host limit); the reply goes through ChatOpenAI's own
`_create_chat_result`, so messages, usage_metadata and response_metadata (including `logprobs`, which the
judge's weighted scoring reads) are what ChatOpenAI gives. Errors are the openai SDK's exception objects
passed through langchain-openai's own mapping (`_handle_openai_bad_request` / `_handle_openai_api_error`), so
status codes, class names and one-line messages are unchanged; retries follow the SDK's rules (connection
errors, timeouts, 408/409/429/5xx, x-should-retry, Retry-After up to 2 min, else 0.5 s * 2^n up to 8 s with
up to 25 % jitter; `max_retries` of them).

Session: an aiohttp session belongs to one event loop. One is made lazily per running loop (a model used
from several `asyncio.run()` calls gets a fresh one in each) and closed when that loop shuts down: an async
generator parked on the loop closes it from `loop.shutdown_asyncgens()` (asyncio.run and the project's own
loops call it), or when the model is dropped. TLS verifies as httpx does (SSL_CERT_FILE / SSL_CERT_DIR, else
certifi's bundle). A proxy from the environment (HTTP(S)_PROXY / NO_PROXY, read when the session is made)
is used as the SDK would; `openai_compat.lean_transport` sends the calls through the SDK for proxies aiohttp
does not support (ALL_PROXY only, SOCKS). No ~/.netrc lookup, no cookies.

Anything else (streaming, structured output via `response_format`, the Responses API, a synchronous call,
per-call `extra_headers`/`extra_query`/`timeout`) takes ChatOpenAI's path through the SDK unchanged.

The API key goes in an Authorization header to `openai_api_base`'s origin only: no redirects are followed.
It is kept in a private attribute (never in repr, logs or errors).
"""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import aiohttp
import orjson
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from pydantic import PrivateAttr, SecretStr

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import AsyncIterator

    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
    from langchain_core.messages import BaseMessage

INITIAL_RETRY_DELAY = 0.5  # openai._constants
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER_DELAY = 120.0
# Payload keys the SDK treats as request options rather than body fields: such calls take the SDK path.
_SDK_ONLY = frozenset({"extra_headers", "extra_query", "timeout", "response_format", "stream_options"})


@dataclass
class _Response:
    status: int
    headers: Any  # aiohttp's case-insensitive multidict
    body: bytes


class _LoopSession:
    """The aiohttp session of one event loop, with what every request to the endpoint needs."""

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, headers: dict[str, str]) -> None:
        from yarl import URL

        url = URL(base_url.rstrip("/") + "/chat/completions")
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.loop = loop
        self.url = url
        self.proxy, self.proxy_auth = _env_proxy(url)
        connector = aiohttp.TCPConnector(
            limit=0,
            limit_per_host=0,  # the caller bounds its concurrency
            ssl=_ssl_context() if url.scheme == "https" else True,
        )
        self.session = aiohttp.ClientSession(
            connector=connector,
            headers={"Accept": "application/json", "Content-Type": "application/json", **headers},
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,  # proxies: resolved once above; no ~/.netrc
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self.closer: Any = None  # the async generator that closes the session at loop shutdown

    def __repr__(self) -> str:  # never the headers (they may carry a key)
        return f"LoopSession({self.url.origin()})"

    async def post(self, body: bytes, timeout: aiohttp.ClientTimeout) -> _Response:
        async with self.session.post(
            self.url, data=body, allow_redirects=False, timeout=timeout, proxy=self.proxy, proxy_auth=self.proxy_auth
        ) as resp:
            return _Response(resp.status, resp.headers, await resp.read())


async def _close_at_shutdown(ls: _LoopSession) -> AsyncIterator[None]:
    """Parked on the loop as an async generator: `loop.shutdown_asyncgens()` (or the model being dropped)
    closes it, and with it the session."""
    try:
        yield
    finally:
        await ls.session.close()


class LeanChatOpenAI(ChatOpenAI):
    """ChatOpenAI with a lean transport for async, non-streaming chat completions (see the module docstring)."""

    _http: _LoopSession | None = PrivateAttr(default=None)
    _client_timeout: tuple[float | None, aiohttp.ClientTimeout] | None = PrivateAttr(default=None)
    # One object serves any concurrency cheaply (no connection-pool scan): the replica pool needs no more.
    one_client_per_endpoint: ClassVar[bool] = True
    direct_calls: ClassVar[bool] = True  # backends/calls.py may call _agenerate directly

    @property
    def _llm_type(self) -> str:
        return "openai-chat"  # as ChatOpenAI: LangChain's caches and tracing see the same model type

    async def _lean_client(self) -> _LoopSession:
        """This loop's session (made on first use in a loop; a closed one is replaced)."""
        loop = asyncio.get_running_loop()
        ls = self._http
        if ls is not None and ls.loop is loop and not ls.session.closed:
            return ls
        headers = {"User-Agent": "wikihowagent"}
        key = self.openai_api_key.get_secret_value() if isinstance(self.openai_api_key, SecretStr) else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if self.openai_organization:
            headers["OpenAI-Organization"] = self.openai_organization
        headers.update(self.default_headers or {})
        ls = _LoopSession(loop, self.openai_api_base or "https://api.openai.com/v1", headers)
        ls.closer = _close_at_shutdown(ls)
        await ls.closer.__anext__()  # registers it with the loop (asyncgen hooks)
        self._http = ls
        return ls

    async def aclose(self) -> None:
        """Close this loop's session now (else the loop's shutdown does)."""
        ls, self._http = self._http, None
        if ls is not None and ls.closer is not None:
            await ls.closer.aclose()

    def _timeout(self) -> float | None:
        t = self.request_timeout
        if t is None or isinstance(t, (int, float)):
            return float(t) if t is not None else None
        if isinstance(t, tuple):  # (connect, read): the whole exchange gets the read timeout
            return float(t[-1])
        read = getattr(t, "read", None)  # an httpx.Timeout
        return float(read) if read is not None else None

    def _aiohttp_timeout(self) -> aiohttp.ClientTimeout:
        t = self._timeout()
        cached = self._client_timeout
        if cached is None or cached[0] != t:
            cached = self._client_timeout = (t, aiohttp.ClientTimeout(total=t))
        return cached[1]

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        if (
            payload.get("stream")
            or _SDK_ONLY.intersection(payload)
            or self._use_responses_api(payload)
            or self.default_query
            or not isinstance(self.openai_api_key, (SecretStr, type(None)))
        ):
            return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
        extra = payload.pop("extra_body", None) or {}
        body = orjson.dumps({**payload, **extra})
        response = await self._post(body)
        if isinstance(response, dict):  # the fields the SDK's response model always has (None when absent)
            response.setdefault("system_fingerprint", None)
            for choice in response.get("choices") or ():
                if isinstance(choice, dict):
                    choice.setdefault("logprobs", None)
                    if isinstance(choice.get("message"), dict):
                        choice["message"].setdefault("refusal", None)
        # a str (non-JSON body) is outside the declared type, but ChatOpenAI's method turns it into its own error
        return self._create_chat_result(response, {})  # type: ignore[arg-type]

    async def _post(self, body: bytes) -> dict[str, Any] | str:
        client = await self._lean_client()
        retries = self.max_retries if self.max_retries is not None else 2
        timeout = self._aiohttp_timeout()
        stale_resend = True
        attempt = 0
        while True:
            left = retries - attempt
            try:
                resp = await client.post(body, timeout)
            except aiohttp.ServerDisconnectedError as exc:
                # A kept-alive connection the server closed meanwhile (no answer at all): once more at once,
                # as http clients do on a stale pooled connection; a second one counts as a connection error.
                if stale_resend and isinstance(exc.message, str):  # not a partial response head
                    stale_resend = False
                    continue
                err: BaseException = exc
            except (TimeoutError, aiohttp.ClientError) as exc:  # refused, reset, cut off, timed out
                err = exc
            else:
                if resp.status < 300:
                    data: dict[str, Any] | str
                    try:
                        data = orjson.loads(resp.body)
                    except orjson.JSONDecodeError:
                        data = resp.body.decode("utf-8", "replace")  # ChatOpenAI reports a non-JSON body
                    return data
                retry_after = _retry_after(resp.headers)
                if left > 0 and _should_retry(resp, retry_after):
                    await asyncio.sleep(_backoff(retries, left, retry_after))
                    attempt += 1
                    continue
                raise self._status_error(resp) from None
            if left > 0:
                await asyncio.sleep(_backoff(retries, left, None))
                attempt += 1
                continue
            raise self._connection_error(err) from None

    def _request(self) -> Any:
        import httpx2

        return httpx2.Request(
            "POST", f"{(self.openai_api_base or 'https://api.openai.com/v1').rstrip('/')}/chat/completions"
        )

    def _connection_error(self, exc: BaseException) -> BaseException:
        """The SDK's APIConnectionError / APITimeoutError, mapped as langchain-openai maps them."""
        import openai
        from langchain_openai.chat_models.base import _handle_openai_api_error

        err = (
            openai.APITimeoutError(request=self._request())
            if isinstance(exc, asyncio.TimeoutError)
            else openai.APIConnectionError(request=self._request())
        )
        return _mapped(err, _handle_openai_api_error)

    def _status_error(self, resp: Any) -> BaseException:
        """The SDK's status error for this response (same class, message and body), mapped as langchain-openai
        maps it (e.g. a context overflow in a 400 -> OpenAIContextOverflowError)."""
        import httpx2
        import openai
        from langchain_openai.chat_models.base import _handle_openai_api_error, _handle_openai_bad_request

        response = httpx2.Response(
            resp.status, headers=list(resp.headers.items()), content=resp.body, request=self._request()
        )
        err = self.root_async_client._make_status_error_from_response(response)
        return _mapped(
            err, _handle_openai_bad_request if isinstance(err, openai.BadRequestError) else _handle_openai_api_error
        )


def _mapped(err: BaseException, handler: Any) -> BaseException:
    """langchain-openai's handlers raise the mapped error (or re-raise the original one): catch and return it."""
    try:
        try:
            raise err
        except BaseException as original:  # noqa: BLE001 - the handler re-raises with `raise`
            handler(original)
    except BaseException as mapped:  # noqa: BLE001
        return mapped
    return err


def _ssl_context() -> Any:
    """As httpx verifies: SSL_CERT_FILE / SSL_CERT_DIR if set, else certifi's CA bundle (else the system's)."""
    import os
    import ssl

    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(
            cafile=os.environ.get("SSL_CERT_FILE") or None, capath=os.environ.get("SSL_CERT_DIR") or None
        )
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with httpx
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def _env_proxy(url: Any) -> tuple[Any, Any]:
    """(proxy URL, its credentials) from HTTP(S)_PROXY / NO_PROXY for `url`, or (None, None): what aiohttp's
    trust_env would find, looked up once per session instead of in a worker thread per request."""
    import urllib.request

    from yarl import URL

    proxy = urllib.request.getproxies().get(url.scheme)
    if not proxy or urllib.request.proxy_bypass(url.host or ""):
        return None, None
    p = URL(proxy)
    auth = aiohttp.BasicAuth(p.user or "", p.password or "") if p.user else None
    return p.with_user(None), auth


def _retry_after(headers: Any) -> float | None:
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    value = headers.get("retry-after")
    if value:
        import email.utils
        import time

        try:
            parsed = email.utils.parsedate_tz(value)
            return None if parsed is None else email.utils.mktime_tz(parsed) - time.time()
        except (TypeError, ValueError, OverflowError):
            return None
    return None


def _should_retry(resp: Any, retry_after: float | None) -> bool:
    if retry_after is not None and math.isfinite(retry_after) and retry_after > MAX_RETRY_AFTER_DELAY:
        return False
    flag: str | None = resp.headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true"
    status: int = resp.status
    return status in (408, 409, 429) or status >= 500


def _backoff(max_retries: int, remaining: int, retry_after: float | None) -> float:
    if retry_after is not None and math.isfinite(retry_after) and 0 < retry_after <= MAX_RETRY_AFTER_DELAY:
        return retry_after
    n = min(max_retries - remaining, 1000)
    return min(INITIAL_RETRY_DELAY * 2.0**n, MAX_RETRY_DELAY) * (1 - 0.25 * random.random())
