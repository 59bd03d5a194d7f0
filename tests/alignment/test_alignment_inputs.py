"""Reading human annotation files and LLM scores; every bad-input case."""

from __future__ import annotations

import csv
import html
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import HOSTILE_JSON, append_line
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import METRICS, make_run, sheet_rows, write_sheet  # noqa: E402

from wikihowagent.alignment.annotations import read_human_file, read_human_files  # noqa: E402
from wikihowagent.alignment.core import compute  # noqa: E402
from wikihowagent.alignment.problems import AlignInputError, Problems  # noqa: E402
from wikihowagent.alignment.sources import read_llm_scores  # noqa: E402

HEADER = "conversation_id,filename,title,clarity,engagement,coherence,depth,relevance,progress,naturalness,truthfulness,comment\n"


def lines_of(problems: Problems) -> str:
    return "\n".join(problems.lines())


def test_paper_layout_any_case_extra_columns_bom_and_semicolons(tmp_path):
    p = tmp_path / "judge_a.csv"
    p.write_text(
        "\ufeffConversation_ID;FileName;Title;Clarity;ENGAGEMENT;coherence;Depth;relevance;progress;naturalness;"
        "Truthfulness;Comment;Notes\n"
        "c1;run;t;5;4;3;2;1;2;3;4;fine;free text\n"
        "c2;run;t;1;;3;;5;NA;n/a;4;;more\n",
        encoding="utf-8",
    )
    problems = Problems()
    [j] = read_human_file(p, problems)
    assert j.judge == "judge_a" and list(j.scores) == ["c1", "c2"]
    np.testing.assert_array_equal(j.scores["c1"], [5, 4, 4, 3, 2, 1, 2, 3])  # METRICS order
    assert np.isnan(j.scores["c2"]).sum() == 4
    assert j.runs["c1"] == "run" and j.rows == {"c1": 2, "c2": 3}
    assert j.blanks().sum() == 4
    assert len(problems) == 0  # blanks and text columns are not problems


def test_long_file_with_annotator_column_and_fully_long(tmp_path):
    p = tmp_path / "all.csv"
    p.write_text("annotator,conversation_id,clarity,depth\nann1,c1,4,3\nann2,c1,2,\nann1,c2,5,5\n")
    problems = Problems()
    judges = read_human_file(p, problems)
    assert [j.judge for j in judges] == ["ann1", "ann2"]
    assert judges[1].scores["c1"][0] == 2 and np.isnan(judges[1].scores["c1"][4])
    assert "no column for truthfulness, engagement, coherence, relevance, progress, naturalness" in lines_of(problems)
    q = tmp_path / "long.tsv"
    q.write_text(
        "judge\tconversation_id\tmetric\tscore\nA\tc1\tClarity\t4\nA\tc1\tdepth\t2\nB\tc1\tCLARITY\t5\n"
        "B\tc1\tfluency\t3\nB\tc1\tClarity\t1\n"
    )
    problems = Problems()
    judges = read_human_file(q, problems)
    assert [j.judge for j in judges] == ["A", "B"]
    assert judges[0].scores["c1"][METRICS.index("Depth")] == 2
    assert judges[1].scores["c1"][0] == 5  # first of the duplicated (B, c1, Clarity) kept
    text = lines_of(problems)
    assert f"{q}:5: column 'metric': 'fluency' is not one of the 8 rubric metrics" in text
    assert f"{q}:6: column 'conversation_id': c1 / Clarity by B already on row 4" in text


