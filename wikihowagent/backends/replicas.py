"""Server replicas and outages: one chat model over several endpoints of the same model.

`PooledChatModel` sends each request to the least-busy healthy replica (fewest requests in flight; ties in
turn). A connection error (refused, reset, timed out: the request never got an answer) is not a reply: the
request is sent again, to another replica if one is healthy. A replica with `fail_threshold` connection
errors in a row is *rested* with exponential backoff (`rest_s`, doubling up to `rest_max_s`) and probed
(`GET <base>/models`, or `/api/tags` for Ollama) before it gets requests again; the run goes on with the
others. When every replica is resting (a server outage) requests wait and the replicas are probed until
one answers, for up to `outage_wait_s`; only then do the waiting requests fail (and with them their
conversations, recorded as failed, to be retried on resume).

A server error (HTTP 5xx after the client's own retries) is a failure of that replica too: the request is
sent to another replica it has not failed on yet, and `fail_threshold` of them in a row rest the replica
like a dead one (its rests keep doubling while it keeps failing after probes). The request fails, with the
last server error, only when every replica has failed it (answered 5xx, or is resting). Other answers
(HTTP 4xx) are passed on unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatResult
from pydantic import ConfigDict

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
    from langchain_core.messages import BaseMessage

from wikihowagent.errors import WikihowagentError

from . import openai_compat
from .spec import Capabilities

KEEPALIVE = 1024  # idle connections kept per client: no reconnects at any --concurrency up to this
# HTTP clients per endpoint with the SDK transport: httpx's connection pool scans all its connections on every
# request (CPU grows with --concurrency), so requests are spread over several clients, each with a small pool.
# The lean transport (lean_openai.py) needs one.
CLIENTS_PER_ENDPOINT = 8


def is_connection_error(exc: BaseException) -> bool:
    """True if the request got no answer from the server at all (safe to send again)."""
    import httpx

    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    try:
        import openai

        if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
            return True
    except ImportError:  # pragma: no cover
        pass
    return False


def is_server_error(exc: BaseException) -> bool:
    """True if the server answered with HTTP 5xx (OpenAI SDK / lean client status errors, Ollama's)."""
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status >= 500


class NoReplicaLeft(WikihowagentError):
    """Every replica has failed this request (answered 5xx or is resting)."""


@dataclass
class Replica:
    url: str
    model: BaseChatModel  # or several clients of this endpoint (`clients`), each with its own connection pool
    clients: list[BaseChatModel] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)  # requests in flight per client
    in_flight: int = 0
    failures: int = 0  # connection or server errors in a row
    last_failure: str = ""  # what the last one was, for the rest note
    rests: int = 0  # times rested in a row (the backoff exponent)
    rested_until: float = 0.0  # monotonic time; 0 = healthy
    served: int = 0

    def __post_init__(self) -> None:
        if not self.clients:
            self.clients = [self.model]
        self.busy = [0] * len(self.clients)

    def take_client(self) -> int:
        """The least-busy client of this endpoint (its connection pool scans fewer connections per request)."""
        i = min(range(len(self.busy)), key=self.busy.__getitem__)
        self.busy[i] += 1
        return i


