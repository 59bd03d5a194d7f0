"""The tests' own HTTP servers (tests/fake_servers.py): a client that hangs up mid-request is no traceback.

CI once failed `test_cli_help` because a request that `generate` had abandoned in the test before was answered
late: the server's thread printed the BrokenPipeError's traceback into the next test's captured output."""

from __future__ import annotations

import json
import socket
import struct
import time

from fake_servers import FakeOpenAI


def _chat_request() -> bytes:
    body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def test_a_client_that_hangs_up_is_kept_not_printed(capsys):
    def slow(prompt):
        time.sleep(0.3)  # the client is gone by the time the reply is written
        return "fine"

    with FakeOpenAI(reply=slow) as srv:
        port = srv.server.server_address[1]
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(_chat_request())
        time.sleep(0.1)  # the request is read and the reply is being made
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset: the reply's write fails
        deadline = time.monotonic() + 10
        while not srv.server.errors and time.monotonic() < deadline:
            time.sleep(0.05)
    assert srv.requests and srv.server.errors, "the reply was written to a closed connection without an error"
    assert all(isinstance(e, ConnectionError) for e in srv.server.errors), srv.server.errors
    assert "Exception occurred" not in capsys.readouterr().err


def test_other_handler_errors_are_still_printed(capsys):
    with FakeOpenAI(reply=lambda prompt: 1 / 0) as srv:
        port = srv.server.server_address[1]
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(_chat_request())
            s.settimeout(10)
            assert s.recv(100) == b""  # the handler died: the connection closes without a reply
    assert [type(e) for e in srv.server.errors] == [ZeroDivisionError]
    assert "ZeroDivisionError" in capsys.readouterr().err
