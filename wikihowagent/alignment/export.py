"""Selecting tutorials for human annotation and writing the annotation sheet (+ HTML companion).

Selection, as in the paper (§3.2: "25 tutorials based on the top average LLM-judged scores across all
metrics", then every model's conversation of them):

- the tutorial key is `tutorial_id` (the paper's records: `title|doc_id|method_id`);
- a conversation's score is the mean of its available rubric scores (None/unparsed ones are skipped);
  conversations without any rubric score are not annotated and do not count;
- a tutorial's score is the mean of its scored conversations' scores across the given runs; only
  tutorials with at least one scored conversation qualify (with `in_all_runs`, one in every run);
- `top`: highest score first, `bottom`: lowest first; ties broken by tutorial key (ascending);
  `random`: a seeded sample (Python `random.Random(seed).sample`) of the qualifying keys in sorted order.

The sheet has one row per scored conversation of the selected tutorials (tutorial by tutorial in selection
order, runs by name), in the paper's layout: `conversation_id, filename (= run name), title, clarity,
engagement, coherence, depth, relevance, progress, naturalness, truthfulness, comment` plus `tutorial_id`,
so a filled-in sheet reads straight back into `wikihowagent align --human`.
"""

from __future__ import annotations

import html
import math
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wikihowagent.judge.rubric_judge import RubricError, default_rubrics_path
from wikihowagent.judge.rubric_judge import load_rubrics as load_validated
from wikihowagent.layout import CONVERSATIONS, RESCORED_DIR, SCORE_FILES
from wikihowagent.outdir import check_writable, write_files_atomically
from wikihowagent.records import Conversation, TutorialRef
from wikihowagent.runs import evaluated_runs, read_conversations, run_name, scores_file

from . import schema
from .blind import blind_id, key_csv, key_path
from .csv_dialect import csv_text
from .problems import AlignInputError, Problems
from .sources import ScoreRow, read_paper_run, read_scores_jsonl


@dataclass
class Selection:
    mode: str
    n: int
    seed: int | None
    tutorials: list[tuple[str, float, int]]  # (key, mean score, scored conversations)
    conversations: list[Conversation]
    runs: list[str]
    qualifying: int


def _mean_score(values: np.ndarray | None) -> float:
    """A conversation's score: the mean of its available rubric scores (NaN if none)."""
    if values is None or np.all(np.isnan(values)):
        return math.nan
    return float(np.nanmean(values))


def load_run(path: Path, problems: Problems) -> list[tuple[Conversation, float]]:
    """A run directory (conversations.jsonl + scores.jsonl or scores-paper.jsonl) or a paper run file: its
    scored conversations, each with its score."""
    return [(c, score) for c, score, _ in load_scored(path, problems)]


def load_scored(path: Path, problems: Problems) -> list[tuple[Conversation, float, ScoreRow]]:
    """`load_run` with each conversation's score row (for the judge's p(1..5))."""
    path = Path(path)

    def bad(msg: str) -> None:
        problems.add("bad line", f"{msg}; line skipped")

    if path.is_file() and path.suffix == ".json":
        scores = {r.conversation_id: r for r in read_paper_run(path, problems)}  # validates the file
        run = path.stem
        convs = list(read_conversations(path, run, on_error=bad, paper=True))
    elif path.is_dir():
        score_file = scores_file(path)
        if score_file is None:
            raise AlignInputError(f"{path}: no {' or '.join(SCORE_FILES)} (run `wikihowagent evaluate` on it first)")
        run = run_name(path)
        scores = {r.conversation_id: r for r in read_scores_jsonl(score_file, problems, default_run=run)}
        if (path / CONVERSATIONS).is_file():
            convs = list(read_conversations(path, run, on_error=bad))
        else:
            problems.add("missing file", f"{path}: no {CONVERSATIONS}; the companion shows no conversation text")
            convs = []
    else:
        raise AlignInputError(f"{path}: not a run directory or a paper run file")
    out: dict[str, Conversation] = {c.conversation_id: c for c in convs if c.conversation_id in scores}
    scored = []
    for cid, s in scores.items():
        conv = out.get(cid)
        if conv is None:  # scored but no conversation record: still selectable (text missing)
            conv = Conversation(
                conversation_id=cid, tutorial_id=s.tutorial_id, title=s.title, tutorial=TutorialRef(title="", steps=[])
            )
        conv.run = s.run or run
        scored.append((conv, _mean_score(s.values), s))
    return [(c, score, s) for c, score, s in scored if math.isfinite(score)]


