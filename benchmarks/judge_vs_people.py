"""The embedded judge against people and against judge-check: the figures README, the docs' home page and the
report quote (`data/embedded_judge.json`, one source).

    python -m benchmarks judge_vs_people judge [--scoring checklist] [--minutes 9]    # model time, resumable
    python -m benchmarks judge_vs_people check [--scoring checklist] [--n 20] [--minutes 9]   # model time
    python -m benchmarks judge_vs_people report [--scoring checklist] [--write-md]    # no model

`judge`: `evaluate` with the embedded judge (`--metrics rubric`, the given `--judge-scoring`) on the human
study's conversations (the paper's run files), one run file a job, into OUT/<scoring>/ (evaluate resumes a
file it did not finish). `check`: `judge-check` of the first --n conversations of the study (originals and the
copies of data/perturbations.json), into OUT/<scoring>-check/ (resumable). `report`: `align`'s computation
against both people's sheets (Pearson r with the people's Overall; the share of clearly ordered same-tutorial
pairs ordered as they did) and judge-check's accuracy over the targeted cells with its bootstrap CI; with
--write-md the mode's entry of data/embedded_judge.json, the section of BENCHMARKS.md and the measured-figures
block of README.md and docs/index.md (`sync_pages`) are rewritten from the same numbers.
"""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

from benchmarks.harness import ROOT, Job, Results, Section, measured_block, run_jobs, write_section
from benchmarks.harness import sync_pages as harness_sync
from wikihowagent.backends.local import JUDGE_SCORING
from wikihowagent.report.measured import Figure, Measured, load_measured, write_measured

STUDY = ROOT.parent / "shared" / "human-study"  # the human study beside the clone (--study names another)
OUT = ROOT / "runs" / "bench-judge-vs-people"
HUMANS = ("judge_1.csv", "judge_2.csv")
TITLE = "judge: the embedded judge against people"
PAGES = ("README.md", "docs/index.md")  # the pages that quote the figures, each in one measured block
LABEL = "data/embedded_judge.json"  # the pages' block of these figures (harness.measured_block)
BLOCK = measured_block(LABEL)
STUDY_OF = "conversations of the paper's human study (development split)"


def study_files(study: Path) -> list[Path]:
    return sorted((study / "conversations").glob("*.json"))


def judge_job(run_file: Path, out: Path, scoring: str) -> dict:
    from wikihowagent.console import make_console
    from wikihowagent.evaluation.core import EvaluateRequest, run_evaluation
    from wikihowagent.judge.request import ScoringRequest

    scoring_request = ScoringRequest(evaluator="local", judge_scoring=scoring, out=out, concurrency=1)
    req = EvaluateRequest(
        runs=(run_file,), scoring=scoring_request, metrics="rubric", figures=False, bootstrap=0,
    )  # fmt: skip
    run_evaluation(req, make_console())
    return {"done": True}


def check_job(study: Path, out: Path, scoring: str, n: int) -> dict:
    from wikihowagent.console import make_console
    from wikihowagent.judge.request import ScoringRequest
    from wikihowagent.judgecheck.core import JudgeCheckRequest, run_judge_check

    req = JudgeCheckRequest(
        runs=tuple(study_files(study)), out=out, evaluators=("local",), max_conversations=n, figures=False,
        scoring=ScoringRequest(judge_scoring=scoring, concurrency=1),
    )  # fmt: skip
    run_judge_check(req, make_console())
    return {"done": True}


def people_figures(study: Path, scores: list[Path]) -> list[Figure]:
    """r with the people's Overall and the share of clearly ordered pairs ordered alike (align's computation)."""
    from wikihowagent.alignment.core import compute

    res = compute([study / h for h in HUMANS], scores, n_boot=2000, seed=0)
    overall = res.groups[0].correlations["Overall"]
    r = overall.coefs["pearson"]
    pairs = res.pair_order["Overall"]
    return [
        Figure(what="Pearson r with the people's Overall", value=round(r.value, 3),
               ci=(round(r.ci_low, 3), round(r.ci_high, 3)), n=overall.n, of=STUDY_OF),
        Figure(what="share of same-tutorial pairs ordered as the people did", value=round(pairs.accuracy, 3),
               ci=(round(pairs.ci_low, 3), round(pairs.ci_high, 3)), n=pairs.pairs,
               of="pairs the people clearly ordered"),
    ]  # fmt: skip


