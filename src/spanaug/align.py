"""The discriminative span aligner of the seed paper (§4.1).

``[CLS] S [SEP] S' [SEP]`` is encoded once by a frozen pretrained encoder; word vectors are the
mean of their word pieces and span vectors the mean of their words. Every target span whose
length is within ``k`` of the source span's is a candidate, described by the features Df
(element-wise difference), Mx (element-wise maximum) and Cue (source start, source length,
candidate start, candidate length), and scored by one 770-unit PReLU + batch-norm layer with a
sigmoid output, trained with binary cross-entropy against soft labels 2^-d (SBCE).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import random
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from spanaug import artifacts
from spanaug.data import iter_jsonl
from spanaug.errors import ConfigError, InputError
from spanaug.hub import frozen_encoder
from spanaug.paraphrase import choose_device

log = logging.getLogger(__name__)

FEATURES = ("df", "mx", "cue")
CONFIG_NAME = "aligner_config.json"
WEIGHTS_NAME = "scorer.pt"
ENCODER_DIR = "encoder"


# ---------------------------------------------------------------- instances and metrics


@dataclasses.dataclass
class Instance:
    """A source span in a sentence pair, with its gold target span when known (inclusive ends)."""

    id: str
    source_tokens: list[str]
    target_tokens: list[str]
    source_span: tuple[int, int]
    target_span: tuple[int, int] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "source_tokens": self.source_tokens, "target_tokens": self.target_tokens,
                "source_span": list(self.source_span),
                "target_span": list(self.target_span) if self.target_span is not None else None}


def _span(value: Any, n: int, path: Path | str, lineno: int, key: str, nullable: bool) -> tuple[int, int] | None:
    if value is None and nullable:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        raise InputError(path, lineno, f"{key!r} must be [start, end] (inclusive token indices)")
    if not 0 <= value[0] <= value[1] < n:
        raise InputError(path, lineno, f"{key!r} {value} out of range for {n} tokens")
    return value[0], value[1]


def read_instances(path: Path | str) -> list[Instance]:
    """Span-alignment instances from JSON lines, validated (errors name the file and line)."""
    out = []
    for lineno, rec in iter_jsonl(path):
        for key in ("source_tokens", "target_tokens"):
            toks = rec.get(key)
            if not isinstance(toks, list) or not toks or not all(isinstance(t, str) for t in toks):
                raise InputError(path, lineno, f"{key!r} must be a non-empty list of strings")
        src, tgt = rec["source_tokens"], rec["target_tokens"]
        out.append(Instance(
            id=str(rec.get("id", f"{Path(path).stem}:{lineno}")), source_tokens=src, target_tokens=tgt,
            source_span=_span(rec.get("source_span"), len(src), path, lineno, "source_span", False),
            target_span=_span(rec.get("target_span"), len(tgt), path, lineno, "target_span", True),
        ))
    return out


def write_jsonl(records: Iterable[dict[str, Any]], path: Path | str) -> int:
    """Write JSON lines atomically; returns the count."""
    n = 0
    with artifacts.atomic_path(path, ".jsonl") as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for rec in records:
            handle.write(json.dumps(rec) + "\n")
            n += 1
    return n


def read_predictions(path: Path | str) -> dict[str, tuple[tuple[int, int] | None, float | None]]:
    preds = {}
    for lineno, rec in iter_jsonl(path):
        try:
            span = rec["target_span"]
            preds[str(rec["id"])] = (tuple(span) if span is not None else None, rec.get("score"))
        except (KeyError, TypeError) as exc:
            raise InputError(path, lineno, f"expected {{'id', 'target_span', 'score'}} ({exc})") from None
    return preds


def pair_key(inst: Instance) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Instances sharing a sentence pair share its encoding."""
    return tuple(inst.source_tokens), tuple(inst.target_tokens)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def span_metrics(gold: Sequence[tuple[int, int] | None], pred: Sequence[tuple[int, int] | None]) -> dict[str, float]:
    """The seed paper's soft (token-level, micro) and exact span precision, recall and F1."""
    overlap = n_pred_tok = n_gold_tok = 0
    exact_hits = n_pred = n_gold = 0
    for g, p in zip(gold, pred, strict=True):
        gset = set(range(g[0], g[1] + 1)) if g is not None else set()
        pset = set(range(p[0], p[1] + 1)) if p is not None else set()
        overlap += len(gset & pset)
        n_pred_tok += len(pset)
        n_gold_tok += len(gset)
        if p is not None:
            n_pred += 1
            exact_hits += int(g is not None and tuple(g) == tuple(p))
        n_gold += int(g is not None)
    soft_p = overlap / n_pred_tok if n_pred_tok else 0.0
    soft_r = overlap / n_gold_tok if n_gold_tok else 0.0
    exact_p = exact_hits / n_pred if n_pred else 0.0
    exact_r = exact_hits / n_gold if n_gold else 0.0
    return {"soft_p": soft_p, "soft_r": soft_r, "soft_f1": _f1(soft_p, soft_r),
            "exact_p": exact_p, "exact_r": exact_r, "exact_f1": _f1(exact_p, exact_r), "n": len(gold)}


