"""A trained paraphraser scored on the bitext's held-out pairs: loss, and sacrebleu's chrF and BLEU.

The loss is the mean cross-entropy per target token (no label smoothing) of every held-out pair,
computed as training computes it (a decoder-only model: the answer given the prompt). chrF and BLEU
score the saved model's own outputs: the held-out sources are decoded by the paraphrase stage's
loader and backend (transformers' generate for a seq2seq model, the decoder-only backend for a
causal LM) with a small beam, each request banning the word the pair's prompt names
(:func:`.bitext.pick_word`, absent from the reference) as the pipeline bans a span, and the best
output is scored against the reference paraphrase (a request without an output scores as an empty
string). Only pairs that name a word are decoded (the paraphrase stage always bans one; the others
are near copies or shortenings), at most ``heldout_decode`` of them, spread evenly. The same scores
of the sources themselves (``copy_chrf``, ``copy_bleu``) say what copying the input would get.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from spanaug.core.config import DecodeSettings
from spanaug.core.text import tokenize
from spanaug.pipeline.paraphraser import decode_loop
from spanaug.pipeline.paraphraser.bitext import Pair, pick_word

log = logging.getLogger(__name__)

#: The metrics file written beside a trained model.
METRICS_FILE = "heldout_metrics.json"
#: Held-out pairs shown in the metrics file with their outputs.
SHOWN = 10


@torch.no_grad()
def mean_loss(
    model: Any,
    batches: Sequence[dict[str, torch.Tensor]],
    nll: Callable[[Any, dict[str, torch.Tensor]], tuple[torch.Tensor, int]],
    device: torch.device,
) -> float | None:
    """Cross-entropy per target token over ``batches`` (``nll`` gives a batch's sum and count)."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for batch in batches:
            loss, n = nll(model, {k: v.to(device) for k, v in batch.items()})
            total += float(loss)
            count += n
    finally:
        model.train(was_training)
    return total / count if count else None


def seq2seq_nll(model: Any, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
    """(summed cross-entropy of a seq2seq batch's target tokens, their count); labels -100 are padding."""
    labels = batch["labels"]
    logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits.float()
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100, reduction="sum"
    )
    return loss, int((labels != -100).sum())


def requests(pairs: Sequence[Pair]) -> list[dict[str, Any]]:
    """The paraphrase stage's requests for held-out sources: the pair's word as the span (its first
    occurrence) and the one constraint (none when the pair names no word)."""
    out = []
    for n, (source, target) in enumerate(pairs):
        tokens = tokenize(source)
        word = pick_word(source, target)
        at = tokens.index(word) if word in tokens else 0
        out.append(
            {
                "seed_id": f"heldout:{n}",
                "source_text": source,
                "source_tokens": tokens,
                "source_span_start": at,
                "source_span_end": at if word else at - 1,
                "constraints": [word] if word else [],
            }
        )
    return out


def decode(
    model_dir: Path | str, pairs: Sequence[Pair], decode_cfg: DecodeSettings, beam: int, device: str
) -> list[str]:
    """Each held-out source's best output by the saved model (empty when it has none)."""
    from spanaug.pipeline.paraphraser.stage import load_paraphraser

    cfg = dataclasses.replace(decode_cfg, model=str(model_dir), backend="hf", mode="beam", beam_size=beam, return_top=1)
    paraphraser = load_paraphraser(cfg, device)
    best: dict[str, str] = {}
    for row in decode_loop.paraphrase(paraphraser, requests(pairs), cfg, progress=False):
        if row["beam_rank"] == 0:
            best[row["seed_id"]] = row["paraphrase_text"]
    return [best.get(f"heldout:{n}", "") for n in range(len(pairs))]


def scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """sacrebleu's corpus chrF and BLEU (default settings: chrF2, BLEU-4 with 13a tokenization)."""
    import sacrebleu

    return {
        "chrf": round(sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score, 2),
        "bleu": round(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score, 2),
    }


def evaluate(
    model_dir: Path | str,
    pairs: Sequence[Pair],
    decode_cfg: DecodeSettings,
    beam: int,
    limit: int,
    device: str = "auto",
    loss: float | None = None,
) -> dict[str, Any]:
    """The metrics of the model saved in ``model_dir`` on held-out ``pairs`` (its ``loss`` computed
    by the caller): chrF and BLEU of the outputs of ``limit`` of the pairs that name a word (spread
    evenly over them), the same for every kind of model."""
    worded = [p for p in pairs if pick_word(*p) is not None]
    decoded = [worded[i * len(worded) // limit] for i in range(limit)] if len(worded) > limit else worded
    metrics: dict[str, Any] = {
        "heldout_pairs": len(pairs),
        "loss": None if loss is None or not math.isfinite(loss) else round(loss, 4),
        "decoded_pairs": len(decoded),
        "beam": beam,
    }
    if not decoded:
        return metrics
    hypotheses = decode(model_dir, decoded, decode_cfg, beam, device)
    references = [t for _, t in decoded]
    copy = scores([s for s, _ in decoded], references)
    metrics.update(scores(hypotheses, references))
    metrics.update(
        {
            "copy_chrf": copy["chrf"],
            "copy_bleu": copy["bleu"],
            "without_output": sum(not h for h in hypotheses),
            "examples": [
                {"source": s, "reference": t, "output": h} for (s, t), h in zip(decoded[:SHOWN], hypotheses[:SHOWN])
            ],
        }
    )
    return metrics


def describe(metrics: dict[str, Any]) -> str:
    """A log line of the metrics."""
    parts = [f"{metrics['heldout_pairs']} held-out pairs", f"loss {metrics.get('loss')}"]
    if "chrf" in metrics:
        parts += [
            f"chrF {metrics['chrf']} (copying the source: {metrics['copy_chrf']})",
            f"BLEU {metrics['bleu']} (copying: {metrics['copy_bleu']})",
            f"{metrics['without_output']} of {metrics['decoded_pairs']} decoded without an output",
        ]
    return ", ".join(parts)
