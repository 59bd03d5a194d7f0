"""What the alignment study compares: the 8 paper rubrics, the annotation sheet's layout, column names."""

from __future__ import annotations

import re

# The 8 rubric metrics, in the order of the paper's §3.1.2 (and of ScoreRecord.metrics).
METRICS: tuple[str, ...] = (
    "Clarity",
    "Truthfulness",
    "Engagement",
    "Coherence",
    "Depth",
    "Relevance",
    "Progress",
    "Naturalness",
)
OVERALL = "Overall"  # per-conversation mean of the metrics (see `report.overall_scores`)
METRIC_BY_KEY = {m.lower(): m for m in METRICS}

# The paper's annotation CSV layout (lower-case metric names; `filename` = the run). `tutorial_id` is our
# extra column at the end.
SHEET_METRICS: tuple[str, ...] = (
    "clarity",
    "engagement",
    "coherence",
    "depth",
    "relevance",
    "progress",
    "naturalness",
    "truthfulness",
)
SHEET_COLUMNS: tuple[str, ...] = ("conversation_id", "filename", "title", *SHEET_METRICS, "comment", "tutorial_id")

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
