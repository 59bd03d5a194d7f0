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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.config import load_config
from wikihowagent.csvcells import people_csv
from wikihowagent.errors import WikihowagentError
from wikihowagent.evaluation.checklist import ChecklistError, check_checklist_files, checklist_for
from wikihowagent.evaluation.inputs import resolve_inputs
from wikihowagent.evaluation.judge import JudgeBackendError, load_rubrics
from wikihowagent.evaluation.runner import EvalOptions, Evaluation, judge_concurrency
from wikihowagent.evaluation.scoring import make_scorer
from wikihowagent.evaluation.session import JudgeLoop, judge_endpoints, locked_out, resumable
from wikihowagent.figures import annotated_heatmap
from wikihowagent.markdown import frame_table
from wikihowagent.records import Conversation, PairwiseRecord
from wikihowagent.runs import (
    BRADLEY_TERRY_CSV,
    CHECKLIST_SCORES,
    COMPARE_DIR,
    HEAD_TO_HEAD_PNG,
    OVERALL,
    PAIR_JUDGMENTS,
    PAIRWISE_CSV,
    POSITION_CSV,
    SUMMARY_MD,
    WIN_RATES_CSV,
    JsonlAppender,
    read_pairwise,
    read_scores,
)
from wikihowagent.runs import SCORES as SCORES_JSONL
from wikihowagent.shards import parse_shard
from wikihowagent.stats.ranking import Outcome, bradley_terry, win_rate

from .engine import (
    PairJob,
    PassStats,
    judgment_files,
    merge_pair_judgments,
    pending,
    read_pair_judgments,
    reading_note,
    run_pair_jobs,
    verdict_rows,
)
from .pairwise import (
    AVERAGE,
    CHECKLIST_READING,
    DEFAULT_TIE_BAND,
    SCORES,
    ChecklistPairJudge,
    PairwiseJudge,
    check_tie_band,
    verdict_rule,
    winner_score,
)


class CompareError(WikihowagentError, ValueError):
    """Bad input for `compare`; one line naming the run(s)."""


# --------------------------------------------------------------------------------------------------
# Plan and run
# --------------------------------------------------------------------------------------------------


def first_by_tutorial(convs: Iterable[Conversation]) -> dict[str, Conversation]:
    out: dict[str, Conversation] = {}
    for c in sorted(convs, key=lambda c: c.conversation_id):
        out.setdefault(c.tutorial_key, c)
    return out


def plan_compare(
    runs: dict[str, dict[str, Conversation]], names: list[str], shard: tuple[int, int] | None = None
) -> list[PairJob]:
    """Both orders of every pair of runs on every tutorial they share; `shard` (K, N) keeps every N-th
    tutorial from K (of the sorted union). Jobs come tutorial by tutorial, by first run, so passes that
    show the same conversation first follow each other (a shared prompt prefix)."""
    order = list(runs)
    tutorials = sorted({t for convs in runs.values() for t in convs})
    jobs = []
    for i, t in enumerate(tutorials):
        if shard is not None and i % shard[1] != shard[0]:
            continue
        for x in order:
            for y in order:
                if x != y and t in runs[x] and t in runs[y]:
                    jobs.append(PairJob(t, x, y, runs[x][t], runs[y][t], list(names)))
    return jobs


# --------------------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------------------


