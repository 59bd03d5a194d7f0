"""The report's one adapter to the run readers.

Everything the report knows about a run comes through `load_inputs`: it reads run directories (or sweep
directories of runs) with the project's readers (`wikihowagent.runs.read_run_info` / `iter_jsonl`,
`wikihowagent.evaluation.summary.read_scores`) and returns typed `ReportRun`s. When the readers change,
only this module changes.

Bad input never stops the report: a cell of a sweep that cannot be read, a run without scores, a record
with a missing field are reported (one line each, naming the file and line) and left out or shown as
missing. A path the user named that yields nothing at all is an error (`ReportInputError`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCORE_FILES = ("scores.jsonl", "scores-paper.jsonl")
# Score-record fields shown as such; any other field (e.g. score distributions) is shown as "extra".
_KNOWN_SCORE_FIELDS = {"conversation_id", "run", "tutorial_id", "title", "domain", "teacher", "learner", "evaluator",
                       "mode", "metrics", "judge_raw", "judge_failures", "notes"}
_KNOWN_CONV_FIELDS = {"conversation_id", "tutorial_id", "doc_id", "method_id", "source_tutorial_path", "title",
                      "categories", "domain", "summary", "tutorial", "conversation", "turns", "finished", "stop_reason",
                      "error", "warnings", "teacher", "learner", "started_at", "ended_at"}


class ReportInputError(ValueError):
    """A path the user named is missing or yields nothing; the message is one line naming it."""


@dataclass
class ReportTurn:
    role: str
    text: str
    step: int | None = None
    kind: str = "model"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0


@dataclass
class ReportConversation:
    conversation_id: str
    run: str
    where: str  # "file:LINE"
    tutorial_id: str = ""
    title: str = ""
    method_title: str = ""
    domain: str = ""
    steps: list[str] = field(default_factory=list)
    turns: list[ReportTurn] = field(default_factory=list)
    status: str = "unknown"  # finished | cut | failed | unknown
    error: str = ""
    warnings: list[str] = field(default_factory=list)
    teacher: str = ""
    learner: str = ""
    persona: str = ""  # shown when the records carry one (issue 10); never required
    extra: dict[str, Any] = field(default_factory=dict)  # other record fields, shown as they are
    missing: list[str] = field(default_factory=list)  # fields the record lacks
    # from scores.jsonl (empty when the run is not evaluated)
    scored: bool = False
    metrics: dict[str, float | None] = field(default_factory=dict)
    judge_raw: dict[str, list[str]] = field(default_factory=dict)
    judge_failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    score_extra: dict[str, Any] = field(default_factory=dict)  # e.g. weighted-score distributions (issue 9)

    @property
    def tokens(self) -> int:
        return sum(t.prompt_tokens + t.completion_tokens for t in self.turns)


@dataclass
class ReportRun:
    name: str
    path: Path
    model: str  # "T-<teacher> L-<learner>"
    teacher: str = ""
    learner: str = ""
    evaluator: str = ""
    persona: str = ""
    status: str = ""  # run.json status
    scores_path: Path | None = None
    mode: str = ""  # judge scoring mode(s) of the score records
    conversations: list[ReportConversation] = field(default_factory=list)


@dataclass
class Problems:
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)


def _model_label(teacher: str, learner: str, fallback: str) -> str:
    if not teacher:
        return fallback
    return f"T-{teacher} L-{learner or teacher}"


def expand(paths: list[Path], problems: Problems) -> list[Path]:
    """Run directories; a sweep directory (no run.json, runs below it) stands for its runs."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise ReportInputError(f"{p}: no such run directory")
        if not p.is_dir():
            raise ReportInputError(f"{p}: not a run directory (expected a directory with run.json and conversations.jsonl)")
        if any((p / f).exists() for f in ("run.json", "conversations.jsonl", *SCORE_FILES)):
            out.append(p)
            continue
        cells = sorted(d for d in p.iterdir() if d.is_dir() and not d.name.startswith("."))
        cells = [d for d in cells if any((d / f).exists() for f in ("run.json", "conversations.jsonl", *SCORE_FILES))
                 or d.name not in ("summary", "alignment", "rescored", "figures")]
        if not cells:
            raise ReportInputError(f"{p}: not a run directory and no runs below it")
        out.extend(cells)
    return out


