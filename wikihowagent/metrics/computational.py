"""Computational metrics (offline). Definitions: docs/methodology/metrics.md.

Two modes:
- "default": the correct definitions (word-level BLEU, ROUGE-1/2/L, real BERTScore, chunked embeddings).
- "paper": the released code's definitions, reproduced exactly so numbers compare with the paper.

Scorers are created once per process (`Scorers`), and `Scorers.score` takes a batch of conversations so
that every text of the batch is embedded in one pass (deduplicated, sorted by length, batched).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, get_args

from wikihowagent.records import CAL_SUFFIX, ESTIMATE_NAME, RUBRIC_SCALE, Conversation
from wikihowagent.registry import Registry

from . import coverage, posttest
from .encoder import (  # noqa: F401  (re-exported: the metrics' public names)
    DEVICES,
    MetricError,
    MiniLM,
    bertscore_f1,
    minilm_path,
    one_cpu_thread,
    pooled_cosine,
    resolve_device,
    sentences,
)
from .posttest import (  # noqa: F401
    DETAIL_GAIN,
    DETAIL_RECALL,
    EXTRANEOUS,
    LEARNING_GAIN,
    LIKELIHOOD_GAIN,
    ORDER,
    POSTTEST_METRICS,
    STEP_RECALL,
)
from .rouge import CachedStemmer, lcs_length, rouge_l, rouge_n, rouge_stemmer, rouge_tokens  # noqa: F401  (re-exported)

# Metric names (keys of ScoreRecord.metrics).
QUESTION = "Question Ratio"
COMPLETION = "Completion"
DIVERSITY = "Diversity"
BLEU = "BLEU"
METEOR = "METEOR"
ROUGE = "ROUGE"  # paper mode: ROUGE-1 F
ROUGE1, ROUGE2, ROUGEL = "ROUGE-1", "ROUGE-2", "ROUGE-L"
BERTSCORE = "BERTScore"
EMBEDDING_COSINE = "Embedding Cosine"
STEP_COVERAGE = "Step Coverage"  # metrics/coverage.py
ECHO_RATE = "Echo Rate"
WORDS = (
    "Words"  # conversation length: the trivial baseline every metric is compared with (align, judge-check --metrics)
)
# The learner's post-test (metrics/posttest.py): default mode only, None where no post-test was taken.


WORDNET_HINT = (
    "METEOR needs WordNet (nltk's wordnet corpus), which is not installed: in a clone run `sudo "
    "scripts/setup_nltk_data.sh .venv` (Debian's wordnet-base); elsewhere put WordNet 3.0 in a folder nltk "
    "searches (NLTK_DATA, ~/nltk_data; docs: Getting started); or leave METEOR out with --metrics"
)


# --------------------------------------------------------------------------------------------------
# Which text is compared with which
# --------------------------------------------------------------------------------------------------


def reference_text(conv: Conversation) -> str:
    """The tutorial: method title + steps, one per line (both modes, as the released code)."""
    lines = ([conv.tutorial_title] if conv.tutorial_title else []) + list(conv.steps)
    return "\n".join(lines)


def teacher_messages(conv: Conversation) -> list[str]:
    """Default hypothesis: the teacher's generated turns; the fixed BEGIN/FINISHED texts are excluded."""
    return [
        m.text for m in conv.messages if m.role == "teacher" and m.kind not in ("begin", "finish") and m.text.strip()
    ]


def paper_teacher_text(conv: Conversation) -> str:
    """Paper hypothesis: every line containing "Teacher:" (prefix included), newline-joined."""
    return "\n".join(line for line in conv.lines if "Teacher:" in line)


# --------------------------------------------------------------------------------------------------
# Conversation-level metrics (no reference)
# --------------------------------------------------------------------------------------------------

_FINISHED_RE = re.compile(r"\bFINISHED\b")
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*")


