"""`judge-check --evaluator A --evaluator B ...`: each judge checked into `OUT/<judge>/`, then the panel
(`OUT/panel/`): per conversation, variant and rubric the mean of the judges' scores, analysed as one judge
(sensitivity, self-consistency), so the panel's accuracy stands beside each member's."""

from __future__ import annotations

from pathlib import Path

from wikihowagent.judge.panel import judge_slug, panel_spec
from wikihowagent.layout import JUDGMENTS, PANEL_DIR
from wikihowagent.records import JudgmentRecord
from wikihowagent.records_io import read_judgment_table, rewrite_records


def combine_judgments(out: Path, specs: list[str]) -> tuple[str, str, set[str], int]:
    """Write `out/panel/judgments.jsonl` from the judges' `out/<judge>/judgments.jsonl`. Returns (panel spec,
    scoring label, conversation ids, judgments written)."""

    groups: dict[tuple[str, str], dict] = {}
    labels: set[str] = set()
    for spec in specs:
        t = read_judgment_table(out / judge_slug(spec) / JUDGMENTS)
        m = t.meta
        for cid, run, variant, ev, sc, scores in zip(
            m["conversation_id"],
            m["run"],
            m["variant"],
            m["evaluator"],
            m["scoring"],
            t.iter_row_metrics(),
            strict=True,
        ):
            if ev != spec:
                continue
            labels.add(sc)
            g = groups.setdefault((cid, variant), {"run": run, "scores": {}})
            for name, v in scores.items():
                g["scores"].setdefault(name, []).append(v)
    name, label = panel_spec(specs), ",".join(sorted(labels))
    records = []
    for (cid, variant), g in groups.items():
        scores = {}
        for rubric, vs in g["scores"].items():
            ok = [v for v in vs if v is not None]
            scores[rubric] = round(sum(ok) / len(ok), 4) if ok else None
        records.append(
            JudgmentRecord(
                conversation_id=cid,
                run=g["run"],
                variant=variant,
                evaluator=name,
                judge_scoring=label,
                scores=scores,
                judge_failures=[r for r, v in scores.items() if v is None],
            )
        )
    (out / PANEL_DIR).mkdir(parents=True, exist_ok=True)
    rewrite_records(out / PANEL_DIR / JUDGMENTS, records)
    return name, label, {cid for cid, _ in groups}, len(records)