def load_run(path: Path, problems: Problems, on_record: Callable[[], None] | None = None) -> ReportRun | None:
    """One run directory -> ReportRun, or None (reported) when it holds nothing readable."""
    from wikihowagent.runs import RunError, iter_jsonl, read_run_info

    info: dict[str, Any] = {}
    try:
        info = read_run_info(path)
    except RunError as exc:
        problems.add(str(exc))
    name = str(info.get("name") or path.name)
    teacher, learner = str(info.get("teacher") or ""), str(info.get("learner") or info.get("teacher") or "")
    run = ReportRun(name=name, path=path, model=_model_label(teacher, learner, name), teacher=teacher,
                    learner=learner, evaluator=str(info.get("evaluator") or ""), persona=str(info.get("persona") or ""),
                    status=str(info.get("status") or ""))
    conv_file = path / "conversations.jsonl"
    by_id: dict[str, ReportConversation] = {}
    if conv_file.is_file():
        for lineno, obj in iter_jsonl(conv_file, on_error=problems.add):
            conv = _conversation(obj, run, f"{conv_file}:{lineno}", problems)
            if conv is not None:
                by_id[conv.conversation_id] = conv  # a rerun's later line replaces the earlier one
            if on_record:
                on_record()
    else:
        problems.add(f"{path}: no conversations.jsonl (the conversation text is missing)")
    score_file = next((path / f for f in SCORE_FILES if (path / f).is_file()), None)
    if score_file is None:
        if by_id:
            problems.add(f"{path}: no scores.jsonl (not evaluated: run `wikihowagent evaluate {path}`); "
                         "shown without metrics")
    else:
        run.scores_path = score_file
        _attach_scores(run, by_id, score_file, problems)
    if not by_id:
        problems.add(f"{path}: nothing to show (no readable conversation or score record)")
        return None
    run.conversations = list(by_id.values())
    if not run.teacher:  # paper-style runs: take the model from the records
        t = next((c.teacher for c in run.conversations if c.teacher), "")
        lr = next((c.learner for c in run.conversations if c.learner), "")
        run.model = _model_label(t, lr, name)
    if not run.persona:
        personas = sorted({c.persona for c in run.conversations if c.persona})
        run.persona = ", ".join(personas)
    return run


