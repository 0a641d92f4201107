"""The discriminative span aligner of the seed paper (§4.1).

``[CLS] S [SEP] S' [SEP]`` is encoded once by a frozen pretrained encoder; word vectors are the
mean of their word pieces and span vectors the mean of their words. Every target span whose
length is within ``k`` of the source span's is a candidate, described by the features Df
(element-wise difference), Mx (element-wise maximum) and Cue (source start, source length,
candidate start, candidate length), and scored by one 770-unit PReLU + batch-norm layer with a
sigmoid output, trained with binary cross-entropy against soft labels 2^-d (SBCE).
"""

import functools
import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn
from tqdm import tqdm

from spanaug.core import modeldir
from spanaug.core.aligner_settings import AlignerConfig
from spanaug.core.devices import choose_device, choose_dtype
from spanaug.core.errors import ConfigError
from spanaug.core.oom import split_on_oom
from spanaug.pipeline.aligner.instances import Instance, pair_key
from spanaug.pipeline.aligner.interface import Candidates, Prediction, best_predictions
from spanaug.pipeline.aligner.kinds import KINDS
from spanaug.pipeline.aligner.pair_encoder import PairEncoder

FEATURES = ("df", "mx", "cue")

log = logging.getLogger(__name__)

#: What its saved folder records it holds (core.modeldir): checked before its weights load.
KIND = KINDS["paper"].what


# No `from __future__ import annotations` in this module: the hub mixin reads the type of
# `config` from the signature to rebuild the dataclass on load.
class SpanScorer(nn.Module, PyTorchModelHubMixin):
    """The trained part of the aligner: one hidden layer of ``config.hidden`` units, PReLU, batch
    norm, and a sigmoid output (as logits) over the features of ``config``."""

    def __init__(self, config: AlignerConfig):
        super().__init__()
        self.config = config
        width = {"df": config.encoder_dim, "mx": config.encoder_dim, "cue": 4}
        self.hidden = nn.Linear(sum(width[f] for f in config.features), config.hidden)
        self.act = nn.PReLU()
        self.norm = nn.BatchNorm1d(config.hidden)
        self.out = nn.Linear(config.hidden, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.act(self.hidden(features)))).squeeze(-1)


def candidate_spans(n_target: int, source_len: int, k: int, device: torch.device | None = None) -> torch.Tensor:
    """All target spans [a, b] (inclusive) with |length - source_len| <= k, as a [C, 2] tensor."""
    shortest, longest = max(1, source_len - k), min(n_target, source_len + k)
    if shortest > longest:  # a source span (a long frame element) more than k words longer than the target
        return torch.zeros(0, 2, dtype=torch.long, device=device)
    lengths = torch.arange(shortest, longest + 1, device=device)
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


