"""Golden outputs (the safety net of refactors): `evaluate`, `compare`, `judge-check`, `align` and `report` on fixed
inputs (fake OpenAI-compatible servers, synthetic runs, the paper's human study when ../shared is present) write
exactly what tests/fixtures/golden/digest.json says, numbers to 1e-12. A deliberate output change: re-record with
`.venv/bin/python tests/golden.py record tests/fixtures/golden` and say why in the commit."""

from __future__ import annotations

import json
from pathlib import Path

import golden as bg
import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "digest.json"


def test_outputs_equal_the_recorded_digest(tmp_path):
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    actual = json.loads(json.dumps(bg.run_all(tmp_path, log=lambda *a: None)))
    if actual["skipped"]:
        print(f"skipped (no ../shared/human-study here): {', '.join(actual['skipped'])}")
    assert set(expected["scenarios"]) >= set(actual["scenarios"]), "scenarios not recorded: record the digest again"
    diffs = bg.compare_digests(expected, actual)
    assert not diffs, (
        f"{len(diffs)} output difference(s) from {GOLDEN.relative_to(GOLDEN.parents[3])}:\n"
        + "\n".join(diffs[:60])
        + ("\n..." if len(diffs) > 60 else "")
    )


def test_every_scenario_is_recorded_with_the_paper_study():
    """The committed digest holds every scenario (recorded where ../shared/human-study exists)."""
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert set(expected["scenarios"]) == set(bg.SCENARIOS) and expected["skipped"] == []
    for name, files in expected["scenarios"].items():
        assert any(k.startswith("out/") for k in files), name


# ------------------------------------------------------------------------------ the digest machinery itself


def _norm(tmp_path):
    return bg.Normaliser({"work": tmp_path, "repo": bg.REPO})


def test_numbers_compare_to_1e_12_and_every_difference_is_named(tmp_path):
    a = {"out/x.csv": {"kind": "csv", "rows": [["rubric", "r"], ["Clarity", 0.5], ["Depth", 1.0]]}}
    close = {"out/x.csv": {"kind": "csv", "rows": [["rubric", "r"], ["Clarity", 0.5 + 1e-14], ["Depth", 1.0]]}}
    far = {"out/x.csv": {"kind": "csv", "rows": [["rubric", "r"], ["Clarity", 0.5 + 1e-9], ["Depth", "n/a"]]}}
    wrap = lambda s: {"format": bg.FORMAT, "scenarios": {"s": s}, "skipped": []}  # noqa: E731
    assert bg.compare_digests(wrap(a), wrap(close)) == []
    diffs = bg.compare_digests(wrap(a), wrap(far))
    assert diffs == [
        's/out/x.csv: row 1 ("Clarity"), column r: expected 0.5, got 0.500000001',
        's/out/x.csv: row 2 ("Depth"), column r: expected 1.0, got "n/a"',
    ]
    gone = bg.compare_digests(wrap(a), wrap({}))
    assert gone == [
        's/out/x.csv: missing (expected {"kind": "csv", "rows": [["rubric", "r"], ["Clarity", 0.5], ["Depth", 1.0]]})'
    ]
    assert bg.compare_digests(wrap({"f": [1.0, 2.0]}), wrap({"f": [1.0]}))[0] == "s/f: 2 entries expected, got 1"
    page = {"out/i.html": {"kind": "html", "text": ["Table 1", "| Run | n |", "| Clarity | 3.20 |", "| Depth | 4 |"]}}
    moved = {"out/i.html": {"kind": "html", "text": ["Table 1", "| Run | n |", "| Clarity | 3.25 |", "| Depth | 4 |"]}}
    diffs = bg.compare_digests(wrap(page), wrap(moved))
    assert len(diffs) == 1 and diffs[0].startswith("s/out/i.html/text: differs:")
    assert "-| Clarity | 3.20 |" in diffs[0] and "+| Clarity | 3.25 |" in diffs[0]
    assert "Table 1" not in diffs[0]  # one line of context, not the whole page
    nan = float("nan")
    assert bg.compare_digests(wrap({"f": [nan]}), wrap({"f": [nan]})) == []
    assert bg.compare_digests(wrap({"f": [nan]}), wrap({"f": [0.0]})) != []