@dataclass
class ReplicaPool:
    replicas: list[Replica]
    probe_path: str = "/models"
    fail_threshold: int = 3
    rest_s: float = 2.0
    rest_max_s: float = 60.0
    outage_wait_s: float = 120.0
    probe_timeout_s: float = 3.0
    on_event: Callable[[str], None] | None = None  # "replica X rested for N s", "... back"
    _turn: int = 0
    _outage_since: float | None = None
    _probing: dict[str, asyncio.Task[bool]] = field(default_factory=dict)

    def _say(self, msg: str) -> None:
        if self.on_event is not None:
            self.on_event(msg)

    def healthy(self, now: float) -> list[Replica]:
        return [r for r in self.replicas if r.rested_until == 0.0]

    async def _probe(self, r: Replica) -> bool:
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self.probe_timeout_s) as client:
                resp = await client.get(r.url.rstrip("/") + self.probe_path)
            return resp.status_code < 500
        except Exception:  # noqa: BLE001 - any failure means "not back yet"
            return False

    async def _wake(self, now: float) -> None:
        """Probe every replica whose rest is over (one probe per replica at a time); healthy again if it answers."""
        due = [r for r in self.replicas if r.rested_until and r.rested_until <= now]
        for r in due:
            if r.url not in self._probing:
                self._probing[r.url] = asyncio.ensure_future(self._probe(r))
        for r in due:
            task = self._probing.get(r.url)
            if task is None:
                continue
            ok = await asyncio.shield(task)
            self._probing.pop(r.url, None)
            if r.rested_until == 0.0:
                continue  # another waiter already handled this probe
            if ok:  # the backoff exponent stays until a request succeeds: a replica that answers probes but
                r.rested_until, r.failures = 0.0, 0  # fails requests with 5xx rests longer each time
                self._say(f"replica {r.url} answers again")
            else:
                self._rest(r)

    def _rest(self, r: Replica) -> None:
        delay = min(self.rest_max_s, self.rest_s * 2**r.rests)
        r.rests += 1
        r.rested_until = time.monotonic() + delay
        what = r.last_failure or f"{r.failures} connection errors"
        self._say(f"replica {r.url} {what}; resting it {delay:.0f} s")

    async def acquire(self, avoid: frozenset[int] = frozenset()) -> Replica:
        """The least-busy healthy replica; during an outage, wait (probing) up to `outage_wait_s`. Replicas
        whose id() is in `avoid` (they failed this request) are not chosen: NoReplicaLeft if no other is healthy."""
        while True:
            now = time.monotonic()
            await self._wake(now)
            healthy = self.healthy(now)
            if avoid:
                healthy = [r for r in healthy if id(r) not in avoid]
                if not healthy:
                    raise NoReplicaLeft
            if healthy:
                self._outage_since = None
                least = min(r.in_flight for r in healthy)
                candidates = [r for r in healthy if r.in_flight == least]
                self._turn += 1
                r = candidates[self._turn % len(candidates)]
                r.in_flight += 1
                return r
            if self._outage_since is None:
                self._outage_since = now
                self._say(f"no replica answers; pausing requests and probing for up to {self.outage_wait_s:.0f} s")
            if now - self._outage_since >= self.outage_wait_s:
                raise ConnectionError(
                    f"no replica reachable for {self.outage_wait_s:.0f} s ({', '.join(r.url for r in self.replicas)})"
                )
            next_wake = min(r.rested_until for r in self.replicas)
            await asyncio.sleep(max(0.05, min(next_wake - now, self._outage_since + self.outage_wait_s - now)))

    def release(self, r: Replica, error: BaseException | None) -> None:
        r.in_flight -= 1
        if error is None:
            r.failures = r.rests = 0
            r.served += 1
            return
        r.failures += 1
        r.last_failure = (
            f"answers with server errors ({r.failures} in a row, last: HTTP {getattr(error, 'status_code', '5xx')})"
            if is_server_error(error)
            else ""
        )
        if r.failures >= self.fail_threshold and r.rested_until == 0.0:
            self._rest(r)


