"""The embedded judge judges one conversation per server slot (evaluate's and judge-check's
default concurrency), so the rubric calls of two conversations do not interleave on one slot's prompt cache."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.backends import local
from wikihowagent.judge.request import ScoringRequest
from wikihowagent.scores.runner import EvalOptions, judge_concurrency

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"


class InFlight:
    """A fake judge that answers " 4" slowly and records the most requests it served at once."""

    def __init__(self):
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, prompt):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.15)  # long enough for a second conversation's call to arrive if one is allowed
        with self.lock:
            self.now -= 1
        return [(" ", {" ": 1.0}), ("4", {"4": 0.7, "5": 0.3}), ("", {"": 1.0})]


def _embedded(monkeypatch, base_url: str, slots: int) -> None:
    """Make `base_url` look like the embedded llama.cpp server with `slots` slots."""
    srv = local.LocalServer(
        ("fake",), Path("fake.gguf"), "fake-model", base_url.removesuffix("/v1"), 4096, slots, 1, 0.0
    )
    monkeypatch.setitem(local._SERVERS, srv.key, srv)


def _judge_run(tmp_path, monkeypatch, *extra: str) -> int:
    """Evaluate the fixture run against a fake embedded judge of one slot; the most requests it served at once."""
    from wikihowagent.cli import app

    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    fake = InFlight()
    with FakeOpenAI(logprobs=fake) as srv:
        _embedded(monkeypatch, srv.base_url, slots=1)
        res = CliRunner().invoke(
            app,
            [
                "evaluate",
                str(run),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--no-figures",
                "--metrics",
                "Clarity,Depth",
                *extra,
            ],
        )
    assert res.exit_code == 0, res.output
    return fake.most


def test_embedded_judge_takes_one_conversation_per_slot(tmp_path, monkeypatch):
    # the config's concurrency is 2: before the fix two conversations interleaved on the one slot
    assert _judge_run(tmp_path, monkeypatch) == 1


def test_concurrency_flag_and_other_judges_keep_their_concurrency(tmp_path, monkeypatch):
    assert _judge_run(tmp_path, monkeypatch, "--concurrency", "3") > 1  # asked for: kept

    class Model:
        openai_api_base = "http://127.0.0.1:1/v1"

    assert judge_concurrency(EvalOptions(default_concurrency=5), Model()) == 5  # not an embedded server
    _embedded(monkeypatch, Model.openai_api_base, slots=2)
    assert judge_concurrency(EvalOptions(default_concurrency=5), Model()) == 2
    assert judge_concurrency(EvalOptions(default_concurrency=5, asked=ScoringRequest(concurrency=4)), Model()) == 4
