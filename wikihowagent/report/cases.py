"""`report --cases N`: the best and worst N conversations per metric (the paper's Table 6 case study),
as cases.md and cases.html, each conversation linked to its page in the report."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wikihowagent.markdown import markdown_text
from wikihowagent.runs import CASES_HTML, CASES_MD

from .page import page
from .sources import ReportConversation

EXCERPT_TURNS = 6


def pick(
    convs: list[ReportConversation], metric: str, n: int
) -> tuple[list[ReportConversation], list[ReportConversation]]:
    """(best n, worst n) by `metric`; ties by run then conversation id; conversations without a value are left out."""
    have = [(v, c) for c in convs if (v := c.metrics.get(metric)) is not None]
    best = [c for _, c in sorted(have, key=lambda vc: (-vc[0], vc[1].run, vc[1].conversation_id))[:n]]
    worst = [c for _, c in sorted(have, key=lambda vc: (vc[0], vc[1].run, vc[1].conversation_id))[:n]]
    return best, worst


def write_page(ctx: Any) -> str:
    """With --cases N: cases.md and cases.html; -> the overview's link (a report page, see report.core.PAGES)."""
    if not ctx.cases:
        return ""
    write_cases(ctx.d, ctx.convs, ctx.chunk_of, ctx.metrics, ctx.cases)
    return f"<a href='{CASES_HTML}'>Case study</a>"


def write_cases(d: Path, convs: list[ReportConversation], chunk_of: dict[int, int], metrics: list[str], n: int) -> None:
    e = html.escape
    md = [f"# Case study: the best and worst {n} conversations per metric", ""]
    body = [
        "<nav><b>wikihowagent report</b> <a href='index.html'>‹ overview</a></nav><main>",
        f"<h1>Case study: the best and worst {n} conversations per metric</h1>",
    ]
    for m in metrics:
        best, worst = pick(convs, m, n)
        if not best:
            continue
        md += [f"## {markdown_text(m)}", ""]
        body.append(f"<h2 id='{e(m)}'>{e(m)}</h2>")
        for label, chosen in (("best", best), ("worst", worst)):
            md += [f"### {label}", "", "| # | value | run | title | conversation |", "| --: | --: | :-- | :-- | :-- |"]
            body.append(
                f"<h3>{label}</h3><table class='summary'><tr><th>#</th><th>value</th><th>run</th>"
                "<th>title</th><th>excerpt</th></tr>"
            )
            for i, c in enumerate(chosen, 1):
                href = f"conversation.html#{chunk_of[id(c)]}/{c.conversation_id}"
                md_href = f"conversation.html#{chunk_of[id(c)]}/{quote(c.conversation_id, safe='')}"
                md.append(
                    f"| {i} | {c.metrics[m]:.4f} | {markdown_text(c.run)} | "
                    f"{markdown_text(c.title or c.method_title or c.conversation_id)} | "
                    f"[{markdown_text(c.conversation_id)}]({md_href}) |"
                )
                excerpt = "".join(
                    f"<div class='turn {e(t.role)}'><b>{e(t.role.capitalize())}:</b> {e(t.text)}</div>"
                    for t in c.turns[:EXCERPT_TURNS]
                )
                more = (
                    f"<p class='meta'>… {len(c.turns) - EXCERPT_TURNS} more turns</p>"
                    if len(c.turns) > EXCERPT_TURNS
                    else ""
                )
                body.append(
                    f"<tr><td>{i}</td><td class='num'>{c.metrics[m]:.4f}</td><td>{e(c.run)}</td>"
                    f"<td><a href='{e(href)}'>{e(c.title or c.method_title or c.conversation_id)}</a></td>"
                    f"<td>{excerpt}{more}</td></tr>"
                )
            md.append("")
            body.append("</table>")
    body.append("</main>")
    (d / CASES_MD).write_text("\n".join(md) + "\n", encoding="utf-8")
    (d / CASES_HTML).write_text(page("Case study", "\n".join(body), []), encoding="utf-8")
