"""`evaluate --workers N`: the computational metrics of a chunk of conversations computed by N processes at once.

Each worker process holds its own `computational.Scorers`, made once when it starts: the encoder (on one CPU thread),
WordNet, and each tutorial's prepared reference (tokens, WordNet look-ups, encodings), kept for the conversations
that follow. A chunk's conversations are handed out one at a time, longest first, and their scores come back in
the chunk's order, so scores.jsonl, shards and a resume are as with one process. A conversation's metrics are
computed from that conversation alone (the encoder's values do not depend on what is encoded beside them), so the
numbers are the same for every N. N = 1 computes them in the evaluate process itself, without a worker.

Workers are started by a fork server that has imported the heavy modules once (torch, transformers, nltk), never
by forking a process whose torch threads have started; they ignore Ctrl-C, which the evaluate process handles:
it stops handing out conversations, lets each worker finish the one it holds, and exits as before.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from wikihowagent.processes import pool_context

from .computational import Scorers, embedding_metrics
from .encoder import MetricError

# What the fork server imports once, so that each worker it forks starts with them loaded: the text metrics' modules,
# and with an embedding metric the encoder's (its model classes are most of a worker's start: about 3 s of CPU each).
PRELOAD = ["nltk.corpus.reader.wordnet", "nltk.translate.meteor_score", "nltk.tokenize", "sacrebleu.metrics"]
PRELOAD_ENCODER = [
    "torch",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "transformers.models.bert.modeling_bert",
    "transformers.models.bert.tokenization_bert_fast",
    "bert_score.utils",
]
_WORKER: dict[str, Any] = {}  # in a worker process: its Scorers ("scorers") or why it could not make them ("error")


def make_scorers(mode: str, metrics: Iterable[str], batch_size: int, device: str, workers: int) -> Any:
    """The scorers of `evaluate`: a `computational.Scorers` in this process when `workers` is 1, else a `ScorerPool` of
    `workers` processes (each with its own Scorers). Both have `score(convs) -> list[ConvScores]` and `close()`."""
    if workers <= 1:
        return Scorers(mode, metrics, batch_size=batch_size, device=device)
    return ScorerPool(mode, list(metrics), batch_size, device, workers)


def _context(encoder: bool) -> Any:
    """The workers' pool context, its fork server preloaded with `PRELOAD` (and `PRELOAD_ENCODER` when the
    `encoder` is used)."""
    return pool_context([*PRELOAD, *(PRELOAD_ENCODER if encoder else []), "wikihowagent.metrics.computational"])


def _start(mode: str, metrics: list[str], batch_size: int, device: str, alive: Any) -> None:
    """A worker's initializer: Ctrl-C ignored (the evaluate process handles it); exit when the evaluate process is
    gone, even killed (`_exit_with`); its Scorers made and the encoder loaded now, or the error that prevented it
    kept for the first job to raise (one line in the evaluate process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with, args=(alive,), daemon=True).start()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one core per worker: no tokenizer threads beside it
    try:
        scorers = Scorers(mode, metrics, batch_size=batch_size, device=device)
        if any(m.batch for m in scorers.selected):
            scorers.minilm  # noqa: B018  (loaded now, while the evaluate process reads its inputs)
            if scorers.device == "cpu":
                scorers.minilm.torch.set_num_threads(1)  # the encoder's one thread (`encoder.one_cpu_thread`)
        _WORKER["scorers"] = scorers
    except MetricError as exc:
        _WORKER["error"] = exc


def _exit_with(alive: Any) -> None:
    """Wait on the reading end of a pipe whose writing end only the evaluate process holds: when that process ends
    (also by SIGKILL, which a worker waiting for its next conversation would never notice), end this one."""
    try:
        alive.recv_bytes()
    except (EOFError, OSError):
        pass
    os._exit(0)


def _ready() -> None:
    if "error" in _WORKER:
        raise _WORKER["error"]


def _score(conv: Any) -> Any:
    _ready()
    return _WORKER["scorers"].score([conv])[0]


def _size(conv: Any) -> int:
    return sum(len(m.text) for m in conv.messages)


class ScorerPool:
    """`Scorers.score` over `workers` processes: each conversation of a chunk is one job, the longest first (the
    chunk ends when its last job does); the scores come back in the chunk's order.

    The workers start when the first chunk of at least MIN_PER_WORKER conversations per worker is to be scored (no
    worker for a pass with nothing to compute); a smaller chunk before that is scored in this process, where
    starting the workers would cost more than it saves. An error starting them (WordNet or the encoder missing) is
    raised as the MetricError it is."""

    MIN_PER_WORKER = 2

    def __init__(self, mode: str, metrics: list[str], batch_size: int, device: str, workers: int):
        self.workers = workers
        self._args = (mode, metrics, batch_size, device)
        self._pool: ProcessPoolExecutor | None = None
        self._alive: Any = None  # the writing end of the workers' `_exit_with` pipe
        self._local: Any = None  # a Scorers in this process, for small chunks before the workers start

    def score(self, convs: list[Any]) -> list[Any]:
        if self._pool is None and len(convs) < self.MIN_PER_WORKER * self.workers:
            if self._local is None:
                mode, metrics, batch_size, device = self._args
                self._local = Scorers(mode, metrics, batch_size=batch_size, device=device)
            return self._local.score(convs)
        pool = self._started()
        order = sorted(range(len(convs)), key=lambda i: -_size(convs[i]))
        jobs = {i: pool.submit(_score, convs[i]) for i in order}
        self._wait(list(jobs.values()))
        return [jobs[i].result() for i in range(len(convs))]

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            ctx = _context(encoder=bool(set(self._args[1]) & embedding_metrics()))
            alive, self._alive = ctx.Pipe(duplex=False)  # this process keeps the writing end, the workers the other
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=_start, initargs=(*self._args, alive)
            )
            self._wait([self._pool.submit(_ready) for _ in range(self.workers)])  # every worker started and ready
        return self._pool

    def _wait(self, jobs: list[Future[Any]]) -> None:
        """Every job's result (the first failure raised as it is); on a failure or Ctrl-C the jobs not started are
        cancelled. A worker that died (killed, out of memory) is one MetricError line."""
        try:
            for job in jobs:
                job.result()
        except BrokenProcessPool:
            raise MetricError(
                "a metrics worker process ended unexpectedly (killed, or out of memory?): rerun to resume, with "
                "fewer --workers if memory is short"
            ) from None
        finally:
            for job in jobs:
                job.cancel()

    def close(self) -> None:
        """Stop handing out conversations; each worker finishes the one it holds, then every worker exits."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._alive.close()
