"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for CLI tests (no network beyond loopback)."""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer(ThreadingHTTPServer):
    """The tests' threaded HTTP server on 127.0.0.1. A client that hangs up before its reply is written (a run
    cancelled or finished while a request was in flight) is normal, not an error: ThreadingHTTPServer would
    print that BrokenPipeError's traceback to whatever `sys.stderr` is when the late handler thread gets to
    it, which can be a later test's captured output (a `--help` line 105 characters wide, tests/core/test_cli_help).
    Other handler errors are still printed; every one is kept in `errors`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.errors: list[BaseException] = []

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if exc is not None:
            self.errors.append(exc)
        if not isinstance(exc, ConnectionError):  # BrokenPipeError, ConnectionResetError, ...
            super().handle_error(request, client_address)


def scripted_reply(prompt: str) -> str:
    """Teacher prompts get a lesson for the step they name; learner prompts ask for the next step."""
    m = re.search(r"Step (\d+) of (\d+)", prompt)
    if m:
        return f"Step {m.group(1)}: do it carefully."
    return "Understood, please go to the next step."


class FakeOpenAI:
    """`with FakeOpenAI() as srv:` -> srv.base_url ('http://127.0.0.1:PORT/v1'); srv.requests, srv.auth."""

    def __init__(
        self,
        reply=scripted_reply,
        fail_when=None,
        models=("fake-model",),
        error_message="scripted server error",
        logprobs=None,
        text_logprob=None,
    ):
        """`logprobs(prompt)` -> [(token, {candidate: probability})] makes the server answer requests that ask
        for `logprobs` with that reply, OpenAI-style (`choices[0].logprobs.content`), cut at the request's
        token limit (finish_reason "length").

        `text_logprob(token, text_before)` -> log-probability makes it serve the log-probabilities of a given
        text (workflow/likelihood.py), tokens being whitespace-led words: `/v1/completions` with echo (as vLLM)
        and llama.cpp's `/completion` with a grammar whose only sentence is the text (as the embedded server)."""
        self.reply, self.fail_when, self.models, self.logprobs = reply, fail_when, models, logprobs
        self.text_logprob = text_logprob
        self.error_message = error_message
        self.requests: list[dict] = []
        self.auth: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in outer.models]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.auth.append(self.headers.get("Authorization", ""))
                if self.path.rstrip("/") in ("/v1/completions", "/completion"):
                    self._text_logprobs(body)
                    return
                prompt = "\n".join(str(m.get("content")) for m in body.get("messages", []))
                if outer.fail_when and outer.fail_when(prompt):
                    self._send(500, {"error": {"message": outer.error_message}})
                    return
                choice = {"index": 0, "finish_reason": "stop"}
                if body.get("logprobs") and outer.logprobs is not None:
                    entries = outer.logprobs(prompt)
                    limit = body.get("max_completion_tokens") or body.get("max_tokens")
                    if limit and len(entries) > limit:  # as a real server: cut at the token limit
                        entries, choice["finish_reason"] = entries[:limit], "length"
                    text = "".join(tok for tok, _ in entries)
                    choice["logprobs"] = {
                        "content": [
                            {
                                "token": tok,
                                "logprob": math.log(top.get(tok, 1e-9)),
                                "bytes": None,
                                "top_logprobs": [
                                    {"token": t, "logprob": math.log(p), "bytes": None} for t, p in top.items()
                                ],
                            }
                            for tok, top in entries
                        ]
                    }
                else:
                    text = outer.reply(prompt)  # None -> "content": null
                choice["message"] = {"role": "assistant", "content": text}
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model"),
                        "choices": [choice],
                        "usage": {
                            "prompt_tokens": len(prompt.split()),
                            "completion_tokens": len((text or "").split()),
                            "total_tokens": len(prompt.split()) + len((text or "").split()),
                        },
                    },
                )

            def _text_logprobs(self, body):
                if outer.text_logprob is None:
                    self._send(404, {"error": {"message": "not found"}})
                    return
                prompt = body["prompt"]
                if self.path.endswith("/v1/completions"):
                    if not body.get("echo"):
                        self._send(400, {"error": {"message": "this fake answers echo requests only"}})
                        return
                    toks = [(m.start(), m.group(0)) for m in re.finditer(r"\s*\S+|\s+$", prompt)] + [
                        (len(prompt), " x")
                    ]
                    lps = [None] + [outer.text_logprob(t, (prompt + " x")[:o]) for o, t in toks[1:]]
                    self._send(
                        200,
                        {
                            "choices": [
                                {
                                    "text": prompt + " x",
                                    "index": 0,
                                    "logprobs": {
                                        "tokens": [t for _, t in toks],
                                        "token_logprobs": lps,
                                        "text_offset": [o for o, _ in toks],
                                        "top_logprobs": None,
                                    },
                                }
                            ]
                        },
                    )
                    return
                m = re.fullmatch(r'root ::= "(.*)"', body.get("grammar", ""), re.S)
                if not m:
                    self._send(200, {"content": "free text", "completion_probabilities": []})
                    return
                text = re.sub(
                    r"\\(.)", lambda e: {"n": "\n", "r": "\r", "t": "\t"}.get(e.group(1), e.group(1)), m.group(1)
                )
                probs = [
                    {
                        "id": 0,
                        "token": w.group(0),
                        "bytes": list(w.group(0).encode()),
                        "logprob": outer.text_logprob(w.group(0), prompt + text[: w.start()]),
                        "top_logprobs": [],
                    }
                    for w in re.finditer(r"\s*\S+|\s+$", text)
                ]
                self._send(200, {"content": text, "completion_probabilities": probs})

        self.server = LocalServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
