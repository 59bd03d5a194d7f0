"""`compare`'s outputs from the verdicts of both orders: pairwise.csv, win_rates.csv (bootstrap CIs over
tutorials), position.csv, bradley_terry.csv (3+ runs), summary.md and the head-to-head heatmap (`analyse`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikihowagent.csvcells import people_csv
from wikihowagent.figures import annotated_heatmap
from wikihowagent.layout import (
    BRADLEY_TERRY_CSV,
    HEAD_TO_HEAD_PNG,
    OVERALL,
    PAIRWISE_CSV,
    POSITION_CSV,
    SUMMARY_MD,
    WIN_RATES_CSV,
)
from wikihowagent.markdown import frame_table
from wikihowagent.records import PairwiseRecord
from wikihowagent.stats.ranking import Outcome, bradley_terry, win_rate

from .engine import verdict_rows
from .pairwise import DEFAULT_TIE_BAND, SCORES, verdict_rule, winner_score


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