TUTORIAL_MODES = ("top", "bottom", "random")  # N tutorials, every run's conversation of each
CONVERSATION_MODES = ("uncertain", "stratified")  # N conversations per run (--select MODE N)


def uncertainty(row: ScoreRow) -> float:
    """How unsure the judge is about a conversation: the mean over its rubrics of the entropy of the stored
    p(1..5), divided by log 5 (0 = all mass on one score, 1 = uniform); NaN without distributions."""
    hs = []
    for p in row.dist.values():
        q = np.asarray(p, dtype=float)
        if q.shape != (5,) or not np.isfinite(q).all() or q.sum() <= 0:
            continue
        q = q / q.sum()
        nz = q[q > 0]
        hs.append(float(-(nz * np.log(nz)).sum() / np.log(5)))
    return float(np.mean(hs)) if hs else math.nan


def _select_conversations(
    scored: list[tuple[Conversation, float, ScoreRow]], problems: Problems, mode: str, n: int, seed: int | None
) -> list[Conversation]:
    """Per run: `stratified` = n conversations drawn at random (seeded per run), `uncertain` = the n with the
    highest `uncertainty` (ties by id)."""
    by_run: dict[str, list[tuple[Conversation, float, ScoreRow]]] = {}
    for item in scored:
        by_run.setdefault(item[0].run, []).append(item)
    chosen: list[Conversation] = []
    no_dist = []
    for run in sorted(by_run):
        items = sorted(by_run[run], key=lambda t: t[0].conversation_id)
        if mode == "stratified":
            picked = [c for c, _, _ in random.Random(f"{seed}/{run}").sample(items, min(n, len(items)))]
        else:
            unc = [(uncertainty(s), c.conversation_id, c) for c, _, s in items]
            known = [u for u in unc if math.isfinite(u[0])]
            if not known:
                no_dist.append(run)
                continue
            picked = [c for _, _, c in sorted(known, key=lambda u: (-u[0], u[1]))[:n]]
        if len(picked) < n:
            problems.add(
                "few conversations",
                f"run {run}: only {len(picked)} conversations qualify; all of them are selected (asked for {n})",
            )
        chosen.extend(picked)
    if no_dist:
        what = f"run(s) {', '.join(no_dist)}" if len(no_dist) < len(by_run) else "the given runs"
        line = (
            f"{what}: no p(1..5) distribution in the scores (json scoring); --select uncertain needs the "
            "weighted judge's (evaluate --judge-scoring weighted); --select stratified works without"
        )
        if len(no_dist) == len(by_run):
            raise AlignInputError(line)
        problems.add("no distribution", f"{line}; these runs get no conversation")
    return chosen


def _load_runs(run_paths: list[Path], problems: Problems) -> list[tuple[Conversation, float, ScoreRow]]:
    """The scored conversations of the given runs; a directory of runs stands for every evaluated run in it."""
    scored: list[tuple[Conversation, float, ScoreRow]] = []
    expanded: list[Path] = []
    for p in map(Path, run_paths):
        inner = evaluated_runs(p) if p.is_dir() and scores_file(p) is None else []
        expanded.extend(inner or [p])
    for p in expanded:
        scored.extend(load_scored(p, problems))
    return scored


def _conversation_selection(
    scored: list[tuple[Conversation, float, ScoreRow]], problems: Problems, mode: str, n: int, seed: int | None
) -> Selection:
    """A selection of `n` conversations (a conversation mode), listed by tutorial, with each tutorial's mean
    score over the conversations chosen of it."""
    convs = [(c, score) for c, score, _ in scored]
    rows = _select_conversations(scored, problems, mode, n, seed)
    tut: dict[str, list[float]] = {}
    score_of = {id(c): score for c, score in convs}
    for c in rows:
        tut.setdefault(c.tutorial_key, []).append(score_of[id(c)])
    rows.sort(key=lambda c: (c.tutorial_key, c.run, c.conversation_id))
    return Selection(
        mode,
        n,
        seed if mode == "stratified" else None,
        sorted((k, float(np.mean(v)), len(v)) for k, v in tut.items()),
        rows,
        sorted({c.run for c, _ in convs}),
        len(convs),
    )


