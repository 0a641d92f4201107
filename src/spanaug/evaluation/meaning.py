"""Meaning check: how close each kept paraphrase stays to the sentence it rewrote.

A paraphrase and its source are embedded by a sentence encoder (all-MiniLM-L6-v2 offline: mean
pooling over its last layer, L2-normalised, as the model was trained) and compared by cosine. A
pair at or above :attr:`~spanaug.core.evaluation_settings.StatsSettings.meaning_threshold` counts
as keeping the meaning; ``scripts/meaning_threshold.py`` derives that threshold from human
paraphrase pairs and mismatched pairs of the shared word-aligned corpora (docs/real_run.md).

Per iteration, over the outputs whose trigger was aligned (those the next iteration and the
augmenters use): the mean cosine to the source (the sentence paraphrased in that iteration), the
share at or above the threshold, and the mean cosine to the seed (how far a chain has drifted).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

log = logging.getLogger(__name__)


class SentenceEncoder:
    """Mean-pooled, normalised sentence vectors of a Hugging Face encoder (``encode``)."""

    def __init__(self, name: str, batch_size: int = 64, max_length: int = 256) -> None:
        import torch

        from spanaug.core.encoders import frozen_encoder

        self.name = name
        self.tokenizer, self.model = frozen_encoder(name, torch.device("cpu"))
        self.batch_size = batch_size
        self.max_length = max_length

    def encode(self, texts: Sequence[str]) -> Any:
        """One unit vector per text (a float32 tensor, texts x dimensions)."""
        import torch

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # length-sorted batches pad less
        out = torch.zeros(len(texts), self.model.config.hidden_size)
        with torch.inference_mode():
            for lo in range(0, len(order), self.batch_size):
                rows = order[lo : lo + self.batch_size]
                enc = self.tokenizer(
                    [texts[i] for i in rows],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                hidden = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
                out[rows] = torch.nn.functional.normalize(pooled, dim=-1)
        return out

    def cosines(self, first: Sequence[str], second: Sequence[str]) -> list[float]:
        """The cosine of each pair (first[i], second[i])."""
        if len(first) != len(second):
            raise ValueError(f"{len(first)} first sentences but {len(second)} second ones")
        if not first:
            return []
        vectors = self.encode([*first, *second])
        return (vectors[: len(first)] * vectors[len(first) :]).sum(-1).tolist()


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def meaning_check(
    table: pa.Table,
    seeds: pa.Table,
    encoder: SentenceEncoder,
    threshold: float,
) -> dict[str, Any]:
    """The meaning check of ``table`` (AUGMENTED rows with their ``source_tokens``, see
    :func:`spanaug.evaluation.statistics.with_sources`) per iteration, and over all iterations."""
    from spanaug.core.text import detokenize

    kept = table.filter(pc.is_valid(table.column("aligned_start")))
    seed_text = dict(zip(seeds.column("sentence_id").to_pylist(), seeds.column("text").to_pylist()))
    outputs = kept.column("paraphrase_text").to_pylist()
    sources = [detokenize(tokens) for tokens in kept.column("source_tokens").to_pylist()]
    seed_ids = kept.column("seed_id").to_pylist()
    to_source = encoder.cosines(outputs, sources)
    with_seed = [i for i, sid in enumerate(seed_ids) if sid in seed_text]
    to_seed_values = encoder.cosines([outputs[i] for i in with_seed], [seed_text[seed_ids[i]] for i in with_seed])
    to_seed = dict(zip(with_seed, to_seed_values))
    iterations = kept.column("iteration").to_pylist()

    def summary(rows: list[int]) -> dict[str, Any]:
        cos = [to_source[i] for i in rows]
        drift = [to_seed[i] for i in rows if i in to_seed]
        above = sum(c >= threshold for c in cos)
        return {
            "kept_outputs": len(rows),
            "mean_cosine_to_source": sum(cos) / len(cos) if cos else None,
            "min_cosine_to_source": min(cos) if cos else None,
            "share_meaning_kept": _share(above, len(cos)),
            "mean_cosine_to_seed": sum(drift) / len(drift) if drift else None,
        }

    per_iteration = []
    for it in sorted(set(iterations)):
        per_iteration.append({"iteration": it, **summary([i for i, x in enumerate(iterations) if x == it])})
    return {
        "encoder": encoder.name,
        "threshold": threshold,
        "overall": summary(list(range(len(outputs)))),
        "per_iteration": per_iteration,
    }