def question_ratio(conv: Conversation) -> float | None:
    """Share of the learner's teaching-phase turns that contain '?'.

    Excluded: the learner's reply to the fixed BEGIN message and to the fixed FINISHED message (its
    prompt tells it to acknowledge / thank without asking), so they carry no engagement signal.
    """
    learner = []
    prev_teacher_kind = None
    for m in conv.messages:
        if m.role == "teacher":
            prev_teacher_kind = m.kind
        elif m.role == "learner":
            if prev_teacher_kind not in ("begin", "finish"):
                learner.append(m.text)
    if not learner:
        return None
    return sum("?" in t for t in learner) / len(learner)


def completion(conv: Conversation) -> float:
    """1 if the conversation reached the end of the tutorial, else 0.

    Structured records: their `stop_reason`/`finished`; paper records: a teacher message with the token.
    """
    if conv.completed is not None:
        return 1.0 if conv.completed else 0.0
    return 1.0 if any(m.role == "teacher" and _FINISHED_RE.search(m.text) for m in conv.messages) else 0.0


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text)]


def distinct_bigram_ratio(token_lists: Iterable[Sequence[Any]]) -> float | None:
    grams: list[tuple[Any, Any]] = []
    for toks in token_lists:
        grams.extend(zip(toks, toks[1:], strict=False))
    if not grams:
        return None
    return len(set(grams)) / len(grams)


def word_count(conv: Conversation) -> float:
    """Words of every generated message (teacher and learner; the fixed BEGIN/FINISHED texts left out): the
    conversation's length, the baseline a quality metric has to beat (longer lessons tend to look better)."""
    return float(sum(len(words(m.text)) for m in conv.messages if m.kind not in ("begin", "finish")))


def diversity(conv: Conversation) -> float | None:
    """Distinct word bigrams / all word bigrams over every generated message (teacher and learner).

    Lower-cased word tokens; bigrams do not cross message boundaries; fixed BEGIN/FINISHED texts and the
    role prefixes are not generated text and are left out.
    """
    return distinct_bigram_ratio(words(m.text) for m in conv.messages if m.kind not in ("begin", "finish"))


# Paper mode: the released code, line for line.


def paper_question_ratio(conv: Conversation) -> float:
    learner = [line for line in conv.lines if line.startswith("Learner:")]
    if not learner:
        return 0.0
    return round(sum("?" in x for x in learner) / len(learner), 4)


def paper_completion(conv: Conversation) -> float:
    return 1.0 if any("FINISHED" in x or "The tutorial is now complete" in x for x in conv.lines) else 0.0


def paper_diversity(conv: Conversation) -> float:
    grams: list[tuple[str, str]] = []
    for line in conv.lines:
        w = line.split()
        grams.extend(zip(w, w[1:], strict=False))
    return round(len(set(grams)) / max(1, len(grams)), 4)


# --------------------------------------------------------------------------------------------------
# BLEU
# --------------------------------------------------------------------------------------------------


def nmt_bleu(reference_corpus: list[list[list[str]]], translation_corpus: list[list[str]], max_order: int = 4) -> float:
    """Corpus BLEU as Hugging Face `evaluate`'s "bleu" computes it (tensorflow/nmt, no smoothing)."""
    matches = [0] * max_order
    possible = [0] * max_order
    ref_len = trans_len = 0
    for refs, hyp in zip(reference_corpus, translation_corpus, strict=True):
        ref_len += min(len(r) for r in refs)
        trans_len += len(hyp)
        merged: Counter[tuple[str, ...]] = Counter()
        for r in refs:
            merged |= _ngram_counts(r, max_order)
        overlap = _ngram_counts(hyp, max_order) & merged
        for g, c in overlap.items():
            matches[len(g) - 1] += c
        for n in range(1, max_order + 1):
            if len(hyp) - n + 1 > 0:
                possible[n - 1] += len(hyp) - n + 1
    precisions = [matches[i] / possible[i] if possible[i] > 0 else 0.0 for i in range(max_order)]
    if min(precisions) > 0:
        geo = math.exp(sum(math.log(p) for p in precisions) / max_order)
    else:
        geo = 0.0
    ratio = trans_len / ref_len if ref_len else 0.0
    if ratio > 1.0:
        bp = 1.0
    elif ratio == 0.0:
        bp = 0.0
    else:
        bp = math.exp(1 - 1.0 / ratio)
    return geo * bp