def instances_from_bitext(pairs: Iterable[tuple[list[str], list[str]]], max_len: int = 4, prefix: str = "bitext") -> list[Instance]:
    """Span instances from token-level differences between a sentence and its paraphrase.

    Each replaced block of at most ``max_len`` tokens on both sides gives a (rewritten source
    span, target span) pair; a deleted block gives a source span with no counterpart. Used to
    make aligner training data from a plain paraphrase bitext (the demo has no word alignments).
    """
    out = []
    for n, (src, tgt) in enumerate(pairs):
        matcher = difflib.SequenceMatcher(a=[t.lower() for t in src], b=[t.lower() for t in tgt], autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "replace" and i2 - i1 <= max_len and j2 - j1 <= max_len:
                out.append(Instance(f"{prefix}:{n}:{i1}-{i2 - 1}", src, tgt, (i1, i2 - 1), (j1, j2 - 1)))
            elif op == "delete" and i2 - i1 <= max_len:
                out.append(Instance(f"{prefix}:{n}:{i1}-{i2 - 1}", src, tgt, (i1, i2 - 1), None))
    return out


# ---------------------------------------------------------------- model


@dataclasses.dataclass
class AlignerConfig:
    """Everything needed to rebuild a trained aligner; saved beside its weights."""

    encoder: str = "bert-base-cased"
    features: tuple[str, ...] = FEATURES
    loss: str = "soft"
    k: int = 5
    hidden: int = 770
    threshold: float = 0.0
    max_length: int = 512
    #: L2-normalise span vectors before the features. Not in the paper; on Edinburgh++ with MiniLM
    #: it raised held-out soft F1 from 0.649 to 0.694 (see README). False reproduces the paper.
    normalize_spans: bool = True
    #: Fine-tune the encoder's top N transformer layers with the scorer (0: frozen, as in the
    #: paper). The tuned encoder is saved with the model.
    finetune_layers: int = 0

    def __post_init__(self) -> None:
        self.features = tuple(self.features)
        unknown = set(self.features) - set(FEATURES)
        if unknown or not self.features:
            raise ConfigError(f"aligner features must be a non-empty subset of {FEATURES}, got {self.features}")
        if self.loss not in ("soft", "hard"):
            raise ConfigError(f"aligner loss must be 'soft' (SBCE) or 'hard', not {self.loss!r}")


class SpanScorer(nn.Module):
    """One hidden layer of ``hidden`` units, PReLU, batch norm, sigmoid output (as logits)."""

    def __init__(self, in_dim: int, hidden: int = 770):
        super().__init__()
        self.hidden = nn.Linear(in_dim, hidden)
        self.act = nn.PReLU()
        self.norm = nn.BatchNorm1d(hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.act(self.hidden(features)))).squeeze(-1)


