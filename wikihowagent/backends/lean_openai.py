"""`LeanChatOpenAI`: ChatOpenAI whose chat-completion calls skip the openai SDK and httpx (the hot path of
`generate` against OpenAI-compatible servers; issue 11's client cost).

It is a `langchain_openai.ChatOpenAI` in every respect but the transport of a plain async chat completion:
the request body is ChatOpenAI's own payload (`_get_request_payload`: messages, temperature, seed,
max_completion_tokens, stop, logprobs/top_logprobs, extra_body, ...) serialised with orjson and POSTed by
`http1.Http1Client` (keep-alive, ~50 us per request); the reply goes through ChatOpenAI's own
`_create_chat_result`, so messages, usage_metadata and response_metadata (including `logprobs`, which the
judge's weighted scoring reads) are what ChatOpenAI gives. Errors are the openai SDK's exception objects
passed through langchain-openai's own mapping (`_handle_openai_bad_request` / `_handle_openai_api_error`), so
status codes, class names and one-line messages are unchanged; retries follow the SDK's rules (connection
errors, timeouts, 408/409/429/5xx, x-should-retry, Retry-After up to 2 min, else 0.5 s * 2^n up to 8 s with
up to 25 % jitter; `max_retries` of them).

Anything else (streaming, structured output via `response_format`, the Responses API, a synchronous call,
per-call `extra_headers`/`extra_query`/`timeout`) takes ChatOpenAI's path through the SDK unchanged.

The API key goes in an Authorization header to `openai_api_base`'s origin only: no redirects are followed.
It is kept in a private attribute (never in repr, logs or errors).
"""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any, ClassVar

import orjson
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from pydantic import PrivateAttr, SecretStr

from .http1 import Http1Client, HttpConnectionError, HttpTimeoutError

INITIAL_RETRY_DELAY = 0.5  # openai._constants
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER_DELAY = 120.0
# Payload keys the SDK treats as request options rather than body fields: such calls take the SDK path.
_SDK_ONLY = frozenset({"extra_headers", "extra_query", "timeout", "response_format", "stream_options"})


class LeanChatOpenAI(ChatOpenAI):
    """ChatOpenAI with a lean transport for async, non-streaming chat completions (see the module docstring)."""

    _http: Http1Client | None = PrivateAttr(default=None)
    # One object serves any concurrency cheaply (no connection-pool scan): the replica pool needs no more.
    one_client_per_endpoint: ClassVar[bool] = True
    direct_calls: ClassVar[bool] = True  # backends/calls.py may call _agenerate directly

    @property
    def _llm_type(self) -> str:
        return "openai-chat"  # as ChatOpenAI: LangChain's caches and tracing see the same model type

    def _lean_client(self) -> Http1Client:
        if self._http is None:
            headers = {"User-Agent": "wikihowagent"}
            key = self.openai_api_key.get_secret_value() if self.openai_api_key is not None else ""
            if key:
                headers["Authorization"] = f"Bearer {key}"
            if self.openai_organization:
                headers["OpenAI-Organization"] = self.openai_organization
            headers.update(self.default_headers or {})
            self._http = Http1Client(self.openai_api_base or "https://api.openai.com/v1", headers)
        return self._http

    def _timeout(self) -> float | None:
        t = self.request_timeout
        if t is None or isinstance(t, (int, float)):
            return float(t) if t is not None else None
        if isinstance(t, tuple):  # (connect, read): the whole exchange gets the read timeout
            return float(t[-1])
        read = getattr(t, "read", None)  # an httpx.Timeout
        return float(read) if read is not None else None

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:  # type: ignore[override]
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        if payload.get("stream") or _SDK_ONLY.intersection(payload) or self._use_responses_api(payload) \
                or self.default_query or not isinstance(self.openai_api_key, (SecretStr, type(None))):
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
        return self._create_chat_result(response, {})

    async def _post(self, body: bytes) -> dict[str, Any]:
        client = self._lean_client()
        retries = self.max_retries if self.max_retries is not None else 2
        timeout = self._timeout()
        for attempt in range(retries + 1):
            left = retries - attempt
            try:
                resp = await client.post("/chat/completions", body, timeout)
            except (HttpConnectionError, HttpTimeoutError) as exc:
                if left > 0:
                    await asyncio.sleep(_backoff(retries, left, None))
                    continue
                raise self._connection_error(exc) from None
            if resp.status < 300:
                try:
                    data = orjson.loads(resp.body)
                except orjson.JSONDecodeError:
                    data = resp.body.decode("utf-8", "replace")  # ChatOpenAI reports a non-JSON body
                return data  # type: ignore[return-value]
            retry_after = _retry_after(resp.headers)
            if left > 0 and _should_retry(resp, retry_after):
                await asyncio.sleep(_backoff(retries, left, retry_after))
                continue
            raise self._status_error(resp) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self) -> Any:
        import httpx2

        return httpx2.Request("POST", f"{(self.openai_api_base or 'https://api.openai.com/v1').rstrip('/')}/chat/completions")

    def _connection_error(self, exc: BaseException) -> BaseException:
        """The SDK's APIConnectionError / APITimeoutError, mapped as langchain-openai maps them."""
        import openai
        from langchain_openai.chat_models.base import _handle_openai_api_error

        err = (openai.APITimeoutError(request=self._request()) if isinstance(exc, HttpTimeoutError)
               else openai.APIConnectionError(request=self._request()))
        return _mapped(err, _handle_openai_api_error)

    def _status_error(self, resp: Any) -> BaseException:
        """The SDK's status error for this response (same class, message and body), mapped as langchain-openai
        maps it (e.g. a context overflow in a 400 -> OpenAIContextOverflowError)."""
        import httpx2
        import openai
        from langchain_openai.chat_models.base import _handle_openai_api_error, _handle_openai_bad_request

        response = httpx2.Response(resp.status, headers=resp.headers, content=resp.body, request=self._request())
        err = self.root_async_client._make_status_error_from_response(response)
        return _mapped(err, _handle_openai_bad_request if isinstance(err, openai.BadRequestError)
                       else _handle_openai_api_error)


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


def _retry_after(headers: dict[str, str]) -> float | None:
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
    flag = resp.headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true"
    return resp.status in (408, 409, 429) or resp.status >= 500


def _backoff(max_retries: int, remaining: int, retry_after: float | None) -> float:
    if retry_after is not None and math.isfinite(retry_after) and 0 < retry_after <= MAX_RETRY_AFTER_DELAY:
        return retry_after
    n = min(max_retries - remaining, 1000)
    return min(INITIAL_RETRY_DELAY * 2.0**n, MAX_RETRY_DELAY) * (1 - 0.25 * random.random())
