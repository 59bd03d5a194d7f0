"""The likelihood post-test against hostile servers: a hostile echo reply, a hanging server or grammar tokens
that do not join back are a recorded failure, never a gain; an honest echo server still gives one."""

from __future__ import annotations

import json

import pytest


class EchoServer:
    """A /v1/completions server on 127.0.0.1 whose reply to an echo request is `reply(prompt)` (a dict sent as
    JSON, or "reset": the connection is closed mid-reply, or "hang": no reply within the client's timeout)."""

    def __init__(self, reply):
        import threading
        from http.server import BaseHTTPRequestHandler

        from fake_servers import LocalServer

        self.requests: list[dict] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                got = reply(body["prompt"])
                if got == "reset":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [')  # then the connection closes mid-reply
                    return
                if got == "hang":
                    outer.release.wait(10)
                    return
                data = json.dumps(got).encode()
                self.send_response(200 if not isinstance(got, dict) or "status" not in got else got["status"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = LocalServer(("127.0.0.1", 0), Handler)
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        import threading

        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def _echo(prompt: str, lp=-1.0, *, tokens=None, values=None, offsets=None, extra=" x") -> dict:
    """An honest echo reply (whitespace-led words), with any of its arrays replaced."""
    import re

    toks = [(m.start(), m.group(0)) for m in re.finditer(r"\s*\S+|\s+$", prompt)] + [(len(prompt), extra)]
    return {
        "choices": [
            {
                "text": prompt + extra,
                "index": 0,
                "logprobs": {
                    "tokens": tokens if tokens is not None else [t for _, t in toks],
                    "token_logprobs": values if values is not None else [None] + [lp] * (len(toks) - 1),
                    "text_offset": offsets if offsets is not None else [o for o, _ in toks],
                    "top_logprobs": None,
                },
            }
        ]
    }


def _shuffled_tokens(p):
    r = _echo(p)
    lp = r["choices"][0]["logprobs"]
    lp["tokens"] = [t.upper() if i > 3 else t for i, t in enumerate(lp["tokens"])]
    return r


def _ignores_echo(p):  # only the one generated token, at the end of the prompt
    return {
        "choices": [{"text": " x", "logprobs": {"tokens": [" x"], "token_logprobs": [-1.0], "text_offset": [len(p)]}}]
    }


HOSTILE_ECHO = [
    (_shuffled_tokens, "do not join back to the text sent"),
    (lambda p: _echo(p, tokens=["1.", " Fold"] * 40), "log-probabilities for 80 tokens"),
    (lambda p: _echo(p, tokens=[t.replace(" ", "") for t in _echo(p)["choices"][0]["logprobs"]["tokens"]]),
     "do not join back to the text sent"),
    (lambda p: {**_echo(p), "choices": [{**_echo(p)["choices"][0], "logprobs": {
        **_echo(p)["choices"][0]["logprobs"], "token_logprobs": [None, -1.0]}}]}, "2 log-probabilities for"),
    (lambda p: {**_echo(p), "choices": [{**_echo(p)["choices"][0], "logprobs": {
        **_echo(p)["choices"][0]["logprobs"], "text_offset": [0]}}]}, "1 offsets for"),
    (lambda p: _echo(p, lp=0.5), "log-probability 0.5"),
    (lambda p: _echo(p, lp=float("nan")), "log-probability nan"),
    (lambda p: _echo(p, lp=float("inf")), "log-probability inf"),
    (lambda p: _echo(p, lp="-1"), "log-probability '-1'"),
    (lambda p: _echo(p, lp=True), "log-probability True"),
    (lambda p: {"choices": []}, "no echoed prompt log-probabilities"),
    (lambda p: {"choices": None}, "no echoed prompt log-probabilities"),
    (lambda p: [], "the reply is not a JSON object"),
    (_ignores_echo, "do not join back to the text sent"),
    (lambda p: {"status": 500, "error": {"message": "boom"}}, "HTTP 500"),
    (lambda p: "reset", "the connection failed"),
    (lambda p: _echo(p, offsets=["a"] * 60), "offsets"),
    (lambda p: _echo(p, tokens=[7] * 60), "tokens"),
]  # fmt: skip


@pytest.mark.parametrize("reply, why", HOSTILE_ECHO)
def test_a_hostile_echo_reply_is_a_recorded_failure_never_a_likelihood_gain(reply, why):
    import asyncio

    from wikihowagent.records import Turn
    from wikihowagent.workflow import likelihood as L

    steps = ["Fold the glorp twice.", "Soak it in brine for 7 minutes."]
    turns = [Turn(role="teacher", text="Fold the glorp twice."), Turn(role="learner", text="OK")]
    with EchoServer(reply) as srv:
        taker = L.LikelihoodTaker(L.StepLikelihood(srv.root, "m", "echo", timeout_s=5))
        test = asyncio.run(taker.take("k", "How to Glorp", "", turns, steps))
    assert test.error is not None and why in test.error, test.error
    assert test.post == [] and test.pre == [] and "\n" not in test.error and len(test.error) < 400


def test_an_honest_echo_server_still_gives_a_gain():
    import asyncio

    from wikihowagent.records import Turn
    from wikihowagent.workflow import likelihood as L

    steps = ["Fold the glorp twice.", "Soak it in brine for 7 minutes."]
    with EchoServer(lambda p: _echo(p, lp=-0.5 if "Teacher" in p else -2.0)) as srv:
        taker = L.LikelihoodTaker(L.StepLikelihood(srv.root, "m", "echo", timeout_s=5))
        test = asyncio.run(taker.take("k", "How to Glorp", "", [Turn(role="teacher", text="Fold.")], steps))
    assert test.error is None and L.likelihood_gain(test.post, test.pre) == pytest.approx(1.5)


def test_a_hanging_likelihood_server_is_a_recorded_failure_within_the_timeout():
    import asyncio

    from wikihowagent.records import Turn
    from wikihowagent.workflow import likelihood as L

    with EchoServer(lambda p: "hang") as srv:
        taker = L.LikelihoodTaker(L.StepLikelihood(srv.root, "m", "echo", timeout_s=0.5))
        test = asyncio.run(taker.take("k", "How to Glorp", "", [Turn(role="teacher", text="x")], ["A b.", "C d."]))
    assert test.error is not None and "the connection failed" in test.error and "ReadTimeout" in test.error


def test_grammar_tokens_that_do_not_join_back_are_a_failure():
    import asyncio

    from wikihowagent.workflow import likelihood as L

    text = "1. Fold it.\n2. Dry it.\n"
    probs = [{"token": "1.", "bytes": list(b"1."), "logprob": -1.0}, {"token": " Dry", "bytes": list(b" Dry"),
                                                                      "logprob": -1.0}]  # fmt: skip
    with EchoServer(lambda p: {"content": text, "completion_probabilities": probs}) as srv:
        reader = L.StepLikelihood(srv.root, "m", "grammar", timeout_s=5)
        with pytest.raises(L.LikelihoodError, match="do not join back to the text sent"):
            asyncio.run(reader.score("ctx\n", ["Fold it.", "Dry it."]))