def _r(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def position_table(rows: list[dict[str, Any]], rubric_names: list[str]) -> Any:
    import pandas as pd

    out = []
    for rubric in rubric_names + [OVERALL]:
        sel = [r for r in rows if rubric == OVERALL or r["rubric"] == rubric]
        n = len(sel)
        inc = sum(not r["consistent"] for r in sel)
        out.append(
            {
                "rubric": rubric,
                "n": n,
                "inconsistent": inc,
                "position_consistency": _r(1 - inc / n) if n else None,
                "mean_order_effect": _r(sum(r["order_effect"] for r in sel) / n) if n else None,
                "first_preferred": _r(sum((r["p_ab"] > 0.5) + (r["p_ba"] > 0.5) for r in sel) / (2 * n)) if n else None,
            }
        )
    return pd.DataFrame(out)


def _outcomes(rows: list[dict[str, Any]], index: dict[str, int], rubric: str) -> list[Any]:

    return [
        Outcome(r["tutorial_id"], index[r["run_a"]], index[r["run_b"]], winner_score(r["verdict"]))
        for r in rows
        if rubric == OVERALL or r["rubric"] == rubric
    ]


def win_rate_table(rows: list[dict[str, Any]], runs: list[str], rubric_names: list[str], n_boot: int, seed: int) -> Any:
    import pandas as pd

    index = {r: i for i, r in enumerate(runs)}
    out = []
    for rubric in rubric_names + [OVERALL]:
        outs = _outcomes(rows, index, rubric)
        for i, a in enumerate(runs):
            for b in runs[i + 1 :]:
                w = win_rate(index[a], index[b], outs, n_boot=n_boot, seed=seed)
                if w.n:
                    out.append(
                        {
                            "rubric": rubric,
                            "run_a": a,
                            "run_b": b,
                            "n": w.n,
                            "wins_a": w.wins,
                            "ties": w.ties,
                            "wins_b": w.losses,
                            "win_rate_a": _r(w.rate),
                            "ci_low": _r(w.ci_low),
                            "ci_high": _r(w.ci_high),
                        }
                    )
    return pd.DataFrame(
        out, columns=["rubric", "run_a", "run_b", "n", "wins_a", "ties", "wins_b", "win_rate_a", "ci_low", "ci_high"]
    )


def bt_table(rows: list[dict[str, Any]], runs: list[str], rubric_names: list[str], n_boot: int, seed: int) -> Any:
    import pandas as pd

    index = {r: i for i, r in enumerate(runs)}
    out = []
    for rubric in rubric_names + [OVERALL]:
        outs = _outcomes(rows, index, rubric)
        if not outs:
            continue
        for s in bradley_terry(len(runs), outs, n_boot=n_boot, seed=seed):
            out.append(
                {
                    "rubric": rubric,
                    "run": runs[s.item],
                    "rank": s.rank,
                    "theta": _r(s.theta),
                    "ci_low": _r(s.ci_low),
                    "ci_high": _r(s.ci_high),
                }
            )
    return pd.DataFrame(out, columns=["rubric", "run", "rank", "theta", "ci_low", "ci_high"])


def heatmap(wins: Any, runs: list[str], path: Path, title: str) -> Path:
    import numpy as np

    grid = np.full((len(runs), len(runs)), np.nan)
    idx = {r: i for i, r in enumerate(runs)}
    for _, row in wins[wins["rubric"] == OVERALL].iterrows():
        i, j = idx[row["run_a"]], idx[row["run_b"]]
        if not pd_isna(row["win_rate_a"]):
            grid[i, j] = row["win_rate_a"]
            grid[j, i] = 1 - row["win_rate_a"]
    return annotated_heatmap(
        grid,
        runs,
        runs,
        path,
        title=title,
        colorbar="win rate of the row's run (ties half)",
        figsize=(1.3 * len(runs) + 3, 1.0 * len(runs) + 2),
        xrotation=30,
        tick_size=8,
        cell_size=9,
    )


def pd_isna(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


@dataclass
class CompareResult:
    runs: list[str]
    pairwise: Any  # DataFrames
    win_rates: Any
    position: Any
    bradley_terry: Any | None
    missing: int = 0  # (pair, tutorial, rubric) without both orders readable
    rule: str = ""  # the verdict rule's label
    bad_values: int = 0  # stored P(A better) values that were not probabilities (left out)
    written: list[Path] = field(default_factory=list)


PAIRWISE_COLUMNS = [
    "tutorial_id",
    "run_a",
    "run_b",
    "rubric",
    "p_ab",
    "p_ba",
    "p_a",
    "order_effect",
    "verdict",
    "consistent",
    "verdict_rule",
]


def analyse(
    out_dir: Path,
    records: dict[tuple[str, ...], PairwiseRecord],
    runs: list[str],
    rubric_names: list[str],
    judge_desc: str,
    reading_note: str,
    n_boot: int,
    seed: int,
    figures: bool = True,
    rule: str | None = None,
    tie_band: float = DEFAULT_TIE_BAND,
    bad_values: int = 0,
) -> CompareResult:
    """Write the tables, summary.md and the heatmap of `records`; `bad_values`: how many stored values of the
    judgments files were not probabilities (said in summary.md)."""
    import pandas as pd

    pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    rows, missing = verdict_rows(records, pairs, rubric_names, rule, tie_band)
    pw = pd.DataFrame(rows, columns=PAIRWISE_COLUMNS)
    wins = win_rate_table(rows, runs, rubric_names, n_boot, seed)
    pos = position_table(rows, rubric_names)
    bt = bt_table(rows, runs, rubric_names, n_boot, seed) if len(runs) >= 3 else None
    out_dir = Path(out_dir)
    res = CompareResult(runs, pw, wins, pos, bt, missing, verdict_rule(rule).label(tie_band), bad_values)
    res.written += [
        people_csv(pw, out_dir / PAIRWISE_CSV),
        people_csv(wins, out_dir / WIN_RATES_CSV),
        people_csv(pos, out_dir / POSITION_CSV),
    ]
    if bt is not None:
        res.written.append(people_csv(bt, out_dir / BRADLEY_TERRY_CSV))
    summary = compare_summary(res, judge_desc, reading_note, n_boot, rule, tie_band)
    (out_dir / SUMMARY_MD).write_text(summary, encoding="utf-8")
    res.written.append(out_dir / SUMMARY_MD)
    if figures and len(wins):
        res.written.append(heatmap(wins, runs, out_dir / HEAD_TO_HEAD_PNG, f"head to head: {judge_desc}"))
    return res


def compare_summary(
    res: CompareResult, judge_desc: str, reading_note: str, n_boot: int, rule: str | None, tie_band: float
) -> str:
    """summary.md's text: what was judged and how, Bradley–Terry (≥ 3 runs), win rates, position consistency."""
    pw, bt, missing, bad_values = res.pairwise, res.bradley_terry, res.missing, res.bad_values
    lines = [
        f"# Head to head: {judge_desc}",
        "",
        reading_note,
        "",
        f"{len(res.runs)} runs, {pw['tutorial_id'].nunique() if len(pw) else 0} tutorials judged; "
        f"{len(pw)} (pair, tutorial, rubric) verdicts "
        + ("from the two conversations' own scores" if rule == SCORES else "from both orders")
        + (f"; {missing} left out (an order missing or unreadable)" if missing else "")
        + "."
        + (
            f" {bad_values} stored P(A better) values were not probabilities in [0, 1] and were left out "
            "(each named on stderr)."
            if bad_values
            else ""
        ),
        verdict_rule(rule).sentence(tie_band) + " Win rates count ties as half; "
        f"95 % CIs resample tutorials ({n_boot} bootstrap resamples). Position consistency does not depend "
        "on the rule.",
        "",
    ]
    if bt is not None:
        lines += [
            "## Bradley–Terry (log-strength θ, mean 0; θ_i − θ_j = log-odds that i beats j)",
            "",
            frame_table(bt[bt["rubric"] == OVERALL].drop(columns="rubric")),
            "",
            "Per rubric:",
            "",
            frame_table(bt),
            "",
        ]
    lines += [
        "## Win rates",
        "",
        frame_table(res.win_rates),
        "",
        "## Position consistency",
        "",
        frame_table(res.position),
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# The stage as one call
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareRequest:
    runs: tuple[Path, ...]
    out: Path | None = None  # default <runs_dir>/compare
    evaluator: str | None = None
    rubrics: Path | None = None
    metrics: str | None = None  # comma-separated rubric names; None = every rubric
    config: Path | None = None
    base_url: str | None = None
    concurrency: int | None = None
    retries: int = 2
    shard: str | None = None
    bootstrap: int = 1000
    seed: int = 0
    reading: str | None = None  # "logprobs" | "answer"; None = by backend
    max_tutorials: int | None = None
    figures: bool = True
    retry_failed: bool = True
    verdict_rule: str | None = None  # pairwise.VERDICT_RULES; None = the default (agree)
    tie_band: float = DEFAULT_TIE_BAND
    from_judgments: bool = False  # analyse OUT's stored judgments only: no judge, no model
    judge_scoring: str | None = None  # "checklist": position-free verdicts from each conversation's own scores
    checklist: Path | None = None  # --checklist: items file (None = wikihowagent/data/checklists.json)
    checklist_weights: Path | None = None  # --checklist-weights: `align --fit-checklist`'s weights
    score_tie_band: float = 0.0  # checklist verdicts: a score difference up to this (points) is a tie


def load_runs(
    sources: list[Any], warn: Callable[[str], None], max_tutorials: int | None
) -> dict[str, dict[str, Conversation]]:
    names = [s.name for s in sources]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CompareError(
            f"two inputs have the same run name {dup[0]!r} ({', '.join(str(s.path) for s in sources if s.name == dup[0])}): "
            "rename one run directory"
        )
    runs = {}
    for s in sources:
        convs = first_by_tutorial(s.conversations(on_error=warn))
        if not convs:
            raise CompareError(f"{s.path}: no conversations to compare")
        runs[s.name] = convs
    if max_tutorials:
        keep = set(sorted({t for c in runs.values() for t in c})[:max_tutorials])
        runs = {n: {t: c for t, c in cs.items() if t in keep} for n, cs in runs.items()}
    order = list(runs)
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            if not set(runs[a]) & set(runs[b]):
                raise CompareError(
                    f"runs {a} and {b} share no tutorial: nothing to compare (compare runs generated on "
                    "the same tutorials)"
                )
    return runs


class Warnings:
    """The stage's warnings on the console, each said once (the judgments files are read more than once);
    `bad_value` also counts the stored values that were not probabilities."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.said: set[str] = set()
        self.bad_values: set[str] = set()

    def warn(self, msg: str) -> None:
        if msg not in self.said:
            self.said.add(msg)
            self.console.print("warning: " + msg, highlight=False, soft_wrap=True, markup=False)

    def bad_value(self, msg: str) -> None:
        self.bad_values.add(msg)
        self.warn(msg)


@dataclass(frozen=True)
class CompareMode:
    """The request's judging options, checked (`check_request`, then `judging_mode` once the judge is known)."""

    shard: tuple[int, int] | None
    rule: str  # the verdict rule's name
    band: float  # its tie band (points for the checklist judge's `scores` rule)
    checklist: bool  # checklist verdicts (--judge-scoring checklist, its options, or the judge's measured default)


PAIRWISE, CHECKLIST = "pairwise", "checklist"  # compare's --judge-scoring values


def check_request(req: CompareRequest) -> tuple[int, int] | None:
    """Every option combination `compare` refuses whichever judge it turns out to be, as a one-line
    CompareError, before anything is read; -> the shard."""
    try:
        shard = parse_shard(req.shard) if req.shard else None
        verdict_rule(req.verdict_rule)
        check_tie_band(req.tie_band)
    except ValueError as exc:
        raise CompareError(str(exc)) from None
    if req.judge_scoring not in (None, PAIRWISE, CHECKLIST):
        raise CompareError(
            f"--judge-scoring: compare judges pairs head to head ({PAIRWISE}) or by checklist scores "
            f"({CHECKLIST}), not {req.judge_scoring!r}"
        )
    if not 0.0 <= req.score_tie_band <= 4.0:
        raise CompareError(f"--score-tie-band must be between 0 and 4 points (got {req.score_tie_band:g})")
    if shard is not None and req.from_judgments:
        raise CompareError("--from-judgments analyses every shard's judgments: drop --shard")
    if len(req.runs) < 2:
        raise CompareError(
            f"compare needs at least two runs to judge head to head (got {len(req.runs)}"
            + (f": {req.runs[0]}" if req.runs else "")
            + ")"
        )
    return shard


def _options_of(req: CompareRequest) -> tuple[list[str], list[str]]:
    """(the options given that only the checklist judge takes, those only the pairwise judge takes)."""
    rule = req.verdict_rule
    checklist = [
        name
        for name, given in (
            ("--checklist", req.checklist is not None),
            ("--checklist-weights", req.checklist_weights is not None),
            ("--score-tie-band", bool(req.score_tie_band)),
            (f"--verdict-rule {SCORES}", rule == SCORES),
        )
        if given
    ]
    pairwise = [
        name
        for name, given in (
            ("--pairwise-reading", req.reading is not None),
            ("--tie-band", bool(req.tie_band)),
            (f"--verdict-rule {rule}", rule is not None and rule != SCORES),
        )
        if given
    ]
    return checklist, pairwise


def chosen_scoring(req: CompareRequest, default: str | None) -> str:
    """Which judge makes the verdicts: --judge-scoring; else the one whose options were given (--checklist,
    --checklist-weights, --score-tie-band, --verdict-rule scores: checklist; --pairwise-reading, --tie-band,
    another --verdict-rule: pairwise); else `default` (the judge's measured default; None: pairwise)."""
    if req.judge_scoring is not None:
        return req.judge_scoring
    checklist, pairwise = _options_of(req)
    if checklist and pairwise:
        raise CompareError(
            f"{checklist[0]} is the checklist judge's option and {pairwise[0]} the pairwise judge's: "
            "pass --judge-scoring checklist or pairwise"
        )
    if checklist or pairwise:
        return CHECKLIST if checklist else PAIRWISE
    return default if default in (PAIRWISE, CHECKLIST) else PAIRWISE


def judging_mode(req: CompareRequest, shard: tuple[int, int] | None, scoring: str) -> CompareMode:
    """The verdict rule and tie band of `scoring` (chosen_scoring); a one-line CompareError for an option of
    the other judge."""
    checklist_opts, _ = _options_of(req)
    if scoring == CHECKLIST:
        if req.verdict_rule not in (None, SCORES):
            raise CompareError(
                f"--judge-scoring checklist makes each verdict from the two conversations' own scores "
                f"(rule `{SCORES}`); --verdict-rule {req.verdict_rule} applies to the pairwise judge"
            )
        if req.tie_band:
            raise CompareError("--tie-band is the `average` rule's; checklist verdicts take --score-tie-band (points)")
        if req.reading is not None:
            raise CompareError("--pairwise-reading applies to the pairwise judge, not --judge-scoring checklist")
        return CompareMode(shard, SCORES, req.score_tie_band, True)
    if checklist_opts:
        raise CompareError(
            f"{checklist_opts[0]} applies to the checklist judge: use it with --judge-scoring checklist"
            + (f" (the {SCORES} rule is the checklist judge's)" if req.verdict_rule == SCORES else "")
        )
    rule = verdict_rule(req.verdict_rule)
    if req.tie_band and rule.name != AVERAGE:
        raise CompareError(
            f"--tie-band is the `{AVERAGE}` rule's: add --verdict-rule {AVERAGE} (the `{rule.name}` "
            "rule has no tie band)"
        )
    return CompareMode(shard, rule.name, req.tie_band, False)


def rubric_names(metrics: str | None, rubric_set: dict[str, Any]) -> list[str]:
    """--metrics: the rubrics asked (in the rubric file's order); every rubric without it."""
    if not metrics:
        return list(rubric_set)
    asked = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in asked if m not in rubric_set]
    if unknown:
        raise CompareError(f"--metrics: unknown rubric {unknown[0]!r}; valid: {', '.join(rubric_set)}")
    return [n for n in rubric_set if n in asked]


@dataclass
class PairPasses:
    """What a judging pass of `compare` works on, for the pairwise and the checklist judge alike."""

    req: CompareRequest
    console: Any
    progress_factory: Callable[[int], Any]
    runs: dict[str, dict[str, Conversation]]
    names: list[str]  # the rubrics asked
    rubric_set: dict[str, Any]
    spec: str  # the judge
    make_llm: Callable[[str], Any]
    opts: EvalOptions
    out: Path
    shard: tuple[int, int] | None
    stats: PassStats
    warn: Callable[[str], None]

    def file(self, stem: str) -> Path:
        """OUT's `stem` file of this shard (`<stem>-K-of-N.jsonl`), or of the whole run."""
        base = stem.removesuffix(".jsonl")
        return self.out / (f"{base}-{self.shard[0]}-of-{self.shard[1]}.jsonl" if self.shard else stem)

    def jobs(self) -> list[PairJob]:
        return plan_compare(self.runs, self.names, self.shard)


def _check_checklist_options(req: CompareRequest, shard: tuple[int, int] | None, rubric_names: list[str]) -> None:
    """--checklist / --checklist-weights: refused with the other judge (said first), else their files read and
    checked before any model or server is contacted."""
    judging_mode(req, shard, chosen_scoring(req, None))  # an option of the other judge: said first
    try:
        check_checklist_files(req.checklist, req.checklist_weights, rubric_names)
    except ChecklistError as exc:
        raise CompareError(str(exc)) from None


def run_compare(
    req: CompareRequest, console: Any, progress_factory: Callable[[int], Any]
) -> tuple[CompareResult | None, PassStats, str]:
    """Judge every shared tutorial of every pair in both orders, then analyse (not for a shard); with
    `from_judgments`, only analyse the judgments already in the output directory (no judge is made).

    -> (result or None for a shard, pass statistics, a line describing the judge and its reading)."""
    said = Warnings(console)
    shard = check_request(req)
    cfg = load_config(req.config)
    rubric_set = load_rubrics(req.rubrics)
    if req.checklist is not None or req.checklist_weights is not None:
        _check_checklist_options(req, shard, list(rubric_set))
    sources = resolve_inputs(list(req.runs), Path(cfg.runs_dir))
    names = rubric_names(req.metrics, rubric_set)
    runs = load_runs(sources, said.warn, req.max_tutorials)
    opts = EvalOptions(
        judge=True,
        evaluator=req.evaluator,
        base_url=req.base_url,
        concurrency=req.concurrency,
        default_concurrency=cfg.concurrency,
        retries=req.retries,
    )
    endpoints = judge_endpoints(cfg, req.base_url)  # as `evaluate`: the run's evaluator and endpoint, else --evaluator
    ev = Evaluation(opts, [], names, rubric_set, endpoints.make_llm, said.warn)
    spec = endpoints.resolve_one(ev, sources, _different_judges)
    out = Path(req.out) if req.out is not None else Path(cfg.runs_dir) / COMPARE_DIR
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
        judge_pairs = _judge_checklist_pairs if mode.checklist else _judge_pairs
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
        reading = judge_pairs(passes)
    desc = f"{spec} (checklist scores)" if mode.checklist else f"{spec} (pairwise, {reading})"
    if mode.shard is not None and not req.from_judgments:
        return None, stats, desc
    records = (
        merge_pair_judgments(stored, spec, reading)
        if req.from_judgments
        else read_pair_judgments(judgment_files(out, PAIR_JUDGMENTS), spec, reading, said.warn, said.bad_value)
    )
    return _analyse_out(req, mode, said, out, reading, records, runs, names, desc), stats, desc


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


def _judge_checklist_pairs(p: PairPasses) -> str:
    """Judge each conversation of every pending pass alone with the checklist judge (stored in
    checklist-scores.jsonl), and write each pass's verdicts from the two scores (resumable). A run whose own
    scores.jsonl holds this judge's checklist scores (same checklist and weights) is not judged again."""
    scorer, checklist = _checklist_scorer(p)
    path = p.file(PAIR_JUDGMENTS)
    jobs = p.jobs()
    p.console.print(
        f"compare: {len(p.runs)} runs ({', '.join(p.runs)}), judge {p.spec} (checklist scores, checklist "
        f"{checklist.ident}, weights {scorer.weights_name}): {len(jobs)} passes from each conversation's "
        f"own checklist scores x {len(p.names)} rubrics",
        highlight=False,
        markup=False,
    )
    with (
        JudgeLoop() as loop,
        resumable(CompareError, path),
        locked_out(p.out, "another 'wikihowagent compare'", f".{path.name}.lock"),
    ):
        stored = _stored_checklist_scores(p)
        done = read_pair_judgments(judgment_files(p.out, PAIR_JUDGMENTS), p.spec, CHECKLIST_READING, p.warn)
        todo = pending(jobs, done, p.req.retry_failed)
        p.stats.already = len(jobs) - len(todo)
        with JsonlAppender(p.file(CHECKLIST_SCORES)) as sink, p.progress_factory(len(jobs)) as advance:
            judge = ChecklistPairJudge(scorer, sink, p.spec, stored)
            advance(p.stats.already)
            loop.run(run_pair_jobs(todo, judge, p.spec, path, advance, p.stats))
    return CHECKLIST_READING


def _checklist_scorer(p: PairPasses) -> tuple[Any, Any]:
    """(the checklist judge's scorer, its checklist); a bad checklist or weights file is a CompareError."""
    llm = p.make_llm(p.spec)
    try:
        checklist, weights = checklist_for(p.spec, list(p.rubric_set), p.req.checklist, p.req.checklist_weights)
    except ChecklistError as exc:
        raise CompareError(str(exc)) from None
    scorer = make_scorer(
        "checklist",
        llm,
        p.rubric_set,
        p.names,
        retries=p.req.retries,
        concurrency=judge_concurrency(p.opts, llm),
        checklist=checklist,
        checklist_weights=weights,
    )
    return scorer, checklist


def _stored_checklist_scores(p: PairPasses) -> dict[str, Any]:
    """The checklist scores already made: the runs' own (`evaluate --judge-scoring checklist`), then OUT's."""
    stored: dict[str, Any] = {}
    for run_path in p.req.runs:
        if (Path(run_path) / SCORES_JSONL).is_file():
            stored.update(read_scores(Path(run_path) / SCORES_JSONL, p.warn))
    for path in judgment_files(p.out, CHECKLIST_SCORES):
        stored.update(read_scores(path, p.warn))
    return stored


def stored_judgments(out: Path, spec: str, said: Warnings) -> list[PairwiseRecord]:
    """--from-judgments: `spec`'s pair judgments in `out` and its shards' files, in file order (read once: the
    kind, the reading and the analysis all come from these)."""
    return [
        r
        for path in judgment_files(out, PAIR_JUDGMENTS)
        for r in read_pairwise(path, said.warn, said.bad_value)
        if r.evaluator == spec
    ]


def stored_scoring(stored: list[PairwiseRecord], default: str | None) -> str | None:
    """--from-judgments with no judge chosen: the kind of the stored judgments (checklist or pairwise) when
    there is one kind, else `default`."""
    kinds = {CHECKLIST if r.reading == CHECKLIST_READING else PAIRWISE for r in stored}
    return kinds.pop() if len(kinds) == 1 else default


def stored_reading(stored: list[PairwiseRecord], out: Path, spec: str, checklist: bool, reading: str | None) -> str:
    """--from-judgments: the reading of the stored judgments of judge `spec` in `out`, of the checklist judge or
    else the pairwise judge's (`reading` if given); CompareError when there are none, or both pairwise readings
    and no choice."""
    found = {r.reading for r in stored if (r.reading == CHECKLIST_READING) == checklist}
    if reading is not None:
        found &= {reading}
    if not found:
        what = CHECKLIST_READING if checklist else f"{PAIRWISE}, {reading}" if reading else PAIRWISE
        raise CompareError(
            f"{out}: no pair judgments of judge {spec} ({what}): run compare without --from-judgments first"
        )
    if len(found) > 1:
        raise CompareError(
            f"{out}: judge {spec} has judgments in both readings ({', '.join(sorted(found))}): pass --pairwise-reading"
        )
    return found.pop()


def _judge_pairs(p: PairPasses) -> str:
    """Make the judge and judge every pending pass into OUT (resumable); -> the judge's reading."""
    llm = p.make_llm(p.spec)
    try:
        judge = PairwiseJudge(
            llm,
            p.rubric_set,
            p.names,
            reading=p.req.reading,
            retries=p.req.retries,
            concurrency=judge_concurrency(p.opts, llm),
        )
    except ValueError as exc:
        raise CompareError(f"evaluator {p.spec!r}: {exc}") from None
    with JudgeLoop() as loop:
        try:
            loop.run(judge.probe())
        except JudgeBackendError as exc:
            raise CompareError(str(exc)) from None
        _judge_pending(p, judge, loop)
    return judge.label


def _judge_pending(p: PairPasses, judge: Any, loop: JudgeLoop) -> None:
    """Judge every pass not yet in OUT's judgments (resumable) on `loop`, under OUT's lock."""
    path = p.file(PAIR_JUDGMENTS)
    jobs = p.jobs()
    p.console.print(
        f"compare: {len(p.runs)} runs ({', '.join(p.runs)}), judge {p.spec} (pairwise, {judge.label}): "
        f"{len(jobs)} judge passes (both orders of every shared tutorial) x {len(p.names)} rubrics",
        highlight=False,
        markup=False,
    )
    p.console.print(reading_note(judge.label), highlight=False, markup=False)
    with resumable(CompareError, path), locked_out(p.out, "another 'wikihowagent compare'", f".{path.name}.lock"):
        done = read_pair_judgments(judgment_files(p.out, PAIR_JUDGMENTS), p.spec, judge.label, p.warn)
        todo = pending(jobs, done, p.req.retry_failed)
        p.stats.already = len(jobs) - len(todo)
        with p.progress_factory(len(jobs)) as advance:
            advance(p.stats.already)
            loop.run(run_pair_jobs(todo, judge, p.spec, path, advance, p.stats))
