#!/usr/bin/env python
"""The checklist judge against people and against judge-check, beside the weighted judge (issue 30).

    # model time: one model process at a time; each call stops starting new work after --minutes and resumes
    flock /tmp/wikihowagent-model.lock .venv/bin/python scripts/bench_checklist.py judge --minutes 9
    flock /tmp/wikihowagent-model.lock .venv/bin/python scripts/bench_checklist.py check --check-n 20 --minutes 9
    # no model: the tables (and the BENCHMARKS.md section with --write-md)
    .venv/bin/python scripts/bench_checklist.py report [--write-md]

`judge`: `wikihowagent evaluate --judge-scoring checklist` (embedded judge, `--metrics rubric`) on the human
study's development split (`--study`, all 70 conversations, the paper's run-file format), one conversation
per evaluate call, shortest first (the same one-conversation run files as `bench_alignment.py`, under
OUT/subset-0/one/), scores into OUT/checklist/<run>/scores.jsonl; each conversation appends (seconds, calls) to
OUT/checklist/timing.jsonl. The weighted judge's scores are `bench_alignment.py judge --variants tutorial-first
--per-tutorial 0`'s (OUT/tutorial-first/): run that for the weighted column.

`check`: judge-check (wikihowagent/data/perturbations.json) with both judges, conversation by conversation (each judge in
turn, so both have judged the same conversations whenever the time runs out): the originals and the perturbed
copies' target rubrics. Conversations: the first --check-n of the development split, shortest first
(full-length conversations of the paper's 7B models), or those of --runs. Judgments: OUT/judge-check/<mode>/.
Accuracy = mean over the targeted (rubric, perturbation) cells of P(original scores higher), ties half (for
an absolute judge this is also its pairwise accuracy on the (original, perturbed) pairs); 95 % CI by
resampling conversations.

`report`: on the conversations both judges scored: `wikihowagent align` against both humans (judge_1.csv,
judge_2.csv) for weighted and checklist (uniform); checklist (fitted) = the item weights of
`align --fit-checklist` (alignment/checklist_fit.py), out of fold by tutorial; Pearson r per rubric and
Overall with 95 % bootstrap CIs and the paired CIs of the differences from weighted (the same resampled
conversations); cost per conversation: calls, prompt tokens sent and prompt tokens left after the prompt
cache (each call's prompt minus its longest common prefix with the previous call's, as llama.cpp's slot
cache reuses it; characters / CHARS_PER_TOKEN), seconds; judge-check accuracy; head to head against people
(`head_to_head`, stats/pair_order.py): the pairs of conversations of one tutorial the people clearly ordered (Overall means at least
PAIR_GAP = stats.pair_order.GAP apart), the share each judge's Overall orders the same way (what `compare`'s verdicts from absolute
scores give), beside the paper's 7B judges.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_alignment import (  # noqa: E402
    CHARS_PER_TOKEN,
    ROWS,
    TIMING,
    align,
    common_scores,
    conversation_ids,
    judgment_wins,
    paired_accuracy,
    pending_checks,
    seconds_per_conversation,
    single_files,
    study_files,
    titles,
)
from bench_alignment import PAPER as PAPER_SCORES  # noqa: E402

from wikihowagent.stats.pair_order import GAP as PAIR_GAP  # noqa: E402  (people "clearly" ordered two conversations)


def _work_dir() -> Path:
    """The directory holding shared/human-study and runs/: beside the repository (/work/main), or one level
    further up from a worktree (/work/wt/BRANCH)."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "human-study").is_dir():
            return base
    return ROOT.parent


STUDY = _work_dir() / "shared" / "human-study"
OUT = _work_dir() / "runs" / "human-study"  # bench_alignment.py's: the weighted judge's scores are there

CHECKLIST = "checklist"
WEIGHTED = "tutorial-first"  # bench_alignment.py's folder of the weighted judge (the default prompt)
CHECK_DIR = "judge-check"
MODES = (WEIGHTED, CHECKLIST)
SECTION = "checklist judge (issue 30): human study and judge-check"


def last_scores(folder: Path) -> dict:
    from wikihowagent.runs import iter_scores

    last = {}
    for path in sorted(folder.glob("*/scores.jsonl")):
        for _n, rec in iter_scores(path, on_error=lambda m: None):
            last[rec.conversation_id] = rec
    return last


