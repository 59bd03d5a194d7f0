"""The record contract: typed readers and writers in runs.py, the paper-format adapter, legacy score files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikihowagent import jsonlio, layout, runs
from wikihowagent.paper_format import parse_run_stem, to_conversation
from wikihowagent.records import BEGIN_TEXT, FINISH_TEXT, Conversation, ConversationRecord, JudgeProvenance, ScoreRecord

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"


def test_legacy_score_lines_read_into_the_judge_provenance(tmp_path):
    path = tmp_path / layout.SCORES
    legacy = {
        "conversation_id": "c1",
        "evaluator": "ollama:llama3",
        "metrics": {"BLEU": 0.1, "Depth": None},
        "judge_raw": {"conversation": ["Depth: ?"]},
        "judge_failures": ["Depth"],
        "notes": ["BERTScore: teacher text chunked (2 chunks)", "judge: Depth: no score found after 3 replies"],
    }
    new = ScoreRecord(
        conversation_id="c2",
        metrics={"Clarity": 4.0},
        judge=JudgeProvenance(evaluator="local", rubrics_sha256="ab", raw={"conversation": ["4"]}),
    )
    path.write_text(json.dumps(legacy) + "\n" + new.model_dump_json() + "\n")
    got = runs.read_scores(path)
    old = got["c1"]
    assert old.judge == JudgeProvenance(
        evaluator="ollama:llama3",
        raw={"conversation": ["Depth: ?"]},
        failures=["Depth"],
        notes=["Depth: no score found after 3 replies"],
    )
    assert old.notes == ["BERTScore: teacher text chunked (2 chunks)"]  # no "judge:" prefix left in notes
    assert old.evaluator == "ollama:llama3" and old.judge_failures == ["Depth"]
    assert got["c2"] == new
    written = json.loads(old.model_dump_json())
    assert "evaluator" not in written and "judge_raw" not in written and written["judge"]["failures"] == ["Depth"]
    # never judged (a --no-judge pass): no provenance
    assert ScoreRecord(conversation_id="x", metrics={"BLEU": 0.2}, notes=["a note"]).judge is None


def test_read_scores_reports_lines_that_are_not_score_records(tmp_path):
    path = tmp_path / layout.SCORES
    path.write_text(
        '{"conversation_id": "a", "metrics": {"BLEU": 0.5}}\n{"metrics": {}}\n'
        '{"conversation_id": "b", "metrics": {"BLEU": "high"}}\n{"conversation_id": "a", "metrics": {"BLEU": 0.7}}\n'
    )
    problems: list[str] = []
    got = runs.read_scores(path, on_error=problems.append)
    assert list(got) == ["a"] and got["a"].metrics["BLEU"] == 0.7  # the last line per id wins
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:2", f"{path}:3"]


def test_run_info_round_trip_keeps_unknown_keys(tmp_path):
    info = runs.RunInfo(name="r", teacher="local", learner="local", fingerprint={"teacher": "local"})
    runs.write_run_info(tmp_path, info)
    data = json.loads((tmp_path / layout.RUN_INFO).read_text())
    assert "resumed_at" not in data and "shards" not in data  # only written when they happen
    data["sweep"] = {"point": 3}  # a key a later version (or another tool) adds
    (tmp_path / layout.RUN_INFO).write_text(json.dumps(data))
    back = runs.read_run_info(tmp_path)
    assert back.name == "r" and back.model_extra == {"sweep": {"point": 3}}
    runs.write_run_info(tmp_path, back)
    assert json.loads((tmp_path / layout.RUN_INFO).read_text())["sweep"] == {"point": 3}
    (tmp_path / layout.RUN_INFO).write_text('{"name": ["not", "a", "string"]}')
    with pytest.raises(jsonlio.RunError, match=r"run\.json: field 'name'"):
        runs.read_run_info(tmp_path)


def test_paper_records_become_the_same_conversation_type():
    paper = list(runs.read_conversations(FIX / "T-llama3_L-llama3_E-llama3_123.json", "p"))
    ours = list(runs.read_conversations(FIX / "run_small", "r", on_error=lambda _m: None))  # it has bad lines
    assert all(type(c) is Conversation for c in paper + ours)
    assert all(isinstance(c, ConversationRecord) for c in paper + ours)
    p1 = paper[0]
    assert p1.paper_format and p1.completed is None and p1.where.endswith("total_conversations[0]")
    assert p1.messages[0].kind == "begin" and p1.lines[0].startswith("Teacher: ")
    assert p1.tutorial_key == f"{p1.title}|{p1.doc_id}|{p1.method_id}"
    assert not ours[0].paper_format and ours[0].completed is not None
    # run/where/paper_format are how it was read, not part of the record
    assert set(json.loads(p1.model_dump_json())) == set(ConversationRecord.model_fields)


def test_fixed_texts_are_recognised_from_the_one_definition():
    obj = {
        "conversation_id": "a",
        "tutorial": {"title": "Boil", "steps": ["s"]},
        "conversation": [
            "Teacher: " + BEGIN_TEXT.format(method_title="Boil an egg"),
            "Learner: ok",
            "Teacher: " + FINISH_TEXT,
        ],
    }
    kinds = [t.kind for t in to_conversation(obj, "r", "w").turns]
    assert kinds == ["begin", "model", "finish"]


def test_shipped_prompt_file_uses_the_fixed_texts_of_the_records():
    from wikihowagent.workflow.prompts import load_prompts

    prompts = load_prompts(None)
    assert (prompts.begin, prompts.finish) == (BEGIN_TEXT, FINISH_TEXT)


def test_paper_run_stem():
    assert parse_run_stem("T-qwen_L-gemma_E-gpt_12") == {
        "teacher": "qwen",
        "learner": "gemma",
        "evaluator": "gpt",
        "job": "12",
    }
    assert parse_run_stem("my-run") is None


# ---------------------------------------------------------------------------- the bounded JSON reader (jsonlio)

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from('[]{}"\\'), max_size=20)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=12,
)


def _depth(v: object) -> int:
    if isinstance(v, dict):
        return 1 + max(map(_depth, v.values()), default=0)
    if isinstance(v, list):
        return 1 + max(map(_depth, v), default=0)
    return 0


def _nest(v: object, kinds: list[bool]) -> object:
    for as_list in kinds:
        v = [v] if as_list else {"k": v}
    return v


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, st.lists(st.booleans(), max_size=1500))
def test_the_json_reader_reads_what_json_does_up_to_its_depth_and_refuses_the_rest(value, kinds):
    nested = _nest(value, kinds)
    text = "".join(json.JSONEncoder(check_circular=False).iterencode(nested))  # json.dumps recurses
    if _depth(value) + len(kinds) <= jsonlio.MAX_DEPTH:
        assert jsonlio.parse_json(text) == nested
        assert jsonlio.parse_json(text.encode("utf-8")) == nested
    else:
        with pytest.raises(jsonlio.JsonBoundError, match=f"nested more than {jsonlio.MAX_DEPTH} levels deep"):
            jsonlio.parse_json(text)


@given(st.integers(min_value=1, max_value=6000), st.sampled_from(["{n}", "-{n}", "0.{n}", "{n}e5", "1e-{n}"]))
def test_the_json_reader_refuses_an_integer_longer_than_its_bound_and_reads_any_float(digits, form):
    literal = form.format(n="7" * digits)
    text = f'{{"x": [{literal}]}}'
    if literal.lstrip("-").isdigit() and digits > jsonlio.MAX_INT_DIGITS:
        with pytest.raises(jsonlio.JsonBoundError, match=f"an integer {digits} digits long"):
            jsonlio.parse_json(text)
    else:
        assert jsonlio.parse_json(text) == {"x": [int(literal) if literal.lstrip("-").isdigit() else float(literal)]}


@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_the_json_reader_answers_any_bytes_with_a_value_or_one_line(raw):
    try:
        jsonlio.parse_json(raw)
    except jsonlio.JsonInputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(("malformed JSON (", "not UTF-8 text ("))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["good", "deep", "digits", "broken", "blank"]), max_size=12))
def test_a_jsonl_file_gives_every_good_line_and_one_problem_per_bad_line(tmp_path_factory, kinds):
    lines = {
        "good": '{"n": 1}',
        "deep": "[" * 1500 + "]" * 1500,
        "digits": '{"n": ' + "9" * 5000 + "}",
        "broken": "{oops",
        "blank": "",
    }
    path = tmp_path_factory.mktemp("jsonl") / "x.jsonl"
    path.write_text("".join(lines[k] + "\n" for k in kinds))
    problems: list[str] = []
    got = list(jsonlio.iter_jsonl(path, on_error=problems.append))
    assert [n for n, _ in got] == [i for i, k in enumerate(kinds, 1) if k == "good"]
    bad = [i for i, k in enumerate(kinds, 1) if k in ("deep", "digits", "broken")]
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:{i}" for i in bad]


def test_a_jsonl_line_over_the_size_bound_is_one_problem_and_not_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonlio, "MAX_LINE_BYTES", 64)
    path = tmp_path / "x.jsonl"
    path.write_text('{"n": 1}\n{"s": "' + "x" * 1000 + '"}\n{"n": 3}\n' + '{"s": "' + "y" * 100)
    problems: list[str] = []
    assert [n for n, _ in jsonlio.iter_jsonl(path, on_error=problems.append)] == [1, 3]
    assert problems == [f"{path}:2: {jsonlio.LONG_LINE}", f"{path}:4: {jsonlio.LONG_LINE}"]


def test_a_large_paper_run_file_is_read_one_record_at_a_time(tmp_path, monkeypatch):
    """The paper's released run files hold 14,287 conversations each (a few hundred MB): beyond the bound on a
    JSON document they were refused. A run file larger than that is now read one record at a time (memory holds
    one), with the same records and the same names; malformed text further in is one line naming the file and
    its line, after the records before it."""
    from wikihowagent.paper_format import load_paper_file

    records = [
        {"conversation_id": f"c{i}", "title": 'How to é [x] \\ "q"', "n": [i, 123456, {"k": None}]} for i in range(5)
    ]
    paper = tmp_path / "T-a_L-a_E-a_1.json"
    paper.write_text(
        '\ufeff {\n "total_conversations" :\n ['
        + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records)
        + "]\n}\n",
        "utf-8",
    )
    plain = tmp_path / "list.json"
    plain.write_text(json.dumps(records, indent=2))
    whole = [(list(items), name) for items, name in map(load_paper_file, (paper, plain))]
    monkeypatch.setattr(jsonlio, "STREAM_ABOVE", 0)
    monkeypatch.setattr(jsonlio, "_READ", 7)  # blocks that cut records, strings and numbers anywhere
    streamed = [(list(items), name) for items, name in map(load_paper_file, (paper, plain))]
    assert streamed == whole and whole[0][0] == records
    assert whole[0][1] == f"{paper}: total_conversations[{{i}}]" and whole[1][1] == f"{plain}: [{{i}}]"

    paper.write_text('{"total_conversations": [\n' + json.dumps(records[0]) + ",\n" + '{"conversation_id": "c1",}\n]}')
    items, _ = load_paper_file(paper)
    got = []
    with pytest.raises(ValueError, match=rf"^{re.escape(str(paper))}:3: malformed JSON \(Expecting property name"):
        got.extend(items)
    assert got == records[:1]
    paper.write_text('{"total_conversations": [' + json.dumps(records[0]) + '], "more": 1}')
    with pytest.raises(ValueError, match="malformed JSON .expected } after the list of records"):
        list(load_paper_file(paper)[0])
