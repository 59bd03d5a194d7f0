#!/usr/bin/env python
"""Benchmark of the computational metrics of `wikihowagent evaluate` (no LLM judge).

    python -m benchmarks evaluate [--n 200] [--write-md]

The same N conversations (synthetic, deterministic, built from the bundled tutorials' real WikiHow steps)
are scored
  (a) the way the paper's released code did it: one conversation at a time, its scorers created anew for
      each conversation (SentenceTransformer, the ROUGE scorer; nltk METEOR, character BLEU), and
  (b) by `wikihowagent evaluate --compat paper`: the same definitions, scorers created once, texts
      embedded in length-sorted batches across conversations (one pass per chunk of 64 conversations),
      WordNet/stemmer look-ups memoised, duplicate texts embedded once.
(a) and (b) must give the same numbers: the script checks that before reporting. It also times
  (c) the default (correct) metrics: word BLEU, METEOR, ROUGE-1/2/L, real BERTScore over every chunk
      of the texts (no truncation) and the chunked embedding cosine.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time

from benchmarks.harness import Section, write_section
from wikihowagent.records import BEGIN_TEXT, FINISH_TEXT, Conversation, Turn


def turn(role: str, text: str, kind: str = "model") -> Turn:
    return Turn(role=role, text=text, kind=kind)


FILLERS = [
    "Take your time with this part, since it sets up everything that follows.",
    "Make sure you have everything within reach before you start.",
    "If something feels unclear, it is fine to go back and check the previous step.",
    "Many people find it easier to do this slowly the first time.",
    "This is the key idea of the step, so keep it in mind.",
    "You can adjust the details to your own situation.",
    "Remember that safety comes first, especially if you are unsure.",
    "Once this is done, the next step will feel much easier.",
]
QUESTIONS = [
    "How long should this take?",
    "What if I do not have the right tools?",
    "Is there an easier way to do this?",
    "Why is this step important?",
    "Can I skip this if I am in a hurry?",
    "What should I watch out for?",
]
ACKS = [
    "Got it, thanks. Can we move to the next step?",
    "That makes sense. Next step, please.",
    "Okay, I understand. What is next?",
    "Thanks, I am ready for the next step.",
]


def synth_conversations(n: int, seed: int = 0, distinct_refs: bool = True) -> list[Conversation]:
    """`distinct_refs`: every conversation's reference differs (its method title gets a number), so that
    nothing can be reused across conversations: the case of one run over distinct tutorials. Without it
    the 22 bundled tutorials repeat, as the same tutorials do across the runs of one evaluation."""
    from wikihowagent.corpus.core import load_tutorials

    tutorials = load_tutorials()
    rng = random.Random(seed)
    convs = []
    for i in range(n):
        t = tutorials[i % len(tutorials)]
        msgs = [
            turn("teacher", BEGIN_TEXT.format(method_title=t.method_title), "begin"),
            turn("learner", "Okay, I am ready to start."),
        ]
        for k, step in enumerate(t.steps, 1):
            sents = [s for s in step.replace("\n", " ").split(". ") if s]
            rng.shuffle(sents)
            body = ". ".join(sents[: max(1, len(sents) - rng.randint(0, 1))])
            msgs.append(turn("teacher", f"Step {k}: {body} {rng.choice(FILLERS)} {rng.choice(FILLERS)}"))
            if rng.random() < 0.4:
                msgs.append(turn("learner", rng.choice(QUESTIONS)))
                msgs.append(turn("teacher", f"Good question. {rng.choice(FILLERS)} {sents[0]}.", "clarification"))
            msgs.append(turn("learner", rng.choice(ACKS)))
        msgs.append(turn("teacher", FINISH_TEXT, "finish"))
        msgs.append(turn("learner", "Thank you so much!"))
        title = f"{t.method_title} #{i}" if distinct_refs else t.method_title
        convs.append(
            Conversation.from_turns(
                msgs,
                list(t.steps),
                title,
                completed=True,
                conversation_id=f"bench-{i}",
                run="bench",
                where=f"bench:{i}",
                domain=t.domain,
            )
        )
    return convs


def naive_paper(convs: list[Conversation]) -> list[dict[str, float]]:
    """The released code's way: per conversation, scorers built anew; one text encoded at a time."""
    from nltk.translate.meteor_score import single_meteor_score
    from rouge_score import rouge_scorer
    from sentence_transformers import SentenceTransformer, util

    from wikihowagent.metrics import computational as M

    out = []
    for c in convs:
        st = SentenceTransformer(M.minilm_path(), device="cpu")  # ConversationEvaluator.__init__, per conversation
        rouge = rouge_scorer.RougeScorer(["rouge1"])  # the released code's HF "rouge" metric: rouge1, no stemmer
        reference = M.reference_text(c)
        generated = "\n".join(line for line in c.lines if "Teacher:" in line)
        r = {
            M.QUESTION: M.paper_question_ratio(c),
            M.COMPLETION: M.paper_completion(c),
            M.DIVERSITY: M.paper_diversity(c),
            M.BLEU: M.paper_bleu(reference, generated),
            M.METEOR: round(single_meteor_score(M.meteor_tokens(reference), M.meteor_tokens(generated)), 4),
            M.ROUGE: round(rouge.score(reference, generated)["rouge1"].fmeasure, 4),
        }
        e1 = st.encode(reference, convert_to_tensor=True)
        e2 = st.encode(generated, convert_to_tensor=True)
        r[M.BERTSCORE] = round(util.pytorch_cos_sim(e1, e2).item(), 4)
        out.append(r)
    return out