def _ngram_counts(tokens: Sequence[str], max_order: int) -> Counter[tuple[str, ...]]:
    c: Counter[tuple[str, ...]] = Counter()
    toks = list(tokens)
    for n in range(1, max_order + 1):
        c.update(zip(*(toks[i:] for i in range(n)), strict=False))
    return c


@lru_cache(maxsize=1)
def _tok13a():
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def paper_bleu(reference: str, generated: str) -> float:
    """The released code's BLEU: it passed two strings where lists were expected, so HF `evaluate` saw
    one "sentence" per character. Reproduced: the characters of each text are joined with spaces and
    13a-tokenised (as `evaluate` does), then nmt BLEU-4 without smoothing; rounded to 4 decimals."""
    tok = _tok13a()
    if len(reference) == len(generated):  # its corpus-level branch: one character per segment
        refs = [[tok(c).split()] for c in reference]
        hyps = [tok(c).split() for c in generated]
        return round(nmt_bleu(refs, hyps), 4)
    ref = tok(" ".join(reference)).split()
    hyp = tok(" ".join(generated)).split()
    return round(nmt_bleu([[ref]], [hyp]), 4)


# --------------------------------------------------------------------------------------------------
# METEOR (nltk, real WordNet)
# --------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _word_tokenizer():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def meteor_tokens(text: str) -> list[str]:
    """nltk's Treebank-style word tokenizer applied per sentence (sentences split at . ! ? + space and at
    newlines: nltk's `word_tokenize` without its punkt model, which cannot be downloaded here)."""
    tok = _word_tokenizer()
    out: list[str] = []
    for s in sentences(text):
        out.extend(tok.tokenize(s))
    return out


class _CachedWordNet:
    """WordNet with memoised `synsets(word)`: METEOR asks for the same words over and over."""

    def __init__(self, wn: Any):
        self._wn = wn
        self._memo: dict[str, list[Any]] = {}

    def synsets(self, word: str, *args: Any, **kwargs: Any) -> list[Any]:
        if args or kwargs:
            return self._wn.synsets(word, *args, **kwargs)
        s = self._memo.get(word)
        if s is None:
            s = self._memo[word] = self._wn.synsets(word)
        return s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wn, name)


@lru_cache(maxsize=1)
def load_wordnet() -> _CachedWordNet:
    """English WordNet from the project's setup (never nltk.download). Raises MetricError with the fix.

    nltk's own loader also maps every synset to the numbering of the Open Multilingual WordNet, which only its
    other languages read; this reader skips that (two thirds of the load time; the English synsets are the same).
    The files read once from start to end at load (the lemma indexes, the exception lists, the lexicographer
    names) are read as plain text files when WordNet is a folder, not through nltk's seekable stream reader,
    which reads them a line at a time in Python (most of the rest); the same lines, so the same WordNet."""
    import warnings

    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.data import FileSystemPathPointer

    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            return None  # the mapping to the multilingual WordNet's synsets: not used in English

        def open(self, fileid: str) -> Any:
            whole = fileid.startswith("index.") and fileid != "index.sense" or fileid.endswith(".exc")
            if (whole or fileid == "lexnames") and isinstance(self._root, FileSystemPathPointer):
                return open(os.path.join(self._root.path, fileid), encoding=self._encoding)  # noqa: SIM115
            return super().open(fileid)

    try:
        try:
            root = nltk.data.find("corpora/wordnet")
        except LookupError:
            root = nltk.data.find("corpora/wordnet.zip/wordnet/")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "the multilingual functions are not available"
            wordnet = EnglishWordNet(root, None)
        wordnet.synsets("dog")
    except (LookupError, OSError):
        raise MetricError(WORDNET_HINT) from None
    return _CachedWordNet(wordnet)


