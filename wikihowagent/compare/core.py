"""`compare`: runs judged head to head, tutorial by tutorial.

For every tutorial two runs share, the pairwise judge (`pairwise.py`) sees both conversations and says, per
rubric, which teaches better, once in each order. Judge passes are appended to `pair-judgments.jsonl`
(`pair-judgments-K-of-N.jsonl` for `--shard K/N`) as they finish, so a rerun resumes and never duplicates a
verdict; the analysis reads every such file in the output directory:

- `pairwise.csv`: tutorial, run pair, rubric, p_ab, p_ba, the averaged P(A), the order effect, the
  verdict (A / B / tie) and the verdict rule that gave it (`agree`, the default: a preference only when both
  orders agree; `average`: the order-averaged P(A) outside a tie band; `pairwise.VERDICT_RULES`).
  `--from-judgments` re-analyses the stored judgments (e.g. under another rule) without the judge.
- `win_rates.csv`: per rubric (and `overall`, every rubric pooled) and pair, wins/ties/losses and the win
  rate (ties half) with a bootstrap CI over tutorials.
- `position.csv`: per rubric, the share of position-inconsistent pairs (the orders disagree) and the mean
  order effect |p_ab − (1 − p_ba)|.
- `bradley_terry.csv` (≥ 3 runs): per rubric and overall, each run's log-strength θ with a bootstrap CI.
- `summary.md`, `head_to_head.png` (overall win rates, row beats column).

A run with several conversations of one tutorial (e.g. a resumed run with duplicates) is represented by
its first conversation (by id).

`run_compare` is the stage as one call; the request and its checks are `request.py`'s, the runs read and the
passes planned `plan.py`'s, the judging passes and stored judgments `judging.py`'s, the tables, summary and
figure `analysis.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikihowagent.config import load_config
from wikihowagent.judge.rubric_judge import load_rubrics
from wikihowagent.judge.session import judge_endpoints
from wikihowagent.layout import COMPARE_DIR, PAIR_JUDGMENTS
from wikihowagent.outdir import check_writable
from wikihowagent.records import Conversation, PairwiseRecord
from wikihowagent.scores.inputs import resolve_inputs
from wikihowagent.scores.runner import EvalOptions, Evaluation

from .analysis import CompareResult, analyse
from .engine import PassStats, judgment_files, merge_pair_judgments, read_pair_judgments, reading_note
from .judging import (
    PairPasses,
    Warnings,
    judge_checklist_pairs,
    judge_pairs,
    stored_judgments,
    stored_reading,
    stored_scoring,
)
from .plan import load_runs, plan_compare
from .request import (
    CompareError,
    CompareMode,
    CompareRequest,
    check_checklist_options,
    check_request,
    chosen_scoring,
    judging_mode,
    rubric_names,
)


def run_compare(
    req: CompareRequest, console: Any, progress_factory: Callable[[int], Any]
) -> tuple[CompareResult | None, PassStats, str]:
    """Judge every shared tutorial of every pair in both orders, then analyse (not for a shard); with
    `from_judgments`, only analyse the judgments already in the output directory (no judge is made).

    -> (result or None for a shard, pass statistics, a line describing the judge and its reading)."""
    said = Warnings(console)
    shard = check_request(req)
    cfg = load_config(req.config)
    out = Path(req.out) if req.out is not None else Path(cfg.runs_dir) / COMPARE_DIR
    check_writable(out, "--out" if req.out is not None else "compare's output folder")
    rubric_set = load_rubrics(req.rubrics)
    if req.checklist is not None or req.checklist_weights is not None:
        check_checklist_options(req, shard, list(rubric_set))
    sources = resolve_inputs(list(req.runs), Path(cfg.runs_dir))
    names = rubric_names(req.metrics, rubric_set)
    runs = load_runs(sources, said.warn, req.max_tutorials)
    opts = _eval_options(req, cfg.concurrency)
    endpoints = judge_endpoints(
        cfg, req.scoring.base_url
    )  # as `evaluate`: the run's evaluator and endpoint, else --evaluator
    ev = Evaluation(opts, [], names, rubric_set, endpoints.make_llm, said.warn)
    spec = endpoints.resolve_one(ev, sources, _different_judges)
    default = endpoints.preferred_scoring(spec)  # the judge's measured default (the embedded model: checklist)
    stored: list[PairwiseRecord] = []  # --from-judgments: this judge's judgments in OUT, read once
    if req.from_judgments:
        stored = stored_judgments(out, spec, said)
        default = stored_scoring(stored, default)
    mode = judging_mode(req, shard, chosen_scoring(req, default))
    stats = PassStats(from_scores=mode.checklist)
    if req.from_judgments:
        reading = stored_reading(stored, out, spec, mode.checklist, req.reading)
    else:  # each conversation judged alone (checklist) or each pair in both orders: the same arguments
        judge = judge_checklist_pairs if mode.checklist else judge_pairs
        passes = PairPasses(
            req=req,
            console=console,
            progress_factory=progress_factory,
            runs=runs,
            names=names,
            rubric_set=rubric_set,
            spec=spec,
            make_llm=endpoints.make_llm,
            opts=opts,
            out=out,
            shard=mode.shard,
            stats=stats,
            warn=said.warn,
        )
        reading = judge(passes)
    desc = f"{spec} (checklist scores)" if mode.checklist else f"{spec} (pairwise, {reading})"
    if mode.shard is not None and not req.from_judgments:
        return None, stats, desc
    records = (
        merge_pair_judgments(stored, spec, reading)
        if req.from_judgments
        else read_pair_judgments(judgment_files(out, PAIR_JUDGMENTS), spec, reading, said.warn, said.bad_value)
    )
    return _analyse_out(req, mode, said, out, reading, records, runs, names, desc), stats, desc


def _eval_options(req: CompareRequest, default_concurrency: int) -> EvalOptions:
    """The judge's options, as `evaluate` takes them: the evaluator, its server, concurrency and retries."""
    return EvalOptions(asked=req.scoring, judge=True, default_concurrency=default_concurrency)


def _analyse_out(
    req: CompareRequest,
    mode: CompareMode,
    said: Warnings,
    out: Path,
    reading: str,
    records: dict[tuple[str, ...], PairwiseRecord],
    runs: dict[str, dict[str, Conversation]],
    names: list[str],
    desc: str,
) -> CompareResult:
    """Every shard's judgments in OUT of this judge and reading (`records`), on these runs' passes, analysed."""
    wanted = {j.key for j in plan_compare(runs, names)}
    records = {k: r for k, r in records.items() if k in wanted}
    return analyse(
        out,
        records,
        list(runs),
        names,
        desc,
        reading_note(reading),
        req.bootstrap,
        req.seed,
        req.figures,
        mode.rule,
        mode.band,
        len(said.bad_values),
    )


def _different_judges(by_source: dict[str, str]) -> CompareError:
    which = "; ".join(f"{n}: {spec}" for n, spec in by_source.items())
    return CompareError(
        f"the runs name different judges ({which}): pass --evaluator SPEC to judge every pair with the same one"
    )