def check_figure(check_dir: Path, scoring: str, evaluator: str) -> Figure:
    """judge-check's accuracy over the targeted cells, its CI resampling conversations (judge-check's own)."""
    from wikihowagent.judge.rubric_judge import load_rubrics
    from wikihowagent.judgecheck.accuracy import mean_accuracy_samples
    from wikihowagent.judgecheck.analysis import cell_wins
    from wikihowagent.judgecheck.judgments import read_judgments
    from wikihowagent.judgecheck.perturbations import load_perturbations
    from wikihowagent.layout import JUDGMENTS
    from wikihowagent.stats.bootstrap import percentile_ci

    rubrics = list(load_rubrics())
    wins = cell_wins(
        read_judgments(check_dir / JUDGMENTS, evaluator, scoring), load_perturbations(None, rubrics), rubrics
    )
    means, samples = mean_accuracy_samples({scoring: list(wins.values())})
    low, high = percentile_ci(samples[scoring])
    n = len({c for cell in wins.values() for c in cell})
    return Figure(what="judge-check accuracy", value=round(means[scoring], 3), ci=(round(low, 3), round(high, 3)),
                  n=n, of="conversations, originals vs damaged copies")  # fmt: skip


def statement(m: Measured) -> str:
    """The measured figures as every page quotes them: the default scoring first, then the others."""
    order = [JUDGE_SCORING, *(k for k in m.modes if k != JUDGE_SCORING)]
    parts = [
        f"`{mode}`{' (the default)' if mode == JUDGE_SCORING else ''}: " + "; ".join(f.line() for f in m.modes[mode])
        for mode in order
        if mode in m.modes
    ]
    return f"Measured for the embedded judge ({m.model}, {m.measured}) — " + ". ".join(parts) + "."


def headline(m: Measured) -> str:
    return "; ".join(f.line() for f in m.modes.get(JUDGE_SCORING, []))


def sync_pages(m: Measured, root: Path = ROOT) -> list[Path]:
    """Rewrite the measured block of each page in PAGES from the figures; -> the pages changed."""
    return harness_sync(LABEL, statement(m), PAGES, root)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("judge", "check", "report"))
    ap.add_argument("--scoring", default=JUDGE_SCORING, help="the --judge-scoring measured (default: the default)")
    ap.add_argument("--study", type=Path, default=STUDY)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--n", type=int, default=20, help="check: conversations judge-check takes")
    ap.add_argument("--minutes", type=float, default=None, help="start no job after this many minutes")
    ap.add_argument("--evaluator", default="local", help="report: the judge spec judge-check recorded")
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args(argv)
    results = Results(args.out / "jobs.jsonl")
    if args.step == "judge":
        jobs = [
            Job({"step": "judge", "scoring": args.scoring, "file": f.name},
                lambda f=f: judge_job(f, args.out / args.scoring, args.scoring))
            for f in study_files(args.study)
        ]  # fmt: skip
        run_jobs(jobs, results, args.minutes, lock=True)
        return
    if args.step == "check":
        job = Job({"step": "check", "scoring": args.scoring, "n": args.n},
                  lambda: check_job(args.study, args.out / f"{args.scoring}-check", args.scoring, args.n))  # fmt: skip
        run_jobs([job], results, args.minutes, lock=True)
        return
    scores = sorted((args.out / args.scoring).glob("*/scores.jsonl"))
    figures = [check_figure(args.out / f"{args.scoring}-check", args.scoring, args.evaluator)]
    figures += people_figures(args.study, scores)
    for f in figures:
        print(f"{args.scoring}: {f.line()}")
    if args.write_md:
        old = load_measured()
        m = Measured(model=old.model, measured=date.today().isoformat(), source=f'BENCHMARKS.md, "{TITLE}"',
                     modes={**old.modes, args.scoring: figures})  # fmt: skip
        write_measured(m)
        sync_pages(m)
        body = "\n\n".join(
            [statement(m), "One study, two raters, the tutorial as reference: a judge's agreement with these people "
             "on these conversations, not with people in general."]
        )  # fmt: skip
        reproduce = "python -m benchmarks judge_vs_people report --write-md"
        write_section(Section(TITLE, "evaluate, compare (the embedded judge)", headline(m), reproduce, body))
