"""`report --cases N`: the best and worst N conversations per metric (the paper's Table 6 case study),
as cases.md and cases.html, each conversation linked to its page in the report."""

from __future__ import annotations

import heapq
import html
import math
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wikihowagent.layout import CASES_HTML, CASES_MD
from wikihowagent.markdown import markdown_text

from .page import page
from .store import ConversationStore

EXCERPT_TURNS = 6


def pick(convs: ConversationStore, values: Any, runs: list[str], metric: str, n: int) -> tuple[list[int], list[int]]:
    """(best n, worst n) conversations by `metric`; ties by run then conversation id; conversations without a
    value are left out."""
    j = values.metrics.index(metric)
    column = values.matrix()[:, j].tolist()
    have = [(v, runs[convs.run[i]], convs.ids[i], i) for i, v in enumerate(column) if not math.isnan(v)]
    best = [x[3] for x in heapq.nsmallest(n, have, key=lambda x: (-x[0], x[1], x[2]))]
    worst = [x[3] for x in heapq.nsmallest(n, have, key=lambda x: (x[0], x[1], x[2]))]
    return best, worst


def write_page(ctx: Any) -> str:
    """With --cases N: cases.md and cases.html; -> the overview's link (a report page, see report.core.PAGES)."""
    if not ctx.cases:
        return ""
    write_cases(ctx.d, ctx.convs, ctx.values, [r.name for r in ctx.runs], ctx.cases)
    return f"<a href='{CASES_HTML}'>Case study</a>"


def write_cases(d: Path, convs: ConversationStore, values: Any, runs: list[str], n: int) -> None:
    e = html.escape
    md = [f"# Case study: the best and worst {n} conversations per metric", ""]
    body = [
        "<nav><b>wikihowagent report</b> <a href='index.html'>‹ overview</a></nav><main>",
        f"<h1>Case study: the best and worst {n} conversations per metric</h1>",
    ]
    for m in values.metrics:
        best, worst = pick(convs, values, runs, m, n)
        if not best:
            continue
        j = values.metrics.index(m)
        md += [f"## {markdown_text(m)}", ""]
        body.append(f"<h2 id='{e(m)}'>{e(m)}</h2>")
        for label, chosen in (("best", best), ("worst", worst)):
            md += [f"### {label}", "", "| # | value | run | title | conversation |", "| --: | --: | :-- | :-- | :-- |"]
            body.append(
                f"<h3>{label}</h3><table class='summary'><tr><th>#</th><th>value</th><th>run</th>"
                "<th>title</th><th>excerpt</th></tr>"
            )
            for k, i in enumerate(chosen, 1):
                cid, run, value = convs.ids[i], runs[convs.run[i]], values.value(i, j)
                title = convs.title[i] or cid
                href = f"conversation.html#{convs.chunk(i)}/{cid}"
                md_href = f"conversation.html#{convs.chunk(i)}/{quote(cid, safe='')}"
                md.append(
                    f"| {k} | {value:.4f} | {markdown_text(run)} | {markdown_text(title)} | "
                    f"[{markdown_text(cid)}]({md_href}) |"
                )
                turns = convs.record(i)["turns"]
                excerpt = "".join(
                    f"<div class='turn {e(t[0])}'><b>{e(t[0].capitalize())}:</b> {e(t[1])}</div>"
                    for t in turns[:EXCERPT_TURNS]
                )
                more = (
                    f"<p class='meta'>… {len(turns) - EXCERPT_TURNS} more turns</p>"
                    if len(turns) > EXCERPT_TURNS
                    else ""
                )
                body.append(
                    f"<tr><td>{k}</td><td class='num'>{value:.4f}</td><td>{e(run)}</td>"
                    f"<td><a href='{e(href)}'>{e(title)}</a></td>"
                    f"<td>{excerpt}{more}</td></tr>"
                )
            md.append("")
            body.append("</table>")
    body.append("</main>")
    (d / CASES_MD).write_text("\n".join(md) + "\n", encoding="utf-8")
    (d / CASES_HTML).write_text(page("Case study", "\n".join(body), []), encoding="utf-8")
