"""Counterfactual tutorials: procedures the learner model cannot already know (the post-test validity set).

A learning measure must be checked on material the learner cannot recall from its pre-training (a 1.5B
model recalls ~70 % of a common procedure's steps from the title alone, BENCHMARKS.md "post-test"). This
module rewrites an article, deterministically for a seed, with four transforms (`TRANSFORMS`):

- ``names``: every physical thing the article names (the WordNet "things" of the post-test's Detail Recall:
  artifacts, food, substances, body parts, organisms, natural objects; lexicon.py) becomes an
  invented word, the same word everywhere in the article, its title included ("How to Hard Boil Eggs" ->
  "How to Hard Boil Vrelkos"). A sentence's first word is left alone (the imperative verb: "Cover the eggs").
  Invented words are built from syllables by the seeded generator and are not English words (WordNet knows
  none of them);
- ``quantities``: every number (digits, or the words one to twelve) is multiplied by one factor per article
  (`FACTORS`, drawn by the seed; ranges stay ranges: "10 to 12 minutes" -> "40 to 48 minutes");
- ``order``: each method's steps are permuted by a seeded permutation that is never the identity (an
  arbitrary order, fixed by the tutorial and the seed);
- ``contradiction``: one step of each method is turned against common practice: every word of it that
  WordNet gives an antonym for is swapped ("Cover the eggs with cold water" -> "Uncover the ... with hot
  ..."); the step with the most such words is chosen (ties broken by the seed). A method where no step has
  such a word gets its chosen step negated ("Do not ...") instead, and that is recorded.

A transform with nothing to change in a tutorial (no number, no named thing) is *said*: it is listed in the
output's ``counterfactual.not_applied`` with the reason, and `Transformed.notes` carries a one-line note
(scripts/make_validity_set.py prints it; `--strict` makes it an error). A method with fewer than
`MIN_STEPS` or more than `MAX_STEPS` steps is not a validity tutorial: `ValiditySetError`, one line naming the
file and the method. The article's Q&A, tips, warnings, references and things-you'll-need
are dropped (they would name the original things).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wikihowagent.errors import WikihowagentError
from wikihowagent.lexicon import noun_lemma, thing_lemma

TRANSFORMS = ("names", "quantities", "order", "contradiction", "title")
MIN_STEPS, MAX_STEPS = 2, 30  # a validity tutorial: 2..30 steps (the post-test asks for exactly N lines)
FACTORS = (3, 4, 6, 7)  # quantities: multiplied by one of these per article
_ONSETS = (
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "gl",
    "kr",
    "pl",
    "sk",
    "tr",
    "vr",
    "zh",
)
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ou")
_CODAS = ("", "", "", "n", "r", "l", "k", "sh")
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_NUMBER = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)|\b(one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve)\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
_METHOD_PREFIX = re.compile(r"^(?:Part|Method) \d+ of \d+:\s*")


def _sentence_start(text: str, start: int) -> bool:
    """Whether the word at `start` begins a sentence: nothing before it, or ".", "!", "?", ":" or ";" and
    whitespace, or "(" (and any whitespace) right before it (as the regex `(?:^|[.!?:;]\\s+|\\(\\s*)$` on
    `text[:start]`, whose `$` also matches before a last newline). Looks back only over the whitespace before
    the word, so a 1 MB step is read in linear time (that regex over `text[:start]` for every word was
    quadratic)."""

    def ends_there(end: int) -> bool:
        i = end
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if i == end:
            return end == 0 or text[end - 1] == "("
        return i > 0 and text[i - 1] in ".!?:;("

    return ends_there(start) or (start > 0 and text[start - 1] == "\n" and ends_there(start - 1))


# Never renamed or swapped: words whose WordNet noun or antonym sense is not what a procedure means by them.
_KEEP = frozenset(
    "how to a an the of and or for with in on at by it its your you this that these those then "
    "do not no yes if is are be can will may should must one each every all some any more most "
    "less least very well just also only than so as up down out over under into onto from "
    "step steps method part time way thing things side end top bottom front back let make take "
    "get give set put go keep have help begin come being someone same best safe".split()
)
_NUMBER_NAMES = frozenset(_NUMBER_WORDS)


class ValiditySetError(WikihowagentError, ValueError):
    """A tutorial that cannot be a validity tutorial, or a transform that found nothing (with --strict)."""


@dataclass
class Transformed:
    """One transformed article and what was done to it."""

    article: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # one line per transform not applied (said, not silent)


def _rng(seed: int, *parts: str) -> random.Random:
    return random.Random("\x00".join((str(seed), *parts)))


def invented_words(rng: random.Random, n: int, wn: Any, taken: Iterable[str] = ()) -> list[str]:
    """`n` distinct invented words (2-3 syllables), none an English word WordNet knows, none in `taken`."""
    seen = {t.lower() for t in taken}
    out: list[str] = []
    while len(out) < n:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.choice((2, 2, 3))))
        word += rng.choice(_CODAS)
        if word in seen or wn.synsets(word) or wn._morphy(word, "n"):
            continue
        seen.add(word)
        out.append(word)
    return out


def _case_like(word: str, template: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if template[:1].isupper() else word


def thing_lemmas(texts: Sequence[str], wn: Any) -> list[str]:
    """The named things of `texts` (noun lemmas, in order of first appearance), sentence-initial words and
    `_KEEP` words excepted."""
    out: dict[str, None] = {}
    known: dict[str, str | None] = {}  # word -> its thing lemma or None: each word is looked up once
    for text in texts:
        for m in _WORD.finditer(text):
            w = m.group(0).lower()
            if w in _KEEP or _sentence_start(text, m.start()):
                continue
            if w not in known:
                lemma = thing_lemma(wn, w)
                ok = lemma and lemma not in _KEEP and lemma not in _NUMBER_NAMES and noun_dominant(wn, w)
                known[w] = lemma if ok else None
            found = known[w]
            if found:
                out.setdefault(found, None)
    return list(out)


def noun_dominant(wn: Any, word: str) -> bool:
    """`word` is used as a noun at least as often as as a verb, adjective or adverb (WordNet's SemCor
    counts of its base forms): "egg" yes, "keep", "cover", "safe" no."""

    def count(pos: str) -> int:
        bases = set(wn._morphy(word, pos))
        return sum(
            lemma.count()
            for synset in wn.synsets(word, pos)
            for lemma in synset.lemmas()
            if lemma.name().lower() in bases
        )

    return count("n") >= max(count(p) for p in ("v", "a", "s", "r"))


def rename(text: str, mapping: dict[str, str], wn: Any, keep_first: bool = True) -> str:
    """Replace each word whose noun lemma is in `mapping` (a plural gets an "s"), keeping its case; a
    sentence's first word is kept (`keep_first`), as `thing_lemmas` skipped it."""

    def sub(m: re.Match[str]) -> str:
        word = m.group(0)
        low = word.lower()
        if low in _KEEP or (keep_first and _sentence_start(text, m.start())):
            return word
        lemma = low if low in mapping else noun_lemma(wn, low)
        if lemma not in mapping:
            return word
        new = mapping[lemma] + ("" if low == lemma else "s")
        return _case_like(new, word)

    return _WORD.sub(sub, text)


