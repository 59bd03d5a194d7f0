"""How far to trust the judge: the evidence found beside a run (judge-check, align, calibration, fitted weights),
the measured figures of the embedded judge and of the metrics, and the pages' fixed parts.
"""

from __future__ import annotations

import csv
import html
import re
import shlex
from pathlib import Path

from wikihowagent.backends import is_embedded
from wikihowagent.jsonlio import read_json_file
from wikihowagent.judge.modes import first_mode
from wikihowagent.layout import (
    CALIBRATION_JSON,
    CHECKLIST_WEIGHTS_JSON,
    CONVERSATION_JS,
    CORRELATIONS_CSV,
    CORRELATIONS_MD,
    METRIC_ALIGNMENT_MD,
    PAIR_ORDER_CSV,
    SUMMARY_MD,
)
from wikihowagent.metrics.computational import WORDS

from .measured import MeasuredError, load_measured
from .page import page
from .sources import ReportRun
from .validity import ValidityError, load_validity


def _pair_order_note(path: Path) -> str:
    """ "; head to head: ..." from `align`'s pair_order.csv beside correlations.csv ("" without one); its numbers
    are range-checked (a share in [0, 1], a count >= 1), else left out."""
    if not path.is_file():
        return ""
    with path.open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("metric") == "Overall"]
    if not rows:
        return ""
    acc, lo, hi, n = (float(rows[0][k]) for k in ("accuracy", "ci_low", "ci_high", "pairs"))
    if not (0.0 <= acc <= 1.0 and n >= 1 and n == int(n)):
        raise ValueError(f"{path}: Overall accuracy {acc} / pairs {n} out of range")
    ci = f" [{lo:.2f}, {hi:.2f}]" if 0.0 <= lo <= hi <= 1.0 else ""
    return f"; head to head: orders {acc:.2f}{ci} of the {int(n)} same-tutorial pairs the people clearly ordered"


EVIDENCE_DEPTH = 3  # how deep below a run directory judge-check / align outputs are looked for


def _judge_check_line(p: Path, rel: Path) -> str | None:
    """The line of a judge-check summary.md (None: another summary.md)."""
    text = p.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("# judge-check: "):
        return None
    title = text.splitlines()[0][len("# judge-check: ") :]
    m = re.search(r"(\d+) conversations; mean accuracy over the (\d+) targeted .*?\*\*([0-9.]+)\*\*", text)
    acc = (
        f"mean accuracy {m.group(3)} over {m.group(2)} targeted cells, {m.group(1)} conversations"
        if m
        else "no accuracy line"
    )
    return (
        f"judge-check ({rel.parent}/): {title}: {acc} (1 = always scores the original "
        "above its damaged copy, 0.5 = chance)"
    )


def _align_line(p: Path, rel: Path) -> str | None:
    """The line of align's correlations.csv: the Overall Pearson r with the people (None: none recorded)."""
    with p.open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("metric") == "Overall" and r.get("by") == "all"]
    if not rows or rows[0].get("pearson_r") in (None, ""):
        return None
    r = rows[0]
    ci = (
        f" [{float(r['pearson_ci_low']):+.2f}, {float(r['pearson_ci_high']):+.2f}]"
        if r.get("pearson_ci_low") not in (None, "")
        else ""
    )
    return (
        f"align ({rel.parent}/): Overall Pearson r with the people {float(r['pearson_r']):+.2f}"
        f"{ci}, n {r.get('n', '?')}" + _pair_order_note(p.parent / PAIR_ORDER_CSV)
    )


def judge_evidence(run: ReportRun) -> list[str]:
    """What the run directory holds about its judge, one line each: judge-check results (summary.md of
    `judge-check --out`), alignment with people (correlations.csv of `align --out`), a calibration
    (calibration.json) and fitted checklist weights (checklist_weights.json) — each named by where it is."""
    root = Path(run.path)
    if not root.is_dir():
        return []
    found: list[str] = []
    files = sorted(p for p in root.rglob("*") if p.is_file() and len(p.relative_to(root).parts) <= EVIDENCE_DEPTH + 1)
    for p in files:
        rel = p.relative_to(root)
        try:
            if p.name == SUMMARY_MD:
                line = _judge_check_line(p, rel)
                if line is not None:
                    found.append(line)
            elif p.name == CORRELATIONS_CSV and (p.parent / CORRELATIONS_MD).exists():
                line = _align_line(p, rel)
                if line is not None:
                    found.append(line)
            elif p.name == CALIBRATION_JSON:
                cal = read_json_file(p)
                oof = cal.get("out_of_fold") or {}
                parts = [
                    f"{m} r {v.get('raw_r', float('nan')):+.2f} -> {v.get('calibrated_r', float('nan')):+.2f}"
                    for m, v in oof.items()
                    if isinstance(v, dict)
                ]
                found.append(
                    f"calibration ({rel}): {cal.get('method', '?')} for judge {cal.get('judge') or '?'} "
                    f"({cal.get('scoring') or first_mode('paper')}); out of fold: " + ("; ".join(parts) or "–")
                )
            elif p.name == CHECKLIST_WEIGHTS_JSON:
                w = read_json_file(p)
                found.append(
                    f"checklist weights ({rel}): fitted for judge {w.get('judge', '?')}, checklist "
                    f"{w.get('checklist', '?')}"
                )
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            found.append(f"{rel}: unreadable, left out")
    return found