def test_bad_cells_named_by_file_row_column(tmp_path):
    p = tmp_path / "j.csv"
    p.write_text(
        HEADER
        + 'c1,run,t,5,4,3,2,1,2,3,4,"a comment\nover two lines"\n'  # one spreadsheet row, two text lines
        + "c2,run,t,five,4,3,2,1,2,3,4,\n"
        + "c3,run,t,6,4,0,2,1,2,3,4.5,\n"
        + "c1,run,t,1,1,1,1,1,1,1,1,dup\n"
        + ",run,t,1,1,1,1,1,1,1,1,no id\n"
        + ",,,,,,,,,,,\n"
        + "c4,run,t,3,3,3,3,3,3,3,3,\n"
    )
    problems = Problems()
    [j] = read_human_file(p, problems)
    text = lines_of(problems)
    assert f"{p}:3: column 'clarity': 'five' is not a number; cell left out" in text
    assert f"{p}:4: column 'clarity': 6 is outside the 1-5 scale; cell left out" in text
    assert f"{p}:4: column 'coherence': 0 is outside the 1-5 scale (0 is the paper's placeholder" in text
    assert f"{p}:5: column 'conversation_id': c1 already on row 2 (duplicate id); this row left out" in text
    assert f"{p}:6: column 'conversation_id': empty conversation_id; row left out" in text
    assert len(problems) == 5  # the fully blank row 7 is skipped silently
    assert j.scores["c1"][0] == 5  # the first c1 row is kept
    assert j.scores["c3"][METRICS.index("Truthfulness")] == 4.5  # half points are fine
    assert j.rows["c4"] == 8
    assert sorted(problems.counts()) == ["bad value", "duplicate id", "missing id", "out of range"]


def test_unknown_metric_columns(tmp_path):
    p = tmp_path / "j.csv"
    p.write_text(
        "conversation_id,clarity,clartiy,helpfulness,remarks,BLEU,Unnamed: 0\nc1,4,3,5,good,0.3,0\nc2,4,3,2,,0.2,1\n"
    )
    problems = Problems()
    [j] = read_human_file(p, problems)
    text = lines_of(problems)
    assert f"{p}:1: column 'clartiy': not one of the 8 rubric metrics (did you mean 'clarity'?); column ignored" in text
    assert f"{p}:1: column 'helpfulness': holds numbers but is not one of the 8 rubric metrics" in text
    assert "remarks" not in text and "BLEU" not in text and "Unnamed" not in text
    assert j.scores["c1"][0] == 4