@lru_cache(maxsize=1)
def _meteor_stemmer() -> CachedStemmer:
    from nltk.stem.porter import PorterStemmer

    return CachedStemmer(PorterStemmer())  # nltk's METEOR default


def meteor(ref_tokens: list[str], hyp_tokens: list[str]) -> float:
    from nltk.translate.meteor_score import single_meteor_score

    return float(single_meteor_score(ref_tokens, hyp_tokens, stemmer=_meteor_stemmer(), wordnet=load_wordnet()))


# --------------------------------------------------------------------------------------------------
# The registry: every computational metric of every mode, in scoring order
# --------------------------------------------------------------------------------------------------


@dataclass
class MetricInput:
    """What a per-conversation scorer sees: the conversation, its reference and hypothesis texts, and the
    Scorers (for shared, cached resources)."""

    conv: Conversation
    ref: str
    hyp: str
    scorers: Scorers
    _rouge: tuple[list[str], list[str]] | None = None

    def rouge_pair(self) -> tuple[list[str], list[str]]:
        """Stemmed ROUGE tokens of (reference, hypothesis), computed once for ROUGE-1/2/L."""
        if self._rouge is None:
            rt = self.scorers.cached(("rouge", self.ref), lambda: rouge_tokens(self.ref, stem=True))
            self._rouge = (rt, rouge_tokens(self.hyp, stem=True))
        return self._rouge


# the Scorers pass (a method of that name) that computes a batch metric: the embedding model's or the post-test's
EmbedBatch = Literal["embed_default", "embed_paper", "posttest"]


@dataclass(frozen=True)
class Metric:
    """One computational metric of one mode (`default` or `paper`, see docs/methodology/metrics.md).

    `score` computes it for one conversation; metrics with `batch` set are computed together for a chunk
    by that `Scorers` pass (the embedding model's forward passes). Values are fractions in [`low`, `high`]
    (`scale`; cosines, Kendall's tau and the post-test's gains, which are differences of two fractions, may be
    negative), shown as percentages in the summary; None = not computable."""

    name: str
    mode: Literal["default", "paper"]
    score: Callable[[MetricInput], float | None] | None = None
    batch: EmbedBatch | None = None
    needs_hypothesis: bool = False  # None when the conversation has no generated teacher text
    needs_wordnet: bool = False
    scale: Literal["fraction", "nats", "count"] = "fraction"  # nats: Likelihood Gain; count: Words (not percentages)
    low: float = 0.0  # the least value it can take: -1 for cosine similarities, Kendall's tau and the gains
    high: float = 1.0  # the most (the report's range check reads both: `value_range`)
    better: Literal["higher", "lower"] = "higher"  # which way is better (the report's ↑/↓ and best run)

    def __post_init__(self) -> None:
        if self.batch is not None and self.batch not in get_args(EmbedBatch):
            raise ValueError(
                f"metric {self.name!r}: unknown batch pass {self.batch!r} (one of {', '.join(get_args(EmbedBatch))})"
            )


def key(mode: str, name: str) -> str:
    """A metric's name in `REGISTRY`: "mode:name" (the two modes share names: BLEU, METEOR, ...)."""
    return f"{mode}:{name}"


def register(metric: Metric) -> Metric:
    """Add `metric` to `REGISTRY` (after the metrics of its mode): `evaluate` scores it, the tables and the report
    show it. Take it out again with `REGISTRY.remove(key(metric.mode, metric.name))`."""
    return REGISTRY.add(key(metric.mode, metric.name), metric)