def span_means(
    src_vecs: torch.Tensor, tgt_vecs: torch.Tensor, span: tuple[int, int], cands: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean word vector of the source span [1, H] and of every candidate [C, H] (prefix sums)."""
    s, e = span
    src = src_vecs[s : e + 1].mean(0, keepdim=True)
    csum = torch.cat([torch.zeros(1, tgt_vecs.shape[1], device=tgt_vecs.device), tgt_vecs.cumsum(0)])
    lengths = (cands[:, 1] - cands[:, 0] + 1).unsqueeze(-1).float()
    return src, (csum[cands[:, 1] + 1] - csum[cands[:, 0]]) / lengths


class SpanAligner:
    """Frozen encoder + trained span scorer; ``from_pretrained``/``save_pretrained`` a directory.

    The paper kind of ``interface.SpanAlignerModel``.
    """

    kind = "paper"
    encodes_each_span = False  # a pair's encoding serves all of its spans
    #: Instances per scoring batch when ``predict`` is given none.
    predict_batch_size = 64

    def __init__(
        self,
        config: AlignerConfig,
        encoder=None,
        tokenizer=None,
        scorer: SpanScorer | None = None,
        device: str | None = "auto",
        cache: dict | None = None,
        dtype: str | None = "float32",
    ):
        """``dtype`` is the encoder's (``auto``: ``core.devices.choose_dtype``); float32 unless told,
        since training keeps float32 weights: ``from_pretrained``, which loads for prediction, says auto."""
        self.config = config
        self.device = choose_device(device)
        self.dtype = choose_dtype(self.device, dtype)
        # The cache memoises encoder outputs per sentence pair, shared by aligners on one encoder
        # (ablations train several scorers over the same frozen encodings).
        self.pairs = PairEncoder(config.encoder, encoder, tokenizer, self.device, config.max_length, cache)
        # The scorer stays in float32: the encoder's states are upcast into word vectors
        # (``PairEncoder._hidden``), so features, scores and the threshold are float32 math.
        self.encoder.to(self.dtype)
        if config.finetune_layers:
            for layer in encoder_layers(self.encoder)[-config.finetune_layers :]:
                layer.requires_grad_(True)
        dim = self.encoder.config.hidden_size
        if config.encoder_dim not in (0, dim):
            raise ConfigError(
                f"the aligner was trained on a {config.encoder_dim}-dimensional encoder; "
                f"{config.encoder} has {dim} dimensions"
            )
        config.encoder_dim = dim
        self.scorer = (scorer or SpanScorer(config)).to(self.device)

    # -- persistence
    def save_pretrained(self, out: Path | str) -> Path:
        """The scorer (config.json, model.safetensors) and, when tuned, the encoder, written atomically."""
        with modeldir.atomic_dir(out, kind=KIND) as tmp:
            self.scorer.save_pretrained(tmp, config=self.config)
            if self.config.finetune_layers:
                self.encoder.save_pretrained(tmp / modeldir.ENCODER_DIR)
                self.tokenizer.save_pretrained(tmp / modeldir.ENCODER_DIR)
        return Path(out)

    @classmethod
    def from_pretrained(
        cls, path: Path | str, device: str | None = "auto", encoder: str | None = None, dtype: str | None = "auto"
    ) -> "SpanAligner":
        """Load a trained aligner for prediction; ``encoder`` overrides the saved encoder name or path,
        ``dtype`` is the encoder's (auto: bf16 on GPUs, fp32 on CPU)."""
        path = Path(path)
        dev = choose_device(device)
        scorer = modeldir.load_head(SpanScorer, path, dev, KIND)
        if encoder:
            scorer.config.encoder = encoder
        elif (path / modeldir.ENCODER_DIR / modeldir.CONFIG_FILE).is_file():
            scorer.config.encoder = str(path / modeldir.ENCODER_DIR)
        return cls(scorer.config, scorer=scorer, device=device, dtype=dtype)

    # -- encoding
    def limit_stats(self) -> dict[str, int]:
        """Pairs over the encoder's limit so far (encoded one sentence at a time), for stage statistics."""
        return {"pairs_over_encoder_limit": self.pairs.windowed, "encoder_limit_word_pieces": self.pairs.limit}

    @property
    def encoder(self) -> nn.Module:
        return self.pairs.encoder

    @property
    def tokenizer(self):
        return self.pairs.tokenizer

    @property
    def cache(self) -> dict | None:
        return self.pairs.cache

    @cache.setter
    def cache(self, value: dict | None) -> None:
        self.pairs.cache = value

    def encode_pairs(
        self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], batch_size: int = 32, progress: bool = False
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return self.pairs.encode_pairs(pairs, batch_size, progress)

    def encode_batch(
        self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return self.pairs.encode_batch(pairs)

    # -- features
    def features(
        self, src_vecs: torch.Tensor, tgt_vecs: torch.Tensor, span: tuple[int, int], cands: torch.Tensor
    ) -> torch.Tensor:
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
            cue = torch.stack(
                [
                    torch.full_like(lengths.squeeze(-1), s / max(n_src, 1)),
                    torch.full_like(lengths.squeeze(-1), float(e - s + 1)),
                    cands[:, 0].float() / max(n_tgt, 1),
                    lengths.squeeze(-1),
                ],
                dim=1,
            )
            parts.append(cue)
        return torch.cat(parts, dim=1)

    def instance_rows(
        self, vecs: tuple[torch.Tensor, torch.Tensor], span: tuple[int, int]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The candidate spans [C, 2] of one source span and their feature rows [C, D] (training's input)."""
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

    def score_spans(
        self, items: Sequence[tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]], chunk: int = 16
    ) -> list[tuple[tuple[int, int] | None, float]]:
        """Best candidate and its score for each (word vectors, source span); (None, 0.0) where the
        target has no candidate."""
        return [ranked[0] if ranked else (None, 0.0) for ranked in self.rank_spans(items, 1, chunk)]

    @torch.inference_mode()
    def rank_spans(
        self,
        items: Sequence[tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]],
        top_k: int,
        chunk: int = 16,
    ) -> list[list[tuple[tuple[int, int], float]]]:
        """The ``top_k`` best candidates and their scores for each (word vectors, source span), best first.

        Computes the same scores as ``scorer(features(...))`` with less work: the candidates of
        ``chunk`` items at a time are scored as one batch (small enough to stay in cache), and
        the Df block of the hidden layer is applied to prefix sums of the target word vectors (it
        is linear), so only Mx needs a matmul per candidate.
        """
        self.scorer.eval()
        out: list[list[tuple[tuple[int, int], float]]] = []
        for start in range(0, len(items), chunk):
            out.extend(self._score_chunk(items[start : start + chunk], top_k))
        return out

    def _score_chunk(
        self,
        items: Sequence[tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]],
        top_k: int,
    ) -> list[list[tuple[tuple[int, int], float]]]:
        cfg, dev = self.config, self.device
        targets: dict[int, int] = {}  # id(target vectors) -> offset into the stacked prefix sums
        prefix_parts, src_means, cand_parts, row_item, offsets = [], [], [], [], []
        n_prefix = 0
        for (src_vecs, tgt_vecs), (s, e) in items:
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
            cue = torch.stack(
                [
                    (starts / n_src)[item_of_row],
                    src_len[item_of_row],
                    cands[:, 0].float() / n_tgt[item_of_row],
                    lengths.squeeze(-1),
                ],
                dim=1,
            )
            z += cue @ blocks["cue"].T
        scores = torch.sigmoid(self.scorer.out(self.scorer.norm(self.scorer.act(z))).squeeze(-1))
        return _top_candidates(scores, cands, row_item, top_k)

    @torch.inference_mode()
    def score_spans_reference(
        self,
        items: Sequence[tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]],
    ) -> list[tuple[tuple[int, int] | None, float]]:
        """``score_spans`` the plain way, feature rows then the scorer; kept to test the fast path."""
        self.scorer.eval()
        out = []
        for vecs, span in items:
            cands, feats = self.instance_rows(vecs, span)
            if cands.shape[0] == 0:
                out.append((None, 0.0))
                continue
            scores = torch.sigmoid(self.scorer(feats))
            best = int(scores.argmax())
            out.append(((int(cands[best, 0]), int(cands[best, 1])), float(scores[best])))
        return out

    def predict(
        self,
        instances: Sequence[Instance],
        batch_size: int | None = None,
        progress: bool = False,
        threshold: float | None = None,
    ) -> list[Prediction]:
        """Predicted target span (None under the threshold) and its score per instance."""
        return best_predictions(self.predict_candidates(instances, 1, batch_size, progress, threshold))

    def predict_candidates(
        self,
        instances: Sequence[Instance],
        top_k: int,
        batch_size: int | None = None,
        progress: bool = False,
        threshold: float | None = None,
    ) -> list[Candidates]:
        """Per instance, its ``top_k`` best target spans whose score reaches the threshold (best first;
        none: no counterpart) and the best score of all."""
        threshold = self.config.threshold if threshold is None else threshold
        batch_size = batch_size or self.predict_batch_size
        # Inference mode, unless the encodings are cached: a shared cache may feed a scorer's
        # training later, and inference tensors cannot be saved for backward.
        with torch.inference_mode(self.cache is None):
            return self._predict_candidates(instances, top_k, batch_size, progress, threshold)

    def _predict_candidates(
        self, instances: Sequence[Instance], top_k: int, batch_size: int, progress: bool, threshold: float
    ) -> list[Candidates]:
        out: list[Candidates] = []
        # Encode a chunk of sentence pairs at a time so memory stays flat on large inputs;
        # each pair is encoded once for all of its spans (a trigger and its frame elements).
        chunk = batch_size * 16
        for start in tqdm(range(0, len(instances), chunk), desc="align", unit="chunk", disable=not progress):
            part = instances[start : start + chunk]
            pairs = list(dict.fromkeys(pair_key(i) for i in part))
            # A batch that runs out of GPU memory is split in halves and retried (core.oom): each pair's
            # vectors, and each span's ranking, are independent of their batch-mates.
            encode = functools.partial(self.encode_pairs, batch_size=batch_size)
            vecs = dict(zip(pairs, split_on_oom(encode, pairs, f"align chunk {start // chunk} (encoding)", log)))
            for j in range(0, len(part), batch_size):
                sub = part[j : j + batch_size]
                rank = functools.partial(self.rank_spans, top_k=top_k)
                items = [(vecs[pair_key(i)], i.source_span) for i in sub]
                ranked = split_on_oom(rank, items, f"align chunk {start // chunk} batch {j // batch_size}", log)
                out.extend(([c for c in r if c[1] >= threshold], r[0][1] if r else 0.0) for r in ranked)
        return out


