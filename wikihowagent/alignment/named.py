"""Files the user named (`-H`, `--scores`) that contribute nothing to an alignment result.

Such a file is never dropped silently: `align` reports it on one line and exits non-zero (whatever the other
files allowed to compute is still written).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .annotations import JudgeRatings
from .problems import AlignInputError, Problems
from .sources import LLMScores, resolve_score_paths


def _reason(path: Path | str, problems: Problems, default: str) -> str:
    """The 'unusable file' problem recorded for `path`, else `path: default`."""
    for p in problems:
        if p.kind == "unusable file" and p.message.startswith(f"{path}:"):
            return p.message
    return f"{path}: {default}"


def _any_automatic(row) -> bool:
    """Scores with an automatic metric (a post-test's, e.g. `evaluate --posttest-learner` without a judge, or any
    computational metric of `evaluate --no-judge`) contribute to the metric tables."""
    return any(v is not None and np.isfinite(v) for v in (*row.automatic.values(), *row.metrics.values()))


def unused_inputs(
    human_paths: list[Path], score_paths: list[Path], judges: list[JudgeRatings], llm: LLMScores, problems: Problems
) -> list[str]:
    """One line per named file (or directory) that gave no usable score, with the reason."""
    out: list[str] = []
    for path in human_paths:
        mine = [j for j in judges if j.source == str(path)]
        if not any(np.isfinite(v).any() for j in mine for v in j.scores.values()):
            out.append(_reason(path, problems, "no usable score in it (every score cell blank or left out)"))
            continue
        rated = [cid for j in mine for cid in j.scores]
        if llm.rows and rated and not any(cid in llm.rows for cid in rated):
            out.append(
                f"{path}: none of its {len(set(rated))} conversation ids has a score in --scores (the first: "
                f"{rated[0]}); are the sheet and the scores of the same conversations?"
            )
    for path in score_paths:
        try:
            files = resolve_score_paths([path])
        except AlignInputError as exc:
            out.append(str(exc))
            continue
        ids = [cid for f in files for cid in llm.by_source.get(str(f), [])]
        if not any(
            cid in llm.rows and (np.isfinite(llm.rows[cid].values).any() or _any_automatic(llm.rows[cid]))
            for cid in ids
        ):
            why = (
                _reason(files[0], problems, "no usable LLM score or metric in it")
                if len(files) == 1
                else f"{path}: no usable LLM score or metric in any of its {len(files)} score files"
            )
            out.append(why)
    return out
