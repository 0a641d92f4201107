"""DiscAlign: a discriminative word aligner after Stengel-Eskin et al. (2019), on a frozen encoder."""

import dataclasses
import logging
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from spanaug.core import modeldir, training_loop
from spanaug.core.aligner_settings import AlignerConfig, DiscAlignSettings, DiscAlignTrainSettings
from spanaug.core.devices import choose_device, log_device
from spanaug.core.settings import inherit, setting, settings
from spanaug.core.splits import assign_parts
from spanaug.evaluation.word_alignment import Pair, links_above
from spanaug.pipeline.aligner.pair_encoder import PairEncoder
from spanaug.pipeline.aligner.word_aligned import AlignedPair, Link

log = logging.getLogger(__name__)

#: What its saved folder records it holds (core.modeldir): checked before its weights load.
KIND = "DiscAlign model"


@settings
class DiscAlignConfig(DiscAlignSettings):
    """A trained DiscAlign model's config (saved as its config.json)."""

    encoder_dim: int = setting(0, "the encoder's hidden size (set when the model is built)", minimum=0)
    max_length: int = inherit(AlignerConfig, "max_length")


# No `from __future__ import annotations` in this module: the hub mixin reads the type of
# `config` from the signature to rebuild the dataclass on load.
class LinkScorer(nn.Module, PyTorchModelHubMixin):
    """Projections of source and target word vectors; their product is one logit per word pair.

    Two learned scalars also weigh the cosine of the raw vectors and the distance between the
    words' relative positions, cues a small training set (713 pairs) cannot teach the projections
    quickly.
    """

    def __init__(self, config: DiscAlignConfig):
        super().__init__()
        self.config = config
        hidden, projection = config.encoder_dim, config.projection
        self.src = nn.Sequential(nn.Linear(hidden, projection), nn.Tanh(), nn.Linear(projection, projection))
        self.tgt = nn.Sequential(nn.Linear(hidden, projection), nn.Tanh(), nn.Linear(projection, projection))
        self.cosine_weight = nn.Parameter(torch.tensor(5.0))
        self.distance_weight = nn.Parameter(torch.tensor(-1.0))
        self.bias = nn.Parameter(torch.tensor(-3.0))
        self.scale = projection**-0.5

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        cosine = nn.functional.normalize(src, dim=-1) @ nn.functional.normalize(tgt, dim=-1).T
        rel_src = torch.arange(src.shape[0], device=src.device) / max(src.shape[0] - 1, 1)
        rel_tgt = torch.arange(tgt.shape[0], device=tgt.device) / max(tgt.shape[0] - 1, 1)
        distance = (rel_src[:, None] - rel_tgt[None, :]).abs()
        return (
            self.src(src) @ self.tgt(tgt).T * self.scale
            + self.cosine_weight * cosine
            + self.distance_weight * distance
            + self.bias
        )