def _format(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}".rstrip("0").rstrip(".")


def scale_numbers(text: str, factor: int) -> tuple[str, int]:
    """Every number of `text` (digits, or the words one..twelve) times `factor` -> (text, numbers changed)."""
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        value = float(m.group(1)) if m.group(1) else float(_NUMBER_WORDS[m.group(2).lower()])
        return _format(value * factor)

    return _NUMBER.sub(sub, text), count


def _antonym(wn: Any, word: str) -> str | None:
    """The antonym of `word` as written (its own lemma), from its most common adjective/adverb/verb sense."""
    if word in _KEEP:
        return None
    for pos in ("a", "s", "r", "v"):
        for synset in wn.synsets(word, pos)[:1]:
            for lemma in synset.lemmas():
                if lemma.name().lower() == word and lemma.antonyms():
                    return lemma.antonyms()[0].name().replace("_", " ")
    return None


def contradict(text: str, wn: Any) -> tuple[str, int]:
    """`text` with each word that has a WordNet antonym swapped for it -> (text, words swapped)."""
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        ant = _antonym(wn, m.group(0).lower())
        if ant is None:
            return m.group(0)
        count += 1
        return _case_like(ant, m.group(0))

    return _WORD.sub(sub, text), count


def negate(text: str) -> str:
    """The step's instruction turned into a prohibition: "Do not " + its first sentence, lower-cased."""
    return "Do not " + text[:1].lower() + text[1:]


