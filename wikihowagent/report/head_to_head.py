"""The report's "Head to head" page (`report --compare DIR`): a `compare --out` directory's Bradley–Terry
ranking, win rates, position consistency, heatmap and pairwise verdicts, as `head-to-head.html`."""

from __future__ import annotations

import html
import shutil
from pathlib import Path
from typing import Any

from wikihowagent.errors import WikihowagentError
from wikihowagent.layout import (
    BRADLEY_TERRY_CSV,
    FIGURES_DIR,
    HEAD_TO_HEAD_HTML,
    HEAD_TO_HEAD_PNG,
    OVERALL,
    PAIRWISE_CSV,
    POSITION_CSV,
    SUMMARY_MD,
    WIN_RATES_CSV,
)
from wikihowagent.runs import OutputReadError, read_output_lines, read_people_rows

from .page import page

PAGE = HEAD_TO_HEAD_HTML


class CompareDirError(WikihowagentError, ValueError):
    """`--compare DIR` is not a compare output directory; one line."""


def check_compare_dir(path: Path) -> None:
    if not (Path(path) / PAIRWISE_CSV).is_file():
        raise CompareDirError(f"{path}: no {PAIRWISE_CSV} (pass a `wikihowagent compare --out` directory)")


def _rows(path: Path, problems: Any) -> list[list[str]]:
    """A compare table's rows, each cell as it was before `people_csv` neutralised it; an unreadable table is
    one line in `problems` and left out (the rest of the page is still written)."""
    if not path.is_file():
        return []
    try:
        return read_people_rows(path)
    except OutputReadError as exc:
        problems.add(f"{exc}; left out of the Head to head page")
    return []


def _summary_head(path: Path, problems: Any) -> list[str]:
    """The first lines of compare's summary.md (its title and notes); unreadable: a problem, none."""
    if not path.is_file():
        return []
    try:
        return read_output_lines(path)
    except OutputReadError as exc:
        problems.add(f"{exc}; the page has no notes")
    return []


def csv_table(rows: list[list[str]], cell=lambda x: x, table_id: str = "") -> str:
    """An HTML table of CSV rows (the first is the header); every cell escaped."""
    e = html.escape
    if not rows:
        return ""
    ident = f" id='{e(table_id)}'" if table_id else ""
    return (
        f"<div class='scroll'><table{ident} class='summary'><thead><tr>"
        + "".join(f"<th>{e(h)}</th>" for h in rows[0])
        + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{e(cell(x))}</td>" for x in r) + "</tr>" for r in rows[1:])
        + "</tbody></table></div>"
    )


def _select(rows: list[list[str]], column: str, value: str, drop: bool = True) -> list[list[str]]:
    if not rows or column not in rows[0]:
        return rows
    i = rows[0].index(column)
    keep = [r for r in rows[1:] if len(r) > i and r[i] == value]
    if drop:
        return [rows[0][:i] + rows[0][i + 1 :]] + [r[:i] + r[i + 1 :] for r in keep]
    return [rows[0]] + keep


def write_page(ctx: Any) -> str:
    """With --compare DIR: the head-to-head page; -> the overview's link (a report page, see report.core.PAGES)."""
    if ctx.compare is None:
        return ""
    return write_compare_page(ctx.d, ctx.compare, ctx.short_number, ctx.problems)


def write_compare_page(site: Path, compare_dir: Path, short, problems: Any) -> str:
    """Write head-to-head.html (and copy the heatmap into figures/); -> the nav link for index.html."""

    e = html.escape
    compare_dir = Path(compare_dir)
    head = _summary_head(compare_dir / SUMMARY_MD, problems)
    title = head[0].lstrip("# ").strip() if head else "Head to head"
    notes = [x for x in head[1:6] if x.strip() and not x.startswith("#")]
    parts = [
        "<nav><b>wikihowagent report</b> <a href='index.html'>Overview</a> <a href='#ranking'>Ranking</a> "
        "<a href='#win-rates'>Win rates</a> <a href='#position'>Position</a> <a href='#verdicts'>Verdicts</a></nav>",
        "<main><section id='head-to-head'>",
        f"<h1>{e(title)}</h1>",
        f"<p class='meta'>From <code>{e(str(compare_dir))}</code> (<code>wikihowagent compare</code>).</p>",
    ]
    parts += [f"<p class='meta'>{e(x)}</p>" for x in notes]
    bt = _rows(compare_dir / BRADLEY_TERRY_CSV, problems)
    parts.append("<h2 id='ranking'>Bradley–Terry ranking</h2>")
    if bt:
        parts.append(
            "<p class='meta'>Log-strength θ (mean 0; θ_i − θ_j = log-odds that i beats j) with a 95 % "
            "bootstrap CI over tutorials; overall = every rubric pooled.</p>"
        )
        parts.append(csv_table(_select(bt, "rubric", OVERALL), short, "bt-overall"))
        parts.append("<h3>Per rubric</h3>" + csv_table(bt, short, "bt-rubrics"))
    else:
        parts.append("<p class='meta'>Two runs: no ranking model (win rates below).</p>")
    if (compare_dir / HEAD_TO_HEAD_PNG).is_file():
        shutil.copyfile(compare_dir / HEAD_TO_HEAD_PNG, site / FIGURES_DIR / HEAD_TO_HEAD_PNG)
        cap = "Overall win rate of the row's run against the column's (ties half)"
        parts.append(
            f"<figure><img src='{FIGURES_DIR}/{e(HEAD_TO_HEAD_PNG)}' alt='{e(cap)}'><figcaption>{e(cap)}</figcaption></figure>"
        )
    wins = _rows(compare_dir / WIN_RATES_CSV, problems)
    parts.append("<h2 id='win-rates'>Win rates</h2>" + csv_table(wins, short, "win-rates"))
    parts.append(
        "<h2 id='position'>Position consistency</h2><p class='meta'>Share of pairs whose two orders prefer "
        "the same conversation; order effect = |p_ab − (1 − p_ba)|.</p>"
        + csv_table(_rows(compare_dir / POSITION_CSV, problems), short, "position")
    )
    verdicts = _rows(compare_dir / PAIRWISE_CSV, problems)
    parts.append(
        f"<h2 id='verdicts'>Verdicts ({max(0, len(verdicts) - 1)})</h2><p class='meta'>Per tutorial, run pair "
        "and rubric: P(A better) with A shown first (p_ab), P(B better) with B shown first (p_ba), and the "
        "verdict under the rule named in its verdict_rule column.</p>" + csv_table(verdicts, short, "verdicts")
    )
    parts.append("</section></main>")
    (site / PAGE).write_text(page("Head to head", "\n".join(parts), []), encoding="utf-8")
    return f"<a href='{PAGE}'>Head to head</a>"