def ours(convs: list[Conversation], mode: str, chunk: int = 64) -> list[dict[str, float | None]]:
    from wikihowagent.metrics.computational import Scorers

    scorers = Scorers(mode)
    out = []
    for i in range(0, len(convs), chunk):
        out.extend(s.metrics for s in scorers.score(convs[i : i + chunk]))
    return out


def time_sets(sets: dict[str, list[Conversation]]) -> tuple[dict[tuple[str, str], float], float]:
    """Seconds of (a) the paper's way, (b) ours with its numbers and (c) ours' defaults on each set, and the
    largest difference between (a)'s and (b)'s numbers."""
    import wikihowagent.metrics.computational as M

    timing: dict[tuple[str, str], float] = {}
    worst = 0.0
    for key, cs in sets.items():
        t0 = time.perf_counter()
        a = naive_paper(cs)
        timing[key, "a"] = time.perf_counter() - t0
        M.load_wordnet.cache_clear()  # ours starts cold too (its memos are part of what is measured)
        M._meteor_stemmer.cache_clear()
        M.rouge_stemmer.cache_clear()
        t0 = time.perf_counter()
        b = ours(cs, "paper")
        timing[key, "b"] = time.perf_counter() - t0
        for x, y in zip(a, b, strict=False):
            for k in x:
                worst = max(worst, abs(float(x[k]) - float(y[k])))
        if worst > 1e-3:
            print(f"MISMATCH between (a) and (b) on the {key} set: max |diff| = {worst}", file=sys.stderr)
            break
        t0 = time.perf_counter()
        ours(cs, "default")
        timing[key, "c"] = time.perf_counter() - t0
    return timing, worst


