"""A cross-encoder span aligner: the second aligner kind beside the paper's (``aligner.kind: cross``).

The source sentence, with the span wrapped in marker tokens added to the tokenizer, and the
target sentence are one encoder input::

    [CLS] w1 .. [S] ws .. we [/S] .. wn [SEP] v1 .. vm [SEP]

The encoder is fine-tuned (end to end, or only its top ``tune_layers`` layers) with a small head
that scores every target span [a, b] whose length is within ``k`` of the source span's (as the
paper's candidates) and one null option ('no counterpart'). Word vectors are the first (or the
mean) of a word's pieces, so scores map back to word indices. Training is a softmax over
{null} + candidates against the soft labels 2^-distance (normalised) or the exact span. The
score of a prediction is the softmax probability of the chosen span, temperature-scaled on held
out pairs, so it stays a usable probability; the null threshold is tuned there too.

Pairs longer than the encoder's limit are never silently cut: the source is first narrowed to a
window around the span, then target words that still do not fit are dropped from the end and
are never candidates. Both are counted (``stats``), as are instances that cannot be scored.

Inputs (marked pairs within the encoder's limit, batches, label distributions) are in
``cross_inputs``, training in ``cross_training``. The model directory follows the project's
convention (``core.modeldir``): the head's config (``CrossAlignerConfig``, whose ``kind: cross``
``loading.AutoAligner`` dispatches on) and weights, and the tuned encoder with its tokenizer
(markers included) in ``encoder/``.
"""

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn
from tqdm import tqdm

from spanaug.core import modeldir
from spanaug.core.aligner_settings import CrossAlignerConfig
from spanaug.core.calibration import platt
from spanaug.core.devices import choose_device, choose_dtype
from spanaug.core.encoders import load_encoder
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import null_share, span_metrics
from spanaug.core.oom import split_on_oom
from spanaug.pipeline.aligner.cross_inputs import Batch, Encoded, Encoder, Readback, collate, padded_logits
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.interface import Candidates
from spanaug.pipeline.aligner.kinds import KINDS
from spanaug.pipeline.aligner.model import encoder_layers, top_indices_rows

log = logging.getLogger(__name__)

#: What its saved folder records it holds (core.modeldir): checked before its weights load.
KIND = KINDS["cross"].what


# No `from __future__ import annotations` in this module: the hub mixin reads the type of
# `config` from the signature to rebuild the dataclass on load.

# ---------------------------------------------------------------- head


