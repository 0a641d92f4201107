"""The static backend: beam search on a static cache, the decoding engine for GPUs.

It decodes the same beams as the hf backend (transformers' ``generate``) with the same
constraints, length limits and scores (:mod:`.beam_search`), from the same model object, but
keeps the decoder's state the way a GPU wants it (:mod:`.decoder_step`): cross-attention once per
sentence, a preallocated self-attention cache, the constraint processor inside the step, and
finished sentences leaving the batch. Sampling (``paraphraser.mode: sample``) is left to
``generate``.

Families: T5/mT5, BART, mBART, Pegasus and Marian. Loading a model of another family raises
:class:`~.decoder_step.UnsupportedModel`; ``paraphraser.backend: auto`` then decodes with hf. The
search is the decoding's :class:`~.search_spec.SearchSpec`, as for every decoder (a generation
config asking for what no decoder does is a config error there).
"""

from __future__ import annotations

import dataclasses
import logging

import torch

from spanaug.core.config import DecodeSettings
from spanaug.core.engine import EngineRecord
from spanaug.pipeline.paraphraser import decoder_step, indirect_attention
from spanaug.pipeline.paraphraser.beam_search import GPU_SYNC_EVERY, SearchSettings, beam_search
from spanaug.pipeline.paraphraser.decoder_step import StepState, UnsupportedModel
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser, encoder_inputs
from spanaug.pipeline.paraphraser.paraphrase_decoder import Prepared, SentenceBeams, per_sentence
from spanaug.pipeline.paraphraser.processors import SequenceTable, TensorBannedSequences
from spanaug.pipeline.paraphraser.step_runner import GRAPH_BUCKET, EagerRunner, GraphCounts, GraphRunner
from spanaug.pipeline.paraphraser.topk import TOPK_CHUNK

log = logging.getLogger(__name__)

#: Self-check of the family adapter against the model's own forward pass when a model loads:
#: logits may differ by this share of the largest logit (float32 on CPU differs by about 1e-7;
#: half precision by rounding, about 1e-2).
CHECK_TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-2, torch.bfloat16: 5e-2}


#: The self-check's dummy batch: two sentences of different lengths, so that one is padded.
CHECK_TEXTS = ("The committee approved the new budget after a long debate.", "A short one.")
#: Decoder positions the self-check feeds (at most GRAPH_BUCKET: the span of the first graphs' steps).
CHECK_STEPS = 6