# Every computational metric of every mode, in scoring order; a new one is one `Metric` line here (or `register`).
REGISTRY: Registry[Metric] = Registry("metric")
for _metric in (
    # default: the correct definitions
    Metric(QUESTION, "default", lambda x: question_ratio(x.conv)),
    Metric(COMPLETION, "default", lambda x: completion(x.conv)),
    Metric(DIVERSITY, "default", lambda x: diversity(x.conv)),
    Metric(
        BLEU,
        "default",
        lambda x: x.scorers.sacrebleu().sentence_score(x.hyp, [x.ref]).score / 100.0,
        needs_hypothesis=True,
    ),
    Metric(
        METEOR,
        "default",
        lambda x: meteor(x.scorers.cached(("meteor", x.ref), lambda: meteor_tokens(x.ref)), meteor_tokens(x.hyp)),
        needs_hypothesis=True,
        needs_wordnet=True,
    ),
    Metric(ROUGE1, "default", lambda x: rouge_n(*x.rouge_pair(), 1), needs_hypothesis=True),
    Metric(ROUGE2, "default", lambda x: rouge_n(*x.rouge_pair(), 2), needs_hypothesis=True),
    Metric(ROUGEL, "default", lambda x: rouge_l(*x.rouge_pair()), needs_hypothesis=True),
    Metric(BERTSCORE, "default", batch="embed_default", needs_hypothesis=True, low=-1.0),
    Metric(EMBEDDING_COSINE, "default", batch="embed_default", needs_hypothesis=True, low=-1.0),
    Metric(STEP_COVERAGE, "default", lambda x: coverage.step_coverage(x.conv)),
    Metric(ECHO_RATE, "default", lambda x: coverage.echo_rate(x.conv), better="lower"),  # echoing is not teaching
    Metric(STEP_RECALL, "default", batch="posttest"),
    Metric(ORDER, "default", batch="posttest", low=-1.0),  # Kendall's tau
    Metric(EXTRANEOUS, "default", batch="posttest", better="lower"),  # invented steps
    Metric(DETAIL_RECALL, "default", batch="posttest", needs_wordnet=True),
    Metric(LEARNING_GAIN, "default", batch="posttest", low=-1.0),  # post - pre Step Recall
    Metric(DETAIL_GAIN, "default", batch="posttest", needs_wordnet=True, low=-1.0),  # post - pre Detail Recall
    Metric(
        LIKELIHOOD_GAIN,
        "default",
        lambda x: posttest.likelihood_gain_of(x.conv),
        scale="nats",
        low=-1000.0,
        high=1000.0,
    ),  # nats per token, from the record's posttest.likelihood
    Metric(
        WORDS, "default", lambda x: word_count(x.conv), scale="count", high=1e9
    ),  # length: a baseline, not a quality
    # paper: the released code's definitions, reproduced exactly
    Metric(QUESTION, "paper", lambda x: paper_question_ratio(x.conv)),
    Metric(COMPLETION, "paper", lambda x: paper_completion(x.conv)),
    Metric(DIVERSITY, "paper", lambda x: paper_diversity(x.conv)),
    Metric(BLEU, "paper", lambda x: paper_bleu(x.ref, x.hyp)),
    Metric(METEOR, "paper", lambda x: round(meteor(meteor_tokens(x.ref), meteor_tokens(x.hyp)), 4), needs_wordnet=True),
    Metric(
        ROUGE, "paper", lambda x: round(rouge_n(rouge_tokens(x.ref, stem=False), rouge_tokens(x.hyp, stem=False), 1), 4)
    ),
    Metric(BERTSCORE, "paper", batch="embed_paper", low=-1.0),
):
    register(_metric)
# What each mode compares the reference (the tutorial) with.
HYPOTHESIS: dict[str, Callable[[Conversation], str]] = {
    "default": lambda c: "\n".join(teacher_messages(c)),
    "paper": paper_teacher_text,
}