class DiscAligner:
    """A discriminative word aligner after Stengel-Eskin et al. (2019), on a frozen encoder."""

    def __init__(self, config: DiscAlignConfig, device: str | None = "auto", scorer: LinkScorer | None = None):
        self.config = config
        self.device = choose_device(device)
        log_device(self.device, torch.float32)  # the job log names its device (float32 throughout)
        self.words = PairEncoder(config.encoder, device=self.device, max_length=config.max_length, cache={})
        config.encoder_dim = self.words.encoder.config.hidden_size
        self.scorer = (scorer or LinkScorer(config)).to(self.device)

    def save_pretrained(self, out: Path | str) -> None:
        with modeldir.atomic_dir(out, kind=KIND) as tmp:
            self.scorer.save_pretrained(tmp, config=self.config)

    @classmethod
    def from_pretrained(cls, path: Path | str, device: str | None = "auto") -> "DiscAligner":
        scorer = modeldir.load_head(LinkScorer, path, choose_device(device), KIND)
        return cls(scorer.config, device=device, scorer=scorer)

    def _targets(self, pair: AlignedPair) -> tuple[torch.Tensor, torch.Tensor]:
        """Label matrix (1 on positive links) and a mask that leaves out possible-only links."""
        labels = torch.zeros(len(pair.source), len(pair.target), device=self.device)
        mask = torch.ones_like(labels)
        for i, j in pair.sure:
            labels[i, j] = 1.0
        for i, j in pair.possible - pair.sure:
            if self.config.possible_as_positive:
                labels[i, j] = 1.0
            else:
                mask[i, j] = 0.0  # neither a positive nor a clean negative
        return labels, mask

    def train(
        self,
        pairs: Sequence[AlignedPair],
        epochs: int,
        seed: int,
        batch_size: int = 8,
        learning_rate: float = 1e-3,
        progress: bool = True,
    ) -> list[float]:
        """BCE on every word pair of every sentence pair; returns the loss per epoch."""
        torch.manual_seed(seed)
        rng = random.Random(seed)
        keys = [p.key for p in pairs]
        vecs = dict(zip(keys, self.words.encode_pairs(keys, progress=progress)))
        examples = [(vecs[k], *self._targets(p)) for k, p in zip(keys, pairs)]
        opt = torch.optim.Adam(self.scorer.parameters(), lr=learning_rate)

        def batches(epoch: int) -> Iterator[list]:
            rng.shuffle(examples)
            return (examples[start : start + batch_size] for start in range(0, len(examples), batch_size))

        def loss(chunk: list) -> tuple[torch.Tensor, int]:
            losses = [
                nn.functional.binary_cross_entropy_with_logits(self.scorer(s, t), y, weight=m, reduction="sum")
                / m.sum().clamp(min=1)
                for (s, t), y, m in chunk
            ]
            return torch.stack(losses).mean(), len(chunk)  # the epoch's loss is a mean over sentence pairs

        settings = training_loop.LoopSettings(epochs=epochs, name="discalign", progress=progress)
        return training_loop.fit(settings, opt, batches, loss, [self.scorer]).losses

    @torch.inference_mode()
    def link_probabilities(self, pairs: Sequence[Pair]) -> list[torch.Tensor]:
        return [torch.sigmoid(self.scorer(s, t)).cpu() for s, t in self.words.encode_pairs(list(pairs))]

    def align(self, pairs: Sequence[Pair]) -> dict[Pair, set[Link]]:
        """Links whose probability reaches the threshold, per sentence pair."""
        unique = list(dict.fromkeys(pairs))
        return {
            pair: links_above(probs, self.config.threshold)
            for pair, probs in zip(unique, self.link_probabilities(unique))
        }

    def tune_threshold(self, dev: Sequence[AlignedPair]) -> float:
        """Set the link threshold that maximises word-alignment F1 on ``dev`` (links are rare, so
        the best cut is usually well below 0.5)."""
        from spanaug.evaluation.word_alignment import alignment_scores

        unique = list(dict.fromkeys(p.key for p in dev))
        by_key = dict(zip(unique, self.link_probabilities(unique)))
        best = (-1.0, self.config.threshold)
        for t in [x / 20 for x in range(1, 20)]:
            f1 = alignment_scores(dev, [links_above(by_key[p.key], t) for p in dev])["f1"]
            if f1 > best[0]:
                best = (f1, t)
        self.config.threshold = best[1]
        log.info("discalign threshold %.2f (dev word F1 %.3f)", best[1], best[0])
        return best[1]


def train_discalign(
    gold: Sequence[AlignedPair],
    settings: DiscAlignSettings,
    training: DiscAlignTrainSettings,
    pretrain: Sequence[AlignedPair] = (),
    device: str = "auto",
) -> tuple[DiscAligner, dict[str, Any]]:
    """Train DiscAlign on gold pairs (after ``training.pretrain_epochs`` over ``pretrain`` pairs, e.g.
    automatic alignments); the first ``training.dev_share`` of the gold pairs is held out to tune the
    link threshold (0: keep ``settings.threshold``)."""
    model = DiscAligner(DiscAlignConfig(**dataclasses.asdict(settings)), device=device)
    history: dict[str, Any] = {}
    if pretrain:
        history["pretrain_loss"] = model.train(pretrain, epochs=training.pretrain_epochs, seed=training.seed)
    part = assign_parts(range(len(gold)), [("dev", training.dev_share), ("train", None)])
    kept = [p for n, p in enumerate(gold) if part[n] == "train"]
    history["loss"] = model.train(kept, epochs=training.epochs, seed=training.seed)
    dev = [p for n, p in enumerate(gold) if part[n] == "dev"]
    if dev:
        history["threshold"] = model.tune_threshold(dev)
    return model, history
