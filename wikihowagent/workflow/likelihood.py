"""The likelihood post-test: how probable the learner model finds the tutorial's own steps, given the lesson
and given the title only (no sampling; docs/methodology/metrics.md "Likelihood Gain").

For a text T = "1. <step 1>\\n2. <step 2>\\n..." (the tutorial's steps in its order) and a context C, the model's
log-probability of every token of T after C is read (teacher forcing), and each step's score is the mean
log-probability per token of its own text (its number and line break left out). Two contexts:

- pre:  "Method: <title>: <method>\\n\\nIts <n> steps, in order:\\n"
- post: the lesson as the learner saw it ("Teacher: ..." / "You: ...") + "\\n\\n" + the pre context.

Likelihood Gain = mean over steps of (post - pre), in nats per token: > 0 when the lesson made the tutorial's
own wording more probable. Two ways to read log-probabilities of a given text (`TRANSPORTS`):

- "echo": an OpenAI-compatible `/v1/completions` with `echo: true, logprobs: 1, max_tokens: 1` (vLLM serves it):
  the prompt's token log-probabilities come back with their character offsets.
- "grammar": the llama.cpp server (the embedded `local` backend, xllamacpp): its `/v1/completions` refuses
  echo ("Only no echo is supported") and no endpoint returns the log-probabilities of prompt tokens. Its native
  `/completion` can instead be made to *generate* exactly T: a GBNF grammar whose only sentence is T forces
  every token, and `n_probs: 1, post_sampling_probs: false` reports each chosen token's log-probability
  under the model's raw distribution (before the grammar and the samplers). Temperature 0. One decoded
  token per token of T (no batched prompt pass), so it is slower than echo; the tokenisation is the one the
  model prefers under the grammar, which can differ from the canonical one.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wikihowagent.backends import capabilities
from wikihowagent.errors import WikihowagentError
from wikihowagent.records import LikelihoodTest, Turn

TRANSPORTS = ("echo", "grammar")


class LikelihoodError(WikihowagentError, RuntimeError):
    """The server cannot give log-probabilities of a given text, or its reply is not what was asked."""


@dataclass(frozen=True)
class StepLogprobs:
    """Mean log-probability per token of each step (None: no token of it came back), tokens per step, seconds."""

    means: list[float | None]
    tokens: list[int]
    latency_s: float


def contexts(title: str, method: str, n: int, transcript: str | None) -> str:
    head = (
        f"Method: {title}: {method}\n\nIts {n} steps, in order:\n"
        if method
        else f"Method: {title}\n\nIts {n} steps, in order:\n"
    )
    return head if transcript is None else f"{transcript}\n\n{head}"


def forced_text(steps: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The numbered step list and each step's (start, end) character span in it."""
    text, spans = "", []
    for k, step in enumerate(steps, 1):
        text += f"{k}. "
        spans.append((len(text), len(text) + len(step)))
        text += step + "\n"
    return text, spans


def gbnf_literal(text: str) -> str:
    """A GBNF grammar whose only sentence is `text`."""
    esc = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'root ::= "{esc}"'


def per_step(
    offsets: Sequence[int],
    tokens: Sequence[str],
    logprobs: Sequence[float | None],
    spans: Sequence[tuple[int, int]],
    start: int,
) -> tuple[list[float | None], list[int]]:
    """Tokens (texts at character `offsets`; the forced text begins at `start`) -> mean logprob per step span.
    A token belongs to the step its first non-space character falls in (a token carries the space before its
    word, " Fold", and a step's last period may come with the line break, ".\n"); tokens of the numbers and
    line breaks belong to none. A logprob that is not a finite number <= 0 is a bad reply."""
    sums = [0.0] * len(spans)
    counts = [0] * len(spans)
    for off, tok, lp in zip(offsets, tokens, logprobs, strict=True):  # checked alike by `check_tokens`
        lead = len(tok) - len(tok.lstrip())
        if lead == len(tok):
            continue  # whitespace only, or empty (the end of text)
        pos = off + lead - start
        for i, (a, b) in enumerate(spans):
            if a <= pos < b:
                if isinstance(lp, bool) or not isinstance(lp, (int, float)) or not math.isfinite(lp) or lp > 1e-6:
                    raise LikelihoodError(f"log-probability {lp!r} of a token of step {i + 1}: not a number <= 0")
                sums[i] += lp
                counts[i] += 1
                break
    return [s / c if c else None for s, c in zip(sums, counts, strict=True)], counts