class StaticParaphraser(HFParaphraser):
    """A :class:`~.hf_backend.HFParaphraser` whose beam search runs on :mod:`.beam_search`. Made, it
    has checked its decoder step against the model (:meth:`_self_check`): a model it cannot decode
    is refused before any sentence is, and ``paraphraser.backend: auto`` loads hf instead."""

    backend = "static"
    takes_int8 = False  # its fused projections read the weights

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype, int8: bool = False):
        super().__init__(model, tokenizer, device, dtype, int8)
        self.step = decoder_step.for_model(self.model)
        #: What this engine's graph runners did since the paraphraser's last decoding began.
        self.graph_counts = GraphCounts()
        self._self_check()

    @torch.inference_mode()
    def _self_check(self) -> None:
        """The adapter's logits against the model's own forward pass, on a padded dummy batch, fed
        both eagerly and as the GPU's graphs feed it (a fixed span of positions; on CUDA, the cache
        read through the beam ancestry where its kernel runs): raises :class:`UnsupportedModel`."""
        enc = self.on_device(encoder_inputs(self.tokenizer, list(CHECK_TEXTS), ""))
        ids, mask = enc["input_ids"], enc["attention_mask"]
        decoder_ids = ids[:, :CHECK_STEPS].clone()
        decoder_ids[:, 0] = self._start_token()
        ancestry = self.device.type == "cuda" and indirect_attention.kernel_available(self.device, self.dtype)
        worst = max(
            decoder_step.check_against_model(self.step, ids, mask, decoder_ids),
            decoder_step.check_against_model(self.step, ids, mask, decoder_ids, span=GRAPH_BUCKET, ancestry=ancestry),
        )
        tolerance = CHECK_TOLERANCE.get(self.dtype, 1e-3)
        if not worst <= tolerance:
            raise UnsupportedModel(
                f"the static decoder step differs from the model's own forward pass by {worst:.3g} "
                f"(tolerance {tolerance:g} in {self.dtype}); decode with paraphraser.backend: hf"
            )
        log.info("static backend: decoder step agrees with the model (largest logit difference %.2g)", worst)

    def begin(self, cfg: DecodeSettings) -> None:
        self.graph_counts = GraphCounts()

    def provenance(self, cfg: DecodeSettings) -> EngineRecord:
        """hf's, with the decode path: ``graphs`` (CUDA graphs, every capture held), ``fallback``
        (some failed: their batches decoded eagerly) or ``eager``, and the graphs' counts."""
        counts = self.graph_counts
        graphs = self.device.type == "cuda" and cfg.cuda_graphs and cfg.mode == "beam"
        path = "fallback" if counts.fallbacks else "graphs" if graphs else "eager"
        return dataclasses.replace(
            super().provenance(cfg),
            decode_path=path,
            cuda_graph_captures=counts.captures,
            cuda_graph_fallbacks=counts.fallbacks,
        )

    def _start_token(self) -> int:
        """The decoder's first token (what the self-check starts from, before any settings)."""
        gen = self.model.generation_config
        start = gen.decoder_start_token_id
        return int(start if start is not None else self.model.config.decoder_start_token_id)

    #: Columns per chunk of the vocabulary when a beam's best tokens are selected (:mod:`.topk`):
    #: None decides (chunks on GPUs), 0 selects with one ``torch.topk`` over the vocabulary.
    topk_chunk: int | None = None

    def search_settings(self, cfg: DecodeSettings) -> SearchSettings:
        """The engine's settings: the decoding's search spec, and how this device runs it."""
        spec = self.search_spec(cfg)
        gpu = self.device.type == "cuda"
        return SearchSettings(
            beams=spec.width,
            start_token=spec.start_token if spec.start_token is not None else self._start_token(),
            eos_token=spec.end_token,
            fill_token=spec.fill_token,
            length_penalty=spec.length_penalty,
            forced_bos_token=spec.forced_bos_token,
            fuse_constraints=gpu,
            two_stage_topk=gpu,
            topk_chunk=(TOPK_CHUNK if gpu else 0) if self.topk_chunk is None else self.topk_chunk,
            sync_every=GPU_SYNC_EVERY if gpu else 1,
        )

    @torch.inference_mode()
    def search(
        self,
        enc: dict[str, torch.Tensor],
        limits: list[int],
        banned: list[list[tuple[int, ...]]] | SequenceTable | None,
        cfg: DecodeSettings,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Beam search of a batch: token ids ``[B, beams, 1 + max(limits)]`` and scores ``[B, beams]``,
        best first; ``banned`` (each sentence's sequences, or their table) None decodes without
        constraints (benchmarks)."""
        vocab = self.model.config.vocab_size
        processor = TensorBannedSequences(banned, vocab, self.device) if banned is not None else None
        encoded = self.step.encode(enc["input_ids"], enc["attention_mask"])
        state = self.step.start(
            encoded, enc["attention_mask"], beams=cfg.beam_size, max_len=max(limits), ancestry=self.uses_ancestry(cfg)
        )
        limit_tensor = torch.tensor(limits, dtype=torch.long, device=self.device)
        return beam_search(self.runner(state, cfg), limit_tensor, self.search_settings(cfg), processor)

    #: Read the self-attention cache through a beam ancestry table (:mod:`.indirect_attention`)
    #: instead of reordering it: None decides (with CUDA graphs, where the kernel runs).
    ancestry: bool | None = None

    def uses_ancestry(self, cfg: DecodeSettings) -> bool:
        if self.ancestry is not None:
            return self.ancestry
        graphs = self.device.type == "cuda" and cfg.cuda_graphs
        chosen = graphs and indirect_attention.kernel_available(self.device, self.dtype)
        if self._told != (graphs, chosen):  # once per engine: what the job log says
            self._told = (graphs, chosen)
            log.info(
                "static backend: %s, %s",
                "CUDA graphs of whole steps" if graphs else "eager steps",
                "cache read through the beam ancestry (Triton kernel)" if chosen else "cache reordered each step",
            )
        return chosen

    _told: tuple[bool, bool] | None = None

    def runner(self, state: StepState, cfg: DecodeSettings) -> EagerRunner | GraphRunner:
        """CUDA graphs on CUDA (unless paraphraser.cuda_graphs is off), eager steps elsewhere."""
        if self.device.type == "cuda" and cfg.cuda_graphs:
            return GraphRunner(self.step, state, counts=self.graph_counts, require=cfg.require_cuda_graphs)
        return EagerRunner(self.step, state)

    def rows_sharing_cross_state(self, cfg: DecodeSettings) -> int | None:
        # Beam search keeps them once per sentence; sampling runs on generate.
        return cfg.width if cfg.mode == "beam" else None

    @torch.inference_mode()
    def decode(self, prepared: Prepared, cfg: DecodeSettings, batch_index: int) -> list[SentenceBeams]:
        if cfg.mode != "beam":
            return super().decode(prepared, cfg, batch_index)
        tokens, scores = self.search(self.on_device(prepared.enc), prepared.limits, prepared.constraints(), cfg)
        return per_sentence(tokens.cpu(), scores.view(-1).tolist())