_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


def _without_invisible(article: dict[str, Any]) -> dict[str, Any]:
    """The article with zero-width and direction characters removed from its title, introduction, method
    titles and steps: "so\u200bup" is "soup" to a reader, and must be to the renaming too."""

    def clean(v: Any) -> Any:
        return _INVISIBLE.sub("", v) if isinstance(v, str) else v

    return {
        **article,
        "title": clean(article["title"]),
        "introduction": clean(article.get("introduction", "")),
        "methods": [
            {**m, "title": clean(m["title"]), "steps": [clean(s) for s in m["steps"]]} for m in article["methods"]
        ],
    }


NAME_BYTES = 200  # a folder or file name's UTF-8 bytes at most (file systems allow 255)


def folder_name(text: str, default: str) -> str:
    """`text` (a title or a domain read from an article) as one folder name: path separators, the characters
    Windows refuses and control characters become "-", at most NAME_BYTES of UTF-8, never "", "." or ".."
    (`default` then), so a name read from a file cannot leave the output folder."""
    name = re.sub(r'[\\/:*?"<>|\x00-\x1f\x7f]', "-", text).strip()
    if len(name.encode("utf-8")) > NAME_BYTES:
        name = name.encode("utf-8")[:NAME_BYTES].decode("utf-8", "ignore").rstrip()
    return default if name.strip(".") == "" else name


def check_steps(where: str, method_title: str, n: int) -> None:
    """A validity tutorial has MIN_STEPS..MAX_STEPS steps; else one line naming the file and the method."""
    if not MIN_STEPS <= n <= MAX_STEPS:
        raise ValiditySetError(
            f"{where}: method '{method_title}' has {n} step{'s' * (n != 1)}: a validity "
            f"tutorial needs {MIN_STEPS} to {MAX_STEPS} steps"
        )


def _name_mapping(texts: list[str], rng: random.Random, wn: Any, skip: Callable[[str, str], None]) -> dict[str, str]:
    """The names transform: each object or tool name of the texts -> an invented word ({} and a skip note when
    there is none)."""
    lemmas = thing_lemmas(texts, wn)
    if not lemmas:
        skip("names", "no object or tool name to change")
        return {}
    return dict(zip(lemmas, invented_words(rng, len(lemmas), wn), strict=True))


def _contradict_one(steps: list[str], mrng: random.Random, wn: Any, info: dict[str, Any]) -> None:
    """The contradiction transform, in place: one step (of those with the most words that have an antonym)
    gets them swapped, or is negated when no word has one; `info` records which and how."""
    swapped = [contradict(s, wn) for s in steps]
    best = max(k for _, k in swapped)
    pick = mrng.choice([i for i, (_, k) in enumerate(swapped) if k == best])
    if best:
        steps[pick] = swapped[pick][0]
        info["contradicted_step"], info["contradiction"] = pick + 1, f"{best} words swapped for antonyms"
    else:
        steps[pick] = negate(steps[pick])
        info["contradicted_step"], info["contradiction"] = pick + 1, "negated (no word with an antonym)"


def _reorder(steps: list[str], mrng: random.Random, info: dict[str, Any]) -> list[str]:
    """The order transform: the steps shuffled (never left in order); `info["order"]` records the permutation."""
    perm = list(range(len(steps)))
    while perm == sorted(perm):
        mrng.shuffle(perm)
    info["order"] = [i + 1 for i in perm]  # the new step k is the original step order[k-1]
    return [steps[i] for i in perm]


def _method_title(title: str, opaque: list[str], k: int, mapping: dict[str, str], wn: Any) -> str:
    """Method `k`'s new title: an opaque one (its "Part i of n:" prefix kept) with the title transform, else renamed."""
    if opaque:
        prefix = _METHOD_PREFIX.match(title)
        return (prefix.group(0) if prefix else "") + f"The {opaque[1 + k]} Way"
    return rename(title, mapping, wn, keep_first=False) if mapping else title


