"""Lexically constrained paraphrasing with a Hugging Face seq2seq model.

Each request carries its own negative constraints (phrases the output must not contain), enforced
per sentence during decoding; every output is re-checked on its detokenised text afterwards: a
violating output is dropped and counted, never kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_device, choose_dtype
from spanaug.core.text import tokenize
from spanaug.pipeline.constraints import violations
from spanaug.pipeline.paraphraser.banned import PerSentenceBannedSequences, banned_sequences


def default_batch_size(device: torch.device, width: int) -> int:
    """Sentences per batch, so that batch * beams stays near what each device handles well."""
    rows = 2048 if device.type == "cuda" else 128
    return max(1, rows // max(1, width))


@dataclasses.dataclass
class DecodeStats:
    requests: int = 0
    outputs: int = 0
    violations_dropped: int = 0
    duplicates_dropped: int = 0
    requests_without_output: int = 0


class Paraphraser:
    """A seq2seq paraphraser (``AutoModelForSeq2SeqLM``) decoding under negative constraints."""

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype):  # noqa: ANN001
        self.model = model.to(device=device, dtype=dtype).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path, device: str | None = "auto",
                        dtype: str | None = "auto") -> "Paraphraser":
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        dev = choose_device(device)
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path))
        model = AutoModelForSeq2SeqLM.from_pretrained(str(name_or_path))
        return cls(model, tokenizer, dev, choose_dtype(dev, dtype))

    def _encode(self, texts: list[str], prefix: str) -> dict[str, torch.Tensor]:
        enc = self.tokenizer([prefix + t for t in texts], padding=True, truncation=True, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items()}

    @torch.inference_mode()
    def score(self, sources: list[str], outputs: list[str], prefix: str = "") -> list[float]:
        """Length-normalised negative log-likelihood of each output given its source."""
        enc = self._encode(sources, prefix)
        labels = self.tokenizer(text_target=outputs, padding=True, truncation=True, return_tensors="pt")["input_ids"].to(self.device)
        labels = labels.masked_fill(labels == self.tokenizer.pad_token_id, -100)
        logits = self.model(**enc, labels=labels).logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        mask = labels != -100
        token_logp = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
        return (-(token_logp.sum(-1)) / mask.sum(-1).clamp(min=1)).tolist()

    @torch.inference_mode()
    def _generate_batch(self, requests: list[dict[str, Any]], cfg: DecodeSettings, batch_index: int) -> list[list[str]]:
        enc = self._encode([r["source_text"] for r in requests], cfg.prefix)
        banned = [banned_sequences(self.tokenizer, r["constraints"]) for r in requests]
        processor = PerSentenceBannedSequences(banned, self.model.config.vocab_size, self.device)
        max_new = cfg.max_new_tokens or int(enc["input_ids"].shape[1] * 1.5) + 10
        kwargs: dict[str, Any] = {"max_new_tokens": max_new, "logits_processor": [processor]}
        if cfg.mode == "beam":
            kwargs.update(num_beams=cfg.beam_size, num_return_sequences=cfg.beam_size, do_sample=False,
                          early_stopping=True)
        else:
            torch.manual_seed(cfg.seed * 100003 + batch_index)
            kwargs.update(do_sample=True, top_k=cfg.top_k, num_beams=1, num_return_sequences=cfg.num_samples)
        out = self.model.generate(**enc, **kwargs)
        texts = self.tokenizer.batch_decode(out, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        width = cfg.width
        return [texts[i * width : (i + 1) * width] for i in range(len(requests))]

    def paraphrase(self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings, stats: DecodeStats | None = None,
                   progress: bool = True) -> Iterator[dict[str, Any]]:
        """Decode every request; yield PARAPHRASES rows (request keys + beam outputs), in input order."""
        stats = stats if stats is not None else DecodeStats()
        batch_size = cfg.batch_size or default_batch_size(self.device, cfg.width)
        order = sorted(range(len(requests)), key=lambda i: len(requests[i]["source_tokens"]))
        results: dict[int, list[dict[str, Any]]] = {}
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        for b, idx in enumerate(tqdm(batches, desc="paraphrase", unit="batch", disable=not progress)):
            batch = [requests[i] for i in idx]
            candidates = self._generate_batch(batch, cfg, b)
            keep: list[tuple[int, str]] = []
            for i, req, cands in zip(idx, batch, candidates):
                stats.requests += 1
                seen: set[str] = set()
                kept = []
                for text in cands:
                    text = text.strip()
                    if not text or text in seen:
                        stats.duplicates_dropped += bool(text)
                        continue
                    seen.add(text)
                    if violations(text, req["constraints"]):
                        stats.violations_dropped += 1
                        continue
                    kept.append(text)
                limit = cfg.return_top if cfg.mode == "beam" else cfg.num_samples
                kept = kept[:limit]
                if not kept:
                    stats.requests_without_output += 1
                keep.extend((i, t) for t in kept)
            if not keep:
                continue
            scores = self.score([requests[i]["source_text"] for i, _ in keep], [t for _, t in keep], cfg.prefix)
            for (i, text), score in zip(keep, scores):
                results.setdefault(i, []).append({**requests[i], "paraphrase_text": text,
                                                  "paraphrase_tokens": tokenize(text), "paraphrase_score": float(score)})
                stats.outputs += 1
        for i in range(len(requests)):
            # Rank by the exact score (constraints make the decoder's own scores approximate).
            ranked = sorted(results.get(i, []), key=lambda r: r["paraphrase_score"])
            for rank, row in enumerate(ranked):
                yield {**row, "beam_rank": rank}
