"""Benchmark of the post-test on the counterfactual validity set (docs: Methodology > Metrics, "Likelihood Gain" and "The validity set"); writes the
"post-test: validity set" section of BENCHMARKS.md.

Each model step is resumable and chunked: run it under the model lock, as often as needed, until it says
"done" (answers are appended to OUT as they come; `--minutes` stops starting new calls after that long):

    flock /tmp/wikihowagent-model.lock python scripts/bench_validity.py premise --out /work/runs/h31/premise --minutes 8
    # the likelihood post-test of a run's conversations (resumable): wikihowagent evaluate RUN --no-judge \
    #     --posttest-learner local --posttest-likelihood
    python scripts/bench_validity.py report --premise DIR [--validity LABEL=DIR ...] [--runs RUN ...] \
        [--likelihood DIR] [--paper-scores DIR --paper-align DIR] --write-md

- premise: the learner's title-only pre-test (the post-test's wording, `PostTester.pretest`) on every tutorial of
  the validity set and of the bundled set; Step Recall against the tutorial: what the model knows before any
  lesson (goal on the validity set: < 20 %).
- report: the premise table; `judge-check --posttest-learner` validity tables (skip_steps, off_topic) per
  tutorial set; Learning Gain per run (full lessons) with CIs and curious vs passive paired by tutorial; the
  cost of each post-test kind per conversation; the human yardstick (pooled and within-tutorial r).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from wikihowagent.evaluation import posttest as P  # noqa: E402
from wikihowagent.evaluation.summary import markdown_table  # noqa: E402

VALIDITY_SET = Path(__file__).resolve().parent.parent / "wikihowagent" / "data" / "validity" / "counterfactual"


def _sets(paths: list[Path]) -> dict[str, list]:
    from wikihowagent.corpus.core import default_tutorials_path, load_tutorials

    paths = paths or [VALIDITY_SET, default_tutorials_path()]
    return {p.name if p.name != "tutorials" else "bundled": load_tutorials(p) for p in paths}


def _learner(spec: str):
    from wikihowagent.config import load_config
    from wikihowagent.evaluation.session import posttest_learner_factory

    return posttest_learner_factory(load_config(None))(spec)


def likelihood_probe(out: Path, model, n: int = 1) -> None:
    """Can the learner's server give log-probabilities of a given text? On the `n` shortest validity tutorials:
    the steps' mean log-probability per token given the title only, given a lesson that states every step
    ("Teacher: <step>"), and given one that states every other step. Appended to OUT/likelihood_probe.jsonl."""
    import json

    from wikihowagent.records import Turn
    from wikihowagent.workflow.likelihood import LikelihoodError, contexts, for_chat_model, likelihood_gain
    from wikihowagent.workflow.posttest import transcript

    path = out / "likelihood_probe.jsonl"
    if path.exists():
        return
    reader = for_chat_model(model)
    rows = []
    from wikihowagent.evaluation.session import JudgeLoop

    with JudgeLoop() as loop:
        for t in sorted(_sets([VALIDITY_SET])["counterfactual"], key=lambda t: sum(map(len, t.steps)))[:n]:

            def lesson(keep, t=t):  # this iteration's tutorial
                return transcript(
                    [
                        x
                        for i, s in enumerate(t.steps)
                        if keep(i)
                        for x in (Turn(role="teacher", text=s), Turn(role="learner", text="OK."))
                    ]
                )

            row = {"tutorial": t.tutorial_id, "transport": reader.transport}
            try:
                for name, ctx in (
                    ("title", None),
                    ("full", lesson(lambda i: True)),
                    ("half", lesson(lambda i: i % 2 == 0)),
                ):
                    r = loop.run(reader.score(contexts(t.title, t.method_title, len(t.steps), ctx), t.steps))
                    row[name], row[f"{name}_tokens"], row[f"{name}_s"] = r.means, r.tokens, r.latency_s
                row["gain_full"] = likelihood_gain(row["full"], row["title"])
                row["gain_half"] = likelihood_gain(row["half"], row["title"])
            except LikelihoodError as exc:
                row["error"] = str(exc)
            rows.append(row)
            print("likelihood probe:", json.dumps(row)[:600])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def premise(out: Path, learner: str, tutorials: list[Path], minutes: float) -> bool:
    """Title-only pre-tests of every tutorial of each set, cached in OUT/pretests.jsonl. True when all done.
    First (once) the likelihood probe (likelihood_probe)."""
    from wikihowagent.runs import PretestCache
    from wikihowagent.workflow.posttest import PostTester

    out.mkdir(parents=True, exist_ok=True)
    cache = PretestCache(out)
    model = _learner(learner)
    try:
        likelihood_probe(out, model)
    except Exception as exc:  # a probe, recorded: the pre-tests go on
        print(f"likelihood probe failed: {type(exc).__name__}: {exc}")
    tester = PostTester(model, learner, cache)
    deadline = time.monotonic() + 60 * minutes
    todo = [
        t
        for ts in _sets(tutorials).values()
        for t in ts
        if cache.get(learner, t.tutorial_id, tester.prompt.version) is None
    ]
    from wikihowagent.evaluation.session import JudgeLoop

    with JudgeLoop() as loop:
        for t in todo:
            if time.monotonic() > deadline:
                break
            loop.run(tester.pretest(t.tutorial_id, t.title, t.method_title, len(t.steps)))
    left = sum(
        cache.get(learner, t.tutorial_id, tester.prompt.version) is None for ts in _sets(tutorials).values() for t in ts
    )
    print(f"premise: {len(todo) - left} pre-tests taken now, {left} left" + ("" if left else " — done"))
    return not left


def lessons(tutorials: Path, out: Path) -> int:
    """Verbatim full lessons, no model: for each tutorial one conversation where the teacher states each step
    word for word ("Step k: <step>", the step recorded on the turn, so skip_steps can remove it) and the
    learner answers "OK, got it."; then FINISHED. Written as a JSONL of conversation records (`judge-check` and
    `evaluate` read it): the measure's own yardstick, free of how well a model teaches."""
    from wikihowagent.corpus.core import load_tutorials
    from wikihowagent.generation.core import now, to_record
    from wikihowagent.records import Turn
    from wikihowagent.workflow.graph import WorkflowOptions

    rows = []
    for t in load_tutorials(tutorials):
        turns = [
            x
            for k, step in enumerate(t.steps)
            for x in (
                Turn(role="teacher", text=f"Step {k + 1}: {step}", step=k),
                Turn(role="learner", text="OK, got it.", step=k),
            )
        ]
        turns.append(Turn(role="teacher", text="FINISHED", kind="finish"))
        state = {"messages": turns, "finished": True}  # the record a finished generated conversation gets
        record = to_record(t, state, f"lessons-{tutorials.name}", "verbatim", "verbatim", now(), WorkflowOptions(), "")
        rows.append(record.model_dump(mode="json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    import json

    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"lessons: {len(rows)} verbatim lessons -> {out}")
    return len(rows)


def premise_rows(out: Path, learner: str, tutorials: list[Path]) -> list[list[str]]:
    from bench_posttest import boot_ci, fmt, mean, recall

    from wikihowagent.evaluation.metrics import Scorers
    from wikihowagent.runs import PretestCache
    from wikihowagent.workflow.posttest import get_prompt

    cache, version = PretestCache(out), get_prompt(None).version
    scorers = Scorers("default", [P.STEP_RECALL])
    rows = []
    for name, tuts in _sets(tutorials).items():
        got = [(t, cache.get(learner, t.tutorial_id, version)) for t in tuts]
        scored = [recall(scorers, t.steps, a.steps) for t, a in got if a is not None and P.usable(a)]
        lo, hi = boot_ci(scored)
        rows.append(
            [
                name,
                str(len(tuts)),
                str(len(scored)),
                f"{fmt(mean(scored))} [{fmt(lo)}, {fmt(hi)}]",
                fmt(mean([a.latency_s for _, a in got if a is not None]), pct=False),
            ]
        )
    return rows


def lesson_gain_rows(premise_dir: Path, vdir: Path, learner: str, tutorials: list[Path]) -> list[list[str]]:
    """Learning Gain of the verbatim full lessons (`lessons`, judged by a --validity judge-check): per tutorial
    set, the original lesson's post-test Step Recall minus the same learner's title-only pre-test (`premise`,
    same wording), paired by tutorial; mean with a 95 % bootstrap CI over tutorials."""
    from bench_posttest import boot_ci, fmt, mean, recall

    from wikihowagent.evaluation.metrics import Scorers
    from wikihowagent.records import make_conversation_id
    from wikihowagent.runs import POSTTESTS, PretestCache, read_posttest_variants
    from wikihowagent.workflow.posttest import get_prompt

    cache, version = PretestCache(premise_dir), get_prompt(None).version
    posts = read_posttest_variants(vdir / POSTTESTS)
    scorers = Scorers("default", [P.STEP_RECALL])
    from wikihowagent.corpus.core import default_tutorials_path

    paths = tutorials or [VALIDITY_SET, default_tutorials_path()]
    rows = []
    for (name, tuts), path in zip(_sets(paths).items(), paths, strict=True):
        pre, post, gain = [], [], []
        for t in tuts:
            answer = cache.get(learner, t.tutorial_id, version)
            test = posts.get((make_conversation_id(f"lessons-{path.name}", t.tutorial_id), "original"))
            if answer is None or test is None or not (P.usable(answer) and P.usable(test.post)):
                continue
            a, b = recall(scorers, t.steps, answer.steps), recall(scorers, t.steps, test.post.steps)
            if a is not None and b is not None:
                pre.append(a)
                post.append(b)
                gain.append(b - a)
        lo, hi = boot_ci(gain)
        rows.append(
            [name, str(len(gain)), fmt(mean(pre)), fmt(mean(post)), f"{fmt(mean(gain))} [{fmt(lo)}, {fmt(hi)}]"]
        )
    return rows


def validity_rows(path: Path) -> list[list[str]]:
    """A `judge-check --posttest-learner [--tutorials ...]` output: per tutorial set (when split) and perturbation."""
    from bench_posttest import fmt

    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import POSTTEST_VALIDITY_CSV, POSTTEST_VALIDITY_SETS_CSV

    split = (path / POSTTEST_VALIDITY_SETS_CSV).exists()
    table = path / (POSTTEST_VALIDITY_SETS_CSV if split else POSTTEST_VALIDITY_CSV)
    if not table.is_file():
        raise SystemExit(f"--validity {path}: no {table.name} (rerun its judge-check --posttest-learner to the end)")
    t = read_people_frame(table)
    return [
        [
            getattr(r, "tutorials", "all"),
            r.perturbation,
            str(r.n),
            f"{r.accuracy:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]",
            str(r.lower),
            str(r.ties),
            fmt(r.mean_recall_original),
            fmt(r.mean_recall_perturbed),
            str(r.failed),
            coverage_cell(getattr(r, "coverage_original", None), getattr(r, "coverage_perturbed", None)),
        ]
        for r in t.itertuples()
    ]


def coverage_cell(original: float | None, perturbed: float | None) -> str:
    """The teacher's Step Coverage in the originals -> the copies (%); '–' for outputs written before judge-check
    recorded it."""
    from bench_posttest import fmt  # "–" for a value not recorded (None or NaN)

    cells = fmt(original), fmt(perturbed)
    return "–" if "–" in cells else " → ".join(cells)


def likelihood_rows(path: Path) -> tuple[list[list[str]], list[list[str]]]:
    """From a `judge-check --posttest-likelihood [--tutorials]` output: (validity rows per set and perturbation,
    a row of the originals' Likelihood Gain with a CI and the reads' cost)."""
    from bench_posttest import boot_ci, mean

    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import (
        POSTTEST_LIKELIHOOD_CSV,
        POSTTEST_LIKELIHOOD_SETS_CSV,
        POSTTESTS,
        read_posttest_variants,
    )
    from wikihowagent.workflow.likelihood import likelihood_gain

    split = (path / POSTTEST_LIKELIHOOD_SETS_CSV).exists()
    if not (path / POSTTEST_LIKELIHOOD_CSV).exists():
        return [], []
    t = read_people_frame(path / (POSTTEST_LIKELIHOOD_SETS_CSV if split else POSTTEST_LIKELIHOOD_CSV))
    vrows = [
        [
            getattr(r, "tutorials", "all"),
            r.perturbation,
            str(r.n),
            f"{r.accuracy:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]",
            str(r.lower),
            str(r.ties),
            f"{r.mean_recall_original:.3f}",
            f"{r.mean_recall_perturbed:.3f}",
            str(r.failed),
        ]
        for r in t.itertuples()
    ]
    tests = read_posttest_variants(path / POSTTESTS)
    orig = [
        t.likelihood
        for (cid, v), t in tests.items()
        if v == "original" and t.likelihood is not None and t.likelihood.error is None
    ]
    gains = [g for g in (likelihood_gain(lt.post, lt.pre) for lt in orig) if g is not None]
    lo, hi = boot_ci(gains)
    allt = [t.likelihood for t in tests.values() if t.likelihood is not None and t.likelihood.error is None]
    pre_reads = [lt.pre_latency_s for lt in allt if lt.pre_latency_s > 0]
    crow = [
        [
            str(len(gains)),
            f"{mean(gains):.3f} [{lo:.3f}, {hi:.3f}]",
            f"{mean([lt.latency_s for lt in allt]):.1f}",
            f"{mean(pre_reads):.1f}" if pre_reads else "–",
            f"{mean([sum(lt.post_tokens) for lt in allt]):.0f}",
        ]
    ]
    return vrows, crow


def run_likelihood_rows(dirs: list[Path]) -> tuple[list[list[str]], list[list[str]]]:
    """`evaluate --posttest-learner SPEC --posttest-likelihood` outputs on runs (a directory holding its
    scores.jsonl and posttests.jsonl): (per output: Likelihood Gain with a CI and the reads' cost; every two
    outputs sharing tutorials: A - B paired by tutorial, 95 % CI, Wilcoxon p)."""
    from itertools import combinations

    from bench_posttest import boot_ci, mean

    from wikihowagent.runs import POSTTESTS, SCORES, read_posttests, read_scores
    from wikihowagent.stats.paired import paired_compare
    from wikihowagent.workflow.likelihood import likelihood_gain

    rows, per = [], {}
    for d in dirs:
        tutorial = {cid: r.tutorial_id for cid, r in read_scores(d / SCORES).items()}
        got = [
            (tutorial[cid], t.likelihood)
            for cid, t in read_posttests(d / POSTTESTS).items()
            if cid in tutorial and t.likelihood is not None and t.likelihood_read
        ]
        gains = [(k, likelihood_gain(lt.post, lt.pre)) for k, lt in got]
        gains = [(k, g) for k, g in gains if g is not None]
        lo, hi = boot_ci([g for _, g in gains])
        pre = [lt.pre_latency_s for _, lt in got if lt.pre_latency_s > 0]
        rows.append(
            [
                d.name,
                str(len(gains)),
                f"{mean([g for _, g in gains]):.3f} [{lo:.3f}, {hi:.3f}]",
                f"{mean([lt.latency_s for _, lt in got]):.1f}",
                f"{mean(pre):.1f}" if pre else "–",
            ]
        )
        groups: dict[str, list[float]] = {}
        for k, g in gains:
            groups.setdefault(k, []).append(g)
        per[d.name] = {k: sum(v) / len(v) for k, v in groups.items()}
    prows = []
    for a, b in combinations(per, 2):
        r = paired_compare(per[a], per[b])
        if r.n:
            prows.append(
                [
                    f"{a} − {b}",
                    str(r.n),
                    f"{r.diff:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]",
                    "–" if r.p != r.p else f"{r.p:.3f}",
                ]
            )
    return rows, prows


def scores_rows(scores_dir: Path) -> list[list[str]]:
    """Post-test metrics of `evaluate --posttest-learner` score files under `scores_dir` (one row each):
    mean with a 95 % bootstrap CI over conversations."""
    from bench_posttest import boot_ci, fmt, mean

    from wikihowagent.runs import SCORES, read_scores

    rows = []
    for f in sorted(scores_dir.glob(f"**/{SCORES}")):
        recs = list(read_scores(f).values())
        cells = []
        for m in (P.LEARNING_GAIN, P.DETAIL_GAIN, P.STEP_RECALL):
            xs = [r.metrics[m] for r in recs if r.metrics.get(m) is not None]
            lo, hi = boot_ci(xs)
            cells.append(f"{fmt(mean(xs))} [{fmt(lo)}, {fmt(hi)}] (n={len(xs)})")
        rows.append(
            [
                str(f.parent.relative_to(scores_dir)) if f.parent != scores_dir else scores_dir.name,
                str(len(recs)),
                *cells,
            ]
        )
    return rows


HUMAN_RUBRICS = ("Overall", "Progress", "Clarity")


def kind_cost_rows(scores_dirs: list[Path]) -> list[list[str]]:
    """Cost per conversation of each post-test kind in `evaluate --posttest-learner` outputs under `scores_dirs`
    (their posttests.jsonl files): the recall post-test (one call), and where taken the likelihood post-test's
    read given the lesson and its title-only read (once per tutorial); mean seconds [min, max] and the tokens
    involved."""
    from bench_posttest import mean

    from wikihowagent.runs import POSTTESTS, read_posttests

    files = sorted({f for d in scores_dirs for f in d.glob(f"**/{POSTTESTS}")})
    tests = [t for f in files for t in read_posttests(f).values()]
    posts = [t.post for t in tests if t.post.error is None and t.post.latency_s > 0]
    reads = [t.likelihood for t in tests if t.likelihood is not None and t.likelihood_read]
    pre_reads = [lt for lt in reads if lt.pre_latency_s > 0]

    def row(kind: str, secs: list[float], tokens: str) -> list[str]:
        span = f" [{min(secs):.0f}, {max(secs):.0f}]" if secs else ""
        return [kind, str(len(secs)), f"{mean(secs):.1f}{span}" if secs else "–", tokens]

    return [
        row(
            "recall post-test (the learner writes the steps)",
            [a.latency_s for a in posts],
            f"prompt {mean([a.prompt_tokens for a in posts]):.0f}, answer {mean([a.completion_tokens for a in posts]):.0f}"
            if posts
            else "–",
        ),
        row(
            "likelihood post-test, given the lesson",
            [lt.latency_s for lt in reads],
            f"forced {mean([sum(lt.post_tokens) for lt in reads]):.0f}" if reads else "–",
        ),
        row(
            "likelihood post-test, given the title (one per tutorial)",
            [lt.pre_latency_s for lt in pre_reads],
            f"forced {mean([sum(lt.pre_tokens) for lt in pre_reads]):.0f}" if pre_reads else "–",
        ),
    ]


def human_rows(scores_dir: Path, align_dir: Path, metrics: list[str]) -> list[list[str]]:
    """Pooled and within-tutorial r (stats.correlation.grouped_r) of each post-test metric with the people's
    ratings: `evaluate --posttest-learner` score files under scores_dir (Likelihood Gain too where they carry
    it: `--posttest-likelihood`), `align` output (paired_scores.csv)."""
    from wikihowagent.csvcells import read_people_frame
    from wikihowagent.runs import PAIRED_SCORES_CSV, SCORES, read_scores
    from wikihowagent.stats.correlation import grouped_r

    people = read_people_frame(align_dir / PAIRED_SCORES_CSV).set_index("conversation_id")
    recs = [
        r
        for f in sorted(scores_dir.glob(f"**/{SCORES}"))
        for r in read_scores(f).values()
        if r.conversation_id in people.index
    ]
    with_lg = sum(r.metrics.get(P.LIKELIHOOD_GAIN) is not None for r in recs)
    if P.LIKELIHOOD_GAIN not in metrics and with_lg >= 4:  # fewer: no r, only a row of dashes
        metrics = [*metrics, P.LIKELIHOOD_GAIN]

    def cell(v: float, ci: tuple[float, float]) -> str:
        return "–" if v != v else f"{v:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"

    rows = []
    for metric in metrics:
        for rubric in HUMAN_RUBRICS:
            col = f"human_{rubric}"
            if col not in people.columns:
                continue
            xs = [r.metrics.get(metric) for r in recs]
            ys = [float(people.loc[r.conversation_id, col]) for r in recs]
            g = grouped_r(xs, ys, [r.title or "" for r in recs])
            rows.append(
                [
                    metric,
                    rubric,
                    str(g.n),
                    str(g.groups),
                    cell(g.pooled, g.pooled_ci),
                    cell(g.within, g.within_ci),
                    "–" if g.between != g.between else f"{g.between:.2f}",
                    cell(g.mixed_slope, g.mixed_ci),
                ]
            )
    return rows


def report(args) -> str:
    from bench_posttest import (
        COST_HEADER,
        PERSONA_HEADER,
        VALIDITY_HEADER,
        cost_rows,
        labels,
        paired_rows,
        persona_rows,
    )

    from wikihowagent.evaluation.metrics import Scorers
    from wikihowagent.runs import read_conversations

    out = [args.note, ""] if args.note else []
    if args.premise:
        out += [
            "**Premise**: the learner's title-only pre-test (what it writes before any lesson, the post-test's "
            "wording) scored against each tutorial — on the counterfactual validity set it should know little "
            "(goal < 20 %); on the bundled tutorials it knows much:",
            "",
            markdown_table(
                ["tutorial set", "tutorials", "answers scored", "title-only Step Recall (%) [95 % CI]", "pre-test s"],
                premise_rows(args.premise, args.learner, []),
            ),
            "",
        ]
        probe = args.premise / "likelihood_probe.jsonl"
        if probe.exists():
            import json

            rows = [json.loads(line) for line in probe.read_text(encoding="utf-8").splitlines() if line.strip()]

            def cells(xs):
                return ", ".join("–" if x is None else f"{x:.2f}" for x in xs)

            out += [
                "**Likelihood probe** (can the learner's server read a given text's log-probabilities? the "
                "shortest validity tutorial; mean log-probability per token of each step, nats; tokens per "
                "step; seconds per read):",
                "",
                markdown_table(
                    [
                        "tutorial",
                        "transport",
                        "title only",
                        "full lesson",
                        "half lesson (steps 1, 3, …)",
                        "gain full",
                        "gain half",
                        "tokens (title / full / half)",
                        "s per read",
                    ],
                    [
                        [
                            r["tutorial"],
                            r["transport"],
                            cells(r["title"]),
                            cells(r["full"]),
                            cells(r["half"]),
                            f"{r['gain_full']:.2f}",
                            f"{r['gain_half']:.2f}",
                            f"{r['title_tokens']} / {r['full_tokens']} / {r['half_tokens']}",
                            f"{r['title_s']:.0f} / {r['full_s']:.0f} / {r['half_s']:.0f}",
                        ]
                        if "error" not in r
                        else [r["tutorial"], r["transport"], r["error"], *["–"] * 6]
                        for r in rows
                    ],
                ),
                "",
            ]
    for vdir in args.validity:
        out += [
            f"**Validity** (`judge-check --posttest-learner --tutorials`, {vdir}): share of pairs where the "
            "original's post-test Step Recall is higher than the perturbed copy's (ties count half; 95 % "
            "bootstrap CI over conversations); the teacher's Step Coverage (share of the tutorial's steps whose "
            "headline a teacher turn states) in the originals → the copies: a copy that removes no stated step "
            "cannot test the post-test:",
            "",
            markdown_table(
                ["tutorials", *VALIDITY_HEADER[:-1], "teacher's Step Coverage (%)"],  # per set: no judge column
                validity_rows(vdir),
            ),
            "",
        ]
        gains = lesson_gain_rows(args.premise, vdir, args.learner, []) if args.premise else []
        if any(r[1] != "0" for r in gains):
            out += [
                "**Learning Gain of a full lesson** (the verbatim lessons of this folder: the original's post-test "
                "Step Recall minus the same learner's title-only pre-test of the premise, same wording; paired by "
                "tutorial, 95 % bootstrap CI over tutorials):",
                "",
                markdown_table(
                    ["tutorials", "lessons", "pre-test recall (%)", "post-test recall (%)", "Learning Gain (pp)"],
                    gains,
                ),
                "",
            ]
        vrows, crow = likelihood_rows(vdir)
        if vrows:
            out += [
                "The **likelihood post-test** on the same pairs (`--posttest-likelihood`): share of pairs where "
                "the original's Likelihood Gain (nats per token) is higher than the copy's:",
                "",
                markdown_table(
                    [
                        "tutorials",
                        "perturbation",
                        "pairs",
                        "accuracy [95 % CI]",
                        "lower",
                        "ties",
                        "Likelihood Gain original",
                        "Likelihood Gain perturbed",
                        "not read",
                    ],
                    vrows,
                ),
                "",
                "Likelihood Gain of the originals (full lessons; nats per token, 95 % bootstrap CI) and the cost "
                "of the likelihood post-test (seconds per read given the lesson, per title-only read — one per "
                "tutorial — and the step tokens read):",
                "",
                markdown_table(
                    ["conversations", "Likelihood Gain", "lesson read s", "title read s", "step tokens"], crow
                ),
                "",
            ]
    if args.runs:
        by_run = {
            label: [c for c in read_conversations(r) if c.posttest is not None]
            for label, r in zip(labels(args.runs), args.runs, strict=True)
        }
        scorers = Scorers("default", list(P.POSTTEST_METRICS))
        scored = {name: scorers.score(convs) for name, convs in by_run.items()}
        out += [
            "**Learning per run** (Learning Gain = post − pre Step Recall; mean, 95 % bootstrap CI over "
            "conversations):",
            "",
            markdown_table(
                PERSONA_HEADER,
                persona_rows(by_run, scored, scorers),
            ),
            "",
            "**Runs against each other**, paired by tutorial (A − B; 95 % bootstrap CI; Wilcoxon signed-rank p):",
            "",
            markdown_table(["runs", "metric", "tutorials", "A − B (pp)", "p"], paired_rows(by_run, scored)),
            "",
            "**Cost** per conversation of the recall post-test (one call) and the pre-test (one per tutorial):",
            "",
            markdown_table(
                COST_HEADER,
                cost_rows(by_run),
            ),
            "",
        ]
    for sdir in args.scores:
        out += [
            f"**Learning on evaluated inputs** (`evaluate --posttest-learner`, {sdir}; mean, 95 % bootstrap CI "
            "over conversations):",
            "",
            markdown_table(
                ["input", "conversations", "Learning Gain (%)", "Detail Gain (%)", "Step Recall (%)"], scores_rows(sdir)
            ),
            "",
        ]
    if args.likelihood:
        lrows, lprows = run_likelihood_rows(args.likelihood)
        out += [
            "**Likelihood Gain per run** (`evaluate --posttest-learner local --posttest-likelihood`; nats per token, mean with a 95 % "
            "bootstrap CI over conversations; seconds per read given the lesson and per title-only read, one "
            "per tutorial):",
            "",
            markdown_table(["run", "conversations", "Likelihood Gain", "lesson read s", "title read s"], lrows),
            "",
            "Paired by tutorial (A − B, 95 % bootstrap CI, Wilcoxon signed-rank p):",
            "",
            markdown_table(["runs", "tutorials", "A − B (nats/token)", "p"], lprows),
            "",
        ]
    if args.paper_scores and args.paper_align:
        out += [
            "**The human yardstick, read correctly** (the human study's development split: 70 conversations of "
            "10 tutorials). Pooled r over conversations, and within-tutorial r (the metric and the rating "
            "centred on their tutorial's mean: what is left once *which tutorial* is removed), 95 % CIs "
            "resampling tutorials; between = r of the tutorial means; mixed = the within slope of a "
            "random-intercept model (standardised, y ~ x_within + x_tutorial_mean), 95 % CI:",
            "",
            markdown_table(
                [
                    "metric",
                    "people's",
                    "n",
                    "tutorials",
                    "pooled r",
                    "within-tutorial r",
                    "between r",
                    "mixed within slope",
                ],
                human_rows(args.paper_scores, args.paper_align, list(args.metric)),
            ),
            "",
            "**Cost of each post-test kind** on these conversations (seconds per conversation, mean [min, max]; "
            "tokens: the recall post-test's prompt and answer, the likelihood post-test's teacher-forced tokens — "
            "llama.cpp's `grammar` transport decodes them one by one):",
            "",
            markdown_table(["post-test", "n", "seconds", "tokens"], kind_cost_rows(args.cost or [args.paper_scores])),
            "",
        ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("premise", help="title-only pre-tests on the validity set and the bundled tutorials")
    pr.add_argument("--out", type=Path, required=True)
    pr.add_argument("--learner", default="local")
    pr.add_argument(
        "--tutorials",
        type=Path,
        action="append",
        default=[],
        help="tutorial sets (default: wikihowagent/data/validity/counterfactual and the bundled tutorials)",
    )
    pr.add_argument("--minutes", type=float, default=8.0, help="start no new call after this long")
    rp = sub.add_parser("report", help="the BENCHMARKS.md section from finished steps")
    rp.add_argument("--premise", type=Path, help="a `premise` output directory")
    rp.add_argument("--learner", default="local")
    rp.add_argument(
        "--validity",
        type=Path,
        action="append",
        default=[],
        help="a `judge-check --posttest-learner --tutorials` output directory (repeatable)",
    )
    rp.add_argument("--runs", type=Path, nargs="*", default=[], help="generated runs with post-tests")
    rp.add_argument("--paper-scores", type=Path, help="`evaluate --posttest-learner` output on the paper's run files")
    rp.add_argument("--paper-align", type=Path, help="`align` output of the human study against --paper-scores")
    rp.add_argument(
        "--cost",
        type=Path,
        action="append",
        default=[],
        help="the post-test kinds' cost from these `evaluate --posttest-learner` outputs (default: --paper-scores)",
    )
    rp.add_argument(
        "--scores",
        type=Path,
        action="append",
        default=[],
        help="an `evaluate --posttest-learner` output (e.g. on verbatim lessons; repeatable)",
    )
    rp.add_argument(
        "--likelihood",
        type=Path,
        action="append",
        default=[],
        help="a run scored by `evaluate --posttest-learner SPEC --posttest-likelihood` (repeatable): Likelihood "
        "Gain per run, paired by tutorial",
    )
    rp.add_argument(
        "--metric",
        action="append",
        default=[],
        help="metrics for the human yardstick (default: Learning Gain, Detail Gain, Step Recall)",
    )
    rp.add_argument("--note", default="")
    rp.add_argument("--write-md", action="store_true", help="write the 'post-test: validity set' section")
    ls = sub.add_parser("lessons", help="verbatim full lessons of a tutorial set as conversation records (no model)")
    ls.add_argument("--tutorials", type=Path, default=VALIDITY_SET)
    ls.add_argument("--out", type=Path, required=True, help="a .jsonl file")
    args = ap.parse_args()
    if args.cmd == "lessons":
        lessons(args.tutorials, args.out)
        return
    if args.cmd == "report":
        args.metric = args.metric or [P.LEARNING_GAIN, P.DETAIL_GAIN, P.STEP_RECALL]
        body = report(args)
        print(body)
        if args.write_md:
            from benchmarks_md import write_section

            write_section("post-test: validity set", body)
        return
    if args.cmd == "premise":
        premise(args.out, args.learner, args.tutorials, args.minutes)
        print(
            markdown_table(
                ["tutorial set", "tutorials", "answers scored", "title-only Step Recall (%) [95 % CI]", "pre-test s"],
                premise_rows(args.out, args.learner, args.tutorials),
            )
        )


if __name__ == "__main__":
    main()