# What follows reads the registry when called, so a metric registered at run time is everywhere.


def all_metrics() -> list[Metric]:
    """Every registered metric of both modes, in registration order."""
    return [m for _, m in REGISTRY.items()]


def metrics_of(mode: str) -> list[Metric]:
    return [m for m in all_metrics() if m.mode == mode]


def computational_metrics(mode: str) -> list[str]:
    return [m.name for m in metrics_of(mode)]


_names_memo: tuple[Registry[Metric], int, dict[str, frozenset[str]]] | None = None


def _names(what: str, keep: Callable[[Metric], bool]) -> frozenset[str]:
    """The names of the registered metrics `keep` accepts, remembered until the registry changes."""
    global _names_memo
    if _names_memo is None or _names_memo[0] is not REGISTRY or _names_memo[1] != REGISTRY.changes:
        _names_memo = (REGISTRY, REGISTRY.changes, {})
    memo = _names_memo[2]
    if what not in memo:
        memo[what] = frozenset(m.name for m in all_metrics() if keep(m))
    return memo[what]


def embedding_metrics() -> frozenset[str]:
    """The metrics computed by a batch pass (the encoder's): the post-test's included (step matching)."""
    return _names("embedding", lambda m: m.batch is not None)


def computational_names() -> frozenset[str]:
    """Every computational metric name of either mode: the other keys of a score record are rubric scores."""
    return _names("all", lambda m: True)


def percent_metrics() -> frozenset[str]:
    """The metrics whose values are fractions, shown as percentages."""
    return _names("percent", lambda m: m.scale == "fraction")


RUBRIC_RANGE = RUBRIC_SCALE  # a rubric score: a digit 1..5, or a mean of them (weighted, sampled)


def better(name: str) -> Literal["higher", "lower"]:
    """Which way metric `name` is better: the registry's `better` (Echo Rate and Extraneous: lower); a rubric
    score (and its calibrated column) or any other name: higher."""
    return next((m.better for m in all_metrics() if m.name == name), "higher")


def value_range(name: str, rubric_names: Iterable[str] = ()) -> tuple[float, float] | None:
    """The values metric `name` can take, from its registry entry: a computational metric's [low, high], a
    rubric's 1..5, as is a calibrated rubric's (`Clarity (cal.)`) and the people-calibrated estimate; None if the name is none of these (e.g. a
    column of a paper run file this project does not compute)."""
    entries = [m for m in all_metrics() if m.name == name]
    if entries:
        return (min(m.low for m in entries), max(m.high for m in entries))
    if name == ESTIMATE_NAME:  # `evaluate --people-estimate`: a predicted rating
        return RUBRIC_RANGE
    return RUBRIC_RANGE if name.removesuffix(CAL_SUFFIX) in set(rubric_names) else None


# --------------------------------------------------------------------------------------------------
# Batch scoring
# --------------------------------------------------------------------------------------------------


@dataclass
class ConvScores:
    metrics: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    posttest_matches: list[tuple[int, int, float]] | None = None  # metrics/posttest.py, for the report
    device: str = ""  # where the encoder computed this conversation's embedding metrics; "" = none computed


REF_ENCODINGS = 256  # tutorial chunks whose encodings a process keeps (about 0.4 MB each)