class SpanHead(nn.Module, PyTorchModelHubMixin):
    """Scores of target spans and of the null option from the encoder's states.

    A span [a, b] with mean word vector m scores start(w_a) + end(w_b) + f(w_a, w_b, m, q, u - m,
    u * m, length difference), with q the marked span's vector (mean of the states from [S] to
    [/S]) and u the mean of the source span's word vectors (the paper's Df, and a product); null
    scores g([CLS], q).
    """

    def __init__(self, config: CrossAlignerConfig):
        super().__init__()
        self.config = config
        hidden, inner, k = config.encoder_dim, config.head_dim, config.k
        self.k = k
        self.start = nn.Linear(hidden, 1)
        self.end = nn.Linear(hidden, 1)
        self.first = nn.Linear(hidden, inner)
        self.last = nn.Linear(hidden, inner, bias=False)
        self.inside = nn.Linear(hidden, inner, bias=False)
        self.query = nn.Linear(hidden, inner, bias=False)
        self.match = nn.Linear(hidden, inner, bias=False)
        self.diff = nn.Linear(hidden, inner, bias=False)
        self.length_diff = nn.Embedding(2 * k + 1, inner)
        self.span_out = nn.Sequential(nn.GELU(), nn.LayerNorm(inner), nn.Linear(inner, 1))
        self.null = nn.Sequential(nn.Linear(2 * hidden, inner), nn.GELU(), nn.LayerNorm(inner), nn.Linear(inner, 1))

    def forward(
        self,
        words: torch.Tensor,
        query: torch.Tensor,
        source: torch.Tensor,
        cls: torch.Tensor,
        item: torch.Tensor,
        cands: torch.Tensor,
        length_diff: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``words`` [B, W, H], ``query``, ``source`` and ``cls`` [B, H]; candidates [C, 2] of items ``item`` [C].

        Returns the span logits [C] and the null logits [B]. The linear terms are applied to the
        words before the candidates are formed (a mean of projections is the projection of the
        mean), so a candidate costs a gather, a prefix difference and the output layer.
        """
        a, b = cands[:, 0], cands[:, 1]
        n_items = words.shape[0]
        edges = self.first(words), self.last(words)
        inner = self.inside(words) - self.diff(words) + self.match(source.unsqueeze(1) * words)  # [B, W, D]
        prefix = torch.cat([inner.new_zeros(n_items, 1, inner.shape[2]), inner.cumsum(1)], dim=1)
        mean = (prefix[item, b + 1] - prefix[item, a]) / (b - a + 1).unsqueeze(-1).to(words.dtype)
        per_item = self.query(query) + self.diff(source)  # [B, D]
        z = (
            edges[0][item, a]
            + edges[1][item, b]
            + mean
            + per_item[item]
            + self.length_diff(length_diff.clamp(0, 2 * self.k))
        )
        start, end = self.start(words).squeeze(-1), self.end(words).squeeze(-1)  # [B, W]
        span = start[item, a] + end[item, b] + self.span_out(z).squeeze(-1)
        null = self.null(torch.cat([cls, query], dim=-1)).squeeze(-1)
        return span, null


# ---------------------------------------------------------------- model


class CrossAligner:
    """Fine-tuned encoder + span head; ``from_pretrained``/``save_pretrained`` a directory.

    The cross kind of ``interface.SpanAlignerModel``.
    """

    kind = "cross"
    encodes_each_span = True  # the span's markers are in the encoder's input
    #: Instances per encoder batch when ``predict`` is given none.
    predict_batch_size = 32

    def __init__(
        self,
        config: CrossAlignerConfig,
        encoder: Any = None,
        tokenizer: Any = None,
        head: SpanHead | None = None,
        device: str | torch.device | None = "auto",
        dtype: str | None = "float32",
    ):
        """``dtype`` is the encoder's (``auto``: ``core.devices.choose_dtype``); float32 unless told,
        since training keeps float32 weights: ``from_pretrained``, which loads for prediction, says auto."""
        self.config = config
        self.device = device if isinstance(device, torch.device) else choose_device(device)
        self.dtype = choose_dtype(self.device, dtype)
        if encoder is None or tokenizer is None:
            loaded_tokenizer, loaded_encoder = load_encoder(config.encoder)
            tokenizer, encoder = tokenizer or loaded_tokenizer, encoder or loaded_encoder
        self.tokenizer, self.encoder = tokenizer, encoder
        self._add_markers()
        # The head stays in float32 (``scores`` upcasts the encoder's states), so the softmax,
        # temperature and Platt scaling see float32 logits whatever the encoder runs in.
        self.encoder.to(device=self.device, dtype=self.dtype).eval()
        if self.dtype != torch.float32:
            log.info("cross aligner: encoder in %s on %s (prediction)", self.dtype, self.device)
        dim = self.encoder.config.hidden_size
        if config.encoder_dim not in (0, dim):
            raise ConfigError(
                f"the cross aligner's head was made for a {config.encoder_dim}-dimensional encoder; "
                f"{config.encoder} has {dim} dimensions"
            )
        config.encoder_dim = dim
        self.head = (head or SpanHead(config)).to(self.device).eval()
        marker_ids = tuple(self.tokenizer.convert_tokens_to_ids(list(config.markers)))
        self.totals: dict[str, int] = {}  # encode() statistics summed over calls, for limit_stats()
        self.inputs = Encoder(self.tokenizer, marker_ids, min(config.max_length, self._position_limit()))
        self.stats: dict[str, int] = {}

    def _position_limit(self) -> int:
        limit = getattr(self.encoder.config, "max_position_embeddings", None) or self.config.max_length
        return (
            int(limit) - 2
            if getattr(self.encoder.config, "model_type", "") in ("roberta", "xlm-roberta")
            else int(limit)
        )

    def _add_markers(self) -> None:
        """Add the markers to the tokenizer (once) and the embedding matrix, initialised from ``marker_init``."""
        from tokenizers import AddedToken

        vocab = self.tokenizer.get_vocab()
        missing = [m for m in self.config.markers if m not in vocab]
        if missing:
            self.tokenizer.add_tokens(
                [AddedToken(m, special=True, normalized=False) for m in missing], special_tokens=True
            )
        emb = self.encoder.get_input_embeddings()
        if emb.num_embeddings < len(self.tokenizer):
            old = emb.num_embeddings
            self.encoder.resize_token_embeddings(len(self.tokenizer))
            emb = self.encoder.get_input_embeddings()
            if self.config.marker_init:
                with torch.no_grad():
                    for marker, init in zip(self.config.markers, self.config.marker_init):
                        new_id = self.tokenizer.convert_tokens_to_ids(marker)
                        src = self.tokenizer(init, add_special_tokens=False)["input_ids"]
                        if new_id >= old and src:
                            emb.weight[new_id] = emb.weight[src].mean(0)

    # -- persistence
    def save_pretrained(self, out: Path | str) -> Path:
        """The head (config.json, model.safetensors) and the tuned encoder and tokenizer (``encoder/``),
        written atomically."""
        with modeldir.atomic_dir(out, kind=KIND) as tmp:
            self.head.save_pretrained(tmp, config=self.config)
            self.encoder.save_pretrained(tmp / modeldir.ENCODER_DIR)
            self.tokenizer.save_pretrained(tmp / modeldir.ENCODER_DIR)
        return Path(out)

    @classmethod
    def from_pretrained(
        cls, path: Path | str, device: str | None = "auto", dtype: str | None = "auto"
    ) -> "CrossAligner":
        """A trained aligner, for prediction: its encoder in ``dtype`` (auto: bf16 on GPUs, fp32 on CPU)."""
        from transformers import AutoModel, AutoTokenizer

        path = Path(path)
        dev = choose_device(device)
        head = modeldir.load_head(SpanHead, path, dev, KIND)
        if head.config.kind != "cross" or not (path / modeldir.ENCODER_DIR).is_dir():
            raise ConfigError(f"{path}: not a trained cross aligner")
        tokenizer = AutoTokenizer.from_pretrained(path / modeldir.ENCODER_DIR)
        encoder = AutoModel.from_pretrained(path / modeldir.ENCODER_DIR)
        return cls(head.config, encoder=encoder, tokenizer=tokenizer, head=head, device=dev, dtype=dtype)

    # -- encoding
    @property
    def n_layers(self) -> int:
        return len(encoder_layers(self.encoder))

    def hidden(self, batch: Batch) -> torch.Tensor:
        return self.encoder(
            input_ids=batch.ids, attention_mask=batch.mask, token_type_ids=batch.types
        ).last_hidden_state

    def prefix_states(self, batch: Batch, n_top: int) -> torch.Tensor:
        """The input of the top ``n_top`` layers [B, T, H] (no gradients)."""
        with torch.inference_mode():
            out = self.encoder(
                input_ids=batch.ids, attention_mask=batch.mask, token_type_ids=batch.types, output_hidden_states=True
            )
        return out.hidden_states[self.n_layers - n_top].clone()

    def top_layers(self, states: torch.Tensor, mask: torch.Tensor, n_top: int) -> torch.Tensor:
        """Run the top ``n_top`` layers on ``states`` (the rest of the encoder's forward)."""
        from transformers.masking_utils import create_bidirectional_mask

        attn = create_bidirectional_mask(config=self.encoder.config, inputs_embeds=states, attention_mask=mask)
        for layer in encoder_layers(self.encoder)[self.n_layers - n_top :]:
            out = layer(states, attention_mask=attn)
            states = out[0] if isinstance(out, tuple) else out
        return states

    def scores(self, batch: Batch, hidden: torch.Tensor) -> torch.Tensor:
        """[B, 1 + max C] logits (null first) from the encoder's last states."""
        hidden = hidden.float()
        words = torch.bmm(batch.word_pool, hidden)
        query = torch.bmm(batch.query_pool.unsqueeze(1), hidden).squeeze(1)
        source = torch.bmm(batch.source_pool.unsqueeze(1), hidden).squeeze(1)
        span, null = self.head(words, query, source, hidden[:, 0], batch.item, batch.cands, batch.length_diff)
        return padded_logits(span, null, batch.item, batch.counts)

    def collate(self, encs: Sequence[Encoded]) -> Batch:
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        return collate(encs, self.config.k, self.config.pooling, pad, self.device)

    def encode(self, instances: Sequence[Instance]) -> tuple[list[Encoded | None], dict[str, int]]:
        self.inputs.prepare(instances)  # the unseen words of all instances in one tokenizer call
        encs = [self.inputs.encode(i) for i in instances]
        stats = {
            "instances": len(encs),
            "unscorable": sum(x is None for x in encs),
            "source_windowed": sum(x is not None and x.source_windowed for x in encs),
            "target_truncated": sum(x is not None and x.target_truncated for x in encs),
        }
        if stats["unscorable"] or stats["target_truncated"]:
            log.warning(
                "cross aligner: %d instance(s) too long to score at all, %d with target words cut "
                "(never candidates); %d source(s) narrowed to a window",
                stats["unscorable"],
                stats["target_truncated"],
                stats["source_windowed"],
            )
        return encs, stats

    def limit_stats(self) -> dict[str, int]:
        """Instances over the encoder's limit so far (unscorable, source windowed, target cut)."""
        return {
            "pairs_over_encoder_limit": self.totals.get("source_windowed", 0) + self.totals.get("target_truncated", 0),
            "unscorable_pairs": self.totals.get("unscorable", 0),
            "encoder_limit_word_pieces": self.inputs.max_length,
        }

    # -- prediction
    @torch.inference_mode()
    def raw_scores(
        self,
        instances: Sequence[Instance],
        batch_size: int = 32,
        progress: bool = False,
    ) -> list[tuple[torch.Tensor, torch.Tensor] | None]:
        """(candidates [C, 2], logits [1 + C] with null first) per instance; None when unscorable."""
        self.encoder.eval()
        self.head.eval()
        encs, self.stats = self.encode(instances)
        for key in ("instances", "unscorable", "source_windowed", "target_truncated"):
            self.totals[key] = self.totals.get(key, 0) + self.stats[key]
        out: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(encs)
        order = sorted((n for n, x in enumerate(encs) if x is not None), key=lambda n: len(encs[n].ids))

        def score(idx: list[int]) -> list[Readback]:
            batch = self.collate([encs[n] for n in idx])
            return [Readback(batch, self.scores(batch, self.hidden(batch)), idx)] * len(idx)

        # One batch in flight: a batch's scores are read once the next one is launched, so on a GPU the
        # host builds and reads batches while the encoder runs.
        in_flight: list[Readback] = []
        for start in tqdm(range(0, len(order), batch_size), desc="align", unit="batch", disable=not progress):
            # A batch that runs out of GPU memory is split in halves and retried (core.oom): each input
            # is scored on its own row.
            launched = split_on_oom(score, order[start : start + batch_size], f"align batch {start // batch_size}", log)
            for readback in in_flight:
                readback.store(out)
            in_flight = list({id(r): r for r in launched}.values())  # one per batch, or per part of a split
        for readback in in_flight:
            readback.store(out)
        return out

    def decide(
        self,
        raw: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
        temperature: float | None = None,
        threshold: float | None = None,
    ) -> list[tuple[tuple[int, int] | None, float]]:
        """(span or None, probability of the best span) per instance from ``raw_scores``.

        Null when the null option's probability reaches the threshold.
        """
        threshold = self.config.threshold if threshold is None else threshold
        return [(span if p_null < threshold else None, p) for span, p, p_null in self.probabilities(raw, temperature)]

    def probabilities(
        self,
        raw: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
        temperature: float | None = None,
    ) -> list[tuple[tuple[int, int] | None, float, float]]:
        """(best span, its probability, the null option's probability) per instance.

        The span's probability goes through the fitted Platt scaling (``config.calibration``) unless
        ``temperature`` is given (training's own uses, before the scaling is fitted).
        """
        scaling = self.config.calibration if temperature is None else None
        temperature = self.config.temperature if temperature is None else temperature
        out: list[tuple[tuple[int, int] | None, float, float]] = [(None, 0.0, 1.0)] * len(raw)
        for idx, cands, probs in softmax_by_length(raw, temperature):
            best = probs[:, 1:].argmax(1)
            spans = cands[torch.arange(len(idx)), best].tolist()
            p_best = probs[:, 1:].gather(1, best.unsqueeze(1)).squeeze(1).tolist()
            for n, (a, b), p, p_null in zip(idx, spans, p_best, probs[:, 0].tolist()):
                out[n] = ((a, b), platt(p, scaling), p_null)
        return out

    def tune_threshold(
        self,
        raw: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
        gold: Sequence[tuple[int, int] | None],
        metric: str = "soft_f1",
        null_share_tolerance: float | None = None,
    ) -> tuple[float, dict[str, float]]:
        """The null-probability threshold maximising ``metric`` on held-out data (ties: nearest 0.5).

        With ``null_share_tolerance``, only thresholds whose share of null answers is within it of
        the gold null share compete (the nearest share wins when none is): F1 alone answers null
        too rarely, since a span on a null gold costs precision but a wrong span's overlap still
        earns soft credit, and downstream filters read null as "no counterpart".
        """
        probs = self.probabilities(raw)
        grid = sorted(
            {0.5, 1.01}
            | {round(p_null, 4) for _, _, p_null in probs}
            | {round(p_null, 4) + 1e-4 for _, _, p_null in probs}
        )
        gold_share = null_share(gold)
        best: tuple[tuple[float, ...], float, dict[str, float]] | None = None
        for t in grid:
            preds = [span if p_null < t else None for span, _, p_null in probs]
            m = span_metrics(gold, preds)
            m["pred_null_share"] = null_share(preds)
            m["gold_null_share"] = gold_share
            off = abs(m["pred_null_share"] - gold_share)
            fits = null_share_tolerance is None or off <= null_share_tolerance
            key = (float(fits), 0.0 if fits else -off, m[metric], -abs(t - 0.5))
            if best is None or key > best[0]:
                best = (key, t, m)
        assert best is not None
        return best[1], best[2]

    def ranked(
        self,
        raw: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
        top_k: int,
        threshold: float | None = None,
    ) -> list[Candidates]:
        """Per instance, its ``top_k`` most probable spans (Platt-scaled probabilities, best first),
        none when the null option's probability reaches the threshold, and the best span's probability."""
        threshold = self.config.threshold if threshold is None else threshold
        scaling = self.config.calibration
        out: list[Candidates] = [([], 0.0)] * len(raw)
        for idx, cands, probs in softmax_by_length(raw, self.config.temperature):
            top = torch.tensor(top_indices_rows(probs[:, 1:], top_k), dtype=torch.long)
            spans = cands[torch.arange(len(idx)).unsqueeze(1), top].tolist()
            p_top = probs[:, 1:].gather(1, top).tolist()
            for n, row_spans, row_p, p_null in zip(idx, spans, p_top, probs[:, 0].tolist()):
                scored = [((a, b), platt(p, scaling)) for (a, b), p in zip(row_spans, row_p)]
                out[n] = (scored if p_null < threshold else [], scored[0][1])
        return out

    def predict(
        self,
        instances: Sequence[Instance],
        batch_size: int | None = None,
        progress: bool = False,
        threshold: float | None = None,
    ) -> list[tuple[tuple[int, int] | None, float]]:
        """Predicted target span (None: no counterpart) and its probability per instance."""
        raw = self.raw_scores(instances, batch_size or self.predict_batch_size, progress)
        return self.decide(raw, threshold=threshold)

    def predict_candidates(
        self,
        instances: Sequence[Instance],
        top_k: int,
        batch_size: int | None = None,
        progress: bool = False,
        threshold: float | None = None,
    ) -> list[Candidates]:
        """Per instance, up to ``top_k`` accepted spans with their probabilities, best first, and the
        best probability (each (pair, span) is its own encoder input: the span is marked in it)."""
        raw = self.raw_scores(instances, batch_size or self.predict_batch_size, progress)
        return self.ranked(raw, top_k, threshold)


def softmax_by_length(
    raw: Sequence[tuple[torch.Tensor, torch.Tensor] | None], temperature: float
) -> list[tuple[list[int], torch.Tensor, torch.Tensor]]:
    """The scored instances of ``raw`` grouped by their number of candidates: (their indices, candidates
    [G, C, 2], softmax of logits / temperature [G, 1 + C], null first) per group.

    One softmax per group, not per instance (a few torch calls a pair cost more than the head); rows of
    one length, unpadded, so each row's probabilities are the ones its own softmax gives.
    """
    groups: dict[int, list[int]] = {}
    for n, item in enumerate(raw):
        if item is not None and item[0].shape[0]:
            groups.setdefault(item[0].shape[0], []).append(n)
    out = []
    for idx in groups.values():
        logits = torch.stack([raw[n][1] for n in idx])
        out.append((idx, torch.stack([raw[n][0] for n in idx]), torch.softmax(logits / temperature, dim=1)))
    return out


# ---------------------------------------------------------------- calibration


def fit_temperature(
    raw: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
    gold: Sequence[tuple[int, int] | None],
    grid: Sequence[float] | None = None,
) -> tuple[float, float]:
    """The temperature minimising the held-out negative log-likelihood of the gold option (the
    exact span, or null); instances whose gold span is no candidate are left out. (T, NLL)."""
    rows, targets = [], []
    for item, g in zip(raw, gold):
        if item is None:
            continue
        cands, logits = item
        if g is None:
            index = 0
        else:
            hit = ((cands[:, 0] == g[0]) & (cands[:, 1] == g[1])).nonzero()
            if not len(hit):
                continue
            index = 1 + int(hit[0])
        rows.append(logits)
        targets.append(index)
    if not rows:
        return 1.0, float("nan")
    grid = grid or [math.exp(x / 20) for x in range(-40, 41)]  # 0.135 .. 7.4
    best = (1.0, float("inf"))
    for t in grid:
        nll = -sum(float(torch.log_softmax(r / t, 0)[i]) for r, i in zip(rows, targets)) / len(rows)
        if nll < best[1]:
            best = (t, nll)
    return best