def markdown(
    n: int, words: float, pieces: float, timing: dict[tuple[str, str], float], worst: float, n_seqs: int, forward: float
) -> str:
    import torch

    names = {
        "a": "(a) paper's way: per conversation, scorers re-created",
        "b": "(b) ours, `--compat paper` (same numbers as (a))",
        "c": "(c) ours, default metrics (full-text BERTScore + cosine, ROUGE-1/2/L)",
    }
    da, db, dc = (timing["distinct", v] for v in "abc")
    ra, rb, rc = (timing["repeated", v] for v in "abc")
    lines = [
        f"{n} synthetic conversations built from the bundled tutorials' real "
        f"WikiHow steps (~{words:.0f} teacher words = ~{pieces:.0f} word pieces each), no LLM judge. "
        f"Machine: {os.cpu_count()} CPU cores, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"Python {platform.python_version()}; warm start for every variant (models and WordNet loaded once before "
        "timing; the paper's way still re-creates its scorers per conversation, as its code did).",
        "",
        "Two sets of the same size: *distinct*, every conversation has its own reference (one run over distinct "
        "tutorials: nothing to reuse); *repeated*, the 22 bundled tutorials recur (as the same tutorials do across "
        "the runs of one evaluation; ours embeds a repeated text once).",
        "",
        "| Variant | distinct: s | distinct: conv/s | repeated: s | repeated: conv/s |",
        "| :-- | --: | --: | --: | --: |",
        *[
            f"| {names[v]} | {timing['distinct', v]:.1f} | {n / timing['distinct', v]:.2f} | "
            f"{timing['repeated', v]:.1f} | {n / timing['repeated', v]:.2f} |"
            for v in "abc"
        ],
        "",
        f"Speed-up of ours over the paper's way with identical outputs (max |diff| {worst:.1e}): "
        f"**{da / db:.1f}x** (distinct references), **{ra / rb:.1f}x** (repeated). "
        f"The default metrics, which do more work (BERTScore over every 256-piece chunk of both texts instead of "
        f"truncating, plus ROUGE-2/L), run {da / dc:.1f}x / {ra / rc:.1f}x faster than the paper's way.",
        "",
        f"Where the time goes: the MiniLM forward pass over the {n_seqs} texts that (a) and (b) both embed takes "
        f"{forward:.1f} s here by itself (batched, sorted by length). Batching does not reduce that work on a CPU, "
        "so it bounds the speed-up: what ours removes is the per-conversation overhead (re-creating the model and "
        "scorers, one-text forward passes, repeated WordNet/stemmer look-ups, repeated "
        "tutorials). "
        + (
            "A 10x speed-up is met. "
            if da / db >= 10
            else "A 10x speed-up is therefore out of reach on this machine for these metrics "
            "(under CPU contention from other jobs the gap widens: many tiny forward passes suffer most). "
        )
        + "In a real evaluation the LLM judge "
        "(tens of seconds per conversation on the embedded model) dominates either way.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--write-md", action="store_true", help='rewrite the "evaluate" section of BENCHMARKS.md')
    args = ap.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub look-ups on either side (they would only time out here)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    from wikihowagent.metrics.computational import MiniLM, load_wordnet

    sets = {
        "distinct": synth_conversations(args.n, distinct_refs=True),
        "repeated": synth_conversations(args.n, distinct_refs=False),
    }
    convs = sets["distinct"]
    words = sum(len(" ".join(m.text for m in c.messages if m.role == "teacher").split()) for c in convs) / len(convs)
    # Warm-up outside the timings (imports, first model load, WordNet): both sides get it.
    load_wordnet()
    lm = MiniLM()
    pieces = sum(len(lm.ids(["\n".join(m.text for m in c.messages if m.role == "teacher")])[0]) for c in convs) / len(
        convs
    )
    naive_paper(convs[:1])
    import wikihowagent.metrics.computational as M

    timing, worst = time_sets(sets)
    if worst > 1e-3:
        return 1

    # The floor: the MiniLM forward pass over the texts (b) embeds, which any implementation has to run.
    seqs = [v for c in convs for v in (lm.truncated(M.reference_text(c))[0], lm.truncated(M.paper_teacher_text(c))[0])]
    t0 = time.perf_counter()
    lm.encode(seqs)
    forward = time.perf_counter() - t0

    text = markdown(len(convs), words, pieces, timing, worst, len(seqs), forward)
    print(text)
    if args.write_md:
        (da, db), (ra, rb) = ((timing[k, "a"], timing[k, "b"]) for k in ("distinct", "repeated"))
        headline = (
            f"computational metrics {da / db:.1f}x / {ra / rb:.1f}x faster than the paper's code, identical numbers"
        )
        write_section(
            Section("evaluate: computational metrics", "evaluate", headline, "python -m benchmarks evaluate", text)
        )
    return 0


if __name__ == "__main__":
    main()
