"""`align` never drops a file the user named silently; CSV encodings and decimal commas."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import SHEET, make_run, sheet_rows, write_sheet  # noqa: E402

from wikihowagent.alignment.problems import Problems  # noqa: E402
from wikihowagent.alignment.sources import read_llm_scores  # noqa: E402
from wikihowagent.cli import app  # noqa: E402

runner = CliRunner()


@pytest.fixture
def study(tmp_path):
    """One run of 40 conversations (few enough pairs make scipy's Wilcoxon test exact and slow) and two judges' sheets (UTF-8) that agree with it."""
    rng = np.random.default_rng(7)
    runs = tmp_path / "runs"
    make_run(runs, "r", [f"t{i:02d}" for i in range(40)], teacher="m", learner="m", rng=rng)
    llm = read_llm_scores([runs], Problems())
    cids = list(llm.rows)
    base = np.stack([llm.rows[c].values for c in cids])
    sheets = []
    for k in (1, 2):
        vals = np.clip(base + rng.integers(-1, 2, base.shape), 1, 5).astype(float)
        rows = [r | {"filename": "r", "title": "Crème brûlée, à la française"} for r in sheet_rows(cids, vals)]
        sheets.append(write_sheet(tmp_path / f"judge{k}.csv", rows))
    return tmp_path, runs, sheets


def align(*args):
    return runner.invoke(app, ["align", *map(str, args), "--bootstrap", "0", "--no-figures"])


def reencode(path: Path, encoding: str, delimiter: str = ",", decimal_comma: bool = False) -> Path:
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter)
    for r in rows:
        w.writerow([c.replace(".", ",") if decimal_comma and c.replace(".", "").isdigit() else c for c in r])
    out = path.with_name(path.stem + f"_{encoding}.csv")
    out.write_bytes(buf.getvalue().encode(encoding))
    return out


def test_a_cp1252_judge_sheet_is_read_and_reported(study):
    tmp, runs, (h1, h2) = study
    legacy = reencode(h2, "cp1252")
    with pytest.raises(UnicodeDecodeError):
        legacy.read_text(encoding="utf-8")
    res = align("-H", h1, "-H", legacy, "--scores", runs, "--out", tmp / "out")
    assert res.exit_code == 0, res.output
    problems = (tmp / "out" / "problems.txt").read_text()
    assert f"{legacy}: not UTF-8; read as cp1252" in problems
    agreement = (tmp / "out" / "agreement_pairs.csv").read_text()
    assert legacy.stem in agreement  # the second judge counts


def test_utf16_and_bom_sheets_are_read(study):
    tmp, runs, (h1, h2) = study
    bom = h1.with_name("bom.csv")
    bom.write_bytes(b"\xef\xbb\xbf" + h1.read_bytes())
    utf16 = reencode(h2, "utf-16", delimiter="\t")
    res = align("-H", bom, "-H", utf16, "--scores", runs, "--out", tmp / "out")
    assert res.exit_code == 0, res.output
    assert utf16.stem in (tmp / "out" / "agreement_pairs.csv").read_text()


def test_decimal_commas_in_a_semicolon_file(study):
    tmp, runs, (h1, h2) = study
    rows = list(csv.DictReader(h2.open()))
    rows[0]["clarity"] = "3.5"
    write_sheet(h2, rows)
    german = reencode(h2, "utf-8", delimiter=";", decimal_comma=True)
    assert ";3,5;" in german.read_text()
    res = align("-H", h1, "-H", german, "--scores", runs, "--out", tmp / "out")
    assert res.exit_code == 0, res.output
    assert "not a number" not in res.output
    paired = list(csv.DictReader((tmp / "out" / "paired_scores.csv").open()))
    assert any(p["human_Clarity"] and float(p["human_Clarity"]) % 1 == 0.25 for p in paired)  # (x + 3.5) / 2


@pytest.mark.parametrize(
    "content",
    [b"", ",".join(SHEET).encode() + b"\n", b"\x00\x01binary\x00"],
    ids=["empty", "header-only", "unreadable"],
)
def test_a_named_judge_file_that_contributes_nothing_is_an_error(study, content):
    tmp, runs, (h1, h2) = study
    bad = tmp / "bad.csv"
    bad.write_bytes(content)
    res = align("-H", h1, "-H", h2, "-H", bad, "--scores", runs, "--out", tmp / "out")
    assert res.exit_code == 1, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {bad}: "), res.stderr
    assert (tmp / "out" / "agreement.csv").exists()  # what the other files allow is still written


def test_the_only_scores_file_unreadable_is_an_error(study):
    tmp, runs, (h1, h2) = study
    bad = tmp / "scores.jsonl"
    bad.write_text("{not json\n")
    res = align("-H", h1, "-H", h2, "--scores", bad, "--out", tmp / "out")
    assert res.exit_code == 1, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{bad}: no usable LLM score or metric in it" in errors[0], res.stderr


def test_other_legacy_encodings_are_detected(tmp_path):
    from wikihowagent.alignment.csv_dialect import decode_table

    text = "conversation_id,comment\nc1,Ѓ ђ Привет, это тест на кодировку файла\n"
    data = text.encode("cp1251")
    with pytest.raises(UnicodeDecodeError):
        data.decode("cp1252")  # 0x81 / 0x90 are undefined in cp1252: the detector is asked
    decoded, encoding = decode_table(data, tmp_path / "x.csv")
    assert encoding and encoding != "utf_8" and decoded.startswith("conversation_id,comment\n")
