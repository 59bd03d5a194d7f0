"""`python -m benchmarks NAME [options]`: run one benchmark (`-h` after the name: its options)."""

from __future__ import annotations

import importlib
import sys

from wikihowagent.registry import Registry

# name -> (module, what it measures); MAKE_BENCH: the ones `make bench` runs (they need only this repository)
BENCHMARKS: Registry[str] = Registry(
    "benchmark",
    {
        "generate": "pipeline cost over the model: scripted model, embedded model vs its server alone",
        "evaluate": "computational metrics: ours vs the paper's way, identical numbers",
        "evaluate_workers": "evaluate --no-judge on the human study against the encoder alone; the GPU-node plan",
        "align": "align at 10,000 conversations x 2 judges",
        "corpus": "stats and tutorials on a synthetic 20,000-article crawl: time, peak memory",
        "report": "report at the paper's scale (114,296 real-size conversations): peak memory, build time, size, browser",
        "personas": "the learner personas on the embedded model: question ratio, on-step clarifications",
        "manager": "rules vs llm manager on the embedded model",
        "scale": "generate's client CPU per message against a fake server at high concurrency",
        "interrupt": "Ctrl-C to exit of generate / evaluate on the embedded model, per code version",
        "judge_vs_people": "the embedded judge against the human study and judge-check",
        "metrics_vs_people": "every metric against people: README's and the home page's figures from the validity file",
        "lessons": "verbatim full lessons of a tutorial set (no model): the input of the perturbation checks",
        "paper_scale": "the paper's 114,296 conversations through evaluate, merge, align, report: time, memory, disk",
        "paper_scale_slurm": "a Slurm array of evaluate shards, one task killed once and resubmitted: merge = one run",
        "structure": "the code's size and shape: lines, long functions, big modules, upward imports, duplicates",
    },
)
MAKE_BENCH = ("generate", "evaluate", "align", "corpus", "report", "personas", "manager", "scale")


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in BENCHMARKS:
        print(__doc__.strip() + "\n")
        for name, what in BENCHMARKS.items():
            print(f"  {name:16} {what}{'  (make bench)' if name in MAKE_BENCH else ''}")
        raise SystemExit(0 if len(sys.argv) < 2 else 2)
    name = sys.argv[1]
    importlib.import_module(f"benchmarks.{name}").main(sys.argv[2:])


if __name__ == "__main__":
    main()