def test_unusable_files_are_skipped_with_a_reason(tmp_path):
    no_id = tmp_path / "no_id.csv"
    no_id.write_text("id,clarity\nc1,4\n")
    no_metric = tmp_path / "no_metric.csv"
    no_metric.write_text("conversation_id,comment\nc1,x\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    good = tmp_path / "good.csv"
    good.write_text("conversation_id,clarity\nc1,4\n")
    problems = Problems()
    judges = read_human_files([no_id, no_metric, empty, tmp_path / "missing.csv", good], problems)
    assert [j.judge for j in judges] == ["good"]
    text = lines_of(problems)
    assert f"{no_id}:1: no 'conversation_id' column" in text
    assert f"{no_metric}:1: no rubric metric column" in text
    assert f"{empty}: empty file" in text and "missing.csv: file not found" in text


def test_same_judge_name_in_two_files_is_disambiguated(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "judge.csv").write_text("conversation_id,clarity\nc1,4\n")
    problems = Problems()
    judges = read_human_files([tmp_path / "a" / "judge.csv", tmp_path / "b" / "judge.csv"], problems)
    assert [j.judge for j in judges] == ["judge", "judge#2"]


@pytest.mark.parametrize("cell", ["inf", "-inf", "Infinity", "1e999"])  # as 0, 6, 99 and 1e9 are
def test_a_rating_off_the_scale_is_reported_infinity_too(tmp_path, cell):
    p = tmp_path / "j.csv"
    p.write_text(HEADER + f"c1,run,t,{cell},4,3,2,1,2,3,4,\nc2,run,t,NaN,4,3,2,1,2,3,4,\n")
    problems = Problems()
    [j] = read_human_file(p, problems)
    assert [(x.kind, x.message.split(": ")[:2]) for x in problems] == [
        ("out of range", [f"{p}:2", "column 'clarity'"])
    ]  # "NaN" is a blank, as pandas writes one
    assert "is outside the 1-5 scale" in problems.items[0].message
    assert math.isnan(j.scores["c1"][0]) and math.isnan(j.scores["c2"][0])


def test_scores_jsonl_last_wins_none_and_bad_lines(tmp_path):
    ids = make_run(tmp_path, "r1", ["t1", "t2"], {"t1": {m: 4.0 for m in METRICS}, "t2": {m: 3.0 for m in METRICS}})
    with open(tmp_path / "r1" / "scores.jsonl", "a") as fh:
        fh.write("{not json\n")
        fh.write(
            json.dumps(
                {
                    "conversation_id": ids["t1"],
                    "run": "r1",
                    "metrics": {**{m: 2.0 for m in METRICS[1:]}, "Depth": None, "clarity": 9},
                }
            )
            + "\n"
        )
    problems = Problems()
    llm = read_llm_scores([tmp_path / "r1"], problems)
    row = llm.rows[ids["t1"]]
    assert row.values[METRICS.index("Coherence")] == 2.0  # the later line replaced the first
    assert np.isnan(row.values[METRICS.index("Depth")]) and np.isnan(row.values[0])
    text = lines_of(problems)
    assert "scores.jsonl:3: malformed JSON" in text
    assert "scores.jsonl:4: Clarity: 9 is outside the 1-5 scale" in text
    assert "no LLM score (judge reply not parsed) for: Depth 1 conversations" in text


@pytest.mark.parametrize(("line", "why"), HOSTILE_JSON)
def test_a_hostile_scores_line_is_one_problem_and_every_other_line_is_used(tmp_path, line, why):
    from wikihowagent.cli import app

    tuts = [f"t{i}" for i in range(12)]
    ids = make_run(tmp_path / "runs", "r", tuts, rng=np.random.default_rng(1))
    llm = read_llm_scores([tmp_path / "runs" / "r"], Problems())
    ratings = np.clip(np.stack([llm.rows[ids[t]].values for t in tuts]) + 1, 1, 5)
    sheet = write_sheet(tmp_path / "judge.csv", sheet_rows([ids[t] for t in tuts], ratings))
    scores = tmp_path / "runs" / "r" / "scores.jsonl"
    lineno = append_line(scores, line)
    out = tmp_path / "out"
    args = ["align", "-H", str(sheet), "--scores", str(scores), "--out", str(out), "--bootstrap", "0", "--no-figures"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    problem = f"{scores}:{lineno}: malformed JSON ({why}); line skipped"
    assert (out / "problems.txt").read_text().splitlines().count(problem) == 1
    assert problem in res.output.replace("\n", "") and "Traceback" not in res.output
    with open(out / "correlations.csv", newline="") as fh:
        clarity = next(r for r in csv.DictReader(fh) if r["metric"] == "Clarity")
    assert int(clarity["n"]) == 12 and float(clarity["pearson_r"]) > 0.9  # every good line is used


def test_llm_scores_from_wide_csv_and_paper_run_file(tmp_path):
    csv_path = tmp_path / "model_scores.csv"
    csv_path.write_text(
        "conversation_id,filename,Clarity,Depth,BLEU\nc1,T-qwen_L-qwen_E-gpt_123,5,4,0.3\n"
        "c2,T-qwen_L-gemma_E-gpt_1,0,3,0.1\n"
    )
    paper = tmp_path / "T-llama_L-llama_E-gpt_9.json"
    paper.write_text(
        json.dumps(
            {
                "total_conversations": [
                    {
                        "conversation_id": "c3",
                        "title": "How to x",
                        "doc_id": 1,
                        "method_id": 0,
                        "categories": ["WikiHow", "Health", "Diet"],
                        "evaluation": {"Clarity": 4, "Engagement": 3, "BLEU": 0.5},
                    },
                    {"conversation_id": "c4", "categories": ["Food and Entertaining"], "evaluation": {"Clarity": 2}},
                    {"conversation_id": "c5", "categories": [], "evaluation": {"Clarity": 2}},
                ]
            }
        )
    )
    problems = Problems()
    llm = read_llm_scores([csv_path, paper], problems)
    assert llm.rows["c1"].values[0] == 5 and llm.rows["c1"].model == "qwen"
    assert llm.rows["c2"].model == "qwen / gemma" and np.isnan(llm.rows["c2"].values[0])
    assert llm.rows["c3"].model == "llama" and llm.rows["c3"].domain == "Health"
    # the paper's domain of the breadcrumb (domains.record_domain), else the first category below the root
    assert llm.rows["c4"].domain == "Food & Cooking" and llm.rows["c5"].domain == ""
    assert llm.rows["c3"].values[METRICS.index("Engagement")] == 3
    assert f"{csv_path}:3: column 'Clarity': 0 is outside the 1-5 scale" in lines_of(problems)


def _judges_and_run(tmp_path, n=12, seed=0):
    rng = np.random.default_rng(seed)
    tuts = [f"t{i}" for i in range(n)]
    ids = make_run(tmp_path / "runs", "r1", tuts, rng=rng)
    cids = [ids[t] for t in tuts]
    llm = read_llm_scores([tmp_path / "runs" / "r1"], Problems())
    base = np.stack([llm.rows[c].values for c in cids])
    return cids, base, rng


def test_unmatched_ids_both_directions_and_too_few_pairs(tmp_path):
    cids, base, rng = _judges_and_run(tmp_path)
    vals = np.clip(base + rng.integers(-1, 2, base.shape), 1, 5)
    vals[:, METRICS.index("Depth")] = np.nan
    vals[:2, METRICS.index("Depth")] = [3, 4]  # Depth: only 2 paired values
    rows = sheet_rows(cids[:10], vals[:10], "r1") + sheet_rows(["ghost-1"], vals[:1], "r1")
    sheet = write_sheet(tmp_path / "j.csv", rows)
    problems = Problems()
    res = compute([sheet], [tmp_path / "runs" / "r1"], n_boot=50, problems=problems)
    text = lines_of(problems)
    assert f"{sheet}:12: column 'conversation_id': ghost-1 has no LLM score; left out" in text
    assert "2 of 12 LLM-scored conversations have no human rating" in text
    assert "Depth: fewer than 3 paired values (n=2); correlations left out" in text
    g = res.groups[0]
    assert g.correlations["Depth"].n == 2 and math.isnan(g.correlations["Depth"].coefs["pearson"].value)
    assert g.correlations["Clarity"].n == 10 and math.isfinite(g.correlations["Clarity"].coefs["pearson"].value)
    assert res.computed


def test_constant_metric_is_reported_not_fatal(tmp_path):
    cids, base, rng = _judges_and_run(tmp_path)
    vals = base.copy()
    vals[:, 0] = 3
    sheet = write_sheet(tmp_path / "j.csv", sheet_rows(cids, vals, "r1"))
    problems = Problems()
    res = compute([sheet], [tmp_path / "runs" / "r1"], n_boot=50, problems=problems)
    assert "Clarity: human scores are constant (all 3); correlation undefined; correlations left out" in lines_of(
        problems
    )
    assert res.groups[0].correlations["Truthfulness"].coefs["pearson"].value == pytest.approx(1.0)


def test_read_table_errors_are_input_errors(tmp_path):
    p = tmp_path / "bin.csv"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(AlignInputError, match="not UTF-8"):
        read_human_file(p, Problems())


def test_judge_coverage_and_spreadsheet_hint(tmp_path):
    cids, base, rng = _judges_and_run(tmp_path)
    a = write_sheet(tmp_path / "a.csv", sheet_rows(cids, base, "r1"))
    b = write_sheet(tmp_path / "b.csv", sheet_rows(cids[:9], base[:9], "r1"))
    x = tmp_path / "c.xlsx"
    x.write_bytes(b"PK\x03\x04")
    problems = Problems()
    res = compute([a, b, x], [tmp_path / "runs" / "r1"], n_boot=0, problems=problems)
    text = lines_of(problems)
    assert f"{b}: judge 'b' has no row for 3 of the 12 conversations the other judges rated; counted as blank" in text
    assert f"{x}: spreadsheet files are not read; save the sheet as CSV" in text
    assert res.groups[0].agreement["Clarity"].n_units == 9


def test_problem_lines_are_single_lines_and_duplicate_llm_sources(tmp_path):
    p = tmp_path / "j.csv"
    p.write_text('conversation_id,clarity\nc1,"4\nor 5"\n')
    problems = Problems()
    read_human_file(p, problems)
    [line] = [x.message for x in problems if x.kind == "bad value"]
    assert all("\n" not in x for x in problems.lines())
    assert "\n" not in line and line.startswith(f"{p}:2: column 'clarity': '4\\nor 5' is not a number")
    make_run(tmp_path / "runs", "r1", ["t1"])
    problems = Problems()
    llm = read_llm_scores([tmp_path / "runs" / "r1", tmp_path / "runs" / "r1" / "scores.jsonl"], problems)
    assert len(llm.rows) == 1
    assert "conversation_id r1-t1 already scored at" in lines_of(problems)


def test_rubric_file_is_validated_by_the_evaluate_loader(tmp_path):
    from wikihowagent.alignment.export import export_sheet
    from wikihowagent.config import resource_path

    make_run(tmp_path / "runs", "r1", ["t1", "t2"])
    run = tmp_path / "runs" / "r1"
    # a missing or invalid rubric file: one error line, nothing written
    with pytest.raises(AlignInputError, match=r"nope.json: rubric file not found$"):
        export_sheet([run], tmp_path / "s.csv", Problems(), n=1, rubrics_path=tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"Clarity": {"role": "robot", "reference": "no", "question": "q?", "rubric": {k: "x" for k in "54321"}}}
        )
    )
    with pytest.raises(AlignInputError, match="rubric 'Clarity': role must be one of") as err:
        export_sheet([run], tmp_path / "s.csv", Problems(), n=1, rubrics_path=bad)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "s.html").exists()
    # a valid file with only some of the 8 rubrics (plus a custom one): the others are listed by name only
    full = json.loads(resource_path("data", "rubrics.json").read_text(encoding="utf-8"))
    part = tmp_path / "part.json"
    part.write_text(json.dumps({"Clarity": full["Clarity"], "Helpfulness": full["Depth"]}))
    problems = Problems()
    sel, sheet, page = export_sheet([run], tmp_path / "s.csv", problems, n=1, rubrics_path=part)
    assert f"{part}: no rubric for Truthfulness, Engagement, Coherence, Depth" in lines_of(problems)
    text = page.read_text()
    assert html.escape(full["Clarity"]["question"]) in text and "Naturalness" in text
    assert html.escape(full["Depth"]["question"]) not in text and "Helpfulness" not in text


