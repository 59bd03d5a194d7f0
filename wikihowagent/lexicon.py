"""WordNet word helpers shared by the post-test's Detail Recall (metrics/posttest.py) and the counterfactual
validity set (corpus/counterfactual.py): a word's noun base form, and whether it names a physical thing.
`wn`: the WordNet corpus reader (metrics.computational.load_wordnet())."""

from __future__ import annotations

from typing import Any

# WordNet categories of "named objects": the physical things a procedure handles.
THING_ROOTS = frozenset(
    {
        "artifact.n.01",
        "food.n.01",
        "food.n.02",
        "substance.n.01",
        "body_part.n.01",
        "organism.n.01",
        "natural_object.n.01",
    }
)
SENSES = 3  # a word is a thing if one of its 3 most common noun senses is


def noun_lemma(wn: Any, word: str) -> str | None:
    """The shortest noun base form WordNet knows ("eggs" -> "egg", "minutes" -> "minute"), else None."""
    forms = wn._morphy(word, "n") if word else []
    return min(forms, key=len) if forms else None


def thing_lemma(wn: Any, word: str) -> str | None:
    """The word's noun lemma if one of its most common noun senses is a physical thing (see THING_ROOTS)."""
    lemma = noun_lemma(wn, word)
    if lemma is None or len(lemma) < 3:
        return None
    for synset in wn.synsets(lemma, "n")[:SENSES]:
        if THING_ROOTS.intersection(s.name() for path in synset.hypernym_paths() for s in path):
            return lemma
    return None