def test_run_varying_values_are_normalised_and_the_rest_kept(tmp_path):
    n = _norm(tmp_path)
    (tmp_path / "s.jsonl").write_text(
        json.dumps(
            {
                "latency_s": 0.31,
                "started_at": "2026-12-04T21:00:00Z",
                "score": 3.25,
                "where": f"{tmp_path}/r/conversations.jsonl",
                "url": "http://127.0.0.1:40123/v1",
            }
        )
        + "\n"
        + json.dumps({"score": 1})
        + "\n"
    )
    d = bg.digest_file(tmp_path / "s.jsonl", n)
    assert d["lines"] == [
        {
            "latency_s": "<volatile>",
            "score": 3.25,
            "started_at": "<volatile>",
            "url": "http://127.0.0.1:<port>/v1",
            "where": "<work>/r/conversations.jsonl",
        },
        {"score": 1},
    ]
    (tmp_path / "t.csv").write_text("a,b\nx,2.50\n1e-3,2026-01-02 03:04:05\n")
    assert bg.digest_file(tmp_path / "t.csv", n)["rows"] == [["a", "b"], ["x", 2.5], [0.001, "<time>"]]
    (tmp_path / "p.html").write_text(
        "<html><head><style>td{}</style><script>var t=Date.now()</script></head>"
        "<body><h1>Table 1</h1><table><tr><th>run</th><td>0.42</td></tr></table>"
        "</body></html>"
    )
    assert bg.digest_file(tmp_path / "p.html", n)["text"] == ["Table 1", "| run | 0.42 |"]
    long = "word " * 100
    assert bg.Normaliser({}).value(long).startswith("<500 chars, sha256 ")  # over LONG: digested
    assert bg.Normaliser({}).value(long) != bg.Normaliser({}).value(long + "!")


def test_a_scenario_skipped_for_want_of_the_paper_study_is_not_compared_but_a_lost_one_fails():
    rec = {"format": bg.FORMAT, "scenarios": {"align": {"f": [1]}, "paper_align": {"f": [1]}}, "skipped": []}
    ci = {"format": bg.FORMAT, "scenarios": {"align": {"f": [1]}}, "skipped": ["paper_align"]}
    assert bg.compare_digests(rec, ci) == []
    assert bg.compare_digests(rec, ci | {"skipped": []}) == ["paper_align: scenario missing from this run"]
    assert bg.compare_digests(rec, ci | {"format": bg.FORMAT + 1})[0].startswith("digest format")


def test_report_data_files_are_compared_as_the_json_they_carry(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "conv-0001.js").write_text('reportChunk(1, {"a": [1, 2.5]});\n')
    d = bg.digest_file(tmp_path / "data" / "conv-0001.js", _norm(tmp_path))
    assert d == {"kind": "js-data", "value": {"prefix": "reportChunk(1,", "suffix": ");", "value": {"a": [1, 2.5]}}}


@pytest.mark.parametrize("name", ["paper_align"])
def test_a_changed_output_fails_the_check_with_its_location(tmp_path, name):
    """The harness is not vacuous: one changed number in a real output is reported where it is."""
    if bg.shared_dir() is None:
        pytest.skip("the paper's human study (../shared/human-study) is not beside the clone")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    actual = json.loads(json.dumps(bg.run_all(tmp_path, only=[name], log=lambda *a: None)))
    expected["scenarios"] = {name: expected["scenarios"][name]}
    assert bg.compare_digests(expected, actual) == []
    rows = actual["scenarios"][name]["out/paper_judges/correlations.csv"]["rows"]
    col = next(i for i, v in enumerate(rows[1]) if isinstance(v, float) and v == v)
    rows[1][col] += 1e-6
    diffs = bg.compare_digests(expected, actual)
    where = f"{name}/out/paper_judges/correlations.csv: row 1 ({json.dumps(rows[1][0])}), column {rows[0][col]}"
    assert len(diffs) == 1 and diffs[0].startswith(f"{where}: expected "), diffs
