"""A small HTTP/1.1 client on asyncio for the chat-completion hot path: keep-alive connections, one POST.

Why not httpx: every request through httpx + httpcore + anyio costs ~1 ms of CPU (request/response models,
header normalisation, anyio stream wrappers, a connection-pool scan), which caps one process at a few hundred
requests/s. This client writes a request in one `transport.write` and parses the response in the protocol's
`data_received` (Content-Length, chunked, or until close), ~50 us per request.

Scope: what an OpenAI-compatible server needs. http and https (CAs as httpx: SSL_CERT_FILE/DIR or certifi), no proxies (the
caller falls back to the openai SDK when a proxy applies), no redirects (a 3xx is returned as it is, so
headers such as Authorization never follow a redirect to another host), no compression (no
Accept-Encoding is sent). Connections are bound to the event loop that opened them: a pool used from a new
loop (another `asyncio.run`) drops the old loop's idle connections.

Errors: `HttpConnectionError` (a ConnectionError: refused, reset, closed before the whole response) and
`HttpTimeoutError` (a TimeoutError); both mean "no answer", so the request may be sent again.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from collections import deque
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024  # bytes of status line + headers before the response is refused as malformed


class HttpConnectionError(ConnectionError):
    """No (whole) answer: the connection was refused, reset or closed early, or the response was malformed."""


class HttpTimeoutError(TimeoutError):
    """No answer within the timeout."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lower-cased names; a repeated header keeps its last value
    body: bytes


_HEAD, _LENGTH, _CHUNKED, _UNTIL_CLOSE, _DONE = range(5)


