"""Real-size runs for the report benchmark: N conversations in the record layout `generate` writes
(conversations.jsonl with structured turns and the paper's conversation lines, run.json) with scores as
`evaluate` writes them (scores.jsonl), their texts drawn, seeded, from the paper's human-study conversations
(`shared/human-study/conversations`, the paper's run-file format) under new ids.

Each of the `runs` runs (one per model) covers the same tutorials, as the paper's 8 models cover its 14,287:
tutorial t of every run takes one of the study's tutorials and, per run, the conversation one of the study's
models had about it, so a conversation's length and words are a real one's. About 1 % of the conversations
failed (no scores) and 5 % were cut, as in a real sweep.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from pathlib import Path
from typing import Any

from wikihowagent.paper_format import domain_of, load_paper_file, split_lines
from wikihowagent.records import ConversationRecord, Turn, TutorialRef, conversation_lines, paper_tutorial_key

STUDY = "shared/human-study/conversations"


def study_dir(root: Path) -> Path:
    """The paper's human-study conversations (70): beside the clone, else under $WIKIHOWAGENT_SHARED, else
    /work/shared; without them the paper's run file among this repository's test fixtures (2 conversations)."""
    shared = os.environ.get("WIKIHOWAGENT_SHARED")
    for d in (root.parent / STUDY, *([Path(shared) / STUDY.split("/", 1)[1]] if shared else []), Path("/work") / STUDY):
        if d.is_dir():
            return d
    return root / "tests" / "fixtures" / "evaluation"


def study_tutorials(texts: Path) -> list[list[dict[str, Any]]]:
    """The study's records grouped by tutorial (each group: that tutorial's conversations, one per model)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(Path(texts).glob("T-*_L-*_E-*.json")):
        records, _ = load_paper_file(f)
        for obj in records:
            key = paper_tutorial_key(obj.get("title"), obj.get("doc_id"), obj.get("method_id"))
            groups.setdefault(key, []).append(obj)
    return [groups[k] for k in sorted(groups)]


def _turns(lines: list[str], steps: int, rng: random.Random) -> list[Turn]:
    """The paper's lines as generate's turns: the step under discussion, tokens and latency of each reply."""
    turns = split_lines(lines)
    teachers = max(1, sum(t.role == "teacher" for t in turns))
    seen, history = 0, 0
    for t in turns:
        seen += t.role == "teacher"
        t.step = min(steps - 1, (seen * steps) // (teachers + 1))
        t.completion_tokens = max(1, len(t.text) // 4)
        t.prompt_tokens = min(4096, 250 + history // 4)
        t.latency_s = round(t.completion_tokens / rng.uniform(15.0, 25.0), 3)
        history += len(t.text)
        if t.kind == "model" and t.role == "learner" and "?" in t.text:
            t.kind = "clarification" if rng.random() < 0.5 else "model"
    return turns


def conversation(src: dict[str, Any], run: str, t: int, teacher: str, rng: random.Random) -> ConversationRecord:
    """One conversation of tutorial `t` in run `run`, its text the study's conversation `src`."""
    tut = src["tutorial"]
    turns = _turns(src["conversation"], len(tut["steps"]), rng)
    fate = rng.random()
    failed, cut = fate < 0.01, 0.01 <= fate < 0.06
    if failed or cut:
        turns = turns[: max(2, len(turns) // 2)]
    return ConversationRecord(
        conversation_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        tutorial_id=f"{t:016x}",
        doc_id=t,
        method_id=int(src.get("method_id") or 0),
        source_tutorial_path=str(src.get("source_tutorial_path") or ""),
        title=f"{src['title']} ({t})",
        categories=list(src.get("categories") or []),
        topic=str((src.get("categories") or [""])[-1]),
        domain=domain_of(src),
        summary=str(src.get("summary") or ""),
        tutorial=TutorialRef(title=tut["title"], steps=tut["steps"]),
        conversation=conversation_lines(turns),
        turns=turns,
        finished=not (failed or cut),
        stop_reason="error" if failed else ("max_interactions" if cut else "finished"),
        error="TimeoutError: the server did not answer in 600 s" if failed else None,
        teacher=teacher,
        learner=teacher,
        persona="paper",
        manager="rules",
        started_at="2026-12-01T10:00:00+00:00",
        ended_at="2026-12-01T10:03:12+00:00",
    )


def write_real_size(root: Path, n: int, runs: int, texts: Path, seed: int = 0) -> Path:
    """A sweep-like directory `root` of `runs` evaluated runs with `n` conversations in all (written once:
    a `done` marker with the same parameters makes this a no-op). -> root."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "report"))
    from report_builders import score

    key = {"n": n, "runs": runs, "seed": seed, "texts": str(texts)}
    done = Path(root) / ".done.json"
    if done.exists() and json.loads(done.read_text()) == key:
        return Path(root)
    groups = study_tutorials(texts)
    per_run = n // runs
    for r in range(runs):
        name, teacher = f"T-model{r}_L-model{r}_E-judge", f"model{r}"
        d = Path(root) / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "run.json").write_text(
            json.dumps(
                {"name": name, "teacher": teacher, "learner": teacher, "evaluator": "judge", "status": "complete"}
            )
        )
        rng = random.Random(seed * 1_000_003 + r)
        with open(d / "conversations.jsonl", "w") as cf, open(d / "scores.jsonl", "w") as sf:
            for t in range(per_run + (n % runs if r == runs - 1 else 0)):
                group = groups[random.Random(seed * 7_919 + t).randrange(len(groups))]
                rec = conversation(group[(t + r) % len(group)], name, t, teacher, rng)
                cf.write(json.dumps(rec.model_dump(mode="json"), ensure_ascii=False) + "\n")
                if rec.error is None:
                    s = score(rec, name, rng, 0.1 * r - 0.3, full=True)
                    sf.write(json.dumps(s.model_dump(mode="json"), ensure_ascii=False) + "\n")
    done.write_text(json.dumps(key))
    return Path(root)