def _measured_html(runs: list[ReportRun]) -> list[str]:
    """Per run (in order): for the embedded judge its measured figures (wikihowagent/data/embedded_judge.json, from
    BENCHMARKS.md, read once when any run was judged by it), this run's scoring mode first; "" for another judge.
    An unreadable figures file: one line saying so."""
    embedded = [bool(r.evaluator) and is_embedded(r.evaluator) for r in runs]
    if not any(embedded):
        return [""] * len(runs)
    try:
        figures = load_measured()
        lines = [figures.lines(r.scoring) if emb else [] for r, emb in zip(runs, embedded, strict=True)]
    except MeasuredError as exc:
        lines = [[f"the embedded judge's measured figures are not available: {exc}"]] * len(runs)
    return [
        "<ul class='measured'>" + "".join(f"<li>{html.escape(x)}</li>" for x in ls) + "</ul>" if emb else ""
        for emb, ls in zip(embedded, lines, strict=True)
    ]


def metrics_trust_html() -> str:
    """ "How far to trust the metrics": the metrics measured to track people first (their within-tutorial r
    and clear-pair share on the human study, and how often they prefer an original to a damaged copy), then
    those that did not, with the study's caveat (data/metric_validity.json)."""
    e = html.escape
    try:
        val = load_validity()
    except ValidityError as exc:
        return (
            "<h2 id='trust-metrics'>How far to trust the metrics</h2>"
            f"<p class='meta'>The metrics' measured validity is not available: {e(str(exc))}</p>"
        )
    ranked = [(m, v) for m, v in val.ranked() if m != WORDS]
    tracked = [(m, v) for m, v in ranked if v.tracked]
    others = [m for m, v in ranked if not v.tracked and v.within_r is not None]
    items = "".join(f"<li><b>{e(m)}</b>: {e(v.short())}</li>" for m, v in tracked)
    base = val.metrics.get(WORDS)
    if base is not None:
        items += f"<li>the baseline, conversation length ({e(WORDS)}): {e(base.short())}</li>"
    return (
        "<h2 id='trust-metrics'>How far to trust the metrics</h2>"
        f"<p>Measured against people on {e(val.study)} ({e(val.measured)}), the people's {e(val.target)} rating: "
        "the within-tutorial r (which of one tutorial's conversations is better; 95 % CI resampling tutorials) "
        "and the share of the clear same-tutorial pairs ordered as the people did. These tracked people "
        "(the CI of r above 0), best first:</p>"
        f"<ul class='evidence'>{items or '<li>none</li>'}</ul>"
        + (f"<p>Not clearly: {e(', '.join(others))}.</p>" if others else "")
        + f"<p class='meta'>Caveat: {e(val.caveat)}. Measure your own: <code>wikihowagent align</code> "
        f"on your human study writes {METRIC_ALIGNMENT_MD}.</p>"
    )


def evidence_html(runs: list[ReportRun]) -> str:
    """The overview's "How far to trust the judge": per run its judge and scoring mode, and the evidence the
    run directory holds about that judge, or that none was measured and how to measure it."""
    e = html.escape
    items = []
    for r, measured in zip(runs, _measured_html(runs), strict=True):
        judge = r.evaluator or "–"
        head = f"<b>{e(r.name)}</b>: judge {e(judge)}, scoring {e(r.scoring or '–')}"
        ev = judge_evidence(r)
        if ev:
            items.append(f"<li>{head}<ul>" + "".join(f"<li>{e(x)}</li>" for x in ev) + "</ul>" + measured + "</li>")
            continue
        # a paper run file's outputs go beside it (FILE's stem as a folder), a run directory's inside it
        beside = r.path if r.path.is_dir() else r.path.parent / r.path.stem
        q = shlex.quote
        how = (
            f"wikihowagent judge-check {q(str(r.path))} --out {q(str(beside / 'judge-check'))}"
            + (f" --judge-scoring {r.scoring.split('+')[0]}" if r.scoring and "," not in r.scoring else "")
            + f"; with human ratings: wikihowagent align -H SHEET.csv --scores {q(str(r.path))}"
            f" --out {q(str(beside / 'alignment'))}"
        )
        items.append(
            f"<li>{head}: no evidence about this judge was measured in this run directory. Measure it: "
            f"<code>{e(how)}</code>.{measured}</li>"
        )
    if not items:
        return ""
    return "<h2 id='trust'>How far to trust the judge</h2><ul class='evidence'>" + "".join(items) + "</ul>"


def browser_html() -> str:
    return """<section id='browser'><h2>Conversations</h2>
<form id='filters' onsubmit='return false'>
<label>Run <select id='f-run'><option value=''>all</option></select></label>
<label>Model <select id='f-model'><option value=''>all</option></select></label>
<label>Domain <select id='f-domain'><option value=''>all</option></select></label>
<label id='l-persona'>Persona <select id='f-persona'><option value=''>all</option></select></label>
<label>Status <select id='f-status'><option value=''>all</option></select></label>
<label>Metric <select id='f-metric'><option value=''>–</option></select></label>
<label>min <input id='f-min' type='number' step='any' size='5'></label>
<label>max <input id='f-max' type='number' step='any' size='5'></label>
<label>Search <input id='f-text' type='search' placeholder='title, domain or id'></label>
</form>
<p id='count' class='meta'></p>
<div class='scroll'><table id='conv-table'><thead></thead><tbody></tbody></table></div>
<p id='pager'><button id='prev' type='button'>‹ previous</button> <span id='page'></span>
<button id='next' type='button'>next ›</button></p>
<p class='meta'>Click a column head to sort (again to reverse). Computational metrics in %, rubric metrics 1-5;
– = not computable or not judged.</p>
</section>"""


def conversation_html() -> str:
    body = """<nav><b>wikihowagent report</b> <a href='index.html#browser'>‹ all conversations</a></nav>
<main id='conversation'><p class='meta' id='loading'>Loading…</p></main>"""
    return page("Conversation", body, [f"assets/{CONVERSATION_JS}"])