class _Connection(asyncio.Protocol):
    """One keep-alive connection; at most one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = False  # served a request before (a reused connection may have been closed by the server)
        self._waiter: asyncio.Future[Response] | None = None
        self._buf = bytearray()
        self._got_bytes = False
        self._reset()

    def _reset(self) -> None:
        self._state = _HEAD
        self._status = 0
        self._headers: dict[str, str] = {}
        self._length = 0
        self._keep_alive = True
        self._body = bytearray()
        self._pos = 0  # chunked: parse position in _buf

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        w = self._waiter
        if w is None or w.done():
            return
        if self._state == _UNTIL_CLOSE:
            self._body += self._buf
            self._finish()
            return
        w.set_exception(HttpConnectionError(
            "connection closed before the whole response arrived" if self._got_bytes else "connection closed"))

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():  # nothing asked: a broken server; do not reuse
            self._close()
            return
        self._got_bytes = True
        self._buf += data
        try:
            self._parse()
        except (ValueError, IndexError) as exc:
            self._fail(HttpConnectionError(f"malformed HTTP response ({exc})"))

    # -- parsing
    def _parse(self) -> None:
        buf = self._buf
        while True:
            if self._state == _HEAD:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD:
                        raise ValueError("headers too long")
                    return
                lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
                del buf[: end + 4]
                version, status = lines[0].split(" ", 2)[:2]
                self._status = int(status)
                headers = self._headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                if 100 <= self._status < 200:  # 100 Continue & co.: the real head follows
                    self._headers = {}
                    continue
                conn = headers.get("connection", "").lower()
                self._keep_alive = ("close" not in conn) if version == "HTTP/1.1" else ("keep-alive" in conn)
                if self._status in (204, 304):
                    self._finish()
                    return
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    self._state, self._pos = _CHUNKED, 0
                elif "content-length" in headers:
                    self._state, self._length = _LENGTH, int(headers["content-length"])
                else:
                    self._state, self._keep_alive = _UNTIL_CLOSE, False
                    return
            if self._state == _LENGTH:
                if len(buf) < self._length:
                    return
                self._body = buf[: self._length]
                if len(buf) > self._length:  # more than announced: do not trust this connection again
                    self._keep_alive = False
                self._buf = bytearray()
                self._finish()
                return
            if self._state == _CHUNKED:
                while True:
                    eol = buf.find(b"\r\n", self._pos)
                    if eol < 0:
                        return
                    size = int(bytes(buf[self._pos:eol]).split(b";", 1)[0].strip(), 16)
                    if size == 0:  # last chunk, then optional trailers and an empty line
                        end = buf.find(b"\r\n\r\n", eol) if buf[eol + 2: eol + 4] != b"\r\n" else eol
                        if end < 0:
                            return
                        self._buf = bytearray()
                        self._finish()
                        return
                    if len(buf) < eol + 2 + size + 2:
                        return
                    self._body += buf[eol + 2: eol + 2 + size]
                    self._pos = eol + 2 + size + 2
            return  # _UNTIL_CLOSE: collected in connection_lost

    def _finish(self) -> None:
        w, self._waiter = self._waiter, None
        resp = Response(self._status, self._headers, bytes(self._body))
        if not self._keep_alive:
            self._close()
        self._reset()
        if w is not None and not w.done():
            w.set_result(resp)

    def _fail(self, exc: BaseException) -> None:
        w, self._waiter = self._waiter, None
        self._close()
        if w is not None and not w.done():
            w.set_exception(exc)

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- one request
    def send(self, data: bytes) -> asyncio.Future[Response]:
        assert self.transport is not None and self._waiter is None
        self._waiter = asyncio.get_running_loop().create_future()
        self._got_bytes = False
        self._buf = bytearray()
        self.transport.write(data)
        return self._waiter


def _ssl_context() -> _ssl.SSLContext:
    """As httpx verifies: SSL_CERT_FILE / SSL_CERT_DIR if set, else certifi's CA bundle (else the system's)."""
    import os

    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return _ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE") or None,
                                           capath=os.environ.get("SSL_CERT_DIR") or None)
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with httpx
        return _ssl.create_default_context()
    return _ssl.create_default_context(cafile=certifi.where())


class Http1Client:
    """POSTs to one origin (scheme://host:port) over pooled keep-alive connections.

    `headers` are sent with every request (e.g. Authorization for this origin only); `max_idle` idle
    connections are kept (no cap on connections in use: the caller bounds its concurrency)."""

    def __init__(self, base_url: str, headers: dict[str, str] | None = None, max_idle: int = 1024) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        default_port = self.port == (443 if self.scheme == "https" else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = host if default_port else f"{host}:{self.port}"
        fixed = {"Host": self.host_header, "Accept": "application/json", "Connection": "keep-alive",
                 **(headers or {})}
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self.max_idle = max_idle
        self._idle: deque[_Connection] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ssl: _ssl.SSLContext | None = _ssl_context() if self.scheme == "https" else None

    def __repr__(self) -> str:  # never the headers (they may carry a key)
        return f"Http1Client({self.scheme}://{self.host_header}{self.base_path})"

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(
                _Connection, self.host, self.port, ssl=self._ssl,
                server_hostname=self.host if self._ssl is not None else None)
        except OSError as exc:
            raise HttpConnectionError(f"cannot connect to {self.host_header}: {exc.strerror or exc}") from None
        return conn  # type: ignore[return-value]

    def _take_idle(self) -> _Connection | None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # connections of another (closed) loop cannot be used here
            self._idle.clear()
            self._loop = loop
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to have been closed
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn
        return None

    def _give_back(self, conn: _Connection) -> None:
        if conn.closed or len(self._idle) >= self.max_idle:
            conn._close()
        else:
            self._idle.append(conn)

    async def post(self, path: str, body: bytes, timeout: float | None = None,
                   content_type: str = "application/json") -> Response:
        """POST `body` to base path + `path`; the response whatever its status. Raises HttpConnectionError or
        HttpTimeoutError when there is no answer."""
        head = (f"POST {self.base_path}{path} HTTP/1.1\r\n".encode("latin-1") + self._fixed
                + f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode("latin-1"))
        data = head + body
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(data)
        except TimeoutError:
            raise HttpTimeoutError(f"no answer from {self.host_header} within {timeout:g} s") from None

    async def _exchange(self, data: bytes) -> Response:
        conn = self._take_idle()
        for attempt in range(2):
            if conn is None:
                conn = await self._connect()
            reused = conn.used
            try:
                resp = await conn.send(data)
            except HttpConnectionError:
                # A kept-alive connection the server closed meanwhile (nothing came back): once more on a fresh one.
                if reused and not conn._got_bytes and attempt == 0:
                    conn._close()
                    conn = None
                    continue
                raise
            except BaseException:  # cancelled or timed out mid-request: the connection's state is unknown
                conn._fail(HttpConnectionError("request abandoned"))
                raise
            conn.used = True
            self._give_back(conn)
            return resp
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the idle connections (those in use close when their request ends)."""
        while self._idle:
            self._idle.pop()._close()