def candidate_spans(n_target: int, source_len: int, k: int, device: torch.device | None = None) -> torch.Tensor:
    """All target spans [a, b] (inclusive) with |length - source_len| <= k, as a [C, 2] tensor."""
    lengths = torch.arange(max(1, source_len - k), min(n_target, source_len + k) + 1, device=device)
    starts = [torch.arange(0, n_target - length + 1, device=device) for length in lengths.tolist()]
    if not starts:
        return torch.zeros(0, 2, dtype=torch.long, device=device)
    a = torch.cat(starts)
    b = torch.cat([s + length - 1 for s, length in zip(starts, lengths.tolist())])
    return torch.stack([a, b], dim=1)


def soft_labels(cands: torch.Tensor, gold: tuple[int, int] | None, loss: str) -> torch.Tensor:
    """2^-(|a - a*| + |b - b*|) per candidate (SBCE), or 1 for the exact span only (hard)."""
    if gold is None:
        return torch.zeros(cands.shape[0], device=cands.device)
    dist = (cands[:, 0] - gold[0]).abs() + (cands[:, 1] - gold[1]).abs()
    if loss == "hard":
        return (dist == 0).float()
    return torch.pow(2.0, -dist.float())


def span_means(src_vecs: torch.Tensor, tgt_vecs: torch.Tensor, span: tuple[int, int],
               cands: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean word vector of the source span [1, H] and of every candidate [C, H] (prefix sums)."""
    s, e = span
    src = src_vecs[s : e + 1].mean(0, keepdim=True)
    csum = torch.cat([torch.zeros(1, tgt_vecs.shape[1], device=tgt_vecs.device), tgt_vecs.cumsum(0)])
    lengths = (cands[:, 1] - cands[:, 0] + 1).unsqueeze(-1).float()
    return src, (csum[cands[:, 1] + 1] - csum[cands[:, 0]]) / lengths


class PairEncoder:
    """Word vectors of sentence pairs, ``[CLS] S [SEP] S' [SEP]`` encoded together by an ``AutoModel``.

    A word's vector is the mean of its word pieces. ``cache`` optionally memoises the outputs
    per pair, for models that train several heads over one frozen encoder.
    """

    def __init__(self, name_or_path: str, encoder=None, tokenizer=None, device: torch.device | None = None,  # noqa: ANN001
                 max_length: int = 512, cache: dict | None = None):
        self.device = device or torch.device("cpu")
        self.max_length = max_length
        self.tokenizer, self.encoder = frozen_encoder(name_or_path, self.device, encoder, tokenizer)
        self.cache = cache

    @torch.no_grad()
    def encode_pairs(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], batch_size: int = 32,
                     progress: bool = False) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Word vectors of each (source, target) pair, encoded together; length-sorted batches."""
        if self.cache is not None:
            todo = [p for p in dict.fromkeys((tuple(a), tuple(b)) for a, b in pairs) if p not in self.cache]
            if todo:
                cache, self.cache = self.cache, None
                try:
                    cache.update(zip(todo, self.encode_pairs(todo, batch_size, progress)))
                finally:
                    self.cache = cache
            return [self.cache[(tuple(p[0]), tuple(p[1]))] for p in pairs]
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(pairs)
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        for idx in tqdm(batches, desc="encode", unit="batch", disable=not progress):
            for i, vecs in zip(idx, self.encode_batch([pairs[i] for i in idx])):
                out[i] = vecs
        return out  # type: ignore[return-value]

    def encode_batch(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Word vectors of one padded batch of pairs (differentiable when the encoder is tuned)."""
        src = [list(p[0]) for p in pairs]
        tgt = [list(p[1]) for p in pairs]
        enc = self.tokenizer(src, tgt, is_split_into_words=True, truncation=True,
                             max_length=self.max_length, padding=True, return_tensors="pt")
        hidden = self.encoder(**{k: v.to(self.device) for k, v in enc.items()
                                 if k in ("input_ids", "attention_mask", "token_type_ids")}).last_hidden_state.float()
        return [self._word_vectors(hidden[row], enc.word_ids(row), enc.sequence_ids(row), len(src[row]), len(tgt[row]))
                for row in range(len(pairs))]

    def _word_vectors(self, hidden: torch.Tensor, word_ids: list[int | None], seq_ids: list[int | None],
                      n_src: int, n_tgt: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean of each word's pieces; words cut off by truncation get zero vectors."""
        dim = hidden.shape[-1]
        slots = [(w if s == 0 else n_src + w) if w is not None and s is not None else -1
                 for w, s in zip(word_ids, seq_ids)]
        slots_t = torch.tensor(slots, device=hidden.device)
        keep = slots_t >= 0
        sums = torch.zeros(n_src + n_tgt, dim, device=hidden.device).index_add_(0, slots_t[keep], hidden[keep])
        counts = torch.zeros(n_src + n_tgt, device=hidden.device).index_add_(
            0, slots_t[keep], torch.ones(int(keep.sum()), device=hidden.device))
        vecs = sums / counts.clamp(min=1).unsqueeze(-1)
        return vecs[:n_src], vecs[n_src:]


class SpanAligner:
    """Frozen encoder + trained span scorer; ``from_pretrained``/``save_pretrained`` a directory."""

    def __init__(self, config: AlignerConfig, encoder=None, tokenizer=None, scorer: SpanScorer | None = None,  # noqa: ANN001
                 device: str | None = "auto", cache: dict | None = None):
        self.config = config
        self.device = choose_device(device)
        # The cache memoises encoder outputs per sentence pair, shared by aligners on one encoder
        # (ablations train several scorers over the same frozen encodings).
        self.pairs = PairEncoder(config.encoder, encoder, tokenizer, self.device, config.max_length, cache)
        if config.finetune_layers:
            for layer in encoder_layers(self.encoder)[-config.finetune_layers :]:
                layer.requires_grad_(True)
        hidden = self.encoder.config.hidden_size
        self.in_dim = hidden * (("df" in config.features) + ("mx" in config.features)) + 4 * ("cue" in config.features)
        self.scorer = (scorer or SpanScorer(self.in_dim, config.hidden)).to(self.device)

    # -- persistence
    def save_pretrained(self, out: Path | str) -> None:
        artifacts.save_model_dir(out, WEIGHTS_NAME, self.scorer.state_dict(), CONFIG_NAME, dataclasses.asdict(self.config))
        if self.config.finetune_layers:
            self.encoder.save_pretrained(Path(out) / ENCODER_DIR)
            self.tokenizer.save_pretrained(Path(out) / ENCODER_DIR)

    @classmethod
    def from_pretrained(cls, path: Path | str, device: str | None = "auto", encoder: str | None = None) -> "SpanAligner":
        """Load a trained aligner; ``encoder`` overrides the saved encoder name or path."""
        path = Path(path)
        cfg = artifacts.read_model_config(path, CONFIG_NAME, "aligner")
        if encoder:
            cfg["encoder"] = encoder
        elif (path / ENCODER_DIR / "config.json").is_file():
            cfg["encoder"] = str(path / ENCODER_DIR)
        aligner = cls(AlignerConfig(**cfg), device=device)
        aligner.scorer.load_state_dict(artifacts.load_weights(path / WEIGHTS_NAME, aligner.device))
        aligner.scorer.eval()
        return aligner

    # -- encoding
    @property
    def encoder(self) -> nn.Module:
        return self.pairs.encoder

    @property
    def tokenizer(self):  # noqa: ANN201
        return self.pairs.tokenizer

    @property
    def cache(self) -> dict | None:
        return self.pairs.cache

    @cache.setter
    def cache(self, value: dict | None) -> None:
        self.pairs.cache = value

    def encode_pairs(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], batch_size: int = 32,
                     progress: bool = False) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return self.pairs.encode_pairs(pairs, batch_size, progress)

    def encode_batch(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return self.pairs.encode_batch(pairs)

    # -- features
    def features(self, src_vecs: torch.Tensor, tgt_vecs: torch.Tensor, span: tuple[int, int],
                 cands: torch.Tensor) -> torch.Tensor:
        """Feature rows [C, D] for every candidate of one source span (batched tensor work)."""
        s, e = span
        src, cand = span_means(src_vecs, tgt_vecs, span, cands)
        lengths = (cands[:, 1] - cands[:, 0] + 1).unsqueeze(-1).float()
        if self.config.normalize_spans:
            src, cand = nn.functional.normalize(src, dim=-1), nn.functional.normalize(cand, dim=-1)
        parts = []
        if "df" in self.config.features:
            parts.append(src - cand)
        if "mx" in self.config.features:
            parts.append(torch.maximum(src.expand_as(cand), cand))
        if "cue" in self.config.features:
            n_src, n_tgt = src_vecs.shape[0], tgt_vecs.shape[0]
            cue = torch.stack([
                torch.full_like(lengths.squeeze(-1), s / max(n_src, 1)),
                torch.full_like(lengths.squeeze(-1), float(e - s + 1)),
                cands[:, 0].float() / max(n_tgt, 1),
                lengths.squeeze(-1),
            ], dim=1)
            parts.append(cue)
        return torch.cat(parts, dim=1)

    def _instance_rows(self, vecs: tuple[torch.Tensor, torch.Tensor], span: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
        src_vecs, tgt_vecs = vecs
        cands = candidate_spans(tgt_vecs.shape[0], span[1] - span[0] + 1, self.config.k, device=self.device)
        return cands, self.features(src_vecs, tgt_vecs, span, cands)

    # -- prediction
    def _weight_blocks(self) -> dict[str, torch.Tensor]:
        """The hidden layer's weight columns of each enabled feature block (df, mx, cue)."""
        hidden = self.encoder.config.hidden_size
        widths = {"df": hidden, "mx": hidden, "cue": 4}
        blocks, col = {}, 0
        weight = self.scorer.hidden.weight
        for name in FEATURES:
            if name in self.config.features:
                blocks[name] = weight[:, col : col + widths[name]]
                col += widths[name]
        return blocks

    @torch.inference_mode()
    def score_spans(self, items: Sequence[tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]],
                    chunk: int = 16) -> list[tuple[tuple[int, int] | None, float]]:
        """Best candidate and its score for each (word vectors, source span).

        Computes the same scores as ``scorer(features(...))`` with less work: the candidates of
        ``chunk`` items at a time are scored as one batch (small enough to stay in cache), and
        the Df block of the hidden layer is applied to prefix sums of the target word vectors (it
        is linear), so only Mx needs a matmul per candidate.
        """
        self.scorer.eval()
        out: list[tuple[tuple[int, int] | None, float]] = []
        for start in range(0, len(items), chunk):
            out.extend(self._score_chunk(items[start : start + chunk]))
        return out

    def _score_chunk(self, items: Sequence[tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]],
                     ) -> list[tuple[tuple[int, int] | None, float]]:
        cfg, dev = self.config, self.device
        targets: dict[int, int] = {}  # id(target vectors) -> offset into the stacked prefix sums
        prefix_parts, src_means, cand_parts, row_item, offsets = [], [], [], [], []
        n_prefix = 0
        for item, ((src_vecs, tgt_vecs), (s, e)) in enumerate(items):
            key = id(tgt_vecs)
            if key not in targets:
                targets[key] = n_prefix
                prefix_parts.append(torch.cat([tgt_vecs.new_zeros(1, tgt_vecs.shape[1]), tgt_vecs.cumsum(0)]))
                n_prefix += tgt_vecs.shape[0] + 1
            cands = candidate_spans(tgt_vecs.shape[0], e - s + 1, cfg.k, device=dev)
            cand_parts.append(cands)
            offsets.append(targets[key])
            row_item.append(cands.shape[0])
            src_means.append(src_vecs[s : e + 1].mean(0))
        counts = torch.tensor(row_item, device=dev)
        item_of_row = torch.repeat_interleave(torch.arange(len(items), device=dev), counts)
        cands = torch.cat(cand_parts)
        base = torch.tensor(offsets, device=dev)[item_of_row]
        lo, hi = base + cands[:, 0], base + cands[:, 1] + 1
        prefix = torch.cat(prefix_parts)
        lengths = (cands[:, 1] - cands[:, 0] + 1).float().unsqueeze(-1)
        sums = prefix[hi] - prefix[lo]
        cand = sums / lengths
        src = torch.stack(src_means)
        if cfg.normalize_spans:
            src = nn.functional.normalize(src, dim=-1)
            # W (c / |c|) = W (prefix difference) / |prefix difference|: the length cancels out.
            scale = 1.0 / sums.norm(dim=-1, keepdim=True).clamp(min=1e-12)
            cand = nn.functional.normalize(cand, dim=-1)
        else:
            scale = 1.0 / lengths
        blocks = self._weight_blocks()
        z = self.scorer.hidden.bias.expand(cands.shape[0], -1).clone()
        if "df" in blocks:
            w = blocks["df"]
            projected = prefix @ w.T
            z += (src @ w.T)[item_of_row] - (projected[hi] - projected[lo]) * scale
        if "mx" in blocks:
            z += torch.maximum(src[item_of_row], cand) @ blocks["mx"].T
        if "cue" in blocks:
            n_src = torch.tensor([max(v[0].shape[0], 1) for v, _ in items], device=dev, dtype=torch.float)
            n_tgt = torch.tensor([max(v[1].shape[0], 1) for v, _ in items], device=dev, dtype=torch.float)
            starts = torch.tensor([float(sp[0]) for _, sp in items], device=dev)
            src_len = torch.tensor([float(sp[1] - sp[0] + 1) for _, sp in items], device=dev)
            cue = torch.stack([(starts / n_src)[item_of_row], src_len[item_of_row],
                               cands[:, 0].float() / n_tgt[item_of_row], lengths.squeeze(-1)], dim=1)
            z += cue @ blocks["cue"].T
        scores = torch.sigmoid(self.scorer.out(self.scorer.norm(self.scorer.act(z))).squeeze(-1)).cpu()
        cands = cands.cpu()
        out: list[tuple[tuple[int, int] | None, float]] = []
        offset = 0
        for c in row_item:
            if c == 0:
                out.append((None, 0.0))
                continue
            best = offset + int(scores[offset : offset + c].argmax())
            out.append(((int(cands[best, 0]), int(cands[best, 1])), float(scores[best])))
            offset += c
        return out

    @torch.inference_mode()
    def score_spans_reference(self, items: Sequence[tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]],
                              ) -> list[tuple[tuple[int, int] | None, float]]:
        """``score_spans`` the plain way, feature rows then the scorer; kept to test the fast path."""
        self.scorer.eval()
        out = []
        for vecs, span in items:
            cands, feats = self._instance_rows(vecs, span)
            if cands.shape[0] == 0:
                out.append((None, 0.0))
                continue
            scores = torch.sigmoid(self.scorer(feats))
            best = int(scores.argmax())
            out.append(((int(cands[best, 0]), int(cands[best, 1])), float(scores[best])))
        return out

    def predict(self, instances: Sequence[Instance], batch_size: int = 64, progress: bool = False,
                threshold: float | None = None) -> list[tuple[tuple[int, int] | None, float]]:
        """Predicted target span (None under the threshold) and its score per instance."""
        threshold = self.config.threshold if threshold is None else threshold
        out: list[tuple[tuple[int, int] | None, float]] = []
        # Encode a chunk of sentence pairs at a time so memory stays flat on large inputs;
        # each pair is encoded once for all of its spans.
        chunk = batch_size * 16
        for start in tqdm(range(0, len(instances), chunk), desc="align", unit="chunk", disable=not progress):
            part = instances[start : start + chunk]
            pairs = list(dict.fromkeys(pair_key(i) for i in part))
            vecs = dict(zip(pairs, self.encode_pairs(pairs, batch_size)))
            for j in range(0, len(part), batch_size):
                sub = part[j : j + batch_size]
                scored = self.score_spans([(vecs[pair_key(i)], i.source_span) for i in sub])
                out.extend((span if span is not None and score >= threshold else None, score) for span, score in scored)
        return out


