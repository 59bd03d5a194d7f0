"""`wikihowagent evaluate`: metrics against hand-computed values, judge parsing, resume, summary, bad input.

Fast: nothing here loads a neural model (see test_evaluation_models.py for those).
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import warnings
from pathlib import Path

import pytest
from helpers import HOSTILE_JSON, append_line, one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.judge.request import ScoringRequest
from wikihowagent.judge.rubric_judge import Judge, RubricError, check_value, load_rubrics, parse_scores, rubrics_sha256
from wikihowagent.metrics import computational as M
from wikihowagent.paper_format import RecordError, to_conversation
from wikihowagent.records import Conversation, Turn
from wikihowagent.registry import Registry
from wikihowagent.scores.inputs import InputError, InputSource, resolve_inputs
from wikihowagent.scores.runner import EvalOptions, EvaluateError, Evaluation, select_metrics
from wikihowagent.scores.summary import display_rows, load_run_scores, markdown_table, summarize
from wikihowagent.testing import ScriptedChatModel

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"
RUBRICS = load_rubrics()
RUBRIC_NAMES = list(RUBRICS)
NO_EMBED = [m for m in M.computational_metrics("default") if m not in M.embedding_metrics()]
NO_EMBED_PAPER = [m for m in M.computational_metrics("paper") if m != M.BERTSCORE]


def conv_of(msgs: list[tuple[str, str, str]], steps=("Step one.",), title="T", finished=None) -> Conversation:
    turns = [Turn(role=r, text=t, kind=k) for r, t, k in msgs]
    return Conversation.from_turns(
        turns, list(steps), title, completed=finished, conversation_id="x", run="r", where="w"
    )


def record_problem(obj: dict) -> str | None:
    try:
        to_conversation(obj, "r", "w")
    except RecordError as exc:
        return str(exc)
    return None


def fixture_convs(name: str) -> list[Conversation]:
    p = FIX / name
    src = InputSource(
        path=p, kind="run" if p.is_dir() else ("jsonl" if p.suffix == ".jsonl" else "paper-json"), name=p.stem
    )
    return list(src.conversations(on_error=lambda m: None))


# ----------------------------------------------------------------------------------------- metrics


def evaluate_app(monkeypatch, make_chat_model):
    """A typer app with `evaluate` whose judge is `make_chat_model` (no backend checks)."""
    import typer

    import wikihowagent.backends as backends
    from wikihowagent.evaluation.command import evaluate

    monkeypatch.setattr(backends, "make_chat_model", make_chat_model)
    monkeypatch.setattr(backends, "check_backend", lambda *a, **k: None)
    monkeypatch.setattr(backends, "resolve_spec", lambda spec, *a, **k: spec)
    app = typer.Typer()
    app.command("evaluate")(evaluate)
    app.command("other")(lambda: None)  # a second command keeps `evaluate` as a subcommand
    return app


def test_question_ratio_excludes_begin_and_farewell_replies():
    c1 = fixture_convs("run_small")[0]  # 5 learner turns: ack of BEGIN, 1 question, 2 acks, farewell
    assert M.question_ratio(c1) == pytest.approx(1 / 3)
    assert M.paper_question_ratio(c1) == 0.2  # all 5 "Learner:" lines, as the released code


def test_question_ratio_no_learner_turn_is_not_computable():
    assert M.question_ratio(conv_of([("teacher", "Hello", "model")])) is None


def test_completion_structured_then_token():
    c1, c2, c3 = fixture_convs("run_small")
    assert (M.completion(c1), M.completion(c2), M.completion(c3)) == (1.0, 0.0, 1.0)
    p1, p2 = fixture_convs("T-llama3_L-llama3_E-llama3_123.json")
    assert p1.completed is None and M.completion(p1) == 1.0 and M.completion(p2) == 0.0
    # a structured record that stopped at the limit is not complete even if the text says FINISHED
    c = conv_of([("teacher", "FINISHED", "model")], finished=False)
    assert M.completion(c) == 0.0 and M.paper_completion(c) == 1.0
    assert M.paper_completion(conv_of([("teacher", "The tutorial is now complete.", "model")])) == 1.0


def test_diversity_hand_computed():
    c = conv_of(
        [
            ("teacher", "a b a b", "model"),
            ("learner", "A b", "model"),
            ("teacher", "We've reached the end of the tutorial. Bye! FINISHED", "finish"),
        ]
    )
    # ours: (a,b),(b,a),(a,b) + (a,b) -> 2 distinct / 4; the fixed FINISHED text is left out
    assert M.diversity(c) == 0.5
    c2 = conv_of([("teacher", "a b a b", "model"), ("learner", "a b", "model")])
    # paper: whitespace tokens incl. the role prefix: (Teacher:,a),(a,b),(b,a),(a,b),(Learner:,a),(a,b) -> 4/6
    assert M.paper_diversity(c2) == round(4 / 6, 4)


def test_reference_and_hypotheses():
    c1 = fixture_convs("run_small")[0]
    assert M.reference_text(c1) == "Color Salt\nFill a container with salt.\nSqueeze paint into the salt."
    assert M.teacher_messages(c1) == [
        "Fill a container with salt.",
        "Yes, use fine salt.",
        "Squeeze paint into the salt.",
    ]
    paper = M.paper_teacher_text(c1).split("\n")
    assert paper[0] == "Teacher: Let's begin: Color Salt. BEGIN" and len(paper) == 5


def test_templates_recognised_in_paper_records():
    p1 = fixture_convs("T-llama3_L-llama3_E-llama3_123.json")[0]
    kinds = [m.kind for m in p1.messages if m.role == "teacher"]
    assert kinds == ["begin", "model", "model", "model", "finish"]


def test_word_bleu_hand_computed():
    # p1..p4 = 5/6, 3/5, 2/4, 1/3; equal lengths -> BP 1
    s = M.Scorers("default", [M.BLEU])
    c = conv_of([("teacher", "the cat sat on the mat", "model")], steps=["the cat sat on a mat"], title="")
    expected = (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert s.score([c])[0].metrics[M.BLEU] == pytest.approx(expected, abs=1e-6)


def test_paper_bleu_is_character_level():
    # "ab cde" vs "ab cd": characters a b c d e / a b c d (whitespace dropped): all n-gram precisions 1,
    # brevity penalty exp(1 - 5/4)
    assert M.paper_bleu("ab cde", "ab cd") == round(math.exp(1 - 5 / 4), 4)
    # equal lengths take the released code's corpus branch: one character per segment -> no 2-grams -> 0
    assert M.paper_bleu("ab", "ab") == 0.0


def test_rouge_hand_computed():
    ref = M.rouge_tokens("The cat sat on the mat.", stem=True)
    hyp = M.rouge_tokens("the cat sat on a mat", stem=True)
    assert M.rouge_n(ref, hyp, 1) == pytest.approx(5 / 6)
    assert M.rouge_n(ref, hyp, 2) == pytest.approx(0.6)
    assert M.rouge_l(ref, hyp) == pytest.approx(5 / 6)
    assert M.rouge_tokens("Running dogs", stem=True) == ["run", "dog"]
    assert M.rouge_tokens("Running dogs", stem=False) == ["running", "dogs"]


def test_rouge_matches_rouge_score_package():
    import random

    from rouge_score import rouge_scorer

    rng = random.Random(3)
    vocab = "the a salt paint mixing mixed container spoon drying dried test fine coarse with and into".split()
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for _ in range(30):
        r = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 50)))
        h = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 50)))
        want = scorer.score(r, h)
        rt, ht = M.rouge_tokens(r, True), M.rouge_tokens(h, True)
        assert M.rouge_n(rt, ht, 1) == pytest.approx(want["rouge1"].fmeasure)
        assert M.rouge_n(rt, ht, 2) == pytest.approx(want["rouge2"].fmeasure)
        assert M.rouge_l(rt, ht) == pytest.approx(want["rougeL"].fmeasure)


def test_lcs_bit_parallel_matches_dynamic_programming():
    import random

    rng = random.Random(7)
    for _ in range(200):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 25))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 25))]
        dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                dp[i + 1][j + 1] = dp[i][j] + 1 if x == y else max(dp[i][j + 1], dp[i + 1][j])
        assert M.lcs_length(a, b) == dp[-1][-1]


def test_meteor_tokens_split_sentences():
    assert M.meteor_tokens("Fill a container with salt. Mix it!\nDone") == [
        "Fill",
        "a",
        "container",
        "with",
        "salt",
        ".",
        "Mix",
        "it",
        "!",
        "Done",
    ]


def test_meteor_hand_computed_and_nltk_doc_example():
    # identical 3 words: P = R = 1, one chunk: penalty 0.5 * (1/3)^3
    assert M.meteor(["the", "cat", "sat"], ["the", "cat", "sat"]) == pytest.approx(1 - 0.5 / 27)
    # nltk's documented example (needs the real WordNet from scripts/setup_nltk_data.sh)
    hyp = "It is a guide to action which ensures that the military always obeys the commands of the party".split()
    ref = "It is a guide to action that ensures that the military will forever heed Party commands".split()
    assert round(M.meteor(ref, hyp), 4) == 0.6944
    # WordNet synonyms count: "auto" ~ "car" (nltk matches synonyms after stemming, so use an unstemmed word)
    assert M.meteor(["a", "car"], ["a", "auto"]) == pytest.approx(1 - 0.5 / 8)
    assert M.meteor(["a", "car"], ["a", "tree"]) < 0.5


def test_wordnet_read_as_plain_files_is_nltks_wordnet():
    """The reader that reads WordNet's index and exception files as plain text holds what nltk's own reader
    holds (lemmas, exceptions, lexicographer names, satellites), and looks words up the same."""
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    ours = M.load_wordnet()._wn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nltks = WordNetCorpusReader(nltk.data.find("corpora/wordnet"), None)
    assert ours._lemma_pos_offset_map == nltks._lemma_pos_offset_map
    assert ours._exception_map == nltks._exception_map and ours._lexnames == nltks._lexnames
    assert ours.satellite_offsets == nltks.satellite_offsets
    assert [s.name() for s in ours.synsets("ran")] == [s.name() for s in nltks.synsets("ran")]


def test_missing_wordnet_gives_the_fix(monkeypatch, tmp_path):
    import nltk.data

    M.load_wordnet.cache_clear()
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])  # no folder nltk searches holds WordNet
    try:
        with pytest.raises(M.MetricError, match="setup_nltk_data.sh"):
            M.Scorers("default", [M.METEOR])
    finally:
        monkeypatch.undo()
        M.load_wordnet.cache_clear()


def test_default_scores_of_fixture_without_embeddings():
    convs = fixture_convs("run_small")
    res = M.Scorers("default", NO_EMBED).score(convs)
    c1 = res[0].metrics
    assert set(c1) == set(NO_EMBED)
    assert c1[M.COMPLETION] == 1.0 and 0 < c1[M.BLEU] < 1 and 0 < c1[M.METEOR] <= 1
    # no generated teacher turn: overlap metrics are not computable (None), never 0
    c = conv_of([("teacher", "Let's begin: T. BEGIN", "begin"), ("learner", "ok", "model")])
    r = M.Scorers("default", NO_EMBED).score([c])[0]
    assert r.metrics[M.BLEU] is None and r.metrics[M.ROUGEL] is None and r.notes


def test_paper_mode_metric_names_and_rounding():
    res = M.Scorers("paper", NO_EMBED_PAPER).score(fixture_convs("T-llama3_L-llama3_E-llama3_123.json"))
    m = res[0].metrics
    assert set(m) == set(NO_EMBED_PAPER) and M.ROUGE in m and M.ROUGE1 not in m
    assert all(v == round(v, 4) for v in m.values())


# --------------------------------------------------------------------------------------------- judge


def test_rubric_file_validation(tmp_path):
    assert list(RUBRICS) == [
        "Clarity",
        "Truthfulness",
        "Engagement",
        "Coherence",
        "Depth",
        "Relevance",
        "Progress",
        "Naturalness",
    ]
    assert RUBRICS["Truthfulness"].reference == "tutorial" and RUBRICS["Engagement"].role == "learner"
    bad = json.loads((Path(__file__).resolve().parents[2] / "wikihowagent" / "data" / "rubrics.json").read_text())
    del bad["Clarity"]["rubric"]["3"]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(RubricError, match="'Clarity'.*rubric must map"):
        load_rubrics(p)
    p.write_text("{not json")
    with pytest.raises(RubricError, match=r"r\.json:1: malformed JSON"):
        load_rubrics(p)
    with pytest.raises(RubricError, match="not found"):
        load_rubrics(tmp_path / "nope.json")


@pytest.mark.parametrize(
    "value,expected",
    [
        (4, 4),
        ("5", 5),
        ("4/5", 4),
        (3.0, 3),
        ("4.5", 4.5),
        ("2 out of 5", 2),
        (0, None),
        (6, None),
        ("8/10", None),
        ("four", None),
        (True, None),
        ({"score": 3}, 3),
    ],
)
def test_check_value(value, expected):
    got, why = check_value(value)
    assert got == expected and (why is None) == (expected is not None)


def test_parse_well_formed_json():
    got, probs = parse_scores('{"Clarity": 4, "Engagement": 5}', ["Clarity", "Engagement"])
    assert got == {"Clarity": 4, "Engagement": 5} and not probs


def test_parse_messy_replies():
    text = (
        "<think>Clarity: 1 maybe?</think>Sure! Here are my scores:\n**Clarity**: 4/5\n"
        "- Engagement (Does the learner actively participate?): 3\n### Depth - 2\nCoherence = 5\n"
    )
    got, probs = parse_scores(text, ["Clarity", "Engagement", "Depth", "Coherence"])
    assert got == {"Clarity": 4, "Engagement": 3, "Depth": 2, "Coherence": 5} and not probs
    fenced = 'Scores:\n```json\n{"scores": {"clarity": "5", "ENGAGEMENT": 4}}\n```'
    assert parse_scores(fenced, ["Clarity", "Engagement"])[0] == {"Clarity": 5, "Engagement": 4}


def test_parse_failures_and_out_of_range():
    got, probs = parse_scores("Clarity: 7\nEngagement: 8/10\nI cannot rate Depth.", ["Clarity", "Engagement", "Depth"])
    assert got == {}
    assert "out of range" in probs["Clarity"] and "scale" in probs["Engagement"] and probs["Depth"] == "no score found"


def _judge(script, retries=2, structured=None):
    llm = ScriptedChatModel(script=script, prompts=[])
    return llm, Judge(llm, RUBRICS, retries=retries, concurrency=2, structured=structured)


def test_judge_unparsable_is_retried_then_recorded_as_failure():
    conv = fixture_convs("run_small")[0]
    llm, judge = _judge(lambda p: "I think this conversation is quite good overall.", retries=2)
    res = asyncio.run(judge.judge(conv))
    assert res.failures == RUBRIC_NAMES  # every rubric, none scored 0/1/5
    assert all(v is None for v in res.scores.values())
    assert len(res.raw["conversation"]) == 3 and len(res.raw["reference"]) == 3  # 1 + 2 retries each
    assert len(llm.prompts) == 6 and "could not be read" in llm.prompts[-1]


def test_judge_retry_recovers_and_out_of_range_is_failure():
    conv = fixture_convs("run_small")[0]
    calls = {"n": 0}

    def script(p):
        if "Reference tutorial" in p:
            return '{"Truthfulness": 9}'  # out of range every time -> failure, not clamped to 5
        calls["n"] += 1
        if calls["n"] == 1:
            return "Clarity: 5, Engagement: 4"  # the rest missing: retried
        return json.dumps({n: 3 for n in RUBRIC_NAMES if n != "Truthfulness"})

    _, judge = _judge(script, retries=1)
    res = asyncio.run(judge.judge(conv))
    assert res.scores["Clarity"] == 5 and res.scores["Engagement"] == 4 and res.scores["Depth"] == 3
    assert res.scores["Truthfulness"] is None and res.failures == ["Truthfulness"]
    assert any("out of range" in n for n in res.notes)


def test_judge_request_refused_is_a_failure_not_an_abort():
    class BadRequestError(Exception):
        status_code = 400

    def script(p):
        if "Reference tutorial" in p:
            raise BadRequestError("the request exceeds the available context size")
        return json.dumps({n: 4 for n in RUBRIC_NAMES})

    _, judge = _judge(script)
    res = asyncio.run(judge.judge(fixture_convs("run_small")[0]))
    assert res.failures == ["Truthfulness"] and res.scores["Clarity"] == 4
    assert any("request refused" in n and "context" in n for n in res.notes)


def test_judge_unreachable_stops_with_one_line():
    from wikihowagent.judge.rubric_judge import JudgeBackendError

    def script(p):
        raise ConnectionError("connection refused\nmore detail")

    _, judge = _judge(script)
    with pytest.raises(JudgeBackendError, match="^evaluator call failed: ConnectionError: connection refused$"):
        asyncio.run(judge.judge(fixture_convs("run_small")[0]))


def test_judge_prompts_follow_table3():
    conv = fixture_convs("run_small")[0]
    llm, judge = _judge(lambda p: json.dumps({n: 4 for n in RUBRIC_NAMES}))
    res = asyncio.run(judge.judge(conv))
    assert not res.failures and set(res.scores) == set(RUBRIC_NAMES)
    conv_prompt = next(p for p in llm.prompts if "Reference tutorial" not in p)
    ref_prompt = next(p for p in llm.prompts if "Reference tutorial" in p)
    assert conv_prompt.startswith("Evaluate the following teacher-learner conversation:")
    assert "Truthfulness" not in conv_prompt and all(n in conv_prompt for n in RUBRIC_NAMES if n != "Truthfulness")
    assert (
        "Step 2: Squeeze paint into the salt." in ref_prompt
        and "5 - All information is completely accurate" in ref_prompt
    )


def test_judge_paper_mode_prompts_are_the_released_ones():
    conv = fixture_convs("run_small")[0]
    llm = ScriptedChatModel(script=lambda p: "Clarity: 4", prompts=[])
    judge = Judge(llm, RUBRICS, mode="paper", retries=0)
    asyncio.run(judge.judge(conv))
    ref = next(p for p in llm.prompts if "based on the reference" in p)
    assert "Reference: Color Salt\nFill a container with salt." in ref
    assert "Generated: Teacher: Let's begin: Color Salt. BEGIN\nTeacher: Fill" in ref
    assert "Provide scores in this format: Truthfulness: X" in ref
    conv_p = next(p for p in llm.prompts if "teacher-learner conversation" in p)
    assert "[\"Teacher: Let's begin: Color Salt. BEGIN\", 'Learner: Okay, I am ready.'" in conv_p


def test_judge_structured_output_path():
    from langchain_core.messages import AIMessage
    from langchain_core.runnables import RunnableLambda

    class Structured(ScriptedChatModel):
        def with_structured_output(self, schema, **kw):
            assert kw.get("method") == "json_schema" and schema["properties"]
            names = list(schema["properties"])
            vals = {n: 5 for n in names}
            return RunnableLambda(
                lambda _p: {"raw": AIMessage(content=json.dumps(vals)), "parsed": vals, "parsing_error": None}
            )

    llm = Structured(script=lambda p: "unused", prompts=[])
    judge = Judge(llm, RUBRICS)
    res = asyncio.run(judge.judge(fixture_convs("run_small")[0]))
    assert not res.failures and all(v == 5 for v in res.scores.values())
    assert llm.prompts == [] and judge.fallback_note is None
    assert json.loads(res.raw["reference"][0]) == {"Truthfulness": 5}


def test_judge_schema_refused_falls_back_to_text():
    from langchain_core.runnables import RunnableLambda

    class Refuses(ScriptedChatModel):
        def with_structured_output(self, schema, **kw):
            def boom(_p):
                raise ValueError("response_format json_schema is not supported")

            return RunnableLambda(boom)

    llm = Refuses(
        script=lambda p: (
            "Clarity: 4\nTruthfulness: 5\nEngagement: 3\nCoherence: 4\nDepth: 2\n"
            "Relevance: 5\nProgress: 4\nNaturalness: 3"
        ),
        prompts=[],
    )
    judge = Judge(llm, RUBRICS)
    res = asyncio.run(judge.judge(fixture_convs("run_small")[0]))
    assert not res.failures and res.scores["Depth"] == 2 and "parsed from text" in judge.fallback_note


# ---------------------------------------------------------------------------------------- inputs


def test_bad_input_reported_with_file_and_line_good_records_kept():
    src = resolve_inputs([FIX / "run_small"], FIX)[0]
    msgs: list[str] = []
    convs = list(src.conversations(on_error=msgs.append))
    assert [c.conversation_id for c in convs] == ["c1", "c2", "c3"]
    assert src.n_failed == 1 and src.n_invalid == 2
    assert msgs[0].startswith(f"{FIX / 'run_small' / 'conversations.jsonl'}:3: malformed JSON")
    assert msgs[1].endswith('conversations.jsonl:5: record has no tutorial (expected {"title", "steps"})')


def test_missing_and_empty_inputs(tmp_path):
    with pytest.raises(InputError, match="no such run directory or file"):
        resolve_inputs([tmp_path / "nope"], tmp_path)
    with pytest.raises(InputError, match="empty file"):
        resolve_inputs([FIX / "empty.jsonl"], tmp_path)
    skipped: list[str] = []
    srcs = resolve_inputs([FIX / "empty.jsonl", FIX / "paper_records.jsonl"], tmp_path, on_empty=skipped.append)
    assert [s.name for s in srcs] == ["paper_records"] and skipped == [
        f"{FIX / 'empty.jsonl'}: empty file (no conversations)"
    ]
    with pytest.raises(InputError, match="every input is empty"):
        resolve_inputs([FIX / "empty.jsonl"], tmp_path, on_empty=skipped.append)
    with pytest.raises(InputError, match="no runs found"):
        resolve_inputs([], tmp_path)
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="not a run directory"):
        resolve_inputs([tmp_path / "d"], tmp_path)
    bad = tmp_path / "x.json"
    bad.write_text('{"total_conversations": [\n{"a": 1},\n')
    with pytest.raises(InputError, match=r"x\.json:\d+: malformed JSON"):
        list(resolve_inputs([bad], tmp_path)[0].conversations(print))


def test_paper_files_are_read():
    srcs = resolve_inputs([FIX / "T-llama3_L-llama3_E-llama3_123.json", FIX / "paper_records.jsonl"], FIX)
    assert [s.kind for s in srcs] == ["paper-json", "jsonl"]
    assert (srcs[0].teacher, srcs[0].learner, srcs[0].evaluator) == ("llama3", "llama3", "llama3")
    a = list(srcs[0].conversations(print))
    b = list(srcs[1].conversations(print))
    assert [c.conversation_id for c in a] == [c.conversation_id for c in b] == ["p1", "p2"]
    assert a[0].domain == "Hobbies & Leisure"  # the paper's domain of its breadcrumb (wikihowagent/data/domains.csv)


def test_record_problems():
    ok = {"conversation_id": "a", "tutorial": {"title": "t", "steps": ["s"]}, "conversation": ["Teacher: hi"]}
    assert record_problem(ok) is None
    assert "no conversation" in record_problem({**ok, "conversation": []})
    assert "no steps" in record_problem({**ok, "tutorial": {"title": "t", "steps": []}})
    assert "conversation_id" in record_problem({k: v for k, v in ok.items() if k != "conversation_id"})


def test_select_metrics():
    comp, rub = select_metrics("bleu, Clarity,rouge-l", "default", RUBRIC_NAMES)
    assert comp == [M.BLEU, M.ROUGEL] and rub == ["Clarity"]
    assert select_metrics("computational", "paper", RUBRIC_NAMES) == (M.computational_metrics("paper"), [])
    with pytest.raises(EvaluateError, match="unknown metric 'ROUGE-L' in paper mode"):
        select_metrics("ROUGE-L", "paper", RUBRIC_NAMES)


# ------------------------------------------------------------------------------------ run + resume


def _evaluation(mode="default", judge_script=None, metrics=None):
    comp = metrics if metrics is not None else (NO_EMBED if mode == "default" else NO_EMBED_PAPER)
    rub = RUBRIC_NAMES if judge_script else []
    opts = EvalOptions(mode=mode, judge=bool(judge_script), chunk=2, asked=ScoringRequest(retries=0))
    make = (lambda spec: ScriptedChatModel(script=judge_script, prompts=[])) if judge_script else None
    return Evaluation(opts, comp, rub, RUBRICS if judge_script else None, make, warn=lambda m: None)


def _lines(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()]


def test_scores_written_and_resumed(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIX / "run_small", run)
    src = resolve_inputs([run], tmp_path)[0]
    out = run / "scores.jsonl"
    stats = _evaluation().run_source(src, out)
    assert (stats.scored, stats.already, stats.failed, stats.invalid) == (3, 0, 1, 2)
    recs = _lines(out)
    assert [r["conversation_id"] for r in recs] == ["c1", "c2", "c3"]
    assert recs[0]["run"] == "run_small" and recs[0]["mode"] == "default" and recs[0]["domain"] == "Hobbies & Leisure"
    # rerun: nothing new
    stats = _evaluation().run_source(src, out)
    assert (stats.scored, stats.already) == (0, 3) and len(_lines(out)) == 3
    # a kill mid-write: a torn last line and a missing record -> repaired, only the missing one redone
    data = out.read_text().splitlines()
    out.write_text(data[0] + "\n" + data[1] + "\n" + data[2][:40])
    stats = _evaluation().run_source(src, out)
    assert (stats.scored, stats.already) == (1, 2)
    assert [r["conversation_id"] for r in _lines(out)] == ["c1", "c2", "c3"]


def test_judge_added_to_earlier_computational_scores(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIX / "run_small", run)
    src = resolve_inputs([run], tmp_path)[0]
    out = run / "scores.jsonl"
    _evaluation().run_source(src, out)
    ev = _evaluation(judge_script=lambda p: json.dumps({n: 4 for n in RUBRIC_NAMES}))

    def no_recompute(convs):
        raise AssertionError("computational metrics already present: not recomputed")

    ev.scorers.score = no_recompute
    stats = ev.run_source(src, out)
    assert stats.scored == 3
    from wikihowagent.runs import read_scores

    final = read_scores(out)
    assert len(final) == 3 and final["c1"].metrics["Clarity"] == 4 and final["c1"].metrics[M.BLEU] > 0
    assert final["c1"].judge.evaluator == "local" and set(final["c1"].judge.raw) == {"conversation", "reference"}
    assert final["c1"].judge.rubrics_sha256 == rubrics_sha256(RUBRICS)


def test_one_judge_serves_several_runs_in_one_process(tmp_path):
    """The judge model (and its async client / semaphore) is created once and reused across runs."""
    made = []

    def make(spec):
        made.append(spec)
        return ScriptedChatModel(script=lambda p: json.dumps({n: 2 for n in RUBRIC_NAMES}), prompts=[], delay_s=0.01)

    opts = EvalOptions(judge=True, chunk=2, asked=ScoringRequest(retries=0, concurrency=1))
    ev = Evaluation(opts, [M.QUESTION], RUBRIC_NAMES, RUBRICS, make, warn=lambda m: None)
    try:
        for name in ("a", "b"):
            run = tmp_path / name
            shutil.copytree(FIX / "run_small", run)
            (run / "run.json").write_text(json.dumps({"name": name, "teacher": "local"}))
            stats = ev.run_source(resolve_inputs([run], tmp_path)[0], run / "scores.jsonl")
            assert stats.scored == 3 and stats.judge_failures == 0
    finally:
        ev.close()
    assert made == ["local"]


def test_paper_run_file_scored(tmp_path):
    src = resolve_inputs([FIX / "T-llama3_L-llama3_E-llama3_123.json"], tmp_path)[0]
    out = tmp_path / "scores-paper.jsonl"
    stats = _evaluation("paper").run_source(src, out)
    assert stats.scored == 2
    recs = _lines(out)
    assert recs[0]["mode"] == "paper" and recs[0]["teacher"] == "llama3" and M.ROUGE in recs[0]["metrics"]


# ------------------------------------------------------------------------------------------ summary


def _write_scores(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_summary_numbers(tmp_path):
    a = tmp_path / "a" / "scores.jsonl"
    b = tmp_path / "b" / "scores.jsonl"
    _write_scores(
        a,
        [
            {
                "conversation_id": "1",
                "domain": "Health",
                "metrics": {"BLEU": 0.2, "Clarity": 4, "Depth": 3},
                "judge_failures": [],
            },
            {
                "conversation_id": "2",
                "domain": "Health",
                "metrics": {"BLEU": 0.4, "Clarity": 5, "Depth": None},
                "judge_failures": ["Depth"],
            },
            {
                "conversation_id": "2",
                "domain": "Health",
                "metrics": {"BLEU": 0.4, "Clarity": 5, "Depth": None},
                "judge_failures": ["Depth"],
            },
        ],
    )
    _write_scores(
        b,
        [
            {
                "conversation_id": "1",
                "domain": "Travel",
                "metrics": {"BLEU": 0.1, "Clarity": 5, "Depth": 5},
                "judge_failures": [],
            }
        ],
    )
    runs = [load_run_scores("a", "T-x L-x", a, n_failed=1), load_run_scores("b", "T-x L-y", b)]
    s = summarize(runs, RUBRIC_NAMES, baseline="a")
    ra, rb, over = s.table
    assert ra["n"] == 2  # the duplicated line counts once
    assert ra["BLEU"][0] == pytest.approx(30.0) and ra["BLEU"][1] == pytest.approx(math.sqrt(200))
    assert ra["Clarity"][:2] == pytest.approx((4.5, math.sqrt(0.5)))
    assert ra["Depth"][:3] == (3.0, pytest.approx(math.nan, nan_ok=True), 1)
    assert ra["judge_failure_pct"] == pytest.approx(100 * 1 / 4)  # 1 failed cell of 2 conversations x 2 rubrics
    assert over["BLEU"][0] == pytest.approx(20.0) and over["BLEU"][1] == pytest.approx(
        math.sqrt(200)
    )  # runs' means 30, 10
    assert rb["arrows"] == {"BLEU": "↓", "Clarity": "↑", "Depth": "↑"} and ra["arrows"] == {}
    heads, rows = display_rows(s)
    assert heads[:4] == ["Run", "n", "Failed", "BLEU (%)"]
    assert rows[0][:4] == ["T-x L-x [a]", "2", "1", "30.00 ± 14.14"]
    assert rows[1][3] == "10.00 ↓" and rows[1][2] == "?"
    assert "| 30.00 ± 14.14 |" in markdown_table(heads, rows)


def test_summary_md_escapes_a_metric_name_from_a_file(tmp_path):
    from wikihowagent.scores.summary import write_summary

    name = "<img src=x onerror=alert(1)>"
    path = tmp_path / "a" / "scores.jsonl"
    _write_scores(path, [{"conversation_id": "1", "metrics": {"BLEU": 0.2, name: 4}}])
    s = summarize([load_run_scores("a", "T-x L-x", path)], [name])
    write_summary(s, tmp_path / "out")
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "<img" not in md and "| &lt;img src=x onerror=alert\\(1\\)&gt; |" in md and "| BLEU (%) |" in md


def test_by_domain(tmp_path):
    from wikihowagent.scores.summary import by_domain

    a = tmp_path / "a.jsonl"
    _write_scores(
        a,
        [
            {"conversation_id": "1", "domain": "Health", "metrics": {"Clarity": 4, "Depth": 2}},
            {"conversation_id": "2", "domain": "Travel", "metrics": {"Clarity": 5, "Depth": None}},
        ],
    )
    df = by_domain([load_run_scores("a", "a", a)], RUBRIC_NAMES)
    h = df[df.domain == "Health"].iloc[0]
    assert h["Clarity"] == 4 and h["Rubric mean"] == 3.0 and df[df.domain == "Travel"].iloc[0]["Rubric mean"] == 5.0


# ----------------------------------------------------------------------------------------------- CLI


def test_cli_end_to_end_with_fake_judge(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    seen = []

    def fake_make(spec, settings, local, base_url=None, **kw):
        seen.append(spec)
        return ScriptedChatModel(script=lambda p: json.dumps({n: 3 for n in RUBRIC_NAMES}), prompts=[])

    app = evaluate_app(monkeypatch, fake_make)
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    args = [
        "evaluate",
        str(run),
        str(FIX / "T-llama3_L-llama3_E-llama3_123.json"),
        "--metrics",
        "computational,rubric",
        "--by",
        "domain",
        "--out",
        str(tmp_path / "out"),
        "--baseline",
        str(run),
    ]
    monkeypatch.setattr(
        M, "REGISTRY", Registry("metric", {k: m for k, m in M.REGISTRY.items() if not m.batch})
    )  # no model load in the fast suite
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert seen == ["local", "llama3"]  # homogeneous: each run's own teacher/evaluator
    out = tmp_path / "out"
    for f in (
        "summary.csv",
        "summary.md",
        "by_domain.csv",
        "run_small/scores.jsonl",
        "T-llama3_L-llama3_E-llama3_123/scores.jsonl",
        "figures/rubrics.png",
        "figures/by_domain.png",
    ):
        assert (out / f).exists(), f
    md = (out / "summary.md").read_text()
    assert "Clarity" in md and "3.00 ± 0.00" in md and "↑/↓" in md
    assert "conversations.jsonl:3: malformed JSON" in res.output
    # scores away from their conversations: run.json beside them names the conversations (what `report` shows)
    own = json.loads((run / "run.json").read_text())
    info = json.loads((out / "run_small" / "run.json").read_text())
    assert info == {**own, "conversations_file": str((run / "conversations.jsonl").resolve()), **_unset(own, info)}
    paper = json.loads((out / "T-llama3_L-llama3_E-llama3_123" / "run.json").read_text())
    assert paper["conversations_file"] == str((FIX / "T-llama3_L-llama3_E-llama3_123.json").resolve())
    assert (paper["name"], paper["teacher"], paper["learner"]) == ("T-llama3_L-llama3_E-llama3_123", "llama3", "llama3")
    assert not (run / "run.json").read_text().count("conversations_file")  # the run's own run.json untouched


def _unset(own: dict, info: dict) -> dict:
    """The fields run.json gains when written from its typed reading (defaults of keys the file lacked)."""
    return {k: v for k, v in info.items() if k not in own and k != "conversations_file"}


@pytest.mark.parametrize(("line", "why"), HOSTILE_JSON)
def test_a_hostile_json_line_is_one_warning_and_every_other_line_is_used(tmp_path, line, why):
    run = run_copy(tmp_path)  # 6 records: 3 scorable, 1 failed, 2 bad
    args = ["evaluate", str(run), "--no-judge", "--metrics", "Question Ratio", "--no-figures"]
    lineno = append_line(run / "conversations.jsonl", line)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert f"warning: {run / 'conversations.jsonl'}:{lineno}: malformed JSON ({why})" in res.output.splitlines()
    assert "3 scored, 0 already scored, 1 failed conversations skipped, 3 unreadable records" in res.output
    lineno = append_line(run / "scores.jsonl", line)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert f"warning: {run / 'scores.jsonl'}:{lineno}: malformed JSON ({why})" in res.output.splitlines()
    assert "0 scored, 3 already scored" in res.output  # the good score lines are kept


@pytest.mark.parametrize(("text", "why"), HOSTILE_JSON)
def test_a_hostile_people_estimate_file_is_refused_in_one_line(tmp_path, text, why):
    est = tmp_path / "people_estimate.json"
    est.write_text(text)
    run = run_copy(tmp_path)
    res = CliRunner().invoke(app, ["evaluate", str(run), "--no-judge", "--people-estimate", str(est)])
    assert res.exit_code == 2
    one_line_error(res, f"{est}: malformed JSON ({why})")
    assert not (run / "scores.jsonl").exists()


def test_cli_errors_are_one_line(tmp_path):
    import typer
    from typer.testing import CliRunner

    from wikihowagent.evaluation.command import evaluate

    app = typer.Typer()
    app.command("evaluate")(evaluate)
    app.command("other")(lambda: None)
    res = CliRunner().invoke(app, ["evaluate", str(tmp_path / "missing"), "--no-judge"])
    assert res.exit_code == 2 and "no such run directory or file" in res.output
    res = CliRunner().invoke(app, ["evaluate", str(FIX / "run_small"), "--compat", "nope"])
    assert res.exit_code == 2 and "--compat" in res.output
    bad = tmp_path / "r.json"
    bad.write_text("[]")
    res = CliRunner().invoke(app, ["evaluate", str(FIX / "run_small"), "--rubrics", str(bad)])
    assert res.exit_code == 2 and "expected a JSON object keyed by metric name" in res.output
    sweep = tmp_path / "sweep"  # a sweep directory whose sweep.json is damaged: one line, no traceback
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{not json")
    res = CliRunner().invoke(app, ["evaluate", str(sweep), "--no-judge"])
    assert res.exit_code == 2 and "sweep.json: not a sweep file" in res.output, res.output


def test_cli_paper_mode_latest_run_outputs_in_run_dir(tmp_path):
    import typer
    from typer.testing import CliRunner

    from wikihowagent.evaluation.command import evaluate

    app = typer.Typer()
    app.command("evaluate")(evaluate)
    app.command("other")(lambda: None)
    runs = tmp_path / "runs"
    shutil.copytree(FIX / "run_small", runs / "run_small")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"runs_dir: {runs}\n")
    metrics = "Question Ratio,Completion,Diversity,BLEU,METEOR,ROUGE"
    res = CliRunner().invoke(
        app, ["evaluate", "--config", str(cfg), "--compat", "paper", "--no-judge", "--metrics", metrics, "--no-figures"]
    )
    assert res.exit_code == 0, res.output
    run = runs / "run_small"
    recs = _lines(run / "scores-paper.jsonl")
    assert len(recs) == 3 and all(r["mode"] == "paper" for r in recs) and not (run / "scores.jsonl").exists()
    assert recs[0]["metrics"]["Question Ratio"] == 0.2
    md = (run / "summary.md").read_text()
    assert "ROUGE (%)" in md and "ROUGE-1" not in md
    # a second invocation has nothing left to do
    res = CliRunner().invoke(
        app, ["evaluate", str(run), "--compat", "paper", "--no-judge", "--metrics", metrics, "--no-figures"]
    )
    assert res.exit_code == 0 and "0 scored, 3 already scored" in res.output


# ------------------------------------------------------------------- review fixes: judge, re-judge, streaming


def test_domain_skips_the_root_categories():
    base = {"conversation_id": "a", "tutorial": {"title": "t", "steps": ["s"]}, "conversation": ["Teacher: hi"]}
    # The paper's domain (wikihowagent/data/domains.csv) of the breadcrumb below the root; categories[1] when unmapped.
    for cats, want in (
        (["Categories", "Food and Entertaining", "Cooking"], "Food & Cooking"),
        (["WikiHow", "Travel"], "Travel & Leisure"),
        (["Health"], "Health"),
        ([], ""),
        (None, ""),
        (["Categories", "Hobbies", "Knots"], "Hobbies"),
    ):
        assert to_conversation({**base, "categories": cats}, "r", "w").domain == want
    assert to_conversation({**base, "domain": "Pets", "categories": ["wikihow", "Travel"]}, "r", "w").domain == "Pets"


def _structured_model(fail):
    """A chat model whose structured-output runnable raises `fail()`; its text replies are valid scores."""
    from langchain_core.runnables import RunnableLambda

    class Model(ScriptedChatModel):
        def with_structured_output(self, schema, **kw):
            def boom(_p):
                raise fail()

            return RunnableLambda(boom)

    return Model(script=lambda p: json.dumps({n: 4 for n in RUBRIC_NAMES}), prompts=[])


@pytest.mark.parametrize(
    "make_exc",
    [
        lambda: TimeoutError("timed out"),
        lambda: ConnectionError("connection reset by peer"),
        lambda: type("InternalServerError", (Exception,), {"status_code": 503})("server overloaded"),
    ],
)
def test_judge_transport_error_in_structured_mode_is_a_backend_error(make_exc):
    from wikihowagent.judge.rubric_judge import JudgeBackendError

    llm = _structured_model(make_exc)
    judge = Judge(llm, RUBRICS, retries=0, concurrency=2)
    with pytest.raises(JudgeBackendError, match="^evaluator call failed: "):
        asyncio.run(judge.judge(fixture_convs("run_small")[0]))
    assert judge.structured is True and judge.fallback_note is None  # the schema is not blamed
    assert llm.prompts == []  # no silent text call either


@pytest.mark.parametrize(
    "make_exc",
    [
        lambda: type("BadRequestError", (Exception,), {"status_code": 400})("invalid request"),
        lambda: type("APIStatusError", (Exception,), {"status_code": 422})("unprocessable"),
        lambda: NotImplementedError(),
        lambda: RuntimeError("failed to parse grammar"),
    ],
)
def test_judge_schema_rejection_switches_to_text_once_for_concurrent_calls(make_exc):
    llm = _structured_model(make_exc)
    judge = Judge(llm, RUBRICS, retries=0, concurrency=4)

    async def many():
        return await asyncio.gather(*(judge.judge(c) for c in fixture_convs("run_small") * 3))

    results = asyncio.run(many())
    assert all(not r.failures and r.scores["Clarity"] == 4 for r in results)
    assert judge.structured is False and "parsed from text" in judge.fallback_note
    assert len(llm.prompts) == 2 * 9  # every prompt answered once, as text


def _judges_by_spec(scores: dict[str, int], made: list[str]):
    def make(spec):
        made.append(spec)
        return ScriptedChatModel(
            script=lambda p: json.dumps({n: scores[spec] for n in RUBRIC_NAMES + ["Patience"]}), prompts=[]
        )

    return make


def test_rescoring_with_another_judge_rejudges_and_reuses_metrics(tmp_path):
    from wikihowagent.runs import read_scores

    run = tmp_path / "run"
    shutil.copytree(FIX / "run_small", run)
    src = resolve_inputs([run], tmp_path)[0]
    out = run / "scores.jsonl"
    made: list[str] = []
    make = _judges_by_spec({"A": 5, "B": 2}, made)

    def evaluation(spec, rubrics=RUBRICS):
        opts = EvalOptions(judge=True, chunk=2, asked=ScoringRequest(evaluator=spec, retries=0))
        return Evaluation(opts, NO_EMBED, list(rubrics), rubrics, make, warn=lambda m: None)

    ev = evaluation("A")
    stats = ev.run_source(src, out)
    assert (stats.scored, stats.rejudged_evaluator) == (3, 0)
    bleu = read_scores(out)["c1"].metrics[M.BLEU]
    ev = evaluation("B")
    ev.scorers.score = lambda convs: pytest.fail("computational metrics are reused, not recomputed")
    stats = ev.run_source(src, out)
    assert (stats.scored, stats.already, stats.rejudged_evaluator) == (3, 0, 3)
    final = read_scores(out)
    assert all(r.evaluator == "B" and r.metrics["Clarity"] == 2 for r in final.values())
    assert final["c1"].metrics[M.BLEU] == bleu
    s = summarize([load_run_scores("run", "run", out)], RUBRIC_NAMES)
    assert s.table[0]["Clarity"][0] == pytest.approx(2.0) and s.table[0]["Truthfulness"][0] == pytest.approx(2.0)
    # the same judge again: nothing to do
    stats = evaluation("B").run_source(src, out)
    assert (stats.scored, stats.already, stats.rejudged_evaluator) == (0, 3, 0)
    assert made == ["A", "B"]  # the third pass had nothing to judge: no model made

    # another rubric file (other rubric names): the old rubric scores are dropped and the new ones judged
    from dataclasses import replace

    other = {"Patience": replace(RUBRICS["Clarity"], name="Patience")}
    stats = evaluation("B", other).run_source(src, out)
    assert (stats.scored, stats.rejudged_rubrics, stats.rejudged_evaluator) == (3, 3, 0)
    rec = read_scores(out)["c2"]
    assert rec.metrics["Patience"] == 2 and "Clarity" not in rec.metrics and M.BLEU in rec.metrics
    assert set(rec.judge.raw) == {"conversation"} and rec.judge.failures == []
    assert evaluation("B", other).run_source(src, out).already == 3
    # a --metrics subset of the same rubric file reuses the scores
    opts = EvalOptions(judge=True, chunk=2, asked=ScoringRequest(evaluator="B", retries=0))
    assert Evaluation(opts, [], ["Patience"], other, make, warn=lambda m: None).run_source(src, out).already == 3


def test_cli_rescoring_with_another_judge_says_so(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    scores = {"judge-a": 5, "judge-b": 2}
    app = evaluate_app(
        monkeypatch,
        lambda spec, *a, **k: ScriptedChatModel(
            script=lambda p: json.dumps({n: scores[spec] for n in RUBRIC_NAMES}), prompts=[]
        ),
    )
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    args = ["evaluate", str(run), "--metrics", "Question Ratio,rubric", "--no-figures"]
    res = CliRunner().invoke(app, args + ["--evaluator", "judge-a"])
    assert res.exit_code == 0, res.output
    assert "5.00 ± 0.00" in (run / "summary.md").read_text() and "re-judged" not in res.output
    res = CliRunner().invoke(app, args + ["--evaluator", "judge-b"])
    assert res.exit_code == 0, res.output
    assert "run_small: 3 conversations re-judged because the evaluator changed (now judge-b)" in res.output
    md = (run / "summary.md").read_text()
    assert "2.00 ± 0.00" in md and "5.00" not in md


def test_slow_judge_call_does_not_hold_up_the_next_chunks(tmp_path):
    """Judge calls stream across chunks: a slow call for c1 (chunk 1) lets c2 and c3 (chunks 2, 3) be
    scored and written first; each record is appended as soon as its own judge calls finish."""
    from langchain_core.messages import BaseMessage

    class SlowOnSalt(ScriptedChatModel):
        async def _agenerate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kw):
            if any("Color Salt" in str(m.content) for m in messages):
                await asyncio.sleep(0.5)
            return self._reply(messages)

    run = tmp_path / "run"
    shutil.copytree(FIX / "run_small", run)
    src = resolve_inputs([run], tmp_path)[0]
    out = run / "scores.jsonl"
    opts = EvalOptions(judge=True, chunk=1, asked=ScoringRequest(evaluator="slow", retries=0, concurrency=4))
    make = lambda spec: SlowOnSalt(script=lambda p: json.dumps({n: 3 for n in RUBRIC_NAMES}), prompts=[])  # noqa: E731
    ev = Evaluation(opts, [M.QUESTION], RUBRIC_NAMES, RUBRICS, make, warn=lambda m: None)
    progress: list[int] = []
    try:
        stats = ev.run_source(src, out, progress=progress.append)
    finally:
        ev.close()
    assert stats.scored == 3 and stats.judge_failures == 0
    assert [r["conversation_id"] for r in _lines(out)] == ["c2", "c3", "c1"]
    assert all(n > 0 for n in progress) and sum(progress) == src.n_seen


def test_unreachable_judge_mid_stream_stops_and_the_rerun_resumes(tmp_path):
    from wikihowagent.judge.rubric_judge import JudgeBackendError

    run = tmp_path / "run"
    shutil.copytree(FIX / "run_small", run)
    src = resolve_inputs([run], tmp_path)[0]
    out = run / "scores.jsonl"
    down = {"on": True}

    def script(p):
        if down["on"] and "Water a Plant" in p:
            raise ConnectionError("connection refused")
        return json.dumps({n: 4 for n in RUBRIC_NAMES})

    opts = EvalOptions(judge=True, chunk=1, asked=ScoringRequest(evaluator="x", retries=0))
    ev = Evaluation(
        opts,
        [M.QUESTION],
        RUBRIC_NAMES,
        RUBRICS,
        lambda spec: ScriptedChatModel(script=script, prompts=[]),
        warn=lambda m: None,
    )
    try:
        with pytest.raises(JudgeBackendError, match="connection refused"):
            ev.run_source(src, out)
        done = [r["conversation_id"] for r in _lines(out)]
        assert "c1" in done and "c2" not in done
        down["on"] = False
        stats = ev.run_source(src, out)
    finally:
        ev.close()
    assert stats.already == len(done) and stats.scored == 3 - len(done)
    from wikihowagent.runs import read_scores

    assert sorted(read_scores(out)) == ["c1", "c2", "c3"]


def test_second_evaluate_on_the_same_scores_file_is_refused(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from wikihowagent.jsonlio import dir_lock

    app = evaluate_app(monkeypatch, lambda *a, **k: None)
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    with dir_lock(run, name=".scores.jsonl.lock"):  # as if another evaluate were scoring this run
        res = CliRunner().invoke(app, ["evaluate", str(run), "--no-judge", "--metrics", "Question Ratio"])
    assert res.exit_code == 2
    assert "another evaluate is running" in res.output.replace("\n", " ")
    assert not (run / "scores.jsonl").exists()


def test_same_rubric_names_with_other_definitions_are_rejudged(tmp_path):
    """The rubric set's hash is recorded with the scores: editing a rubric's text re-judges, as another file does."""
    from dataclasses import replace

    from wikihowagent.runs import read_scores

    run = tmp_path / "run"
    shutil.copytree(FIX / "run_small", run)
    src = resolve_inputs([run], tmp_path)[0]
    out = run / "scores.jsonl"
    make = _judges_by_spec({"A": 4}, [])
    edited = {**RUBRICS, "Clarity": replace(RUBRICS["Clarity"], question=RUBRICS["Clarity"].question + " Be strict.")}

    def evaluation(rubrics):
        opts = EvalOptions(judge=True, chunk=2, asked=ScoringRequest(evaluator="A", retries=0))
        return Evaluation(opts, NO_EMBED, list(rubrics), rubrics, make, warn=lambda m: None)

    assert evaluation(RUBRICS).run_source(src, out).scored == 3
    assert {r.judge.rubrics_sha256 for r in read_scores(out).values()} == {rubrics_sha256(RUBRICS)}
    assert evaluation(RUBRICS).run_source(src, out).already == 3  # the same definitions: nothing to do
    stats = evaluation(edited).run_source(src, out)
    assert (stats.scored, stats.rejudged_rubrics) == (3, 3)
    assert (
        {r.judge.rubrics_sha256 for r in read_scores(out).values()}
        == {rubrics_sha256(edited)}
        != {rubrics_sha256(RUBRICS)}
    )
