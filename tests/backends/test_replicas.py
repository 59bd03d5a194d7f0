"""Server replicas (least-busy routing, resting a dead replica) and short outages, against scripted
OpenAI-compatible servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

from fake_servers import FakeOpenAI, LocalServer, scripted_reply
from typer.testing import CliRunner

from wikihowagent.backends.replicas import Replica, ReplicaPool
from wikihowagent.cli import app
from wikihowagent.jsonlio import iter_jsonl

runner = CliRunner()


def flat(res) -> str:
    """The output with line wrapping undone (rich wraps at 80 columns without a terminal)."""
    return " ".join(res.output.split())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(tmp_path, **replicas) -> str:
    p = tmp_path / "cfg.yaml"
    knobs = ", ".join(f"{k}: {v}" for k, v in replicas.items())
    p.write_text(f"model: {{max_retries: 0, timeout_s: 10}}\nreplicas: {{{knobs}}}\n")
    return str(p)


def generate(tmp_path, *urls, extra=()):
    args = [
        "generate",
        "--teacher",
        "openai:fake-model",
        "--out",
        str(tmp_path / "run"),
        "--max-tutorials",
        "4",
        "--concurrency",
        "2",
        *[a for u in urls for a in ("--base-url", u)],
        *extra,
    ]
    return runner.invoke(app, args)


def records(tmp_path):
    return [o for _, o in iter_jsonl(tmp_path / "run" / "conversations.jsonl")]


def test_least_busy_routing_spreads_requests():
    pool = ReplicaPool([Replica("a", None), Replica("b", None), Replica("c", None)])  # type: ignore[arg-type]

    async def go():
        got = [await pool.acquire() for _ in range(6)]
        pool.release(got[0], None)
        return got, await pool.acquire()

    got, nxt = asyncio.run(go())
    assert sorted(r.url for r in got) == ["a", "a", "b", "b", "c", "c"]
    assert nxt is got[0]  # the one with a free slot


def test_two_replicas_share_the_load(tmp_path):
    def slow(prompt):
        time.sleep(0.05)
        return scripted_reply(prompt)

    with FakeOpenAI(reply=slow) as a, FakeOpenAI(reply=slow) as b:
        res = generate(tmp_path, a.base_url, b.base_url, extra=["--config", config(tmp_path)])
        assert res.exit_code == 0, res.output
        assert len(a.requests) > 5 and len(b.requests) > 5
    assert len(records(tmp_path)) == 4 and all(r["finished"] for r in records(tmp_path))


def test_a_dead_replica_is_rested_and_the_run_goes_on(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with FakeOpenAI() as live:
        res = generate(tmp_path, dead, live.base_url, extra=["--config", config(tmp_path, fail_threshold=1, rest_s=30)])
        assert res.exit_code == 0, res.output
        assert "going on with the others" in flat(res)
    recs = records(tmp_path)
    assert len(recs) == 4 and all(r["finished"] and not r["error"] for r in recs)


def test_short_outage_pauses_and_probes_instead_of_failing_everything(tmp_path):
    """The server goes away for ~2 s mid-run: requests wait and the server is probed; nothing fails."""
    state = {"n": 0, "down": False}
    holder = {}

    def outage():
        srv = holder["srv"]
        port, handler = srv.server.server_address[1], srv.server.RequestHandlerClass
        srv.server.shutdown()
        srv.server.server_close()
        time.sleep(2.0)
        srv.server = LocalServer(("127.0.0.1", port), handler)
        threading.Thread(target=srv.server.serve_forever, daemon=True).start()

    def reply(prompt):
        state["n"] += 1
        if state["n"] == 6 and not state["down"]:
            state["down"] = True
            threading.Thread(target=outage, daemon=True).start()
        time.sleep(0.05)
        return scripted_reply(prompt)

    with FakeOpenAI(reply=reply) as srv:
        holder["srv"] = srv
        res = generate(
            tmp_path, srv.base_url, extra=["--config", config(tmp_path, fail_threshold=1, rest_s=0.3, outage_wait_s=30)]
        )
        assert state["down"]
        assert res.exit_code == 0, res.output
        assert "no replica answers; pausing requests" in flat(res)
    recs = records(tmp_path)
    assert len(recs) == 4 and all(r["finished"] and not r["error"] for r in recs)


def test_a_long_outage_still_fails_after_the_wait(tmp_path):
    """Down for good after the first requests: conversations fail (recorded) once outage_wait_s has passed."""
    state = {"n": 0}
    holder = {}

    def reply(prompt):
        state["n"] += 1
        if state["n"] == 3:
            srv = holder["srv"]
            threading.Thread(target=lambda: (srv.server.shutdown(), srv.server.server_close()), daemon=True).start()
        return scripted_reply(prompt)

    with FakeOpenAI(reply=reply) as srv:
        holder["srv"] = srv
        start = time.monotonic()
        res = generate(
            tmp_path,
            srv.base_url,
            extra=["--config", config(tmp_path, fail_threshold=1, rest_s=0.2, outage_wait_s=1.5)],
        )
        elapsed = time.monotonic() - start
    assert res.exit_code == 1, res.output
    recs = records(tmp_path)
    assert len(recs) == 4 and sum(1 for r in recs if r["error"]) >= 2
    assert any("no replica reachable for 2 s" in (r["error"] or "") for r in recs)
    assert elapsed < 60


def test_a_replica_answering_500_is_rested_and_its_requests_go_to_the_others(tmp_path):
    """GOOD, DEAD, ERR500, SLOW at --concurrency 8: no conversation fails, the dead replica
    is warned about once."""
    dead = f"http://127.0.0.1:{free_port()}/v1"

    def slow(prompt):
        time.sleep(0.05)
        return scripted_reply(prompt)

    with FakeOpenAI() as good, FakeOpenAI(fail_when=lambda p: True) as err, FakeOpenAI(reply=slow) as slw:
        args = [
            "generate",
            "--teacher",
            "openai:fake-model",
            "--out",
            str(tmp_path / "run"),
            "--max-tutorials",
            "6",
            "--concurrency",
            "8",
            "--config",
            config(tmp_path, fail_threshold=2, rest_s=30, outage_wait_s=5),
        ]
        for u in (good.base_url, dead, err.base_url, slw.base_url):
            args += ["--base-url", u]
        res = runner.invoke(app, args)
        assert err.requests  # it was asked, answered 500, and was rested
        assert len(err.requests) <= 8 + 2  # the requests in flight when it failed, then no more until the rest ends
    assert res.exit_code == 0, res.output
    recs = records(tmp_path)
    assert len(recs) == 6 and all(r["finished"] and not r["error"] for r in recs), [r["error"] for r in recs]
    out = flat(res)
    assert out.count("going on with the others") == 1, res.output
    assert "answers with server errors" in out and "HTTP 500" in out


def test_a_request_fails_only_when_every_replica_fails_it(tmp_path):
    with FakeOpenAI(fail_when=lambda p: True) as a, FakeOpenAI(fail_when=lambda p: True) as b:
        res = generate(
            tmp_path, a.base_url, b.base_url, extra=["--config", config(tmp_path, fail_threshold=100, outage_wait_s=1)]
        )
        asked = len(a.requests), len(b.requests)
    assert res.exit_code == 1, res.output
    recs = records(tmp_path)
    assert len(recs) == 4 and all(r["error"] and "scripted server error" in r["error"] for r in recs), recs
    assert asked == (4, 4)  # each conversation's first request: once to each replica, then the conversation fails
