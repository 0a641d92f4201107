"""What a paraphrase decoder is: the interface the paraphrase loop (:mod:`.decode_loop`) runs on.

The hf, ct2, static and decoder-only (causal) backends each implement it. A batch passes through
three steps, so that the loop can run the host's two on a worker thread while the device decodes:

1. :meth:`ParaphraseDecoder.prepare` (host): the batch's inputs, each sentence's new-token limit
   and banned token sequences;
2. :meth:`ParaphraseDecoder.decode` (device): each sentence's beams or samples as token ids;
3. :meth:`ParaphraseDecoder.texts` (host): their text, then :meth:`ParaphraseDecoder.check_output`
   on each (a decoder-only model's chatter is refused there).

Then :meth:`ParaphraseDecoder.score_outputs` scores the outputs kept. The search itself is one
frozen :class:`~.search_spec.SearchSpec` a decoder builds once per settings (:meth:`search_spec`)
and derives its arguments from. What is shared by every decoder that reads its inputs through a
Hugging Face tokenizer (token-budget batches, phrase bans, the worker's own tokenizer) is here too.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import functools
import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

import torch

from spanaug.core.config import DecodeSettings
from spanaug.core.engine import EngineRecord
from spanaug.pipeline.paraphraser import model_check, search_spec
from spanaug.pipeline.paraphraser.banned import PhraseBans
from spanaug.pipeline.paraphraser.batching import default_max_batch_tokens, token_budget_batches
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE
from spanaug.pipeline.paraphraser.processors import SequenceTable
from spanaug.pipeline.paraphraser.rust_tokenizer import decode_texts
from spanaug.pipeline.paraphraser.search_spec import SearchSpec

log = logging.getLogger(__name__)


class HostTools(NamedTuple):
    """What the host-side work of a batch uses: a tokenizer and the phrase bans made with it. The
    loop's worker thread has its own copy: a Rust tokenizer called from two threads at once can
    refuse ("Already borrowed")."""

    tokenizer: Any
    phrase_bans: PhraseBans


@dataclasses.dataclass
class Prepared:
    """A batch's inputs, made on the host: model inputs (host tensors), each sentence's new-token
    limit and banned token sequences, and these as the on-device processor's table when it has one."""

    enc: dict[str, torch.Tensor]
    limits: list[int]
    banned: list[list[tuple[int, ...]]]
    table: SequenceTable | None = None

    def constraints(self) -> list[list[tuple[int, ...]]] | SequenceTable:
        """What the constraint processor is made from: the table when there is one."""
        return self.banned if self.table is None else self.table


@dataclasses.dataclass
class SentenceBeams:
    """One sentence's beams (or samples), best first for beams: token ids on the host (a
    ``[width, T]`` tensor, or one list of ids a beam), decoder scores."""

    ids: torch.Tensor | list[list[int]]
    scores: list[float]

    def rows(self) -> list[list[int]]:
        return self.ids.tolist() if isinstance(self.ids, torch.Tensor) else [list(r) for r in self.ids]


def per_sentence(ids: torch.Tensor, scores: list[float]) -> list[SentenceBeams]:
    """``[B, width, T]`` host token ids and ``B x width`` scores as each sentence's beams."""
    width = ids.shape[1]
    return [SentenceBeams(ids[i], scores[i * width : (i + 1) * width]) for i in range(ids.shape[0])]