def check_tokens(where: str, offsets: Any, tokens: Any, logprobs: Any, sent: str) -> None:
    """A server's token arrays are one entry per token (as many offsets and log-probabilities as tokens), the
    tokens are strings at integer offsets, and they join back to the text sent (`sent`, the prompt: the reply
    may go on after it) at those offsets; else a LikelihoodError: log-probabilities of other text than the
    steps' would be a Likelihood Gain of nothing. A token that is only part of a character (U+FFFD in its
    text, as some servers send a byte-fallback token) cannot be joined back: then the offsets are only
    checked to rise."""
    if not all(isinstance(x, list) for x in (offsets, tokens, logprobs)):
        raise LikelihoodError(f"{where}: tokens, offsets and log-probabilities must be lists")
    if not all(isinstance(t, str) for t in tokens):
        raise LikelihoodError(f"{where}: tokens must be strings")
    if not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets):
        raise LikelihoodError(f"{where}: text offsets must be integers")
    if len(logprobs) != len(tokens):
        raise LikelihoodError(f"{where}: {len(logprobs)} log-probabilities for {len(tokens)} tokens")
    if len(offsets) != len(tokens):
        raise LikelihoodError(f"{where}: {len(offsets)} offsets for {len(tokens)} tokens")
    joined = "".join(tokens)
    if "\ufffd" in joined and "\ufffd" not in sent:
        if any(b < a for a, b in zip(offsets, offsets[1:], strict=False)):
            raise LikelihoodError(f"{where}: the token offsets go backwards")
        return
    pos = offsets[0] if offsets else 0
    ok = joined[: len(sent) - pos] == sent[pos:] and len(joined) >= len(sent) - pos
    for off, tok in zip(offsets, tokens, strict=True):
        ok = ok and off == pos
        pos += len(tok)
    if not ok or (offsets and offsets[0] != 0):
        raise LikelihoodError(
            f"{where}: the tokens ({joined[:40]!r}...) do not join back to the text sent ({sent[:40]!r}...) at "
            "their offsets: no log-probabilities of the steps (does the server ignore echo?)"
        )


class StepLikelihood:
    """Reads step log-probabilities from one server: `root` is its URL without /v1, `model` its model name."""

    def __init__(self, root: str, model: str, transport: str, timeout_s: float = 1800.0):
        if transport not in TRANSPORTS:
            raise LikelihoodError(f"likelihood transport {transport!r}: expected one of {', '.join(TRANSPORTS)}")
        self.root, self.model, self.transport, self.timeout_s = root.rstrip("/"), model, transport, timeout_s

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                resp = await client.post(self.root + path, json=body)
        except httpx.HTTPError as exc:  # refused, reset mid-reply, timed out: recorded, taken again on a rerun
            raise LikelihoodError(
                f"{self.root}{path}: the connection failed ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})"
            ) from None
        if resp.status_code != 200:
            raise LikelihoodError(f"{self.root}{path}: HTTP {resp.status_code}: {' '.join(resp.text.split())[:200]}")
        try:
            reply = resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise LikelihoodError(f"{self.root}{path}: the reply is not JSON") from None
        if not isinstance(reply, dict):
            raise LikelihoodError(f"{self.root}{path}: the reply is not a JSON object")
        return reply

    async def score(self, context: str, steps: Sequence[str]) -> StepLogprobs:
        text, spans = forced_text(steps)
        t0 = time.perf_counter()
        if self.transport == "echo":
            means, counts = await self._score_echo(context, text, spans)
        else:
            means, counts = await self._score_grammar(context, text, spans)
        return StepLogprobs(means, counts, round(time.perf_counter() - t0, 3))

    async def _score_echo(
        self, context: str, text: str, spans: Sequence[tuple[int, int]]
    ) -> tuple[list[float | None], list[int]]:
        """The steps' log-probabilities from an echoed prompt (`/v1/completions`, echo with logprobs)."""
        reply = await self._post(
            "/v1/completions",
            {
                "model": self.model,
                "prompt": context + text,
                "max_tokens": 1,
                "temperature": 0.0,
                "echo": True,
                "logprobs": 1,
            },
        )
        try:
            lp = reply["choices"][0]["logprobs"]
            offsets, values, texts = lp["text_offset"], lp["token_logprobs"], lp["tokens"]
        except (KeyError, IndexError, TypeError):
            raise LikelihoodError(
                f"{self.root}/v1/completions: no echoed prompt log-probabilities in the reply "
                "(the server must support echo with logprobs, as vLLM does)"
            ) from None
        check_tokens(f"{self.root}/v1/completions", offsets, texts, values, context + text)
        return per_step(offsets, texts, values, spans, len(context))

    async def _score_grammar(
        self, context: str, text: str, spans: Sequence[tuple[int, int]]
    ) -> tuple[list[float | None], list[int]]:
        """The steps' log-probabilities from the llama.cpp server made to generate exactly `text` (a grammar)."""
        reply = await self._post(
            "/completion",
            {
                "prompt": context,
                "grammar": gbnf_literal(text),
                "n_predict": len(text.encode()) + 8,
                "temperature": 0.0,
                "n_probs": 1,
                "post_sampling_probs": False,
                "cache_prompt": False,
            },
        )
        probs = reply.get("completion_probabilities")
        if not isinstance(probs, list) or reply.get("content") != text:
            raise LikelihoodError(
                f"{self.root}/completion: the grammar did not force the text (got "
                f"{str(reply.get('content'))[:60]!r}); is it a llama.cpp server?"
            )
        offsets, texts, values, pos = [], [], [], 0
        raw = b""
        try:
            for p in probs:  # a token's bytes can end inside a character: its text is what its bytes decode to
                got = bytes(p["bytes"]) if p.get("bytes") else str(p.get("token", "")).encode()
                tok = got.decode("utf-8", "ignore")
                raw += got
                offsets.append(pos)
                texts.append(tok)
                values.append(p.get("logprob"))
                pos += len(tok)
        except (TypeError, ValueError, AttributeError):
            raise LikelihoodError(f"{self.root}/completion: a token of the reply is not a token") from None
        if raw != text.encode():
            raise LikelihoodError(
                f"{self.root}/completion: the tokens ({raw[:40]!r}...) do not join back to the text sent "
                f"({text[:40]!r}...): no log-probabilities of the steps"
            )
        return per_step(offsets, texts, values, spans, 0)


