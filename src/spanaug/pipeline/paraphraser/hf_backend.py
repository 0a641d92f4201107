"""Lexically constrained paraphrasing with a Hugging Face seq2seq model: transformers' ``generate``.

Each request carries its own negative constraints (phrases the output must not contain), enforced
per sentence during decoding by an on-device logits processor (:mod:`.processors`); the paraphrase
loop (:mod:`.decode_loop`) re-checks every output on its detokenised text afterwards. Search
arguments come from the decoding's :class:`~.search_spec.SearchSpec`, as for every decoder.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from spanaug.core import int8_linear, model_files
from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_device, choose_dtype, device_name
from spanaug.core.engine import EngineRecord, dtype_name
from spanaug.core.errors import ConfigError
from spanaug.pipeline.paraphraser import model_check, search_spec
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE
from spanaug.pipeline.paraphraser.paraphrase_decoder import (
    HostTools,
    ParaphraseDecoder,
    Prepared,
    SentenceBeams,
    per_sentence,
)
from spanaug.pipeline.paraphraser.processors import PerSentenceMaxNewTokens, SequenceTable, TensorBannedSequences

log = logging.getLogger(__name__)


class HFParaphraser(ParaphraseDecoder):
    """A seq2seq paraphraser (``AutoModelForSeq2SeqLM``) decoding with ``generate`` under negative constraints."""

    backend: str = "hf"

    #: Whether this backend's decoding runs through the model's own linear modules, which
    #: ``paraphraser.dtype: int8`` replaces by :class:`~spanaug.core.int8_linear.Int8Linear`.
    takes_int8: bool = True

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype, int8: bool = False):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype
        self.int8 = int8
        if int8:
            self.check_int8()
            count = int8_linear.quantize_linears(self.model)
            log.info("paraphraser: %d linear layers as int8 matrix products (paraphraser.dtype: int8)", count)

    @classmethod
    def check_int8(cls) -> None:
        """Refuse ``paraphraser.dtype: int8`` where the backend cannot take it."""
        if not cls.takes_int8:
            raise ConfigError(
                f"paraphraser.dtype: int8: the {cls.backend} backend multiplies the model's weights itself; "
                "set paraphraser.backend to hf (or ct2), or paraphraser.dtype to float32"
            )

    @classmethod
    def torch_dtype(cls, device: torch.device, dtype: str | None) -> tuple[torch.dtype, bool]:
        """``paraphraser.dtype`` on ``device``: the dtype the model runs in, and whether its linear
        layers become int8 (refused here, before any weights load, by a backend that cannot take it)."""
        name, int8 = int8_linear.compute_dtype(device, dtype)
        if int8:
            cls.check_int8()
        return choose_dtype(device, name), int8

    @classmethod
    def from_pretrained(
        cls, name_or_path: str | Path, device: str | None = "auto", dtype: str | None = "auto"
    ) -> HFParaphraser:
        dev = choose_device(device)
        torch_dtype, int8 = cls.torch_dtype(dev, dtype)
        model_files.check_files(name_or_path)
        model = model_check.load_model(name_or_path)
        tokenizer = model_files.load_tokenizer(name_or_path, model.config.vocab_size)
        paraphraser = cls(model, tokenizer, dev, torch_dtype, int8)
        paraphraser.name, paraphraser.positions = str(name_or_path), model_check.positions(model.config)
        return paraphraser

    def generation_config(self) -> Any:
        return getattr(self.model, "generation_config", None)

    def model_config(self) -> Any:
        return self.model.config

    def provenance(self, cfg: DecodeSettings) -> EngineRecord:
        """What decodes with ``cfg``: the backend, the device's name, the dtype, and how the steps
        run (op by op here). A backend with another path extends it (:meth:`begin` starts its
        counts when a decoding begins)."""
        dtype = int8_linear.INT8 if self.int8 else dtype_name(self.dtype)
        return EngineRecord(self.backend, device_name(self.device), dtype)

    def encode(self, texts: list[str], prefix: str) -> dict[str, torch.Tensor]:
        return self.on_device(encoder_inputs(self.tokenizer, texts, prefix))

    def score_outputs(self, requests: list[dict[str, Any]], outputs: list[str], cfg: DecodeSettings) -> list[float]:
        return self.score([r["source_text"] for r in requests], outputs, cfg.prefix)

    @torch.inference_mode()
    def score(self, sources: list[str], outputs: list[str], prefix: str = "") -> list[float]:
        """Length-normalised negative log-likelihood of each output given its source."""
        enc = self.encode(sources, prefix)
        labels = self.tokenizer(text_target=outputs, padding=True, truncation=True, return_tensors="pt")[
            "input_ids"
        ].to(self.device)
        labels = labels.masked_fill(labels == self.tokenizer.pad_token_id, -100)
        logits = self.model(**enc, labels=labels).logits.float()
        never = self.never_generated()
        if never:  # as in decoding (and CTranslate2): tokens the model never generates get no mass
            logits[..., never] = float("-inf")
        logp = torch.log_softmax(logits, dim=-1)
        mask = labels != -100
        token_logp = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
        return (-(token_logp.sum(-1)) / mask.sum(-1).clamp(min=1)).tolist()

    def never_generated(self) -> list[int]:
        """Token ids the model's generation config never lets it produce (Marian's <pad>, ...)."""
        return sorted({seq[0] for seq in search_spec.never_sequences(self.generation_config()) if len(seq) == 1})

    #: The constraint processor (ReferenceBannedSequences is the slow reference, for benchmarks).
    banned_processor = TensorBannedSequences

    def prepare(self, requests: list[dict[str, Any]], cfg: DecodeSettings, tools: HostTools | None = None) -> Prepared:
        """A batch's inputs, made on the host with ``tools`` (the paraphraser's own by default)."""
        spec = self.search_spec(cfg)
        tokenizer, bans = tools or self.host_tools
        WORKER_GATE.wait()  # here and below: a worker pauses while the decoding thread launches a step
        enc = encoder_inputs(tokenizer, [r["source_text"] for r in requests], cfg.prefix)
        limits = [spec.limit(n) for n in enc["attention_mask"].sum(1).tolist()]
        # The model's never-generated sequences are banned here too, so the renormalisation covers them.
        banned = self.banned_sequences(requests, bans, list(spec.never))
        return Prepared(dict(enc), limits, banned, self.constraint_table(banned))

    def constraint_table(self, banned: list[list[tuple[int, ...]]]) -> SequenceTable | None:
        """The on-device processor's table of a batch's banned sequences (None for the reference processor)."""
        WORKER_GATE.wait()
        return SequenceTable.of(banned) if self.banned_processor is TensorBannedSequences else None

    def on_device(self, enc: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device) for k, v in enc.items()}

    @torch.inference_mode()
    def decode(self, prepared: Prepared, cfg: DecodeSettings, batch_index: int) -> list[SentenceBeams]:
        """The device's part of a batch: each sentence's beams (or samples) as token ids."""
        spec = self.search_spec(cfg)
        processor = self.banned_processor(prepared.constraints(), self.model.config.vocab_size, self.device)
        if spec.mode == "beam" and hasattr(processor, "renormalize"):
            # Beam search hands processors log-probabilities: renormalise them over the tokens the
            # constraints leave, as CTranslate2 does (it bans before its softmax), so beams and
            # scores agree across backends.
            processor.renormalize = True
        stop = PerSentenceMaxNewTokens(prepared.limits, device=self.device)
        if spec.mode == "sample":
            torch.manual_seed(spec.batch_seed(batch_index))
        out = self.model.generate(
            **self.on_device(prepared.enc),
            **spec.generate_kwargs(),
            max_new_tokens=max(prepared.limits),
            logits_processor=[processor],
            stopping_criteria=[stop],
            return_dict_in_generate=True,
            output_scores=spec.mode == "beam",
        )
        ids = out.sequences.cpu()
        scores = out.sequences_scores.tolist() if spec.mode == "beam" else [float("nan")] * len(ids)
        return per_sentence(ids.view(len(prepared.limits), spec.width, -1), scores)


def encoder_inputs(tokenizer, texts: list[str], prefix: str) -> dict[str, torch.Tensor]:
    """The encoder's inputs for ``texts`` (host tensors, padded, truncated to the model's limit)."""
    return dict(tokenizer([prefix + t for t in texts], padding=True, truncation=True, return_tensors="pt"))