def _attach_scores(run: ReportRun, by_id: dict[str, ReportConversation], score_file: Path, problems: Problems) -> None:
    from wikihowagent.evaluation.summary import read_scores

    modes: set[str] = set()
    scores = read_scores(score_file, on_error=problems.add)
    orphans = 0
    for cid, rec in scores.items():
        conv = by_id.get(cid)
        if conv is None:  # scored, but its conversation record is missing: shown from the score record
            orphans += 1
            conv = by_id[cid] = ReportConversation(
                conversation_id=cid, run=run.name, where=str(score_file), tutorial_id=str(rec.get("tutorial_id") or ""),
                title=str(rec.get("title") or ""), domain=str(rec.get("domain") or ""),
                teacher=str(rec.get("teacher") or ""), learner=str(rec.get("learner") or ""),
                missing=["conversation record"])
        conv.scored = True
        conv.metrics = {str(k): (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
                        for k, v in (rec.get("metrics") or {}).items()}
        raw = rec.get("judge_raw")
        conv.judge_raw = {str(k): [str(x) for x in v] for k, v in raw.items() if isinstance(v, list)} \
            if isinstance(raw, dict) else {}
        conv.judge_failures = [str(x) for x in rec.get("judge_failures") or []]
        conv.notes = [str(x) for x in rec.get("notes") or []]
        conv.score_extra = {k: v for k, v in rec.items() if k not in _KNOWN_SCORE_FIELDS}
        if not run.evaluator and rec.get("evaluator"):
            run.evaluator = str(rec["evaluator"])
        modes.add(str(rec.get("mode") or "default"))
    run.mode = ", ".join(sorted(modes))
    if orphans:
        problems.add(f"{score_file}: {orphans} score record(s) without a conversation in conversations.jsonl "
                     "(shown without text)")


def _conversation(obj: dict[str, Any], run: ReportRun, where: str, problems: Problems) -> ReportConversation | None:
    cid = obj.get("conversation_id")
    if not isinstance(cid, str) or not cid.strip():
        problems.add(f"{where}: record has no conversation_id; left out")
        return None
    missing: list[str] = []
    tut = obj.get("tutorial")
    if not isinstance(tut, dict):
        missing.append("tutorial")
        tut = {}
    steps = [s for s in tut.get("steps") or [] if isinstance(s, str)] if isinstance(tut.get("steps"), list) else []
    if tut and not steps:
        missing.append("tutorial.steps")
    turns = _turns(obj)
    if not turns:
        missing.append("conversation")
    if obj.get("error"):
        status = "failed"
    elif obj.get("stop_reason") == "max_interactions":
        status = "cut"
    elif obj.get("stop_reason") == "finished" or obj.get("finished") is True:
        status = "finished"
    elif "stop_reason" in obj or "finished" in obj:
        status = "cut"
    else:
        status = "unknown"
    if missing:
        problems.add(f"{where}: record lacks {', '.join(missing)}; shown without it")
    persona = obj.get("persona")
    if isinstance(persona, dict):
        persona = persona.get("name") or persona.get("id") or json.dumps(persona, sort_keys=True)
    teacher = str(obj.get("teacher") or run.teacher)
    learner = str(obj.get("learner") or run.learner or teacher)
    return ReportConversation(
        conversation_id=cid, run=run.name, where=where, tutorial_id=str(obj.get("tutorial_id") or ""),
        title=str(obj.get("title") or ""), method_title=str(tut.get("title") or ""), domain=_domain(obj),
        steps=steps, turns=turns, status=status, error=str(obj.get("error") or ""),
        warnings=[str(w) for w in obj.get("warnings") or []] if isinstance(obj.get("warnings"), list) else [],
        teacher=teacher, learner=learner, persona=str(persona or ""),
        extra={k: v for k, v in obj.items() if k not in _KNOWN_CONV_FIELDS and k != "persona"}, missing=missing)


def _domain(obj: dict[str, Any]) -> str:
    from wikihowagent.tutorials import domain_of

    if obj.get("domain"):
        return str(obj["domain"])
    cats = obj.get("categories")
    return domain_of([c for c in cats if isinstance(c, str)]) if isinstance(cats, list) else ""


def _turns(obj: dict[str, Any]) -> list[ReportTurn]:
    out: list[ReportTurn] = []
    turns = obj.get("turns")
    if isinstance(turns, list) and turns:
        for t in turns:
            if isinstance(t, dict) and isinstance(t.get("text"), str):
                out.append(ReportTurn(
                    role=str(t.get("role") or "?"), text=t["text"],
                    step=t["step"] if isinstance(t.get("step"), int) else None, kind=str(t.get("kind") or "model"),
                    prompt_tokens=_int(t.get("prompt_tokens")), completion_tokens=_int(t.get("completion_tokens")),
                    latency_s=float(t["latency_s"]) if isinstance(t.get("latency_s"), (int, float)) else 0.0))
        return out
    lines = obj.get("conversation")
    if isinstance(lines, list):  # the paper's records: "Teacher: ..." lines, no steps or tokens
        for line in lines:
            if not isinstance(line, str):
                continue
            who, sep, text = line.partition(":")
            if sep and who.strip().lower() in ("teacher", "learner"):
                out.append(ReportTurn(role=who.strip().lower(), text=text.strip()))
            elif out:
                out[-1].text += "\n" + line
    return out


def _int(x: Any) -> int:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0


def load_inputs(paths: list[Path], problems: Problems,
                on_record: Callable[[], None] | None = None) -> list[ReportRun]:
    """Every named run (sweeps expanded). A named run directory that yields nothing is a ReportInputError;
    a sweep cell that yields nothing is reported and skipped."""
    named = {Path(p).resolve() for p in paths}
    runs: list[ReportRun] = []
    for p in expand(paths, problems):
        before = len(problems.lines)
        run = load_run(p, problems, on_record)
        if run is None:
            if p.resolve() in named:
                raise ReportInputError(problems.lines[-1] if len(problems.lines) > before else f"{p}: nothing to show")
            continue
        runs.append(run)
    if not runs:
        raise ReportInputError("nothing to show: no run with a readable conversation or score record")
    names = [r.name for r in runs]
    for r in runs:
        if names.count(r.name) > 1:  # two sweeps with the same cell name: keep them apart
            r.name = f"{r.path.parent.name}/{r.path.name}"
            for c in r.conversations:
                c.run = r.name
    return runs


def count_lines(paths: list[Path]) -> int:
    """Conversation records to read (for the progress bar)."""
    total = 0
    for p in paths:
        f = Path(p) / "conversations.jsonl"
        if f.is_file():
            with f.open("rb") as fh:
                total += sum(1 for _ in fh)
    return total
