"""Typed readers of one file whose path runs.py has chosen: conversation records, post-tests, judge-check's
judgments, a calibration, and pairwise judgments. Stages import them from here; the files' names are in
layout.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from wikihowagent.errors import one_line, validation_line
from wikihowagent.jsonlio import (
    JsonInputError,
    JsonlError,
    RunError,
    iter_jsonl,
    read_json_file,
    repair_torn_tail,
    rewrite_jsonl,
)
from wikihowagent.records import (
    Calibration,
    ConversationRecord,
    JudgmentRecord,
    PairwiseRecord,
    PeopleEstimate,
    PostTest,
)
from wikihowagent.scoretable import ScoreTable

FileModel = TypeVar("FileModel", bound=BaseModel)


def read_records(path: Path) -> Iterator[tuple[int, ConversationRecord]]:
    """(line, record) of one of our conversations.jsonl files, failed records included; a bad line raises
    JsonlError naming file and line (a torn last line included: call `repair_torn_tail` first)."""
    for lineno, obj in iter_jsonl(path):
        try:
            yield lineno, ConversationRecord.model_validate(obj)
        except ValidationError as exc:
            raise JsonlError(
                f"{path}:{lineno}: not a conversation record ({validation_line(exc, quoted=True)})"
            ) from None


def rewrite_records(path: Path, records: Iterable[BaseModel]) -> None:
    rewrite_jsonl(path, [r.model_dump(mode="json") for r in records])


def read_posttests(path: Path) -> dict[str, PostTest]:
    """{conversation_id: PostTest} of a `posttests.jsonl` (`evaluate --posttest-learner`); a later line for
    the same id wins; an unreadable line is skipped (that post-test is taken again). Missing file: empty."""
    return {cid: test for (cid, variant), test in read_posttest_variants(path).items() if not variant}


def read_posttest_variants(path: Path) -> dict[tuple[str, str], PostTest]:
    """{(conversation_id, variant): PostTest} of a `posttests.jsonl`; variant "" = the conversation itself,
    else a perturbed copy (`judge-check --posttest-learner`)."""
    out: dict[tuple[str, str], PostTest] = {}
    if not Path(path).exists():
        return out
    repair_torn_tail(path)
    for _, obj in iter_jsonl(path, on_error=lambda _m: None):
        cid, variant = obj.get("conversation_id"), obj.get("variant") or ""
        try:
            test = PostTest.model_validate(obj.get("posttest"))
        except ValidationError:
            continue
        if isinstance(cid, str) and cid and isinstance(variant, str):
            out[(cid, variant)] = test
    return out


def read_judgment_table(path: Path) -> ScoreTable:
    """`judge-check`'s judgments.jsonl as a score table (one row per conversation and variant, later lines
    win); unreadable lines are skipped. A missing file is empty."""
    path = Path(path)
    if not path.exists():
        return ScoreTable.empty()
    last: dict[tuple[str, str, str, str, str], tuple[str, JudgmentRecord]] = {}
    for lineno, obj in iter_jsonl(path, on_error=lambda _m: None):
        try:
            rec = JudgmentRecord.model_validate(obj)
        except ValidationError:
            continue
        last[(rec.evaluator, rec.judge_scoring, rec.judge_prompt, rec.conversation_id, rec.variant)] = (
            f"{path}:{lineno}",
            rec,
        )
    return ScoreTable.from_judgments(last.values(), source=str(path))


def calibration_text(cal: Calibration) -> str:
    """The text of a calibration file (written by `align` into its staged output directory)."""
    return json.dumps(cal.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def read_kind_file(
    path: Path,
    model: type[FileModel],
    kind: str,
    missing: str,
    wrong: str,
    *,
    max_bytes: int | None = None,
    check: Callable[[Any], FileModel] | None = None,
) -> FileModel:
    """A JSON file of one `kind` (a calibration, a people estimate) as `model` (UTF-8, a byte-order mark
    allowed); RunError with one line naming the file: `missing` when it is absent, `wrong` when it is not of
    that kind, a file larger than `max_bytes` unread, else what is wrong in it. `check` (default: `model`'s
    validation) turns the parsed object into the model, raising ValueError naming the field."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise RunError(f"{path}: {size:,} bytes; a {kind} file is at most {max_bytes:,} bytes")
        data = read_json_file(path)
    except FileNotFoundError:
        raise RunError(f"{path}: {missing}") from None
    except JsonInputError as exc:
        raise RunError(f"{path}: {exc}") from None
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(data, dict) or data.get("kind") != kind:
        raise RunError(f"{path}: {wrong}")
    try:
        return (check or model.model_validate)(data)
    except ValidationError as exc:
        raise RunError(f"{path}: {validation_line(exc, quoted=True)}") from None
    except ValueError as exc:
        raise RunError(f"{path}: {one_line(exc)}") from None


def read_calibration(path: Path) -> Calibration:
    """A calibration file; RunError (one line naming the file) if it is missing or not one."""
    return read_kind_file(
        path,
        Calibration,
        "wikihowagent-calibration",
        "no such calibration file (write one with `wikihowagent align --calibrate`)",
        'not a calibration file (no "kind": "wikihowagent-calibration"; write one with `wikihowagent align --calibrate`)',
    )


def people_estimate_text(est: PeopleEstimate) -> str:
    """The text of a people-estimate file (written by `align` into its staged output directory)."""
    return json.dumps(est.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def read_pairwise(
    path: Path, on_error: Callable[[str], None] | None = None, on_bad_value: Callable[[str], None] | None = None
) -> Iterator[PairwiseRecord]:
    """The PairwiseRecords of a `pair-judgments*.jsonl` file in file order (a missing file is empty); a line
    that is not one is reported to `on_error` ("FILE:LINE: problem") and skipped. A stored P(A better) that is
    not a probability (a number in [0, 1]: not a boolean, a string, NaN or infinite) is reported to
    `on_bad_value` (default `on_error`) and read as that rubric's failure (a run with the judge asks it again).
    RunError (one line) if the path is not a readable file."""
    report = on_error or (lambda _m: None)
    bad_value = on_bad_value or report
    path = Path(path)
    if not path.exists():
        return
    if not path.is_file():
        raise RunError(f"{path}: not a file (pair judgments are a JSONL file)")
    try:
        for lineno, obj in iter_jsonl(path, on_error=report):
            p_first = obj.get("p_first")
            if isinstance(p_first, dict):
                for rubric, p in list(p_first.items()):
                    if p is None or (isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 <= p <= 1.0):
                        continue  # NaN fails the comparison
                    bad_value(
                        f"{path}:{lineno}: p_first[{rubric!r}] = {json.dumps(p)} is not a probability in "
                        "[0, 1]; left out"
                    )
                    p_first[rubric] = None
                    if isinstance(obj.get("failures"), list) and rubric not in obj["failures"]:
                        obj["failures"].append(rubric)
            try:
                yield PairwiseRecord.model_validate(obj)
            except ValidationError as exc:
                report(f"{path}:{lineno}: not a pairwise judgment ({validation_line(exc, quoted=True)})")
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None