def select(
    run_paths: list[Path],
    problems: Problems,
    *,
    mode: str = "top",
    n: int = 25,
    seed: int | None = 0,
    in_all_runs: bool = False,
) -> Selection:
    if mode not in TUTORIAL_MODES + CONVERSATION_MODES:
        raise ValueError(f"unknown selection mode {mode!r}")
    if n < 1:
        raise AlignInputError(
            f"the number of {'conversations' if mode in CONVERSATION_MODES else 'tutorials'} "
            f"must be at least 1 (got {n})"
        )
    scored = _load_runs(run_paths, problems)
    convs = [(c, score) for c, score, _ in scored]
    if mode in CONVERSATION_MODES and scored:
        return _conversation_selection(scored, problems, mode, n, seed)
    if not convs:
        if any("not judged: evaluated without a judge" in line for line in problems.lines()):
            raise AlignInputError(
                "no conversation has a rubric score in the given runs (evaluated with --no-judge? "
                "run `wikihowagent evaluate RUN` with a judge)"
            )
        raise AlignInputError("no scored conversations in the given runs (run `wikihowagent evaluate` first)")
    by_tut: dict[str, list[tuple[Conversation, float]]] = {}
    for c, score in convs:
        by_tut.setdefault(c.tutorial_key, []).append((c, score))
    all_runs = {c.run for c, _ in convs}
    stats = []
    for key, cs in by_tut.items():
        if in_all_runs and {c.run for c, _ in cs} != all_runs:
            continue
        stats.append((key, float(np.mean([score for _, score in cs])), len(cs)))
    if not stats:
        raise AlignInputError("no tutorial has a scored conversation in every run (drop --in-all-runs)")
    stats.sort(key=lambda t: t[0])
    if mode == "top":
        chosen = sorted(stats, key=lambda t: (-t[1], t[0]))[:n]
    elif mode == "bottom":
        chosen = sorted(stats, key=lambda t: (t[1], t[0]))[:n]
    else:
        chosen = random.Random(seed).sample(stats, min(n, len(stats)))
    if len(chosen) < n:
        problems.add("few tutorials", f"only {len(chosen)} tutorials qualify; all of them are selected (asked for {n})")
    rows = []
    for key, _, _ in chosen:
        rows.extend(sorted((c for c, _ in by_tut[key]), key=lambda c: (c.run, c.conversation_id)))
    return Selection(mode, n, seed if mode == "random" else None, chosen, rows, sorted(all_runs), len(stats))


def _sheet_title(c: Conversation) -> str:
    if c.tutorial_title and c.tutorial_title != c.title:
        return f"{c.title} — {c.tutorial_title}" if c.title else c.tutorial_title
    return c.title


def blind_order(sel: Selection, seed: int | None) -> list[Conversation]:
    """The conversations in a seeded random order (`random.Random(seed).shuffle`)."""
    order = list(sel.conversations)
    random.Random(seed).shuffle(order)
    return order


def sheet_csv(sel: Selection, blind: bool = False, seed: int | None = 0) -> str:
    """The sheet. Blind: blind ids, no run name, seeded random order (see `blind.py`)."""
    rows = []
    for c in blind_order(sel, seed) if blind else sel.conversations:
        tid = c.tutorial_key if "|" not in c.tutorial_key else ""
        cid, run = (blind_id(seed, c.run, c.conversation_id), "") if blind else (c.conversation_id, c.run)
        rows.append([cid, run, _sheet_title(c), *([""] * len(schema.sheet_metrics())), "", tid])
    return csv_text(schema.sheet_columns(), rows)


def key_file_csv(sel: Selection, seed: int | None) -> str:
    return key_csv(
        [
            (
                blind_id(seed, c.run, c.conversation_id),
                c.conversation_id,
                c.run,
                c.tutorial_key if "|" not in c.tutorial_key else "",
                _sheet_title(c),
            )
            for c in blind_order(sel, seed)
        ]
    )


