"""The CTranslate2 backend: the same model converted with CTranslate2.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from spanaug.core.config import DecodeSettings
from spanaug.core.errors import ConfigError
from spanaug.pipeline.paraphraser.banned import banned_sequences
from spanaug.pipeline.paraphraser.hf_backend import Paraphraser


class CT2Paraphraser(Paraphraser):
    """The same model converted with CTranslate2; constraints become ``suppress_sequences``.

    CTranslate2 applies ``suppress_sequences`` to a whole ``translate_batch`` call, so requests
    are grouped by identical constraint sets (one call per group, submitted asynchronously) to
    keep every sentence under exactly its own constraints.
    """

    def __init__(self, translator, tokenizer, device: str):  # noqa: ANN001
        self.translator = translator
        self.tokenizer = tokenizer
        self.device = torch.device("cuda" if device == "cuda" else "cpu")

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path, device: str | None = "auto", dtype: str | None = "auto",
                        ct2_dir: str | Path | None = None) -> "CT2Paraphraser":
        try:
            import ctranslate2
        except ImportError:
            raise ConfigError("the ct2 backend needs the ctranslate2 package (pip install 'spanaug[ct2]')") from None
        from transformers import AutoTokenizer

        src = Path(str(name_or_path))
        target = Path(ct2_dir) if ct2_dir else (src / "ctranslate2" if src.is_dir() else Path.home() / ".cache/spanaug/ct2" / str(name_or_path).replace("/", "--"))
        if not (target / "model.bin").is_file():
            ctranslate2.converters.TransformersConverter(str(name_or_path)).convert(str(target), force=True)
        dev = "cuda" if (device in (None, "auto") and ctranslate2.get_cuda_device_count()) or device == "cuda" else "cpu"
        compute = {"auto": "default", None: "default"}.get(dtype, dtype)
        # Requests are decoded in one call per constraint set: on CPU, run those calls side by side.
        threads = {"inter_threads": max(1, os.cpu_count() or 1), "intra_threads": 1} if dev == "cpu" else {}
        translator = ctranslate2.Translator(str(target), device=dev, compute_type=compute or "default", **threads)
        return cls(translator, AutoTokenizer.from_pretrained(str(name_or_path)), dev)

    def _pieces(self, text: str, prefix: str = "") -> list[str]:
        return self.tokenizer.convert_ids_to_tokens(self.tokenizer(prefix + text)["input_ids"])

    def _generate_batch(self, requests: list[dict[str, Any]], cfg: DecodeSettings, batch_index: int) -> list[list[str]]:
        import ctranslate2

        groups: dict[tuple[str, ...], list[int]] = {}
        for i, req in enumerate(requests):
            groups.setdefault(tuple(req["constraints"]), []).append(i)
        if cfg.mode == "sample":
            ctranslate2.set_random_seed(cfg.seed * 100003 + batch_index)
        kwargs: dict[str, Any] = {"max_decoding_length": cfg.max_new_tokens or 256, "asynchronous": True}
        if cfg.mode == "beam":
            kwargs.update(beam_size=cfg.beam_size, num_hypotheses=cfg.beam_size)
        else:
            kwargs.update(beam_size=1, sampling_topk=cfg.top_k, num_hypotheses=cfg.num_samples)
        pending = []
        for constraints, idx in groups.items():
            banned = [self.tokenizer.convert_ids_to_tokens(list(seq)) for seq in banned_sequences(self.tokenizer, constraints)]
            sources = [self._pieces(requests[i]["source_text"], cfg.prefix) for i in idx]
            pending.append((idx, self.translator.translate_batch(sources, suppress_sequences=banned or None, **kwargs)))
        out: list[list[str]] = [[] for _ in requests]
        for idx, results in pending:
            for i, res in zip(idx, results):
                hyps = res.result().hypotheses
                out[i] = [self.tokenizer.convert_tokens_to_string([t for t in h if t not in self.tokenizer.all_special_tokens])
                          for h in hyps]
        return out

    def score(self, sources: list[str], outputs: list[str], prefix: str = "") -> list[float]:
        """Length-normalised NLL from CTranslate2's own scoring of the output (end token included)."""
        src = [self._pieces(s, prefix) for s in sources]
        # CTranslate2 appends the end token to a target itself.
        tgt = [[t for t in self._pieces(o) if t != self.tokenizer.eos_token] for o in outputs]
        results = self.translator.score_batch(src, tgt)
        return [-sum(r.log_probs) / max(1, len(r.log_probs)) for r in results]