# ---------------------------------------------------------------- training


@dataclasses.dataclass
class TrainConfig:
    epochs: int = 10
    batch_size: int = 32
    learning_rate: float = 1e-3
    seed: int = 0
    tune_threshold_on: str = "soft_f1"
    #: Learning rate of the encoder's tuned layers (AlignerConfig.finetune_layers).
    encoder_learning_rate: float = 2e-5


def tune_threshold(gold: Sequence[tuple[int, int] | None], scored: Sequence[tuple[tuple[int, int] | None, float]],
                   metric: str = "soft_f1") -> tuple[float, dict[str, float]]:
    """The score threshold (below it: no alignment) that maximises ``metric`` on dev data."""
    candidates = sorted({0.0} | {round(s, 4) for _, s in scored})
    best = (0.0, span_metrics(gold, [p for p, _ in scored]))
    for t in candidates:
        m = span_metrics(gold, [p if s >= t else None for p, s in scored])
        if m[metric] > best[1][metric]:
            best = (t, m)
    return best


def encoder_layers(encoder: nn.Module) -> nn.ModuleList:
    """The stack of transformer layers of a BERT-like ``AutoModel`` (``encoder.layer``)."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList):
        raise ConfigError(f"finetune_layers needs a BERT-like encoder with encoder.layer; {type(encoder).__name__} has none")
    return layers


def reverse_instances(instances: Iterable[Instance]) -> list[Instance]:
    """Each aligned instance read the other way (target span -> source span): extra training data."""
    return [Instance(f"{i.id}:reversed", i.target_tokens, i.source_tokens, i.target_span, i.source_span)
            for i in instances if i.target_span is not None]


def _batches(items: list, size: int) -> Iterator[list]:
    return (items[i : i + size] for i in range(0, len(items), size))


def train_aligner(train: Sequence[Instance], cfg: AlignerConfig, tcfg: TrainConfig, dev: Sequence[Instance] | None = None,
                  device: str | None = "auto", progress: bool = True, aligner: SpanAligner | None = None,
                  extra: Sequence[Instance] = ()) -> tuple[SpanAligner, dict[str, Any]]:
    """Train the scorer (and the top encoder layers when configured); tune the null threshold on ``dev``.

    ``extra`` instances (e.g. composed along paraphrase chains) are added to the training data.
    """
    torch.manual_seed(tcfg.seed)
    rng = random.Random(tcfg.seed)
    aligner = aligner or SpanAligner(cfg, device=device)
    train = list(train) + list(extra)
    loss_fn = nn.BCEWithLogitsLoss()
    params = [{"params": aligner.scorer.parameters(), "lr": tcfg.learning_rate}]
    tuned = [p for p in aligner.encoder.parameters() if p.requires_grad]
    if tuned:
        params.append({"params": tuned, "lr": tcfg.encoder_learning_rate})
        aligner.cache = None  # encodings change as the encoder learns
        step_batches = _finetune_batches(aligner, train, cfg, tcfg, rng)
    else:
        step_batches = _frozen_batches(aligner, train, cfg, tcfg, rng, progress)
    opt = torch.optim.Adam(params)
    history = []
    for epoch in range(tcfg.epochs):
        aligner.scorer.train()
        total, batches = 0.0, 0
        for feats, labels in tqdm(step_batches(), desc=f"epoch {epoch + 1}", disable=not progress, leave=False):
            if feats.shape[0] < 2:
                continue  # batch norm needs more than one row
            loss = loss_fn(aligner.scorer(feats), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        history.append(total / max(batches, 1))
        log.info("aligner epoch %d: loss %.4f", epoch + 1, history[-1])
    aligner.scorer.eval()
    aligner.encoder.eval()
    summary: dict[str, Any] = {"train_instances": len(train), "extra_instances": len(extra), "loss_history": history}
    if dev:
        scored = aligner.predict(dev, threshold=0.0)
        threshold, metrics = tune_threshold([d.target_span for d in dev], scored, tcfg.tune_threshold_on)
        aligner.config.threshold = threshold
        summary.update({"threshold": threshold, "dev_metrics": metrics})
    return aligner, summary


def _frozen_batches(aligner: SpanAligner, train: Sequence[Instance], cfg: AlignerConfig, tcfg: TrainConfig,
                    rng: random.Random, progress: bool):  # noqa: ANN202
    """With a frozen encoder, candidates, features and labels never change: build them once."""
    pairs = list(dict.fromkeys(pair_key(i) for i in train))
    vecs = dict(zip(pairs, aligner.encode_pairs(pairs, progress=progress)))
    examples = []
    for inst in train:
        cands, feats = aligner._instance_rows(vecs[pair_key(inst)], inst.source_span)
        if cands.shape[0]:
            examples.append((feats, soft_labels(cands, inst.target_span, cfg.loss)))
    if not examples:
        raise ConfigError("no training instance has a candidate span")

    def epoch() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng.shuffle(examples)
        for chunk in _batches(examples, tcfg.batch_size):
            yield torch.cat([f for f, _ in chunk]), torch.cat([y for _, y in chunk])

    return epoch


def _finetune_batches(aligner: SpanAligner, train: Sequence[Instance], cfg: AlignerConfig, tcfg: TrainConfig,
                      rng: random.Random):  # noqa: ANN202
    """With a tuned encoder, each batch re-encodes its sentence pairs (once per pair) with gradients."""
    order = list(train)

    def epoch() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng.shuffle(order)
        for chunk in _batches(order, tcfg.batch_size):
            pairs = list(dict.fromkeys(pair_key(i) for i in chunk))
            vecs = dict(zip(pairs, aligner.encode_batch(pairs)))
            feats, labels = [], []
            for inst in chunk:
                cands, f = aligner._instance_rows(vecs[pair_key(inst)], inst.source_span)
                feats.append(f)
                labels.append(soft_labels(cands, inst.target_span, cfg.loss))
            yield torch.cat(feats), torch.cat(labels)

    return epoch


# ---------------------------------------------------------------- pipeline stage


def align_stage(model: Path | str, paraphrases_path: Path | str, out: Path | str, encoder: str | None = None,
                device: str | None = "auto", chunk_rows: int = 4096, batch_size: int = 64) -> int:
    """CLI stage: a PARAPHRASES shard -> an ALIGNED shard (one prediction per beam)."""
    aligner = SpanAligner.from_pretrained(model, device=device, encoder=encoder)
    with artifacts.open_writer(out, artifacts.ALIGNED) as writer:
        for table in artifacts.iter_batches(paraphrases_path, artifacts.PARAPHRASES, chunk_rows):
            rows = table.to_pylist()
            insts = [Instance(f"{r['seed_id']}:{r['beam_rank']}", r["source_tokens"], r["paraphrase_tokens"],
                              (r["source_span_start"], r["source_span_end"])) for r in rows]
            for row, (span, score) in zip(rows, aligner.predict(insts, batch_size=batch_size)):
                row["aligned_start"], row["aligned_end"] = (span if span is not None else (None, None))
                row["aligner_score"] = score
            writer.write(rows)
    return writer.rows


def iter_pairs_from_bitext(path: Path | str) -> Iterator[tuple[list[str], list[str]]]:
    from spanaug.paraphraser_training import read_bitext
    from spanaug.data import tokenize

    for src, tgt in read_bitext(path):
        yield tokenize(src), tokenize(tgt)
