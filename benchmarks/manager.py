"""`--manager rules` vs `--manager llm` on the embedded model: BENCHMARKS.md section "manager".

(a) Agreement: every learner message the manager classified in the persona runs (`python -m benchmarks personas`,
    OUT/<persona>/conversations.jsonl) is classified again by the llm manager (the embedded model); we report
    how often it agrees with the rules (question vs not), how often each agrees with the turn's seeded
    intent (ask/drift = a question was meant), and the llm manager's parse fallbacks.
(b) Effect on a conversation: `generate --learner-persona P --manager llm` on the same tutorials as the rules
    run OUT/P, both evaluated with `--no-judge`: Question Ratio, clarifications, Completion, fallbacks.

    python -m benchmarks manager [--out runs/bench-personas] [--persona curious] [--tutorials 3] [--write-md]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from benchmarks.harness import ROOT, Section, model_lock, write_section
from benchmarks.personas import ORDER, measure, persona_run


def learner_messages(out: Path) -> list[dict]:
    """(step text, teacher text, learner text, intent) of every learner turn a manager classified."""
    from wikihowagent.layout import CONVERSATIONS
    from wikihowagent.records_io import read_records

    items = []
    for persona in ORDER:
        path = out / persona / CONVERSATIONS
        if not path.exists():
            continue
        for _, rec in read_records(path):
            turns = rec.turns
            for i, t in enumerate(turns):
                if t.role == "learner" and t.manager_label and i > 0:
                    items.append(
                        {
                            "persona": persona,
                            "step": rec.tutorial.steps[t.step],
                            "teacher": turns[i - 1].text,
                            "learner": t.text,
                            "intent": t.intent,
                            "rules": t.manager_label,
                        }
                    )
    return items


async def classify_all(items: list[dict]) -> None:
    from wikihowagent.backends import make_chat_model, shutdown_local_servers
    from wikihowagent.config import load_config
    from wikihowagent.workflow.manager import MANAGERS

    cfg = load_config()
    manager = MANAGERS["llm"](make_chat_model("local", cfg.model, cfg.local))
    try:
        for it in items:
            it["llm"], it["fallback"] = await manager.classify(it["step"], it["teacher"], it["learner"])
    finally:
        shutdown_local_servers()


def agreement(items: list[dict]) -> dict[str, float]:
    q = lambda label: label in ("question", "off-topic")  # noqa: E731 - both are answered without advancing
    meant = [it for it in items if it["intent"] in ("ask", "drift", "acknowledge")]
    labels = {}
    for it in items:
        labels[it["llm"]] = labels.get(it["llm"], 0) + 1
    return {
        "n": len(items),
        "agree": 100 * sum(q(it["llm"]) == q(it["rules"]) for it in items) / len(items),
        "rules_vs_intent": 100 * sum(q(it["rules"]) == (it["intent"] != "acknowledge") for it in meant) / len(meant)
        if meant
        else float("nan"),
        "llm_vs_intent": 100 * sum(q(it["llm"]) == (it["intent"] != "acknowledge") for it in meant) / len(meant)
        if meant
        else float("nan"),
        "n_intent": len(meant),
        "fallbacks": sum(it["fallback"] for it in items),
        "labels": labels,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench-personas")
    ap.add_argument("--persona", default="curious")
    ap.add_argument("--tutorials", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)  # as the persona runs
    ap.add_argument("--max-interactions", type=int, default=10)
    ap.add_argument("--skip-generate", action="store_true")
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args(argv)
    items = learner_messages(args.out)
    if not items:
        sys.exit(f"{args.out}: no persona runs; run `python -m benchmarks personas` first")
    with model_lock():
        asyncio.run(classify_all(items))
    a = agreement(items)
    parts = [
        f"**(a) Agreement** on {a['n']} learner messages of the persona runs (`python -m benchmarks personas`), "
        f"classified again by the llm manager (embedded model): question-or-not agreement with the rules "
        f"**{a['agree']:.1f} %**; against the turn's seeded intent (ask/drift = a question meant, "
        f"acknowledge = not; {a['n_intent']} turns): rules {a['rules_vs_intent']:.1f} %, llm "
        f"{a['llm_vs_intent']:.1f} %; llm parse fallbacks {a['fallbacks']}; llm labels "
        + ", ".join(f"{k} {v}" for k, v in sorted(a["labels"].items()))
        + "."
    ]
    rules_run, llm_run = args.out / args.persona, args.out / f"{args.persona}-llm-manager"
    if not args.skip_generate and (rules_run / "scores.jsonl").exists():
        with model_lock():
            persona_run(
                llm_run, args.persona, args.tutorials, args.max_tokens, args.max_interactions, "--manager", "llm"
            )
    if (llm_run / "scores.jsonl").exists():
        rows = [("rules", measure(rules_run)), ("llm", measure(llm_run))]
        from wikihowagent.layout import CONVERSATIONS
        from wikihowagent.records_io import read_records

        fb = sum(t.manager_fallback for _, rec in read_records(llm_run / CONVERSATIONS) for t in rec.turns)
        parts.append(
            f"**(b) Effect** (`generate --learner-persona {args.persona} --max-tutorials {args.tutorials} --max-tokens "
            f"{args.max_tokens} --max-interactions {args.max_interactions}` on the `make demo` tutorials, embedded model, same seed; `--manager llm` fell back to the rules {fb} times):\n\n"
            "| manager | Question Ratio % | clarifications / conv | Completion % | messages / conv |\n"
            "|---|--:|--:|--:|--:|\n"
            + "\n".join(
                f"| {name} | {r['question_ratio']:.1f} | {r['clarifications']:.2f} | {r['completion']:.0f} | "
                f"{r['messages']:.1f} |"
                for name, r in rows
            )
            + "\n"
        )
    body = "\n\n".join(parts)
    print(body)
    if args.write_md:
        headline = f"the llm manager agrees with the rules on {a['agree']:.0f} % of {a['n']} learner messages"
        write_section(Section("manager", "generate --manager", headline, "python -m benchmarks manager", body))


if __name__ == "__main__":
    main()