def judged_ids(folder: Path, mode: str) -> set[str]:
    """Conversations of `folder` whose 8 rubrics were judged (scored or failed) by `mode` (the last line)."""
    out = set()
    for cid, rec in last_scores(folder).items():
        if not rec.judge:
            continue
        if mode == CHECKLIST and rec.judge.scoring != CHECKLIST:
            continue
        if mode == WEIGHTED and not (rec.judge.scoring == "weighted" and (rec.judge.prompt or WEIGHTED) == WEIGHTED):
            continue
        if sum(v is not None for k, v in rec.metrics.items() if k in ROWS) + len(rec.judge.failures) >= 8:
            out.add(cid)
    return out


# --------------------------------------------------------------------------------------------------
# judge
# --------------------------------------------------------------------------------------------------


def judge(files: list[Path], out: Path, minutes: float) -> None:
    from wikihowagent.console import make_console
    from wikihowagent.evaluation.core import EvaluateRequest, run_evaluation

    console = make_console()
    deadline = time.perf_counter() + minutes * 60
    folder = out / CHECKLIST
    done = judged_ids(folder, CHECKLIST)
    for single in single_files(files, out, 0):
        cid = conversation_ids([single])[0]
        if cid in done:
            continue
        if time.perf_counter() > deadline:
            print(
                f"time is up ({minutes:g} min): rerun to resume ({len(done)} of {len(conversation_ids(files))} judged)",
                flush=True,
            )
            return
        t0 = time.perf_counter()
        run_evaluation(
            EvaluateRequest(
                runs=(single,),
                evaluator="local",
                metrics="rubric",
                judge_scoring=CHECKLIST,
                out=folder,
                figures=False,
                concurrency=1,
                bootstrap=0,
            ),
            console,
        )
        secs = time.perf_counter() - t0
        rec = last_scores(folder).get(cid)
        calls = sum(len(v) for v in rec.judge.raw.values()) if rec and rec.judge else 0
        with open(folder / TIMING, "a", encoding="utf-8") as fh:
            fh.write(
                json.dumps(
                    {
                        "conversation_id": cid,
                        "conversations": 1,
                        "seconds": round(secs, 1),
                        "calls": calls,
                        "load": round(os.getloadavg()[0], 2),
                    }
                )
                + "\n"
            )
        done.add(cid)
        print(f"checklist: {cid} judged in {secs:.0f} s ({calls} calls)", flush=True)
    print(f"all {len(done)} conversations judged", flush=True)


# --------------------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------------------


def check_conversations(study: Path, runs: list[Path], n: int) -> list:
    from bench_alignment import shortest_first

    from wikihowagent.evaluation.inputs import resolve_inputs

    if runs:
        convs = [c for src in resolve_inputs(runs, ROOT) for c in src.conversations(on_error=print)]
    else:
        order = [c["conversation_id"] for _f, c in shortest_first(study_files(study))]
        by_id = {
            c.conversation_id: c
            for src in resolve_inputs(study_files(study), ROOT)
            for c in src.conversations(on_error=print)
        }
        convs = [by_id[cid] for cid in order if cid in by_id]
    return convs[:n]


def make_judges(llm, rubrics) -> dict:
    from wikihowagent.evaluation.judge_prompts import get_prompt
    from wikihowagent.evaluation.scoring import make_scorer

    return {
        WEIGHTED: make_scorer("weighted", llm, rubrics, None, concurrency=1, prompt=get_prompt(WEIGHTED)),
        CHECKLIST: make_scorer(CHECKLIST, llm, rubrics, None, concurrency=1),
    }


