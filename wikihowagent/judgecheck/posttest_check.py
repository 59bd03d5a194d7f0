"""`judge-check --posttest-learner SPEC`: is the post-test a valid learning measure?

A conversation whose teacher skipped half the steps (`skip_steps`) or taught another tutorial (`off_topic`)
must leave the learner recalling fewer of the tutorial's steps than the original. For each conversation the
learner model takes the post-test on the original (the record's own post-test is reused when the same model
took it) and on each perturbed copy; Step Recall (metrics/posttest.py) is compared pairwise: accuracy =
share of pairs where the original's recall is higher (ties count half), with a bootstrap 95 % CI over
conversations, beside the rubric judge's accuracy on the same perturbation when judgments.jsonl has it.
Post-tests are appended to `<out>/posttests.jsonl` as they finish (a rerun resumes).

With `--tutorials PATH` (repeatable; e.g. the counterfactual validity set, wikihowagent/data/validity/counterfactual, beside
the bundled tutorials) each conversation belongs to the set whose tutorial it teaches (same article title and
steps; "other" for none), an off_topic copy takes its teaching from a conversation of the same set, and the
table is also given per set (posttest_validity_by_set.csv): the post-test's validity on procedures the learner
cannot already know, beside the same on common ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.csvcells import people_csv
from wikihowagent.jsonlio import JsonlAppender
from wikihowagent.judge.gather import gather_bounded
from wikihowagent.layout import (
    POSTTEST_LIKELIHOOD_CSV,
    POSTTEST_LIKELIHOOD_SETS_CSV,
    POSTTEST_VALIDITY_CSV,
    POSTTEST_VALIDITY_MD,
    POSTTEST_VALIDITY_SETS_CSV,
    SENSITIVITY_CSV,
)
from wikihowagent.markdown import frame_table
from wikihowagent.metrics.computational import STEP_RECALL, Scorers
from wikihowagent.metrics.coverage import step_coverage
from wikihowagent.metrics.posttest import likelihood_gain_of
from wikihowagent.records import Conversation, PostTest
from wikihowagent.records_io import read_posttest_variants
from wikihowagent.runs import read_people_table
from wikihowagent.workflow.posttest import CALL_FAILED

from .accuracy import ORIGINAL, bootstrap_ci, paired_wins
from .perturbations import Perturbation, perturb

POSTTEST_PERTURBATIONS = ("skip_steps", "off_topic")  # teaching removed: recall must drop


@dataclass
class PostTestCheck:
    taken: int = 0  # post-tests taken in this invocation
    reused: int = 0  # originals whose record already had one by this model, or found in posttests.jsonl
    failed: int = 0  # answers that are not a step list (not scored)
    not_applicable: int = 0
    likelihoods: int = 0  # likelihood post-tests taken in this invocation (--posttest-likelihood)
    likelihood_failed: int = 0  # ... that the server could not give
    written: list[Path] = field(default_factory=list)
    table: Any = None  # pandas DataFrame


OTHER_SET = "other"  # conversations of none of the --tutorials sets


def tutorial_sets(convs: list[Conversation], sets: dict[str, list[Any]]) -> dict[str, str]:
    """conversation id -> the name of the set (`sets`: name -> its Tutorials) whose tutorial it teaches (same
    article title and steps), else OTHER_SET."""
    index = {(t.title, tuple(t.steps)): name for name, tuts in sets.items() for t in tuts}
    return {c.conversation_id: index.get((c.title, tuple(c.steps)), OTHER_SET) for c in convs}


def variants(
    convs: list[Conversation],
    perturbations: list[Perturbation],
    check: PostTestCheck,
    sets: dict[str, str] | None = None,
) -> list[tuple[str, Conversation]]:
    """(variant, conversation) to post-test: each original and its skip_steps / off_topic copies; with `sets`
    (tutorial_sets), a copy's other conversation (off_topic's teaching) is of the same set."""
    out: list[tuple[str, Conversation]] = []
    sets = sets or {}
    for c in convs:
        same = [o for o in convs if sets.get(o.conversation_id) == sets.get(c.conversation_id)]
        out.append((ORIGINAL, c))
        for p in perturbations:
            if p.kind not in POSTTEST_PERTURBATIONS:
                continue
            pc = perturb(p, c, same)
            if pc is None:
                check.not_applicable += 1
                continue
            out.append((p.name, pc.model_copy(update={"posttest": None})))  # never the original's answer
    return out


def _reused_posttests(
    jobs: list[tuple[str, Conversation]],
    path: Path,
    spec: str,
    version: str,
    check: PostTestCheck,
    progress: Callable[[int], None],
) -> tuple[dict[tuple[str, str], PostTest], list[tuple[str, Conversation]]]:
    """-> (the post-tests already taken: the record's own or a line of posttests.jsonl, the jobs still to take).
    A post-test counts only by the same model in the same wording, and not when its call failed."""
    done = {
        k: v
        for k, v in read_posttest_variants(path).items()
        if v.taken_by(spec, version) and not (v.post.error or "").startswith(CALL_FAILED)
    }
    out: dict[tuple[str, str], PostTest] = {}
    todo = []
    for variant, c in jobs:
        key = (c.conversation_id, variant)
        mine = variant == ORIGINAL and c.posttest is not None and c.posttest.taken_by(spec, version)
        own = c.posttest if mine else None
        if own is not None and key in done and done[key].likelihood_read:
            own = None  # the stored line of the record's own post-test carries its likelihood
        if own is not None or key in done:
            out[key] = own or done[key]
            check.reused += 1
            progress(1)
        else:
            todo.append((variant, c))
    return out, todo


async def take_posttests(
    jobs: list[tuple[str, Conversation]],
    tester: Any,
    spec: str,
    path: Path,
    progress: Callable[[int], None],
    check: PostTestCheck,
    likelihood: Any = None,
    concurrency: int = 1,
) -> dict[tuple[str, str], PostTest]:
    """The post-test of every (variant, conversation): from the record or posttests.jsonl, else taken now, at
    most `concurrency` at once (the learner's slots: unbounded, tests queue at the server and each latency_s
    counts the wait); with `likelihood` (workflow/likelihood.LikelihoodTaker) each also gets its likelihood
    post-test where it has none (or a failed one), appended as the test's new line."""

    out, todo = _reused_posttests(jobs, path, spec, tester.prompt.version, check, progress)
    with JsonlAppender(path) as sink:

        async def add_likelihood(variant: str, c: Conversation, test: PostTest) -> PostTest:
            lt = await likelihood.take(c.tutorial_key, c.title, c.tutorial_title, c.turns, c.steps)
            check.likelihoods += 1
            check.likelihood_failed += lt.error is not None
            return test.model_copy(update={"likelihood": lt})

        async def one(variant: str, c: Conversation) -> None:
            test = await tester.run(c.tutorial_key, c.title, c.tutorial_title, c.turns, len(c.steps), pretest=False)
            if likelihood is not None:
                test = await add_likelihood(variant, c, test)
            sink.append(
                {"conversation_id": c.conversation_id, "variant": variant, "posttest": test.model_dump(mode="json")}
            )
            out[(c.conversation_id, variant)] = test
            check.taken += 1
            progress(1)

        async def later(variant: str, c: Conversation) -> None:
            test = await add_likelihood(variant, c, out[(c.conversation_id, variant)])
            sink.append(
                {"conversation_id": c.conversation_id, "variant": variant, "posttest": test.model_dump(mode="json")}
            )
            out[(c.conversation_id, variant)] = test

        await gather_bounded((one(v, c) for v, c in todo), concurrency)
        if likelihood is not None:  # the reused ones without a likelihood post-test
            taken_now = {(c.conversation_id, v) for v, c in todo}
            await gather_bounded(
                (
                    later(v, c)
                    for v, c in jobs
                    if (c.conversation_id, v) not in taken_now and not out[(c.conversation_id, v)].likelihood_read
                ),
                concurrency,
            )
    return out


def likelihood_gains(
    convs: list[Conversation], tests: dict[tuple[str, str], PostTest]
) -> dict[tuple[str, str], float | None]:
    """Likelihood Gain of every test that has a likelihood post-test (None: the server could not give it)."""

    by_id = {c.conversation_id: c for c in convs}
    return {
        (cid, v): likelihood_gain_of(by_id[cid].model_copy(update={"posttest": t}))
        for (cid, v), t in tests.items()
        if cid in by_id and t.likelihood is not None
    }


def step_recalls(
    convs: list[Conversation], tests: dict[tuple[str, str], PostTest], check: PostTestCheck, device: str = "cpu"
) -> dict[tuple[str, str], float | None]:
    """Step Recall of every post-test (None: not a step list); the step encoder on `device`."""

    by_id = {c.conversation_id: c for c in convs}
    keys = [k for k in tests if k[0] in by_id]
    scored = Scorers("default", [STEP_RECALL], device=device).score(
        [by_id[cid].model_copy(update={"posttest": tests[(cid, v)]}) for cid, v in keys]
    )
    out = {k: s.metrics.get(STEP_RECALL) for k, s in zip(keys, scored, strict=True)}
    check.failed = sum(v is None for v in out.values())
    return out


def abstained_shares(tests: dict[tuple[str, str], PostTest]) -> dict[tuple[str, str], float]:
    """Share of each answer's lines where the learner wrote "not taught" / "don't know" (prompt v3)."""
    return {k: t.post.abstained_share for k, t in tests.items() if t.post.abstained_share is not None}


def coverages(jobs: list[tuple[str, Conversation]]) -> dict[tuple[str, str], float]:
    """Step Coverage (metrics/coverage.py: the share of the tutorial's steps whose headline a teacher turn
    states) of every (variant, conversation) post-tested: did the perturbed copy remove teaching? A skip_steps
    copy whose coverage is not below the original's removed no step the teacher had stated (a teacher that
    stated the steps in other turns than the ones tagged with them), so its pair cannot test the post-test."""
    out = {}
    for variant, c in jobs:
        value = step_coverage(c)
        if value is not None:
            out[(c.conversation_id, variant)] = value
    return out


# Per-test values averaged over each perturbation's originals and copies: <name>_original, <name>_perturbed.
PER_TEST_MEANS = ("abstained", "coverage")


def validity_table(
    recalls: dict[tuple[str, str], float | None],
    perturbations: list[Perturbation],
    judge_accuracy: dict[str, float] | None = None,
    per_test: dict[str, dict[tuple[str, str], float]] | None = None,
) -> Any:
    """Per perturbation: pairs, accuracy (original recall higher; ties half) with a bootstrap CI, mean
    recalls, ties, pairs left out (an answer not scored), the judge's mean accuracy there, and for each
    PER_TEST_MEANS name in `per_test` ({(conversation id, variant): value}: abstained_shares, coverages) its mean
    over the originals and over the copies of the pairs."""
    import pandas as pd

    per_test = per_test or {}

    def mean_of(values: dict[tuple[str, str], float], keys: list[tuple[str, str]]) -> float | None:
        vals = [values[k] for k in keys if k in values]
        return round(sum(vals) / len(vals), 4) if vals else None

    rows = []
    for p in perturbations:
        if p.kind not in POSTTEST_PERTURBATIONS:
            continue
        wins, orig, pert, failed = paired_wins(
            (recalls.get((cid, ORIGINAL)), r) for (cid, variant), r in recalls.items() if variant == p.name
        )
        lo, hi = bootstrap_ci(wins)
        copies = [k for k in recalls if k[1] == p.name]
        row = {
            "perturbation": p.name,
            "n": len(wins),
            "accuracy": round(sum(wins) / len(wins), 4) if wins else None,
            "ci_low": round(lo, 4) if wins else None,
            "ci_high": round(hi, 4) if wins else None,
            "lower": sum(w == 1.0 for w in wins),
            "ties": sum(w == 0.5 for w in wins),
            "mean_recall_original": round(sum(orig) / len(orig), 4) if orig else None,
            "mean_recall_perturbed": round(sum(pert) / len(pert), 4) if pert else None,
            "failed": failed,
            "judge_accuracy": (judge_accuracy or {}).get(p.name),
        }
        for name in PER_TEST_MEANS:
            values = per_test.get(name, {})
            row[f"{name}_original"] = mean_of(values, [(cid, ORIGINAL) for cid, _ in copies])
            row[f"{name}_perturbed"] = mean_of(values, copies)
        rows.append(row)
    return pd.DataFrame(
        rows,
        columns=[
            "perturbation",
            "n",
            "accuracy",
            "ci_low",
            "ci_high",
            "lower",
            "ties",
            "mean_recall_original",
            "mean_recall_perturbed",
            "failed",
            "judge_accuracy",
            *(f"{name}_{side}" for name in PER_TEST_MEANS for side in ("original", "perturbed")),
        ],
    )


def validity_by_set(
    recalls: dict[tuple[str, str], float | None],
    perturbations: list[Perturbation],
    sets: dict[str, str],
    per_test: dict[str, dict[tuple[str, str], float]] | None = None,
) -> Any:
    """validity_table per tutorial set (`sets`: conversation id -> set name), a `tutorials` column first."""
    import pandas as pd

    frames = []
    for name in dict.fromkeys(sorted(sets.values(), key=lambda n: (n == OTHER_SET, n))):
        mine = {k: v for k, v in recalls.items() if sets.get(k[0]) == name}
        t = validity_table(mine, perturbations, None, per_test)
        t.insert(0, "tutorials", name)
        frames.append(t)
    return pd.concat(frames, ignore_index=True).drop(columns=["judge_accuracy"])


def judge_accuracy(out_dir: Path) -> dict[str, float]:
    """The rubric judge's mean accuracy per perturbation over its targeted rubrics (sensitivity.csv), if any."""
    path = out_dir / SENSITIVITY_CSV
    if not path.exists():
        return {}
    sens = read_people_table(path).dropna(subset=["accuracy"])
    return {str(k): round(float(v), 4) for k, v in sens.groupby("perturbation")["accuracy"].mean().items()}


def write_validity(
    out_dir: Path,
    table: Any,
    spec: str,
    n_convs: int,
    check: PostTestCheck,
    by_set: Any = None,
    lik_table: Any = None,
    lik_by_set: Any = None,
) -> list[Path]:

    csv = out_dir / POSTTEST_VALIDITY_CSV
    people_csv(table, csv)
    written = [csv]
    extra: list[str] = []
    if by_set is not None:
        people_csv(by_set, out_dir / POSTTEST_VALIDITY_SETS_CSV)
        written.append(out_dir / POSTTEST_VALIDITY_SETS_CSV)

    if lik_table is not None:
        people_csv(lik_table, out_dir / POSTTEST_LIKELIHOOD_CSV)
        written.append(out_dir / POSTTEST_LIKELIHOOD_CSV)
        if lik_by_set is not None:
            people_csv(lik_by_set, out_dir / POSTTEST_LIKELIHOOD_SETS_CSV)
            written.append(out_dir / POSTTEST_LIKELIHOOD_SETS_CSV)
    if by_set is not None:
        extra = [
            "Per tutorial set (`--tutorials`; an off_topic copy is taught from a conversation of the same set):",
            "",
            frame_table(by_set),
            "",
        ]
    lik_lines: list[str] = []
    for name, t in (("", lik_table), (" per tutorial set", lik_by_set)):
        if t is not None:
            lik_lines += [
                f"Likelihood post-test{name} (`--posttest-likelihood`): accuracy = share of pairs where "
                "the original's Likelihood Gain (mean log-probability per token of the tutorial's steps "
                "given the lesson minus given the title; nats) is higher than the copy's; the "
                "mean_recall columns hold the mean Likelihood Gain here:",
                "",
                frame_table(t),
                "",
            ]
    md = out_dir / POSTTEST_VALIDITY_MD
    md.write_text(
        "\n".join(
            [
                f"# Post-test validity: learner {spec}",
                "",
                f"{n_convs} conversations. Accuracy = share of pairs where the original conversation's post-test Step Recall "
                "is higher than the perturbed copy's (ties count half; 95 % bootstrap CI over conversations). "
                "`judge_accuracy`: the rubric judge's mean accuracy on the same perturbation (its targeted rubrics), "
                "when judge-check judged this output directory. `coverage_original` / `coverage_perturbed`: the "
                "teacher's Step Coverage (share of the tutorial's steps whose headline a teacher turn states) in the "
                "originals and the copies — where a skip_steps copy's is not lower, it removed no step the teacher "
                'had stated, and its pair cannot test the post-test. `abstained_*`: share of "not taught" lines '
                "(prompt v3).",
                "",
                f"Post-tests: {check.taken} taken now, {check.reused} reused; {check.failed} answers not a step list "
                f"(left out); {check.not_applicable} perturbed copies not applicable.",
                "",
                frame_table(table),
                "",
                *extra,
                *lik_lines,
            ]
        ),
        encoding="utf-8",
    )
    return [*written, md]