class PooledChatModel(BaseChatModel):
    """A chat model whose calls go to the replicas of a ReplicaPool (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pool: Any  # ReplicaPool
    max_resends: int = 1000  # bounded anyway by the pool's outage_wait_s
    direct_calls: ClassVar[bool] = True  # backends/calls.py may call _agenerate directly
    max_tokens: int | None = None  # None: each replica's own reply cap; set (calls.with_reply_cap): every call's
    capabilities: ClassVar[Capabilities] = Capabilities(reply_cap="max_tokens", reply_cap_inherited=True)

    def _capped(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, **kwargs} if self.max_tokens is not None else kwargs

    @property
    def _llm_type(self) -> str:
        return "replica-pool"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The pipeline is asynchronous; a synchronous call simply uses the first healthy replica.
        r = next((x for x in self.pool.replicas if x.rested_until == 0.0), self.pool.replicas[0])
        result: ChatResult = r.model._generate(messages, stop=stop, **self._capped(kwargs))
        return result

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last: BaseException | None = None
        failed_on: frozenset[int] = frozenset()  # replicas that answered this request with a server error
        for _ in range(self.max_resends):
            try:
                r = await self.pool.acquire(failed_on)
            except NoReplicaLeft:
                assert last is not None
                raise last from None
            i = r.take_client()
            try:
                result: ChatResult = await r.clients[i]._agenerate(messages, stop=stop, **self._capped(kwargs))
            except Exception as exc:
                r.busy[i] -= 1
                failed = is_connection_error(exc) or is_server_error(exc)
                self.pool.release(r, exc if failed else None)
                if not failed:
                    raise
                if is_server_error(exc):
                    failed_on = failed_on | {id(r)}
                last = exc
                continue
            r.busy[i] -= 1
            self.pool.release(r, None)
            return result
        assert last is not None
        raise last


OPENAI_API_BASE = "https://api.openai.com/v1"


def alias_base_urls(spec: str, aliases_path: Any = None) -> list[str] | None:
    """`base_urls: [...]` of an alias in the alias file (several replicas of one model), else None."""
    from .spec import load_aliases

    target = load_aliases(aliases_path).aliases.get(spec.strip())
    urls = target.get("base_urls") if isinstance(target, dict) else None
    return [str(u) for u in urls] if isinstance(urls, list) and urls else None


def role_endpoints(resolved: Any, base_urls: list[str] | None, aliases_path: Any = None) -> list[str] | None:
    """The endpoints of a role (a ResolvedSpec): --base-url (openai: specs only), else the alias's base_urls,
    else None (the spec's own single endpoint)."""
    if resolved.provider == "local":
        return None
    if base_urls and resolved.provider == "openai":
        return list(base_urls)
    return alias_base_urls(resolved.spec, aliases_path)


def check_replicas(resolved: Any, urls: list[str] | None, warn: Callable[[str], None]) -> None:
    """Check every endpoint; unreachable replicas are reported (`warn`) and left to the pool, which rests and
    probes them, as long as one answers. Raises the first BackendError if none does."""
    from .errors import BackendError
    from .registry import check_backend

    targets: list[str | None] = list(urls) if urls else [None]
    errors = []
    for url in targets:
        try:
            check_backend(resolved, url)
        except BackendError as exc:
            errors.append(exc)
    if len(errors) == len(targets):
        raise errors[0]
    for error in errors:
        warn(f"a replica is not answering; going on with the others: {error}")


def make_pooled_chat_model(
    resolved: Any,
    settings: Any,
    local: Any,
    urls: list[str] | None,
    *,
    pool_settings: Any = None,
    on_event: Callable[[str], None] | None = None,
) -> BaseChatModel:
    """The hook where `generate` makes its chat clients: one client per endpoint behind a PooledChatModel
    (also for a single endpoint: it rides out short outages). The embedded model is returned as it is."""
    from .registry import make_chat_model

    if resolved.provider == "local":
        return make_chat_model(resolved, settings, local)
    targets: list[str | None] = list(urls) if urls else [None]

    def client(u: str | None) -> BaseChatModel:
        if resolved.provider == "openai":
            model: BaseChatModel = openai_compat.make(resolved, settings, local, u, keepalive=KEEPALIVE)
            return model
        return make_chat_model(resolved, settings, local, base_url=u)

    n_clients = CLIENTS_PER_ENDPOINT if resolved.provider == "openai" else 1
    replicas = []
    for u in targets:
        clients = [client(u)]
        if not getattr(clients[0], "one_client_per_endpoint", False):  # httpx clients: spread the pool scans
            clients += [client(u) for _ in range(n_clients - 1)]
        replicas.append(Replica(url=u or resolved.base_url or OPENAI_API_BASE, model=clients[0], clients=clients))
    knobs = pool_settings.model_dump() if pool_settings is not None else {}
    pool = ReplicaPool(
        replicas, probe_path="/api/tags" if resolved.provider == "ollama" else "/models", on_event=on_event, **knobs
    )
    return PooledChatModel(pool=pool)