def test_empty_id_and_empty_annotator_in_both_layouts(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text("annotator,conversation_id,clarity\nA,c1,4\n,c2,3\nB,,5\nB,c2,2\n")
    long = tmp_path / "long.csv"
    long.write_text(
        "annotator,conversation_id,metric,score\nA,c1,clarity,4\n,c2,clarity,3\nB,,clarity,5\nB,c2,clarity,2\n"
    )
    for path in (wide, long):
        problems = Problems()
        judges = read_human_file(path, problems)
        assert [(j.judge, list(j.scores)) for j in judges] == [("A", ["c1"]), ("B", ["c2"])]
        text = lines_of(problems)
        assert f"{path}:3: column 'annotator': empty annotator; row left out" in text
        assert f"{path}:4: column 'conversation_id': empty conversation_id; row left out" in text
        assert problems.counts()["missing id"] == 2


def _score_line(cid: str, run: str, metrics: dict) -> str:
    return json.dumps({"conversation_id": cid, "run": run, "metrics": metrics}) + "\n"


def test_discover_runs_finds_paper_compat_and_rescored_scores(tmp_path):
    from wikihowagent.alignment.export import select
    from wikihowagent.alignment.sources import resolve_score_paths, scores_file
    from wikihowagent.runs import evaluated_runs

    runs = tmp_path / "runs"
    make_run(runs, "r-default", ["t1"], {"t1": {m: 4.0 for m in METRICS}})
    # `evaluate --compat paper` only: scores-paper.jsonl
    make_run(runs, "r-paper", ["t2"], {"t2": {m: 3.0 for m in METRICS}})
    (runs / "r-paper" / "scores.jsonl").rename(runs / "r-paper" / "scores-paper.jsonl")
    # evaluated both ways: scores.jsonl is preferred
    make_run(runs, "r-both", ["t3"], {"t3": {m: 5.0 for m in METRICS}})
    (runs / "r-both" / "scores-paper.jsonl").write_text(_score_line("r-both-t3", "r-both", {m: 1.0 for m in METRICS}))
    # a re-scored paper run file: runs/rescored/<stem>/scores*.jsonl (no run.json, no conversations.jsonl)
    for stem, name in (("T-qwen_L-qwen_E-gpt_1", "scores.jsonl"), ("T-gemma_L-gemma_E-gpt_", "scores-paper.jsonl")):
        (runs / "rescored" / stem).mkdir(parents=True)
        (runs / "rescored" / stem / name).write_text(_score_line(f"{stem}-c", "", {m: 2.0 for m in METRICS}))
    # not runs: our own outputs, a directory without scores, a scores file deeper down
    (runs / "alignment").mkdir()
    (runs / "alignment" / "scores.jsonl").write_text("")
    (runs / "summary").mkdir()
    (runs / "not-evaluated").mkdir()
    (runs / "not-evaluated" / "conversations.jsonl").write_text("")
    (runs / "r-default" / "shards" / "0-of-2").mkdir(parents=True)
    (runs / "r-default" / "shards" / "0-of-2" / "scores.jsonl").write_text("")

    found = evaluated_runs(runs)
    assert [p.relative_to(runs).as_posix() for p in found] == [
        "r-both",
        "r-default",
        "r-paper",
        "rescored/T-gemma_L-gemma_E-gpt_",
        "rescored/T-qwen_L-qwen_E-gpt_1",
    ]
    assert scores_file(runs / "r-both").name == "scores.jsonl"
    assert scores_file(runs / "r-paper").name == "scores-paper.jsonl"
    assert [p.name for p in resolve_score_paths([runs / "r-paper"])] == ["scores-paper.jsonl"]
    assert evaluated_runs(runs / "rescored") == found[3:]  # the rescored folder is a directory of runs too

    problems = Problems()
    llm = read_llm_scores([runs], problems)
    assert set(llm.rows) == {
        "r-default-t1",
        "r-paper-t2",
        "r-both-t3",
        "T-qwen_L-qwen_E-gpt_1-c",
        "T-gemma_L-gemma_E-gpt_-c",
    }
    assert llm.rows["r-both-t3"].values[0] == 5.0  # from scores.jsonl, not scores-paper.jsonl
    assert llm.rows["r-paper-t2"].run == "r-paper"
    row = llm.rows["T-qwen_L-qwen_E-gpt_1-c"]
    assert row.run == "T-qwen_L-qwen_E-gpt_1" and row.model == "qwen"  # run named after the rescored folder
    assert not [p for p in problems if p.kind == "duplicate id"]

    # `annotate export` selects from the same runs (rescored ones have no conversation text)
    problems = Problems()
    sel = select([runs], problems, n=10)
    assert len(sel.conversations) == 5 and "T-gemma_L-gemma_E-gpt_" in sel.runs
    assert "no conversations.jsonl" in lines_of(problems)

    # without --scores, `align` finds them under the runs dir as well
    sheet = write_sheet(
        tmp_path / "j.csv", sheet_rows(["r-paper-t2", "T-qwen_L-qwen_E-gpt_1-c", "r-both-t3"], np.full((3, 8), 3.0))
    )
    res = compute([sheet], [], n_boot=0, problems=Problems(), runs_dir=runs)
    assert res.matched.all()


def test_paper_run_name_pattern_allows_an_empty_job(tmp_path):
    from wikihowagent.alignment.sources import model_label
    from wikihowagent.paper_format import PAPER_RUN_RE
    from wikihowagent.scores.inputs import resolve_inputs

    # evaluate and align read the run-file name through the same pattern (wikihowagent.paper_format)
    paper = tmp_path / "T-qwen_L-gemma_E-gpt_.json"
    paper.write_text(json.dumps({"total_conversations": []}))
    src = resolve_inputs([paper], tmp_path)[0]
    assert (src.teacher, src.learner, src.evaluator) == ("qwen", "gemma", "gpt")
    m = PAPER_RUN_RE.match("T-qwen_L-gemma_E-gpt_")
    assert (m["teacher"], m["learner"], m["evaluator"], m["job"]) == ("qwen", "gemma", "gpt", "")
    m = PAPER_RUN_RE.match("T-a-1_L-b_E-gpt-4o_12345")
    assert (m["teacher"], m["learner"], m["evaluator"], m["job"]) == ("a-1", "b", "gpt-4o", "12345")
    assert model_label(run="T-qwen_L-gemma_E-gpt_") == "qwen / gemma"


def test_a_custom_rubric_is_compared_as_a_metric_and_only_one_without_numbers_is_ignored(tmp_path):
    runs = tmp_path / "runs"
    extra = {
        "Helpfulness": 4.0,
        "politeness": None,
        "BLEU": 0.3,
        "Question Ratio": 0.5,
        "ROUGE-L": 0.2,
        "Embedding Cosine": 0.9,
        "clarity": 4.0,
        "two\nlines": None,
    }
    make_run(runs, "r1", ["t1", "t2"], {t: {**{m: 3.0 for m in METRICS[1:]}, **extra} for t in ("t1", "t2")})
    make_run(runs, "r2", ["t1"], {"t1": {**{m: 3.0 for m in METRICS}, "politeness": None}})
    make_run(runs, "r3", ["t1"], {"t1": {**{m: 3.0 for m in METRICS}, "Helpfulness": 2.0}})
    problems = Problems()
    llm = read_llm_scores([runs], problems)
    assert llm.rows["r1-t1"].values[0] == 4.0  # "clarity" is Clarity in another case, not a custom rubric
    assert llm.rows["r1-t1"].metrics["Helpfulness"] == 4.0  # compared with people in metric_alignment.md
    [line] = [p.message for p in problems if p.kind == "ignored metric"]
    assert line.startswith("2 score files: rubric(s) other than the 8 paper rubrics, with no number")
    assert line.endswith(": politeness, two lines")  # one line, whatever the names hold
    assert "Helpfulness" not in line and "BLEU" not in line.split("ignored")[1] and "Question Ratio" not in line
    assert sorted(llm.ignored_metrics) == ["politeness", "two\nlines"]
    problems = Problems()
    read_llm_scores([runs / "r3"], problems)
    assert not [p for p in problems if p.kind == "ignored metric"]
    problems = Problems()
    read_llm_scores([runs / "r2"], problems)
    assert [p.message for p in problems if p.kind == "ignored metric"][0].startswith(
        f"{runs / 'r2' / 'scores.jsonl'}: rubric(s) other"
    )


def test_partial_score_file_is_one_line_per_human_file(tmp_path):
    """A judge run in progress (12 of 42 rated conversations scored): one warning line per
    human file with the count and the first id, every unmatched id in problems.txt."""
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    cids, base, rng = _judges_and_run(tmp_path)
    ghosts = [f"ghost-{i}" for i in range(30)]
    vals = np.clip(np.vstack([base, np.tile(base[:1], (30, 1))]) + rng.integers(-1, 2, (42, 8)), 1, 5)
    a = write_sheet(tmp_path / "a.csv", sheet_rows(cids + ghosts, vals, "r1"))
    b = write_sheet(tmp_path / "b.csv", sheet_rows(cids + ghosts, np.clip(vals + 1, 1, 5), "r1"))
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        [
            "align",
            "-H",
            str(a),
            "-H",
            str(b),
            "--scores",
            str(tmp_path / "runs" / "r1"),
            "--out",
            str(out),
            "--bootstrap",
            "0",
            "--no-figures",
        ],
    )
    assert res.exit_code == 0, res.output
    warnings_ = [ln for ln in res.output.splitlines() if ln.startswith("warning:")]
    unmatched = [ln for ln in warnings_ if "no LLM score" in ln]
    assert unmatched == [
        f"warning: {a}: 30 rated conversations have no LLM score (the first: ghost-0); left out "
        "(each one is in problems.txt)"
    ], warnings_
    listed = (out / "problems.txt").read_text().splitlines()
    assert sum("has no LLM score; left out" in ln for ln in listed) == 30
    assert f"{a}:14: column 'conversation_id': ghost-0 has no LLM score; left out" in listed