def check(study: Path, runs: list[Path], n: int, out: Path, minutes: float, modes: list[str]) -> None:
    from wikihowagent.backends import make_chat_model
    from wikihowagent.config import load_config
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.judgecheck.core import JUDGMENTS, ORIGINAL_2, CheckStats, plan, read_judgments, run_jobs
    from wikihowagent.judgecheck.perturbations import load_perturbations

    cfg = load_config(None)
    llm = make_chat_model("local", cfg.model.model_copy(update={"temperature": 0.0}), cfg.local)
    rubrics = load_rubrics()
    perts = load_perturbations(None, list(rubrics))
    convs = check_conversations(study, runs, n)
    jobs = [j for j in plan(convs, perts, list(rubrics), CheckStats()) if j.variant != ORIGINAL_2]
    judges = make_judges(llm, rubrics)
    deadline = time.perf_counter() + minutes * 60
    from wikihowagent.evaluation.session import JudgeLoop

    with JudgeLoop() as loop:
        for conv in convs:
            for m in modes:
                scorer = judges[m]
                path = out / CHECK_DIR / m / JUDGMENTS
                path.parent.mkdir(parents=True, exist_ok=True)
                have = read_judgments(path, "local", scorer.label, scorer.prompt_name)
                todo = pending_checks(jobs, conv.conversation_id, have)
                if not todo:
                    continue
                if time.perf_counter() > deadline:
                    print(f"time is up ({minutes:g} min): rerun to resume", flush=True)
                    return
                t0 = time.perf_counter()
                loop.run(run_jobs(todo, scorer, "local", path, lambda k: None, CheckStats()))
                print(
                    f"{m}: judge-check {conv.conversation_id}: {len(todo)} passes in {time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
        print(f"judge-check done on {len(convs)} conversations", flush=True)


def check_wins(mode: str, ids: list[str], out: Path) -> tuple[Any, list[tuple[str, str]]]:
    """bench_alignment.judgment_wins of this judge's judge-check judgments under OUT/judge-check/<mode>/."""
    from wikihowagent.judgecheck.core import JUDGMENTS

    if mode == CHECKLIST:
        from wikihowagent.evaluation.checklist import load_checklist
        from wikihowagent.evaluation.judge import load_rubrics

        prompt = f"checklist {load_checklist(None, list(load_rubrics())).ident}"
        return judgment_wins(out / CHECK_DIR / mode / JUDGMENTS, CHECKLIST, prompt, ids)
    return judgment_wins(out / CHECK_DIR / mode / JUDGMENTS, "weighted", WEIGHTED, ids)


def checked_ids(out: Path) -> list[str]:
    """Conversations whose original was judged in judge-check by both judges."""
    from wikihowagent.runs import JUDGMENTS, read_judgment_table

    ids = None
    for m in MODES:
        meta = read_judgment_table(out / CHECK_DIR / m / JUDGMENTS).meta
        got = {cid for cid, v in zip(meta["conversation_id"], meta["variant"], strict=True) if v == "original"}
        ids = got if ids is None else ids & got
    return sorted(ids or ())


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------


def paired_humans(alignment: Path) -> dict[str, dict[str, float]]:
    """{conversation id: {metric: human mean}} from `align`'s paired_scores.csv."""
    from wikihowagent.csvcells import read_people_csv
    from wikihowagent.runs import PAIRED_SCORES_CSV

    head, *rows = read_people_csv(alignment / PAIRED_SCORES_CSV)
    out = {}
    for row in (dict(zip(head, r, strict=False)) for r in rows):  # a short row: its missing cells are NaN
        vals = {}
        for m in ROWS:
            try:
                vals[m] = float(row[f"human_{m}"])
            except (KeyError, ValueError):
                vals[m] = math.nan
        out[row["conversation_id"]] = vals
    return out


def predictions(
    recs: dict, ids: list[str], humans: dict[str, dict[str, float]]
) -> dict[str, dict[str, dict[str, float]]]:
    """{metric: {"weighted"/"uniform"/"fitted": {cid: score}}}; fitted = out of fold by tutorial."""
    import numpy as np

    from wikihowagent.alignment.checklist_fit import DEFAULT_SHRINKAGE, features, out_of_fold
    from wikihowagent.evaluation.checklist import item_key

    w_recs, c_recs = recs[WEIGHTED], recs[CHECKLIST]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for m in ROWS[:-1]:
        ok = [
            c
            for c in ids
            if math.isfinite(humans[c][m])
            and w_recs[c].metrics.get(m) is not None
            and c_recs[c].metrics.get(m) is not None
        ]
        items = [{i.id: i.good for i in c_recs[c].judge.items if m in i.rubrics} for c in ok]
        keys = sorted({item_key(i) for its in items for i in its})
        x = features(items, keys)
        y = np.array([humans[c][m] for c in ok])
        groups = np.array([c_recs[c].tutorial_id or c_recs[c].title for c in ok], dtype=object)
        fitted = (
            out_of_fold(x, y, groups, DEFAULT_SHRINKAGE) if len(set(groups.tolist())) >= 2 else np.full(len(ok), np.nan)
        )
        out[m] = {
            "weighted": {c: float(w_recs[c].metrics[m]) for c in ok},
            "uniform": {c: float(c_recs[c].metrics[m]) for c in ok},
            "fitted": dict(zip(ok, map(float, fitted), strict=True)),
        }
    full = [c for c in ids if all(c in out[m]["weighted"] for m in ROWS[:-1])]
    out["Overall"] = {
        k: {c: float(np.mean([out[m][k][c] for m in ROWS[:-1]])) for c in full}
        for k in ("weighted", "uniform", "fitted")
    }
    return out


def comparisons(preds: dict, humans: dict) -> dict:
    import numpy as np

    from wikihowagent.alignment.calibration import compare

    res = {}
    for m, by in preds.items():
        ids = sorted(by["weighted"])
        if len(ids) < 4:
            continue
        y = np.array([humans[c][m] if m != "Overall" else np.nanmean([humans[c][k] for k in ROWS[:-1]]) for c in ids])
        res[m] = compare(
            y,
            {k: np.array([by[k][c] for c in ids]) for k in ("weighted", "uniform", "fitted")},
            n_boot=2000,
            seed=0,
            baseline="weighted",
        )
    return res


def head_to_head(
    scores: dict[str, dict[str, float]], people: dict[str, float], tutorial: dict[str, str], gap: float = PAIR_GAP
) -> tuple[dict[str, Any], dict[str, Any]]:
    """stats.pair_order on the conversations every judge scored ({judge: {conversation: Overall}}), the
    differences from weighted on the same resamples."""
    from wikihowagent.stats.pair_order import pair_order

    ids = sorted(c for c in people if all(c in s for s in scores.values()))
    return pair_order(
        {j: [s[c] for c in ids] for j, s in scores.items()},
        [people[c] for c in ids],
        [tutorial[c] for c in ids],
        gap=gap,
        baseline="weighted",
    )


def paper_overall(study: Path) -> dict[str, float]:
    """{conversation id: the paper's 7B judges' Overall} (the mean of their 8 rubric scores, paper_llm_scores.csv)."""
    import csv

    out = {}
    with open(study / PAPER_SCORES, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            try:
                vals = [float(row[m.lower()]) for m in ROWS[:-1]]
            except (KeyError, ValueError):
                continue
            out[row["conversation_id"]] = sum(vals) / len(vals)
    return out


def pair_order_lines(res: tuple[dict[str, Any], dict[str, Any]], gap: float, labels: dict[str, str]) -> list[str]:
    orders, diffs = res
    first = next(iter(orders.values()), None)
    if first is None or not first.pairs:
        return [f"No pair of conversations of one tutorial whose people's Overall means differ by ≥ {gap:g}."]
    lines = [
        f"Head to head against people: the {first.pairs} pairs of conversations of one tutorial whose people's "
        f"Overall means differ by ≥ {gap:g} ({first.groups} tutorials), the share each judge's Overall orders "
        "as the people did (a tie half: what `compare`'s verdicts from absolute scores give at tie band 0; "
        "`align` reports the same per rubric in pair_order.csv); 95 % CI resampling tutorials, the difference "
        "from weighted on the same resamples. The pairwise judge (`compare`'s two-conversation prompt) prefers "
        "whichever conversation it is shown first with this model (position consistency 0.000, section "
        '"compare: head to head on runs of the embedded model"), so its default rule (agree) calls every such '
        "pair a tie: 0.500.",
        "",
        "| judge | pairs ordered as the people did | − weighted |",
        "|---|---|---|",
    ]
    for j, o in orders.items():
        d = diffs.get(j)
        dd = f"{d.diff:+.3f} [{d.ci_low:+.2f}, {d.ci_high:+.2f}]" if d else "–"
        lines.append(f"| {labels.get(j, j)} | {o.accuracy:.3f} [{o.ci_low:.2f}, {o.ci_high:.2f}] | {dd} |")
    return lines


def prompt_costs(ids: list[str], study: Path, recs: dict) -> dict[str, tuple[float, float, float]]:
    """{mode: (calls, prompt tokens sent, prompt tokens after the prompt cache) per conversation}, rebuilt from
    the prompts each judge sends (no model): characters / CHARS_PER_TOKEN; the cache keeps the longest common
    prefix with the previous call's prompt (one slot, calls of one conversation in order)."""
    import os.path

    from wikihowagent.evaluation.checklist import conversation_items
    from wikihowagent.evaluation.inputs import resolve_inputs
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.evaluation.judge_prompts import get_prompt
    from wikihowagent.evaluation.scoring import ChecklistScorer, rubric_prompt

    rubrics = load_rubrics()
    convs = {
        c.conversation_id: c
        for src in resolve_inputs(study_files(study), ROOT)
        for c in src.conversations(on_error=print)
    }
    scorer = ChecklistScorer(object(), rubrics)
    prompt = get_prompt(WEIGHTED)
    totals = {m: [0.0, 0.0, 0.0] for m in MODES}
    n = 0
    for cid in ids:
        conv = convs.get(cid)
        if conv is None:
            continue
        n += 1
        texts = {
            WEIGHTED: ["\n".join(t for _, t in rubric_prompt(conv, r, False, prompt)[0]) for r in rubrics.values()]
        }
        items, _ = conversation_items(scorer.checklist, list(conv.steps), list(rubrics))
        texts[CHECKLIST] = ["\n".join(t for _, t in scorer.messages(conv, it.question, it.tutorial)) for it in items]
        for m, ts in texts.items():
            prev = ""
            for t in ts:
                keep = len(os.path.commonprefix([prev, t]))
                totals[m][1] += len(t) / CHARS_PER_TOKEN
                totals[m][2] += (len(t) - keep) / CHARS_PER_TOKEN
                prev = t
        for m in MODES:  # calls as made (retries included), from the stored raw replies
            rec = recs[m].get(cid)
            totals[m][0] += sum(len(v) for v in rec.judge.raw.values()) if rec and rec.judge else len(texts[m])
    return {m: tuple(v / n for v in t) if n else (math.nan,) * 3 for m, t in totals.items()}  # type: ignore[misc]


def fmt(e, signed=True) -> str:
    if e is None or not math.isfinite(e.value):
        return "–"
    f = "+.2f" if signed else ".2f"
    ci = f" [{e.ci_low:{f}}, {e.ci_high:{f}}]" if math.isfinite(e.ci_low) else ""
    return f"{e.value:{f}}{ci}"


class ItemRow(NamedTuple):
    key: str  # item_key: a rubric item's id, or a step template's (mean over the conversation's steps)
    rubrics: tuple[str, ...]
    polarity: str
    n: int
    p_yes: float  # mean P(yes) over conversations
    sd_good: float  # sd of P(good) over conversations
    r: float  # Pearson r of P(good) with the people's mean on the rubrics it informs (NaN: no spread)


def item_diagnostics(c_recs: dict, ids: list[str], humans: dict[str, dict[str, float]]) -> list[ItemRow]:
    """Each checklist item's answers over the conversations and how they track the people: which items carry
    signal, which the model answers the same way whatever it reads."""
    import numpy as np

    from wikihowagent.evaluation.checklist import item_key

    per: dict[str, dict[str, list[tuple[float, float]]]] = {}  # key -> cid -> [(p_yes, good)]
    meta: dict[str, tuple[tuple[str, ...], str]] = {}
    for c in ids:
        rec = c_recs.get(c)
        for it in rec.judge.items if rec and rec.judge else []:
            if it.p_yes is None or it.good is None:
                continue
            k = item_key(it.id)
            meta.setdefault(k, (tuple(it.rubrics), it.polarity))
            per.setdefault(k, {}).setdefault(c, []).append((it.p_yes, it.good))
    rows = []
    for k, by in per.items():
        rubrics, polarity = meta[k]
        cs = [c for c in by if all(math.isfinite(humans[c].get(m, math.nan)) for m in rubrics)]
        p = np.array([np.mean([v[0] for v in by[c]]) for c in cs])
        g = np.array([np.mean([v[1] for v in by[c]]) for c in cs])
        h = np.array([np.mean([humans[c][m] for m in rubrics]) for c in cs])
        r = float(np.corrcoef(g, h)[0, 1]) if len(cs) >= 4 and g.std() > 1e-9 and h.std() > 1e-9 else math.nan
        rows.append(ItemRow(k, rubrics, polarity, len(cs), float(p.mean()), float(g.std(ddof=1)), r))
    return sorted(rows, key=lambda row: (row.rubrics, row.key))


def item_lines(rows: list[ItemRow]) -> list[str]:
    import numpy as np

    lines = [
        "Checklist items on the same conversations (uniform reading): mean P(yes), the spread of P(good) and "
        "its Pearson r with the people's mean on the rubric(s) the item informs (a step item: its mean over "
        "the conversation's steps).",
        "",
        "| item | rubrics | polarity | n | mean P(yes) | sd P(good) | r with people |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.key} | {', '.join(r.rubrics)} | {r.polarity} | {r.n} | {r.p_yes:.2f} | {r.sd_good:.3f} | "
        + (f"{r.r:+.2f}" if math.isfinite(r.r) else "–")
        + " |"
        for r in rows
    ]
    for pol in ("yes-good", "yes-bad"):
        rs = [r for r in rows if r.polarity == pol]
        if rs:
            lines.append(
                f"\n{pol} items: {len(rs)}, mean P(yes) {np.mean([r.p_yes for r in rs]):.2f}, median r with people "
                f"{np.nanmedian([r.r for r in rs]):+.2f}, r > 0 for {sum(r.r > 0 for r in rs)} of {len(rs)}."
            )
    return lines


def failure_note(recs: dict[str, dict[str, Any]], ids: list[str]) -> str:
    """A clause for the section's first paragraph (starting "; ") naming what each judge could not score on these
    conversations (a conversation with no rubric score, a checklist item with no answer) and the recorded reason
    when it is the model's context; "" when everything was scored."""
    rubrics = ROWS[:-1]
    parts, reasons = [], []
    for mode in MODES:
        lost = [c for c in ids if all(recs[mode][c].metrics.get(m) is None for m in rubrics)]
        reasons += [n for c in lost for n in (recs[mode][c].judge.notes if recs[mode][c].judge else [])]
        if lost:
            parts.append(f"the {'weighted' if mode == WEIGHTED else 'checklist'} judge scored no rubric on {len(lost)}")
    items = [
        (c, i.failure) for c in ids if recs[CHECKLIST][c].judge for i in recs[CHECKLIST][c].judge.items if i.failure
    ]
    if items:
        parts.append(
            f"the checklist judge lost {len(items)} item answers on {len({c for c, _ in items})} (a rubric's score "
            "comes from its other items)"
        )
    reasons += [f for _, f in items]
    if not parts:
        return ""
    context = [r for r in reasons if "exceeds the available context size" in r]
    why = (
        " — the prompt exceeded the model's context (local.n_ctx; the server's reason is recorded in scores.jsonl)"
        if context and len(context) == len(reasons)
        else " (reasons recorded in scores.jsonl)"
    )
    return "; " + " and ".join(parts) + why + "; each correlation is over the conversations both judges scored"


def report(study: Path, out: Path) -> tuple[str, Any]:
    """-> (the BENCHMARKS.md section, the embedded judge's figures for wikihowagent/data/embedded_judge.json (report/measured.py;
    None before both judges have a human-study table and a judge-check))."""
    import numpy as np

    files = study_files(study)
    all_ids = set(conversation_ids(files))
    judged = {m: judged_ids(out / m, m) & all_ids for m in MODES}
    common = sorted(judged[WEIGHTED] & judged[CHECKLIST])
    recs = {m: last_scores(out / m) for m in MODES}
    lines = [
        f"Development split of the paper's human study (`{study.name}/`): 70 conversations by seven 7B models, "
        f"10 tutorials, two human judges. Judged so far: weighted {len(judged[WEIGHTED])}, checklist "
        f"{len(judged[CHECKLIST])}; the table is on the **{len(common)} conversations both judged**"
        f"{' (shortest first: all 70 once the runs are complete)' if len(common) < len(all_ids) else ''}"
        f"{failure_note(recs, common)}. Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp "
        f"in-process, 1 slot), {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with "
        "other jobs. weighted = `--judge-scoring weighted` (prompt tutorial-first, the default); checklist "
        "(uniform) = `--judge-scoring checklist` (wikihowagent/data/checklists.json); checklist (fitted) = item weights of "
        "`align --fit-checklist` (shrinkage 1), out of fold by tutorial (GroupKFold). Pearson r with the mean "
        "of both humans, 95 % bootstrap CIs (2000 resamples of conversations), and the paired CI of each "
        "difference from weighted (the same resamples). `scripts/bench_checklist.py`.",
        "",
    ]
    if len(common) >= 4:
        folder = out / CHECKLIST
        align([common_scores(folder, set(common))], study, folder / "alignment")
        humans = paired_humans(folder / "alignment")
        ids = [c for c in common if c in humans]
        cmp_preds = predictions(recs, ids, humans)
        cmp = comparisons(cmp_preds, humans)
        lines += [
            "| Pearson r (n) | weighted | checklist (uniform) | checklist (fitted, out of fold) | "
            "uniform − weighted | fitted − weighted |",
            "|---|---|---|---|---|---|",
        ]
        for m in ROWS:
            c = cmp.get(m)
            if c is None:
                continue
            name = f"**{m}**" if m == "Overall" else m
            lines.append(
                f"| {name} ({c.n}) | {fmt(c.predictors['weighted']['r'])} | {fmt(c.predictors['uniform']['r'])} "
                f"| {fmt(c.predictors['fitted']['r'])} | {fmt(c.deltas['uniform']['r'])} "
                f"| {fmt(c.deltas['fitted']['r'])} |"
            )
        overall = cmp_preds["Overall"]
        paper = paper_overall(study)
        judges = {**overall, "paper": {c: v for c, v in paper.items() if c in overall["weighted"]}}
        people = {c: float(np.nanmean([humans[c][m] for m in ROWS[:-1]])) for c in overall["weighted"]}
        tut = {c: recs[CHECKLIST][c].tutorial_id or recs[CHECKLIST][c].title for c in overall["weighted"]}
        labels = {
            "weighted": "weighted",
            "uniform": "checklist (uniform)",
            "fitted": "checklist (fitted, out of fold)",
            "paper": "the paper's 7B judges (paper_llm_scores.csv)",
        }
        h2h = head_to_head(judges, people, tut)
        lines += ["", *pair_order_lines(h2h, PAIR_GAP, labels)]
        sd = {k: _sd(recs, common, k) for k in MODES}
        lines += [
            "",
            f"Spread of the judge's Overall over these conversations: weighted sd {sd[WEIGHTED]:.3f}, "
            f"checklist sd {sd[CHECKLIST]:.3f}. Tutorials: {len(set(titles(files, set(common))))}.",
            "",
        ]
        lines += item_lines(item_diagnostics(recs[CHECKLIST], ids, humans)) + [""]
        costs = prompt_costs(common, study, recs)
        secs = {m: seconds_per_conversation(out / m, set(common)) for m in MODES}
        lines += [
            "| cost per conversation | calls | prompt tokens sent (est.) | prompt tokens after the prompt cache "
            "(est.) | seconds (n timed) |",
            "|---|---|---|---|---|",
        ]
        for m in MODES:
            calls, sent, new = costs[m]
            s, k = secs[m]
            label = "weighted" if m == WEIGHTED else "checklist"
            lines.append(
                f"| {label} | {calls:.1f} | {sent:,.0f} | {new:,.0f} | " + (f"{s:.0f} (n {k})" if k else "–") + " |"
            )
        w, c = secs[WEIGHTED][0], secs[CHECKLIST][0]
        if math.isfinite(w) and math.isfinite(c) and w > 0:
            lines.append(f"\nChecklist / weighted seconds per conversation: {c / w:.2f}x (goal ≤ 1.5x).")
    else:
        lines.append(
            "Fewer than 4 conversations judged by both judges: no table yet (run `judge`, and "
            "`bench_alignment.py judge --variants tutorial-first --per-tutorial 0` for the weighted column)."
        )
    ids = checked_ids(out)
    wins, cells = {}, []
    for m in MODES:
        wins[m], cells = check_wins(m, ids, out)
    acc = paired_accuracy(wins)
    lines += [
        "",
        f"judge-check (wikihowagent/data/perturbations.json; originals and the perturbed copies' target rubrics) on the "
        f"{acc.n} conversations both judges were checked on (the development split, shortest first): mean "
        "accuracy over the targeted cells, P(original scored higher), ties half, 95 % CI over "
        "conversations, the difference's CI paired (the same resampled conversations). For an absolute "
        "judge this is also its pairwise accuracy on the (original, perturbed) pairs.",
        "",
        "| judge | judge-check accuracy | conversations |",
        "|---|---|---|",
    ]
    for m in MODES:
        a, lo, hi = acc.accuracy[m]
        label = "weighted" if m == WEIGHTED else "checklist"
        lines.append(f"| {label} | " + (f"{a:.3f} [{lo:.2f}, {hi:.2f}]" if acc.n else "not run") + f" | {acc.n} |")
    if acc.n:
        d, lo, hi = acc.difference
        lines += [
            f"| checklist − weighted | {d:+.3f} [{lo:+.2f}, {hi:+.2f}] | {acc.n} |",
            "",
            "Per targeted cell (perturbation: rubric), accuracy over the same conversations:",
            "",
            "| cell | weighted | checklist |",
            "|---|---|---|",
        ]
        for k, (pname, rubric) in enumerate(cells):
            lines.append(f"| {pname}: {rubric} | {acc.per_cell[WEIGHTED][k]:.2f} | {acc.per_cell[CHECKLIST][k]:.2f} |")
    figures = None
    if acc.n and len(common) >= 4:
        figures = measured_figures(acc, cmp.get("Overall"), h2h[0])
    return "\n".join(lines), figures


def measured_figures(acc: Any, overall: Any, orders: dict[str, Any]) -> Any:
    """The report's statement of the embedded judge (report/measured.py) from this section's numbers: per scoring
    mode, judge-check accuracy, Overall r with the people, and the share of clearly ordered pairs."""
    import datetime

    from wikihowagent.report.measured import Figure, Measured

    def fig(what: str, v: float, lo: float, hi: float, n: int, of: str) -> Figure:
        ci = (round(lo, 3), round(hi, 3)) if math.isfinite(lo) and math.isfinite(hi) else None
        return Figure(what=what, value=round(v, 3), ci=ci, n=n, of=of)

    modes: dict[str, list[Figure]] = {}
    for mode, label in ((CHECKLIST, "uniform"), (WEIGHTED, "weighted")):
        a, lo, hi = acc.accuracy[mode]
        figs = [fig("judge-check accuracy", a, lo, hi, acc.n, "conversations, originals vs damaged copies")]
        if overall is not None:
            e = overall.predictors[label]["r"]
            figs.append(
                fig(
                    "Pearson r with the people's Overall",
                    e.value,
                    e.ci_low,
                    e.ci_high,
                    overall.n,  # the conversations both judges scored
                    "conversations of the paper's human study (development split)",
                )
            )
        o = orders.get(label)
        if o is not None and o.pairs:
            figs.append(
                fig(
                    "share of same-tutorial pairs ordered as the people did",
                    o.accuracy,
                    o.ci_low,
                    o.ci_high,
                    o.pairs,
                    "pairs the people clearly ordered",
                )
            )
        modes["checklist" if mode == CHECKLIST else "weighted"] = figs
    return Measured(
        model="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        measured=datetime.date.today().isoformat(),
        source=f'BENCHMARKS.md, "{SECTION}"',
        modes=modes,
    )


def _sd(recs: dict, ids: list[str], mode: str) -> float:
    import numpy as np

    vals = []
    for c in ids:
        r = recs[mode].get(c)
        v = [r.metrics.get(m) for m in ROWS[:-1]] if r else []
        if v and all(x is not None for x in v):
            vals.append(float(np.mean(v)))
    return float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("judge", "check", "report"))
    ap.add_argument("--check-n", type=int, default=20, help="judge-check conversations")
    ap.add_argument("--runs", type=Path, nargs="*", default=[], help="judge-check these runs' conversations instead")
    ap.add_argument(
        "--modes",
        default=",".join(MODES),
        help="judge-check: the judges to check (weighted folder name tutorial-first, checklist)",
    )
    ap.add_argument("--minutes", type=float, default=9.0, help="stop (resumably) after this much model time")
    ap.add_argument("--study", type=Path, default=STUDY)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    if args.step == "judge":
        judge(study_files(args.study), args.out, args.minutes)
    elif args.step == "check":
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        bad = [m for m in modes if m not in MODES]
        if bad:
            raise SystemExit(f"--modes: unknown {bad[0]!r}; valid: {', '.join(MODES)}")
        check(args.study, args.runs, args.check_n, args.out, args.minutes, modes)
    else:
        md, figures = report(args.study, args.out)
        print(md)
        if args.write_md:
            from benchmarks_md import write_section

            from wikihowagent.report.measured import write_measured

            write_section(SECTION, md)
            if figures is not None:
                print(f"wrote {write_measured(figures)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