class ParaphraseDecoder(abc.ABC):
    """A paraphrase decoder: a model and its tokenizer, decoding batches of requests under their
    own negative constraints (``request["constraints"]``)."""

    #: What errors name the model by, and its learned positions (None: relative, as T5's).
    name: str = "paraphraser"
    positions: int | None = None
    #: The backend's name in paraphraser.backend (``stage.load_paraphraser`` sets the one it loaded).
    backend: str = "hf"
    tokenizer: Any
    device: torch.device

    #: Overlap each batch's host work (inputs, detokenizing, checking) with the device's decoding,
    #: in a worker thread: None decides (on CUDA devices; a CPU has no idle device to fill).
    overlap_host: bool | None = None

    # ------------------------------------------------------------ the search

    def search_spec(self, cfg: DecodeSettings) -> SearchSpec:
        """The search ``cfg`` asks for on this model, built once per settings."""
        cache = self.__dict__.setdefault("_specs", {})
        key = search_spec.settings_key(cfg)
        if key not in cache:
            cache[key] = self.build_search_spec(cfg)
        return cache[key]

    def build_search_spec(self, cfg: DecodeSettings) -> SearchSpec:
        """:func:`.search_spec.build` from the model's generation config and config."""
        return search_spec.build(cfg, self.generation_config(), self.model_config(), model=self.name)

    @abc.abstractmethod
    def generation_config(self) -> Any:
        """The model's ``GenerationConfig`` (None when it has none)."""

    @abc.abstractmethod
    def model_config(self) -> Any:
        """The model's config (what the memory estimate and the search's fallback tokens read)."""

    # ------------------------------------------------------------ a decoding

    def begin(self, cfg: DecodeSettings) -> None:
        """A decoding with ``cfg`` begins: counts that :meth:`provenance` reports start over (none here)."""
        return None  # a hook: a decoder with counts (static) or a prompt (causal) overrides it

    @abc.abstractmethod
    def provenance(self, cfg: DecodeSettings) -> EngineRecord:
        """What decodes with ``cfg``: the backend, the device's name, the dtype, the decode path."""

    def overlaps_host(self) -> bool:
        return self.device.type == "cuda" if self.overlap_host is None else self.overlap_host

    # ------------------------------------------------------------ batches

    def source_lengths(self, texts: Sequence[str], prefix: str = "", tokenizer: Any = None) -> list[int]:
        """Source lengths in tokenizer ids (special tokens included), as the encoder sees them."""
        enc = (tokenizer or self.tokenizer)([prefix + t for t in texts], truncation=True)
        return [len(ids) for ids in enc["input_ids"]]

    def batches(
        self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings, tokenizer: Any = None
    ) -> list[list[int]]:
        """Request indices in decoder batches: a token budget, length-sorted. ``tokenizer``: the
        one to measure the sources with (the worker thread's own; the decoder's by default)."""
        lengths = self.source_lengths([r["source_text"] for r in requests], cfg.prefix, tokenizer)
        model_check.check_lengths(self.name, lengths, list(requests), self.positions)
        budget = cfg.max_batch_tokens or self.default_batch_tokens(requests, cfg, tokenizer)
        return token_budget_batches(lengths, cfg.width, budget, cfg.batch_size, self.batch_group(requests, cfg))

    def default_batch_tokens(self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings, tokenizer: Any) -> int:
        """The batch budget when ``paraphraser.max_batch_tokens`` is not set: by the device's memory."""
        return default_max_batch_tokens(
            self.device, self.model_config(), getattr(self, "dtype", None), self.rows_sharing_cross_state(cfg)
        )

    def rows_sharing_cross_state(self, cfg: DecodeSettings) -> int | None:
        """Decoder rows that share a sentence's encoder states and cross-attention, for the memory
        estimate (None: every row has its own copy, as in ``generate``)."""
        return None

    def batch_group(self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings) -> Callable[[int], Hashable] | None:
        """What a batch must not mix (nothing by default: every sentence has its own constraints)."""
        return None

    # ------------------------------------------------------------ host tools

    @functools.cached_property
    def phrase_bans(self) -> PhraseBans:
        """Constraint phrases to banned token sequences, each phrase tokenized once per job."""
        return PhraseBans(self.tokenizer)

    @functools.cached_property
    def host_tools(self) -> HostTools:
        return HostTools(self.tokenizer, self.phrase_bans)

    @functools.cached_property
    def worker_tools(self) -> HostTools | None:
        """The overlapping worker thread's own tokenizer (a copy) and phrase bans; None when the
        tokenizer cannot be copied."""
        try:
            tokenizer = copy.deepcopy(self.tokenizer)
        except Exception as err:  # whatever a tokenizer's copy raises: decode in turn
            log.warning("paraphrase: the tokenizer cannot be copied (%s): batches decode in turn", err)
            return None
        return HostTools(tokenizer, PhraseBans(tokenizer))

    # ------------------------------------------------------------ one batch

    @abc.abstractmethod
    def prepare(self, requests: list[dict[str, Any]], cfg: DecodeSettings, tools: HostTools | None = None) -> Prepared:
        """A batch's inputs, made on the host with ``tools`` (the decoder's own by default)."""

    def banned_sequences(
        self, requests: list[dict[str, Any]], bans: PhraseBans, never: list[tuple[int, ...]]
    ) -> list[list[tuple[int, ...]]]:
        """Each request's banned token sequences: its constraint phrases' (tokenized once per job,
        the batch's new phrases in one call) and ``never`` (the model's never-generated ones). A
        worker thread pauses between sentences while the decoding thread launches a step."""
        bans.learn(phrase for r in requests for phrase in r["constraints"])
        banned = []
        for r in requests:
            WORKER_GATE.wait()
            banned.append(bans(r["constraints"]) + never)
        return banned

    @abc.abstractmethod
    def decode(self, prepared: Prepared, cfg: DecodeSettings, batch_index: int) -> list[SentenceBeams]:
        """The device's part of a batch: each sentence's beams (or samples) as token ids."""

    def texts(self, beams: list[SentenceBeams], tools: HostTools | None = None) -> list[list[tuple[str, float]]]:
        """Each sentence's beams as (text, decoder score), detokenized on the host with ``tools``."""
        tokenizer = (tools or self.host_tools).tokenizer
        rows = [row for sentence in beams for row in sentence.rows()]
        texts = iter(decode_texts(tokenizer, rows))
        return [[(next(texts), score) for score in sentence.scores] for sentence in beams]

    def decode_batch(
        self, requests: list[dict[str, Any]], cfg: DecodeSettings, batch_index: int
    ) -> list[list[tuple[str, float]]]:
        """Each request's beams (or samples) as (text, decoder score), best first for beams."""
        return self.texts(self.decode(self.prepare(requests, cfg), cfg, batch_index))

    def check_output(self, text: str, request: dict[str, Any], stats: DecodeStats) -> str | None:
        """An output as kept, or None to drop it (counted in ``stats``); a seq2seq output is kept as
        decoded (decoder-only models refuse chatter and echoed prompt text here)."""
        return text

    # ------------------------------------------------------------ scoring

    @abc.abstractmethod
    def score_outputs(self, requests: list[dict[str, Any]], outputs: list[str], cfg: DecodeSettings) -> list[float]:
        """Each output's length-normalised negative log-likelihood given its request (what the
        ranking and the PARAPHRASES rows use)."""