def top_indices(scores: torch.Tensor, k: int) -> list[int]:
    """The indices of the ``k`` highest scores, best first; the first is argmax's (the first of equal
    scores), so the best of a ranking is always the single prediction's."""
    return top_indices_rows(scores.unsqueeze(0), k)[0]


def top_indices_rows(scores: torch.Tensor, k: int) -> list[list[int]]:
    """``top_indices`` of each row of ``scores`` [R, C], in one argmax and one topk."""
    best = scores.argmax(1).tolist()
    if k == 1:
        return [[b] for b in best]
    rest = torch.topk(scores, min(k, scores.shape[1]), dim=1).indices.tolist()
    return [[b] + [n for n in r if n != b][: k - 1] for b, r in zip(best, rest)]


def _top_candidates(
    scores: torch.Tensor, cands: torch.Tensor, counts: Sequence[int], top_k: int
) -> list[list[tuple[tuple[int, int], float]]]:
    """Each item's ``top_k`` best (span, score) from its ``counts`` rows of ``scores`` and ``cands``
    (one transfer to the host for the whole chunk)."""
    scores, cands = scores.cpu(), cands.cpu()
    out: list[list[tuple[tuple[int, int], float]]] = []
    offset = 0
    for c in counts:
        part = scores[offset : offset + c]
        top = top_indices(part, top_k) if c else []
        out.append([((int(cands[offset + n, 0]), int(cands[offset + n, 1])), float(part[n])) for n in top])
        offset += c
    return out


def encoder_layers(encoder: nn.Module) -> nn.ModuleList:
    """The stack of transformer layers of a BERT-like ``AutoModel`` (``encoder.layer``)."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList):
        raise ConfigError(
            f"finetune_layers needs a BERT-like encoder with encoder.layer; {type(encoder).__name__} has none"
        )
    return layers