def test_a_score_directory_without_scores_loses_only_itself(tmp_path):
    """A --scores run directory not yet evaluated (a judge loop that has not reached that model) is reported in one
    line and skipped: the other --scores paths are still read (it used to drop every score of every path, and then
    blame the good run for 'no usable LLM score in it')."""
    from wikihowagent.alignment.judges import judge_files
    from wikihowagent.alignment.named import unused_inputs

    make_run(tmp_path / "runs", "good", ["t1", "t2"])
    pending = tmp_path / "runs" / "pending"
    pending.mkdir()
    problems = Problems()
    llm = read_llm_scores([tmp_path / "runs" / "good", pending], problems)
    assert set(llm.rows) == {"good-t1", "good-t2"}
    unusable = [p.message for p in problems if p.kind == "unusable file"]
    assert unusable == [f"{pending}: no scores.jsonl or scores-paper.jsonl in it (nor in any run directory inside)"]
    lines = unused_inputs([], [tmp_path / "runs" / "good", pending], [], llm, problems)
    assert lines == unusable  # only the empty directory is named as contributing nothing
    from wikihowagent.layout import JUDGES_DIR

    member = tmp_path / "runs" / "good" / JUDGES_DIR / "judge-a" / "scores.jsonl"
    member.parent.mkdir(parents=True)
    member.write_text("")
    assert judge_files([tmp_path / "runs" / "good", pending]) == {"judge-a": [member]}  # a panel's members too