def load_rubrics(path: Path | None, problems: Problems) -> dict:
    """The rubric file, validated by `evaluate`'s loader (`wikihowagent.judge.rubric_judge.load_rubrics`):
    metric name -> Rubric. An invalid or missing file is an AlignInputError (its one-line message); a
    paper metric without a rubric in the file is reported, and the guide then shows its name only."""

    path = Path(path) if path else default_rubrics_path()
    try:
        rubrics = load_validated(path)
    except RubricError as exc:
        raise AlignInputError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AlignInputError(f"{path}: cannot read the rubric file ({exc})") from None
    by_key = {name.lower(): r for name, r in rubrics.items()}
    absent = [m for m in schema.metrics() if m.lower() not in by_key]
    if absent:
        problems.add(
            "rubrics", f"{path}: no rubric for {', '.join(absent)}; the guide shows only the metric name for these"
        )
    return {m: by_key[m.lower()] for m in schema.metrics() if m.lower() in by_key}


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
line-height:1.45;color:#222}
h1{font-size:1.6rem}h2{margin-top:3rem;border-top:3px solid #888;padding-top:1rem}h3{margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top;
font-size:.9rem}th{background:#f3f3f3;text-align:left}
.tutorial{background:#f7f7fb;border-left:4px solid #669;padding:.5rem 1rem}
.turn{margin:.4rem 0;padding:.4rem .7rem;border-radius:6px;white-space:pre-wrap}
.teacher{background:#eef6ee}.learner{background:#eef2fa;margin-left:2rem}
.cid{font-family:ui-monospace,monospace;font-size:.85rem;background:#f3f3f3;padding:0 .3rem}
nav ol{columns:2}.meta{color:#666;font-size:.9rem}
"""


def _rubric_rows(rubrics: dict) -> list[str]:
    """The guide's rubric table: each metric's role, question and levels 5 to 1."""
    e = html.escape
    parts: list[str] = []
    for m in schema.metrics():
        r = rubrics.get(m)  # a judge.Rubric, or None (the file has no rubric for m)
        lv = "".join(f"<div><b>{k}</b> – {e(r.levels[k])}</div>" for k in ("5", "4", "3", "2", "1")) if r else ""
        ref = " (with the tutorial as reference)" if r and r.reference == "tutorial" else ""
        parts.append(
            f"<tr><td><b>{m}</b><br><span class='meta'>column <code>{m.lower()}</code></span></td>"
            f"<td>{e(r.role) if r else ''}{ref}</td><td>{e(r.question) if r else ''}</td><td>{lv}</td></tr>"
        )
    parts.append("</table>")
    return parts


def _tutorial_html(i: int, key: str, c0: Conversation) -> list[str]:
    """Tutorial `i` of the guide: its title, summary and steps (`c0`: its first conversation, which carries it)."""
    e = html.escape
    parts: list[str] = []
    parts.append(f"<h2 id='t{i}'>Tutorial {i}: {e(c0.title or key)}</h2>")
    parts.append("<div class='tutorial'>")
    if c0.tutorial_title:
        parts.append(f"<h3>{e(c0.tutorial_title)}</h3>")
    if c0.summary:
        parts.append(f"<p>{e(c0.summary)}</p>")
    if c0.steps:
        parts.append("<ol>" + "".join(f"<li>{e(s)}</li>" for s in c0.steps) + "</ol>")
    else:
        parts.append("<p class='meta'>(tutorial text not available)</p>")
    parts.append("</div>")
    return parts


def _conversation_html(i: int, j: int, c: Conversation, blind: bool, seed: int | None) -> list[str]:
    """Conversation `i`.`j` of the guide: its id (a blind id when blind), its turns, where its scores go."""
    e = html.escape
    parts: list[str] = []
    if blind:
        parts.append(
            f"<h3>Conversation {i}.{j} <span class='cid'>{e(blind_id(seed, c.run, c.conversation_id))}</span></h3>"
        )
    else:
        parts.append(
            f"<h3>Conversation {i}.{j} <span class='cid'>{e(c.conversation_id)}</span> "
            f"<span class='meta'>run {e(c.run)}</span></h3>"
        )
    if not c.lines:
        parts.append("<p class='meta'>(conversation text not available)</p>")
    for line in c.lines:
        who, _, text = line.partition(": ")
        cls = who.lower() if who.lower() in ("teacher", "learner") else "teacher"
        if cls == who.lower():
            parts.append(f"<div class='turn {cls}'><b>{e(who)}:</b> {e(text)}</div>")
        else:
            parts.append(f"<div class='turn'>{e(line)}</div>")
    parts.append(
        "<p class='meta'>Scores go into the sheet row of this conversation_id: "
        + ", ".join(m.lower() for m in schema.metrics())
        + ".</p>"
    )
    return parts


def companion_html(sel: Selection, rubrics: dict, sheet_name: str, blind: bool = False, seed: int | None = 0) -> str:
    """The annotation guide. `rubrics`: metric name -> `wikihowagent.judge.rubric_judge.Rubric` (see
    `load_rubrics`); a metric without one is listed by name only. Blind: tutorials and conversations in the
    sheet's seeded random order, blind ids, no run name or count of runs."""
    e = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>Annotation guide</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Annotation guide: teacher–learner conversations</h1>",
        f"<p>Rate every conversation listed here in <b>{e(sheet_name)}</b> (one row per conversation, "
        "matched by <span class='cid'>conversation_id</span>). For each of the 8 metrics give a whole score "
        "from <b>1 (very poor)</b> to <b>5 (excellent)</b> following the rubric below; read the tutorial "
        "first and use it as the reference. Leave a cell empty if you cannot judge it; use the "
        "<i>comment</i> column for remarks. Do not change the ids or add columns.</p>",
        f"<p class='meta'>{len(sel.tutorials)} tutorials, {len(sel.conversations)} conversations"
        + (
            "."
            if blind
            else f" from {len(sel.runs)} run(s). Selection: {e(sel.mode)} {sel.n}"
            + (f" (seed {sel.seed})" if sel.seed is not None else "")
        )
        + "</p>",
        "<h2 id='rubric'>Rubric</h2>",
        "<table><tr><th>Metric</th><th>Rates</th><th>Question</th><th>5 – 1</th></tr>",
    ]
    parts += _rubric_rows(rubrics)
    convs = blind_order(sel, seed) if blind else sel.conversations
    keys = list(dict.fromkeys(c.tutorial_key for c in convs)) if blind else [k for k, _, _ in sel.tutorials]
    parts.append("<nav><h2>Tutorials</h2><ol>")
    for i, key in enumerate(keys, 1):
        c = next(c for c in convs if c.tutorial_key == key)
        parts.append(
            f"<li><a href='#t{i}'>{e(c.title or key)}{(' — ' + e(c.tutorial_title)) if c.tutorial_title else ''}</a></li>"
        )
    parts.append("</ol></nav>")
    for i, key in enumerate(keys, 1):
        cs = [c for c in convs if c.tutorial_key == key]
        parts += _tutorial_html(i, key, cs[0])
        for j, c in enumerate(cs, 1):
            parts += _conversation_html(i, j, c, blind, seed)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def export_sheet(
    run_paths: list[Path],
    out: Path,
    problems: Problems,
    *,
    mode: str = "top",
    n: int = 25,
    seed: int | None = 0,
    in_all_runs: bool = False,
    rubrics_path: Path | None = None,
    force: bool = False,
    blind: bool = True,
) -> tuple[Selection, Path, Path]:
    """Select, then write `out` (CSV), `out` with suffix .html and, blind, the key file `<out stem>.key.csv`:
    all or none. The blind order and ids use `seed`."""
    out = Path(out)
    check_writable(out, "--out", folder=False)
    companion = out.with_suffix(".html")
    key = key_path(out)
    if not force:
        for p in (out, companion, *((key,) if blind else ())):
            if p.exists():
                raise AlignInputError(f"{p}: already exists (it may hold annotations); use --force to overwrite")
    rubrics = load_rubrics(rubrics_path, problems)  # a bad rubric file stops before any work
    sel = select(run_paths, problems, mode=mode, n=n, seed=seed, in_all_runs=in_all_runs)
    files = {out: sheet_csv(sel, blind, seed), companion: companion_html(sel, rubrics, out.name, blind, seed)}
    if blind:
        files[key] = key_file_csv(sel, seed)
    write_files_atomically(files)
    return sel, out, companion


def default_run_paths(runs_dir: Path) -> list[Path]:
    runs = evaluated_runs(runs_dir)
    if not runs:
        raise AlignInputError(
            f"{runs_dir}: no evaluated runs (directories with {' or '.join(SCORE_FILES)}, "
            f"also under {runs_dir / RESCORED_DIR}) found; pass RUN_DIR"
        )
    return runs
