"""Learner personas on the embedded model: BENCHMARKS.md section "personas".

For each persona, `wikihowagent generate --learner-persona P --max-tutorials N` (by default the three
`make demo` tutorials: domains Home & Garden, Pets & Animals, Technology; embedded model, default seed,
replies capped at --max-tokens, conversations cut at --max-interactions messages: the shared 2-core machine
allows no more) into OUT/P, then `wikihowagent evaluate OUT/P --no-judge` for the
Question Ratio and Completion, plus counts read from the records: clarifications and messages per
conversation, how many clarification answers stay on their step (the step's words overlap the answer more
than any other step's), turn-check retries and turn warnings. Runs are resumable: rerunning skips what is
done, so personas can be measured in several sittings; the table covers every persona found under OUT.

    python -m benchmarks personas [--personas curious,passive] [--tutorials 3] [--max-tokens 64] [--max-interactions 10]
                                     [--out runs/bench-personas] [--write-md]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.harness import ROOT, Section, model_lock, write_section

ORDER = ("paper", "curious", "novice", "passive", "skeptical", "distracted", "expert")
DEMO_DOMAINS = ("Home & Garden", "Pets & Animals", "Technology")  # the Makefile's DEMO_ARGS


def cli(*args: str) -> int:
    cmd = [sys.executable, "-c", "from wikihowagent.cli import main; main()", *args]
    return subprocess.run(cmd, cwd=ROOT).returncode


def persona_run(run: Path, persona: str, tutorials: int, max_tokens: int, max_interactions: int, *extra: str) -> None:
    """`generate` a persona run of the `make demo` tutorials on the embedded model into RUN (resumable), then
    `evaluate --no-judge` its Question Ratio and Completion; exits on a failure."""
    domains = [x for d in DEMO_DOMAINS for x in ("--domain", d)]
    code = cli(
        "generate",
        "--teacher",
        "local",
        "--learner-persona",
        persona,
        *extra,
        "--max-tutorials",
        str(tutorials),
        "--max-tokens",
        str(max_tokens),
        "--max-interactions",
        str(max_interactions),
        *domains,
        "--concurrency",
        "1",
        "--timeout",
        "1800",
        "--out",
        str(run),
    )
    if code not in (0, 1):
        sys.exit(f"generate {persona}: exit {code}")
    if cli("evaluate", str(run), "--no-judge", "--metrics", "Question Ratio,Completion", "--no-figures") != 0:
        sys.exit(f"evaluate {persona}: failed")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower())}


def on_step(answer: str, steps: list[str], step: int) -> bool:
    """The answer shares more words with its own step than with any other step of the tutorial."""
    a = _words(answer)
    overlaps = [len(a & _words(s)) for s in steps]
    return overlaps[step] >= max(overlaps) and overlaps[step] > 0


def measure(run: Path) -> dict[str, float]:
    from wikihowagent.layout import CONVERSATIONS, SCORES
    from wikihowagent.records_io import read_records
    from wikihowagent.runs import iter_scores

    records = [rec for _, rec in read_records(run / CONVERSATIONS)]
    scores = [rec for _, rec in iter_scores(run / SCORES)]
    n = len(records)
    clar = [(t, r) for r in records for t in r.turns if t.role == "teacher" and t.kind == "clarification"]
    qr = [v for s in scores if (v := s.metrics.get("Question Ratio")) is not None]
    comp = [v for s in scores if (v := s.metrics.get("Completion")) is not None]
    intents = [t.intent for r in records for t in r.turns if t.role == "learner"]
    return {
        "conversations": n,
        "question_ratio": 100 * sum(qr) / len(qr) if qr else float("nan"),
        "asks_drawn": intents.count("ask") + intents.count("drift"),
        "clarifications": len(clar) / n,
        "on_step": 100 * sum(on_step(t.text, r.tutorial.steps, t.step) for t, r in clar) / len(clar)
        if clar
        else float("nan"),
        "completion": 100 * sum(comp) / len(comp) if comp else float("nan"),
        "messages": sum(len(r.turns) for r in records) / n,
        "retries": sum(len(t.retried) for r in records for t in r.turns),
        "warnings": sum(len(t.warnings) for r in records for t in r.turns),
        "errors": sum(1 for r in records if r.error),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--personas", default=",".join(ORDER))
    ap.add_argument("--tutorials", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench-personas")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--max-interactions", type=int, default=10)
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args(argv)
    with model_lock():  # generate resumes a run it finds in --out
        for p in [x for x in args.personas.split(",") if x]:
            persona_run(args.out / p, p, args.tutorials, args.max_tokens, args.max_interactions)
    found = [p for p in ORDER if (args.out / p / "scores.jsonl").exists()]
    rows = {p: measure(args.out / p) for p in found}
    head = (
        "| persona | conversations | Question Ratio % | questions drawn | clarifications / conv | "
        "clarifications on their step % | Completion % | messages / conv | turn retries | turn warnings | "
        "failed |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
    )
    lines = [
        f"| {p} | {r['conversations']} | {r['question_ratio']:.1f} | {r['asks_drawn']} | {r['clarifications']:.2f} | "
        f"{r['on_step']:.0f} | {r['completion']:.0f} | {r['messages']:.1f} | {r['retries']} | {r['warnings']} | "
        f"{r['errors']} |"
        for p, r in rows.items()
    ]
    table = head + "\n".join(lines) + "\n"
    print(table)
    if args.write_md:
        body = (
            f"`wikihowagent generate --teacher local --learner-persona P "
            f"--max-tutorials {args.tutorials} --max-tokens {args.max_tokens} --max-interactions {args.max_interactions}` "
            f"on the `make demo` tutorials (domains "
            f"{', '.join(DEMO_DOMAINS)}; embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M, seed 42, temperature 0, "
            f"max 2 clarifications per step), then `evaluate --no-judge`. Question Ratio: the learner's "
            f"teaching-phase turns with a '?'; questions drawn: learner turns whose seeded intent was ask/drift; "
            f"on their step: the clarification shares more words with its own step than with any other; turn "
            f"retries / warnings: replies retried after a turn check (empty, echo, wrong role) / kept with a "
            f"warning after the retry. Rerunning gives the same conversations (same seed).\n\n" + table
        )
        ratios = ", ".join(f"{p} {r['question_ratio']:.0f} %" for p, r in rows.items())
        headline = f"Question Ratio by persona: {ratios}"
        write_section(
            Section("personas", "generate --learner-persona", headline, "python -m benchmarks personas", body)
        )


if __name__ == "__main__":
    main()