def test_align_checks_its_options_in_core_before_any_work(tmp_path):
    """The command's usage checks live in alignment.core (the command only turns them into exit 2)."""
    from wikihowagent.alignment.core import AlignUsageError, check_options, check_out_dir

    with pytest.raises(AlignUsageError, match="must be one of: run, model, domain, persona") as err:
        check_options("nope", "isotonic")
    assert err.value.option == "--by"
    with pytest.raises(AlignUsageError) as err:
        check_options(None, "linear")
    assert err.value.option == "--calibration-method" and str(err.value) == "must be one of: isotonic, ridge"
    check_options("model", "ridge")
    (tmp_path / "file").write_text("x")
    with pytest.raises(AlignUsageError, match="exists and is not a directory"):
        check_out_dir(tmp_path / "file")
    (tmp_path / "out").mkdir()
    check_out_dir(tmp_path / "out")
    (tmp_path / "out" / "mine.txt").write_text("x")
    with pytest.raises(AlignUsageError) as err:
        check_out_dir(tmp_path / "out")
    assert err.value.option == "" and "holds files align did not write (mine.txt)" in str(err.value)


def test_unrated_conversations_keep_their_rubric_scores_not_their_metrics(tmp_path, monkeypatch):
    """At the paper's scale align reads 114,296 score lines for 70 rated conversations: the others' rows keep
    what every row is read for (rubric scores, run, judge) and drop their metrics, and nothing align computes
    changes (here with the PPI, which uses the unrated rows' scores)."""
    from wikihowagent.alignment import core, estimates

    rng = np.random.default_rng(3)
    tuts = [f"t{i}" for i in range(40)]
    scores = {
        t: {**{m: float(rng.integers(1, 6)) for m in METRICS}, "BLEU": rng.random(), "METEOR": rng.random()}
        for t in tuts
    }
    ids = make_run(tmp_path / "runs", "r1", tuts, scores, rng=rng)
    rated = [ids[t] for t in tuts[:16]]
    base = np.stack([[scores[t][m] for m in METRICS] for t in tuts[:16]])
    sheet = write_sheet(
        tmp_path / "j.csv", sheet_rows(rated, np.clip(base + rng.integers(-1, 2, base.shape), 1, 5), "r1")
    )

    def outcome():
        res = compute([sheet], [tmp_path / "runs" / "r1"], n_boot=50, problems=Problems())
        ppi = estimates.ppi_estimates(res, "model", Problems())
        return res, (repr(res.groups), repr(res.metric_alignment), repr(ppi))

    res, slim = outcome()
    unrated = res.llm.rows[ids["t30"]]
    assert unrated.metrics == {} and list(unrated.values) == [scores["t30"][m] for m in METRICS]
    assert unrated.run == "r1" and unrated.judge == "judge"
    assert res.llm.rows[rated[0]].metrics == {"BLEU": scores["t0"]["BLEU"], "METEOR": scores["t0"]["METEOR"]}
    every = core.read_llm_scores
    monkeypatch.setattr(core, "read_llm_scores", lambda paths, problems, keep=None: every(paths, problems))
    assert outcome()[1] == slim  # every row whole: the same results
