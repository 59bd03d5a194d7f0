"""What the alignment study compares: the rubrics of the rubric file, the annotation sheet's layout, column names.

The rubric names are read from the bundled rubric file (`wikihowagent/data/rubrics.json`, paper Table 5) on first use, by
`evaluate`'s validating loader: they are spelled nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from wikihowagent.judge.rubric_judge import load_rubrics

OVERALL = "Overall"  # per-conversation mean of the metrics (see `report.overall_scores`)


@lru_cache(maxsize=1)
def metrics() -> tuple[str, ...]:
    """The rubric metrics, in the rubric file's order (the paper's §3.1.2, and ScoreRecord.metrics)."""
    return tuple(load_rubrics())


def n_metrics() -> int:
    return len(metrics())


def row_names() -> list[str]:
    """The rubrics and Overall: the rows of align's tables."""
    return [*metrics(), OVERALL]


@lru_cache(maxsize=1)
def metric_by_key() -> dict[str, str]:
    """Lower-case name -> rubric name."""
    return {m.lower(): m for m in metrics()}


@lru_cache(maxsize=1)
def sheet_metrics() -> tuple[str, ...]:
    """The rubric columns of the annotation sheet (lower-case, as the paper's published sheets): in the order of
    the rubric file's `sheet_column`, rubrics without one after them in the file's order."""
    rubrics = list(load_rubrics().values())
    ordered = sorted(rubrics, key=lambda r: (r.sheet_column is None, r.sheet_column or 0))
    return tuple(r.name.lower() for r in ordered)


def sheet_columns() -> tuple[str, ...]:
    """The paper's annotation CSV layout (`filename` = the run); `tutorial_id` is our extra column at the end."""
    return ("conversation_id", "filename", "title", *sheet_metrics(), "comment", "tutorial_id")


ID_KEYS = ("conversation_id", "conversationid", "conv_id")
ANNOTATOR_KEYS = ("annotator", "judge", "rater", "coder", "annotator_id", "judge_id", "rater_id")
RUN_KEYS = ("filename", "run", "run_name")
MODEL_KEYS = ("model",)
# Columns that are known not to be rubric scores: never warned about. Anything else that holds numbers is
# reported as an "unknown metric column" (see `annotations.classify_columns`).
KNOWN_META_KEYS = frozenset(
    {
        *ID_KEYS,
        *ANNOTATOR_KEYS,
        *RUN_KEYS,
        *MODEL_KEYS,
        "title",
        "method_title",
        "comment",
        "comments",
        "note",
        "notes",
        "tutorial_id",
        "doc_id",
        "method_id",
        "teacher",
        "learner",
        "evaluator",
        "domain",
        "categories",
        "source_tutorial_path",
        "index",
        "row",
        "",
        # automatic (non-rubric) metrics of the paper's records: numeric but legitimately not rubric scores
        "question_ratio",
        "completion_achieved",
        "diversity_score",
        "diversity",
        "question",
        "completion",
        "bleu",
        "meteor",
        "rouge",
        "bertscore",
    }
)


def norm_key(name: str) -> str:
    """'Conversation ID' -> 'conversation_id'; 'Unnamed: 0' (a pandas index column) -> ''."""
    key = re.sub(r"[\s\-]+", "_", str(name).strip().lower())
    return "" if key.startswith("unnamed:") else key


def __getattr__(
    name: str,
) -> Any:  # METRICS, METRIC_BY_KEY, SHEET_METRICS, SHEET_COLUMNS for scripts: read on first use
    lazy: dict[str, Callable[[], Any]] = {
        "METRICS": metrics,
        "METRIC_BY_KEY": metric_by_key,
        "SHEET_METRICS": sheet_metrics,
        "SHEET_COLUMNS": sheet_columns,
    }
    if name in lazy:
        return lazy[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