class Scorers:
    """Every computational scorer of a mode, created once per process; `score` handles a batch of conversations.
    `device`: where the metric encoders run (`resolve_device`: auto, cpu, cuda, mps), resolved here, so an
    absent device fails before any work."""

    def __init__(
        self, mode: str = "default", metrics: Iterable[str] | None = None, batch_size: int = 32, device: str = "cpu"
    ):
        self.mode = mode
        wanted = None if metrics is None else set(metrics)
        self.selected = [m for m in metrics_of(mode) if wanted is None or m.name in wanted]
        self.device = resolve_device(device) if any(m.batch for m in self.selected) else "cpu"
        self.metrics = [m.name for m in self.selected]
        self.batch_size = batch_size
        self._minilm: MiniLM | None = None
        self._bleu: Any = None
        if any(m.needs_wordnet for m in self.selected):
            load_wordnet()  # fail early with the fix, before any work
        self._ref_cache: dict[
            tuple[str, str], Any
        ] = {}  # (kind, reference text) -> prepared tokens (tutorials repeat across runs)
        self._ref_enc: OrderedDict[tuple[int, ...], tuple[Any, Any]] = OrderedDict()  # `ref_encodings`

    @property
    def minilm(self) -> MiniLM:
        if self._minilm is None:
            self._minilm = MiniLM(batch_size=self.batch_size, device=self.device)
        return self._minilm

    def sacrebleu(self) -> Any:
        if self._bleu is None:
            from sacrebleu.metrics import BLEU as SacreBLEU

            self._bleu = SacreBLEU(effective_order=True)
        return self._bleu

    def score(self, convs: list[Conversation]) -> list[ConvScores]:
        results = [ConvScores() for _ in convs]
        refs = [reference_text(c) for c in convs]
        hyps = [HYPOTHESIS[self.mode](c) for c in convs]
        per_conv = [m for m in self.selected if m.score is not None]
        guard = any(m.needs_hypothesis for m in metrics_of(self.mode))
        for c, res, ref, hyp in zip(convs, results, refs, hyps, strict=True):
            x = MetricInput(c, ref, hyp, self)
            empty = guard and not hyp.strip()
            for m in per_conv:
                res.metrics[m.name] = None if empty and m.needs_hypothesis else m.score(x)  # type: ignore[misc]  # per_conv holds only metrics whose score is set
            if empty:
                for m in self.selected:
                    if m.batch and m.batch != "posttest":  # the post-test does not read the teacher's text
                        res.metrics[m.name] = None
                res.notes.append("no generated teacher turn: overlap and similarity metrics not computable")
        passes = {"embed_default": self.embed_default, "embed_paper": self.embed_paper, "posttest": self.posttest}
        with one_cpu_thread(self.device):  # the encoder and the matching on one thread: the same bits on any machine
            for batch in dict.fromkeys(m.batch for m in self.selected if m.batch):
                passes[batch](convs, refs, hyps, results, {m.name for m in self.selected})
        if self._minilm is not None:  # the encoder ran for this batch (or an earlier one): say where
            names = {m.name for m in self.selected if m.batch}
            for res in results:
                if any(res.metrics.get(n) is not None for n in names):
                    res.device = self.device
        return results

    def embed_default(self, convs, refs, hyps, results, want) -> None:
        todo = [i for i, h in enumerate(hyps) if h.strip()]
        if not todo:
            return
        lm = self.minilm
        rchunks = {i: self.cached(("chunks", refs[i]), lambda i=i: lm.chunks(refs[i])) for i in todo}
        hchunks = {i: lm.chunks(hyps[i]) for i in todo}
        enc = self.ref_encodings({s for i in todo for s in rchunks[i]})
        enc.update(lm.encode([s for i in todo for s in hchunks[i] if s not in enc]))
        for i in todo:
            res = results[i]
            rc, hc = rchunks[i], hchunks[i]
            if len(rc) > 1 or len(hc) > 1:
                res.notes.append(
                    f"BERTScore/Embedding Cosine: tutorial in {len(rc)} chunk(s), teacher text in "
                    f"{len(hc)} chunk(s) of <= {lm.MAX_LEN} word pieces (no truncation)"
                )
            if BERTSCORE in want:
                res.metrics[BERTSCORE] = bertscore_f1([enc[s][0] for s in rc], [enc[s][0] for s in hc])
            if EMBEDDING_COSINE in want:
                res.metrics[EMBEDDING_COSINE] = pooled_cosine(
                    [(enc[s][1], len(s) + 2) for s in rc], [(enc[s][1], len(s) + 2) for s in hc]
                )

    def close(self) -> None:
        """Nothing to release (the interface of `workers.ScorerPool`, whose worker processes exit)."""

    def step_vectors(self, texts: Sequence[str]) -> Any:
        """Unit-length sentence embeddings (mean pooling, as sentence-transformers) of short texts, cached."""
        import torch

        lm = self.minilm
        vecs: dict[str, Any] = {t: self._ref_cache.get(("step", t)) for t in dict.fromkeys(texts)}  # None: to embed
        missing = [t for t, v in vecs.items() if v is None]
        if missing:
            ids = {t: tuple(i[: lm.MAX_LEN - 2]) for t, i in zip(missing, lm.ids(missing), strict=True)}
            enc = lm.encode(ids.values())
            for t in missing:
                vecs[t] = self.cached(("step", t), lambda t=t: torch.nn.functional.normalize(enc[ids[t]][1], dim=0))
        return torch.stack([vecs[t] for t in texts]) if texts else None

    def step_similarity(self, a: Sequence[str], b: Sequence[str]) -> Any:
        """Cosine similarity matrix (len(a) x len(b)) of two lists of steps, as a numpy array."""
        import numpy as np

        if not a or not b:
            return np.zeros((len(a), len(b)))
        return (self.step_vectors(a) @ self.step_vectors(b).T).numpy()

    def posttest(self, convs, refs, hyps, results, want) -> None:
        wordnet = load_wordnet() if any(m.needs_wordnet for m in self.selected if m.name in want) else None
        tested = [i for i, c in enumerate(convs) if c.posttest is not None]
        texts = [
            s
            for i in tested
            for s in (
                *convs[i].steps,
                *convs[i].posttest.post.steps,
                *(convs[i].posttest.pre.steps if convs[i].posttest.pre else ()),
            )
        ]
        if texts:
            self.step_vectors(texts)  # one batched pass for the chunk
        for c, res in zip(convs, results, strict=True):
            values, notes, matches = posttest.posttest_scores(c, self.step_similarity, want, wordnet)
            res.metrics.update(values)
            res.notes.extend(notes)
            res.posttest_matches = matches

    def embed_paper(self, convs, refs, hyps, results, want) -> None:
        lm = self.minilm
        views = [(lm.truncated(r), lm.truncated(h)) for r, h in zip(refs, hyps, strict=True)]
        enc = lm.encode([s for (r, _), (h, _) in views for s in (r, h)])
        for res, ((r, rn), (h, hn)) in zip(results, views, strict=True):
            for what, n in (("tutorial", rn), ("teacher text", hn)):
                if n > lm.MAX_LEN - 2:
                    res.notes.append(
                        f"BERTScore (paper): {what} truncated to {lm.MAX_LEN} of {n + 2} word pieces, as the released code did"
                    )
            res.metrics[BERTSCORE] = round(pooled_cosine([(enc[r][1], 1)], [(enc[h][1], 1)]), 4)

    def ref_encodings(self, chunks: set[tuple[int, ...]]) -> dict[tuple[int, ...], tuple[Any, Any]]:
        """The encodings of the tutorials' chunks: each encoded once per process (a chunk's encoding does not depend
        on what it is encoded with, so a stored one is the same), the last REF_ENCODINGS kept."""
        memo = self._ref_enc
        missing = [s for s in chunks if s not in memo]
        for s, v in self.minilm.encode(missing).items():
            memo[s] = v
        for s in chunks:
            memo.move_to_end(s)
        while len(memo) > REF_ENCODINGS:
            memo.popitem(last=False)
        return {s: memo[s] for s in chunks}

    def cached(self, key: tuple[str, str], make: Any) -> Any:
        v = self._ref_cache.get(key)
        if v is None:
            if len(self._ref_cache) > 20_000:
                self._ref_cache.clear()
            v = self._ref_cache[key] = make()
        return v