def _new_article(
    article: dict[str, Any],
    title: str,
    intro: str,
    methods: list[dict[str, Any]],
    counterfactual: dict[str, Any],
    root: str,
) -> dict[str, Any]:
    """The transformed article in the corpus' layout, filed under `root`/<domain>/<title>/; `counterfactual`
    records what was done."""
    safe = folder_name(title, "untitled")
    categories = list(article.get("categories", []))
    domain = folder_name(categories[1], "Other") if len(categories) > 1 and isinstance(categories[1], str) else "Other"
    return {
        "title": title,
        "path": f"{root}/{domain}/{safe}/{safe}.json",
        "categories": categories,
        "introduction": intro,
        "methods": methods,
        "qa": [],
        "tips": [],
        "warnings": [],
        "references": [],
        "things_youll_need": [],
        "counterfactual": counterfactual,
    }


def transform_article(
    article: dict[str, Any],
    where: str,
    seed: int,
    wn: Any,
    transforms: Sequence[str] = TRANSFORMS,
    root: str = "data/validity/counterfactual",
) -> Transformed:
    """The counterfactual version of one (validated) article for `seed`; `where` names it in messages.
    Raises ValiditySetError for an unknown transform or a method outside MIN_STEPS..MAX_STEPS steps."""
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown:
        raise ValiditySetError(f"unknown transform {unknown[0]!r} (known: {', '.join(TRANSFORMS)})")
    article = _without_invisible(article)
    methods = article["methods"]
    for m in methods:
        check_steps(where, m["title"], len([s for s in m["steps"] if s.strip()]))
    title = article["title"]
    rng = _rng(seed, title)
    notes: list[str] = []
    not_applied: dict[str, str] = {}

    def skip(name: str, why: str, method: str | None = None) -> None:
        not_applied[name if method is None else f"{name}: {method}"] = why
        notes.append(
            f"{where}{'' if method is None else f' method {method!r}'}: transform '{name}' not applied ({why})"
        )

    all_texts = [title, article.get("introduction", "")] + [s for m in methods for s in m["steps"]]
    mapping = _name_mapping(all_texts, rng, wn, skip) if "names" in transforms else {}
    factor = rng.choice(FACTORS)

    def text_of(s: str) -> tuple[str, int]:
        s = rename(s, mapping, wn) if mapping else s
        return scale_numbers(s, factor) if "quantities" in transforms else (s, 0)

    new_title = rename(title, mapping, wn, keep_first=False) if mapping else title
    opaque: list[str] = []
    if "title" in transforms:
        opaque = [w.capitalize() for w in invented_words(rng, 1 + len(methods), wn, mapping.values())]
        new_title = f"How to Perform the {opaque[0]} Procedure"
    intro, n_numbers = text_of(article.get("introduction", ""))
    new_methods: list[dict[str, Any]] = []
    record_methods: list[dict[str, Any]] = []
    for m in methods:
        steps_numbers = [text_of(s) for s in m["steps"] if s.strip()]
        steps = [s for s, _ in steps_numbers]
        n_numbers += sum(k for _, k in steps_numbers)
        mrng = _rng(seed, title, m["title"])
        info: dict[str, Any] = {"title": m["title"]}
        if "contradiction" in transforms:
            _contradict_one(steps, mrng, wn, info)
        if "order" in transforms:
            steps = _reorder(steps, mrng, info)
        new_methods.append({"title": _method_title(m["title"], opaque, len(new_methods), mapping, wn), "steps": steps})
        record_methods.append(info)
    if "quantities" in transforms and not n_numbers:
        skip("quantities", "no quantity to change")
    done = {
        "source": article.get("path") or where,
        "seed": seed,
        "transforms": list(transforms),
        "names": mapping,
        "quantity_factor": factor if "quantities" in transforms and n_numbers else None,
        "methods": record_methods,
        "not_applied": not_applied,
    }
    return Transformed(_new_article(article, new_title, intro, new_methods, done, root), notes)