def for_chat_model(model: Any, transport: str | None = None) -> StepLikelihood:
    """The reader for a LangChain chat model made by backends.make_chat_model: its server and model name; the
    embedded llama.cpp server (`local`) reads by grammar, any other OpenAI-compatible server by echo (the
    model's `Capabilities.likelihood`)."""
    base = str(getattr(model, "openai_api_base", "") or "")
    name = str(getattr(model, "model_name", "") or "")
    how = capabilities(model).likelihood
    if not base or how is None:
        raise LikelihoodError(
            f"{type(model).__name__}: not an OpenAI-compatible model (no base URL): the "
            "likelihood post-test needs /v1/completions with echo, or a llama.cpp server"
        )
    root = base[:-3] if base.rstrip("/").endswith("/v1") else base
    return StepLikelihood(root.rstrip("/"), name, transport or how)


def likelihood_gain(post: Sequence[float | None], pre: Sequence[float | None]) -> float | None:
    """Mean over steps of post - pre (nats per token); None when no step has both."""
    diffs = [a - b for a, b in zip(post, pre, strict=False) if a is not None and b is not None]
    return sum(diffs) / len(diffs) if diffs else None


class LikelihoodTaker:
    """Takes the likelihood post-test of conversations with one reader: the lesson read per conversation, the
    title-only read once per tutorial (shared by concurrent conversations of it). A server error is recorded
    in the test's `error` (not scored), never raised."""

    def __init__(self, reader: StepLikelihood):
        self.reader = reader
        self._pre: dict[str, asyncio.Task[StepLogprobs]] = {}

    async def take(
        self, key: str, title: str, method_title: str, turns: Sequence[Turn], steps: Sequence[str]
    ) -> LikelihoodTest:
        from wikihowagent.workflow.posttest import transcript

        n = len(steps)
        fresh = key not in self._pre
        if fresh:
            self._pre[key] = asyncio.ensure_future(self.reader.score(contexts(title, method_title, n, None), steps))
        try:
            post = await self.reader.score(contexts(title, method_title, n, transcript(turns)), steps)
            pre = await asyncio.shield(self._pre[key])
        except LikelihoodError as exc:
            if self._pre[key].done() and self._pre[key].exception() is not None:
                self._pre.pop(key, None)  # a later conversation of the tutorial asks again
            return LikelihoodTest(transport=self.reader.transport, error=str(exc))
        return LikelihoodTest(
            transport=self.reader.transport,
            post=post.means,
            pre=pre.means,
            post_tokens=post.tokens,
            pre_tokens=pre.tokens,
            latency_s=post.latency_s,
            pre_latency_s=pre.latency_s if fresh else 0.0,
        )
