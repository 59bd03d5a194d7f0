"""ROUGE's tokens (rouge-score's tokenizer with a cached Porter stemmer), ROUGE-N and ROUGE-L (exact LCS).

Shared by the overlap metrics (`computational.py`) and Step Coverage / Echo Rate (`coverage.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any


class CachedStemmer:
    """A Porter stemmer with a memo: same output as the wrapped stemmer, computed once per word."""

    def __init__(self, stemmer: Any):
        self._stemmer = stemmer
        self._memo: dict[str, str] = {}

    def stem(self, word: str) -> str:
        s = self._memo.get(word)
        if s is None:
            s = self._stemmer.stem(word)
            if len(self._memo) < 500_000:
                self._memo[word] = s
        return s


@lru_cache(maxsize=1)
def rouge_stemmer() -> CachedStemmer:
    from nltk.stem import porter

    return CachedStemmer(porter.PorterStemmer())  # what rouge-score's DefaultTokenizer uses


def rouge_tokens(text: str, stem: bool) -> list[str]:
    from rouge_score import tokenize

    return tokenize.tokenize(text, rouge_stemmer() if stem else None)


def _fmeasure(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def rouge_n(ref: Sequence[str], hyp: Sequence[str], n: int) -> float:
    rc = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
    hc = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
    rt, ht = sum(rc.values()), sum(hc.values())
    overlap = sum((rc & hc).values())
    return _fmeasure(overlap / max(ht, 1), overlap / max(rt, 1))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (Hyyrö's bit-parallel algorithm, exact)."""
    if not a or not b:
        return 0
    if len(a) > len(b):
        a, b = b, a
    masks: dict[str, int] = {}
    for i, x in enumerate(a):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for y in b:
        m = masks.get(y)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def rouge_l(ref: Sequence[str], hyp: Sequence[str]) -> float:
    if not ref or not hyp:
        return 0.0
    lcs = lcs_length(ref, hyp)
    return _fmeasure(lcs / len(hyp), lcs / len(ref))
