"""Lexically constrained paraphrasing with a Hugging Face seq2seq model.

Each request carries its own negative constraints (phrases the output must not contain), enforced
per sentence during decoding by an on-device logits processor (:mod:`.processors`); every output is
re-checked on its detokenised text afterwards: a violating output is dropped and counted, never kept.
Requests are decoded in token-budget batches (:mod:`.batching`), each sentence under its own length
limit, with search settings shared with the ct2 backend.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import logging
import sys
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import torch
from tqdm import tqdm

from spanaug.core import model_files
from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_device, choose_dtype, device_name
from spanaug.core.engine import EngineRecord, dtype_name
from spanaug.core.oom import split_on_oom
from spanaug.core.text import tokenize
from spanaug.pipeline.constraints import violates
from spanaug.pipeline.paraphraser import model_check
from spanaug.pipeline.paraphraser.banned import PhraseBans
from spanaug.pipeline.paraphraser.batching import default_max_batch_tokens, length_limit, token_budget_batches
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE
from spanaug.pipeline.paraphraser.processors import PerSentenceMaxNewTokens, SequenceTable, TensorBannedSequences
from spanaug.pipeline.paraphraser.rust_tokenizer import decode_texts

log = logging.getLogger(__name__)

#: The interpreter's thread switch interval (seconds) while a worker thread overlaps the host's work
#: with decoding. Each torch call of the decoding thread gives the GIL up and must take it back, and
#: at Python's default (5 ms) a worker running Python keeps it that long each time: on this
#: project's CPU, 6,000 small torch calls took 7.4 s beside such a worker (13 ms alone), 0.08 to
#: 0.14 s at 0.1 ms. An eager step or a CUDA graph capture is several hundred calls. On an H100 the
#: paraphrase stage under iteration 10's constraints ran at 392 sentences/s at 5 ms, 412 at 0.1 ms
#: and 437 at 20 µs (scripts/bench_gpu.py --stage-only, one run).
HOST_SWITCH_INTERVAL = 2e-5


@contextlib.contextmanager
def switch_interval(seconds: float) -> Iterator[None]:
    """Python's thread switch interval set to ``seconds`` for the block, then restored."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@dataclasses.dataclass
class DecodeStats:
    """A paraphrase stage's counts, and what decoded (set when its decoding ends)."""

    requests: int = 0
    outputs: int = 0
    violations_dropped: int = 0
    duplicates_dropped: int = 0
    requests_without_output: int = 0
    #: Decoder-only models: outputs refused as chatter, echoed prompt text or a copy of the source,
    #: and outputs kept once a leading prompt label ("Rewrite:") was stripped (.prompts.OutputCheck).
    chatter_dropped: int = 0
    labels_stripped: int = 0
    engine: EngineRecord | None = None

    def counts(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "engine"}

    def as_json(self) -> dict[str, Any]:
        """The statistics file's object: the counts and, beside them, the engine's fields
        (:class:`~spanaug.core.engine.EngineRecord`: backend, device, dtype, decode_path,
        cuda_graph_captures, cuda_graph_fallbacks)."""
        return {**self.counts(), **(self.engine.as_dict() if self.engine else {})}


class HostTools(NamedTuple):
    """What the host-side work of a batch uses: a tokenizer and the phrase bans made with it. The
    worker thread that overlaps it with decoding (:meth:`Paraphraser.paraphrase`) has its own copy:
    a Rust tokenizer called from two threads at once can refuse ("Already borrowed")."""

    tokenizer: Any
    phrase_bans: PhraseBans


@dataclasses.dataclass
class Prepared:
    """A batch's inputs, made on the host: encoder inputs (host tensors), each sentence's new-token
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
    """One sentence's beams (or samples), best first for beams: token ids on the host, decoder scores."""

    ids: torch.Tensor  # [width, T]
    scores: list[float]


class Paraphraser:
    """A seq2seq paraphraser (``AutoModelForSeq2SeqLM``) decoding under negative constraints."""

    #: What errors name the model by, and its learned positions (None: relative, as T5's).
    name: str = "paraphraser"
    positions: int | None = None
    #: The backend's name in paraphraser.backend (``stage.load_paraphraser`` sets the one it loaded).
    backend: str = "hf"

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype

    @classmethod
    def from_pretrained(
        cls, name_or_path: str | Path, device: str | None = "auto", dtype: str | None = "auto"
    ) -> Paraphraser:
        dev = choose_device(device)
        model_files.check_files(name_or_path)
        model = model_check.load_model(name_or_path)
        tokenizer = model_files.load_tokenizer(name_or_path, model.config.vocab_size)
        paraphraser = cls(model, tokenizer, dev, choose_dtype(dev, dtype))
        paraphraser.name, paraphraser.positions = str(name_or_path), model_check.positions(model.config)
        return paraphraser

    def provenance(self, cfg: DecodeSettings) -> EngineRecord:
        """What decodes with ``cfg``: the backend, the device's name, the dtype, and how the steps
        run (op by op here). A backend with another path extends it (:meth:`new_record` starts its
        counts when a decoding begins)."""
        return EngineRecord(self.backend, device_name(self.device), dtype_name(self.dtype))

    def new_record(self) -> None:
        """A decoding begins (:meth:`paraphrase_chunks`): counts that :meth:`provenance` reports start over."""

    def encode(self, texts: list[str], prefix: str) -> dict[str, torch.Tensor]:
        return self.on_device(encoder_inputs(self.tokenizer, texts, prefix))

    @torch.inference_mode()
    def score(self, sources: list[str], outputs: list[str], prefix: str = "") -> list[float]:
        """Length-normalised negative log-likelihood of each output given its source."""
        enc = self.encode(sources, prefix)
        labels = self.tokenizer(text_target=outputs, padding=True, truncation=True, return_tensors="pt")[
            "input_ids"
        ].to(self.device)
        labels = labels.masked_fill(labels == self.tokenizer.pad_token_id, -100)
        logits = self.model(**enc, labels=labels).logits.float()
        never = self._never_generated()
        if never:  # as in decoding (and CTranslate2): tokens the model never generates get no mass
            logits[..., never] = float("-inf")
        logp = torch.log_softmax(logits, dim=-1)
        mask = labels != -100
        token_logp = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
        return (-(token_logp.sum(-1)) / mask.sum(-1).clamp(min=1)).tolist()

    def score_outputs(self, requests: list[dict[str, Any]], outputs: list[str], cfg: DecodeSettings) -> list[float]:
        """:meth:`score` of each output given its request (what the ranking and the PARAPHRASES rows use)."""
        return self.score([r["source_text"] for r in requests], outputs, cfg.prefix)

    def check_output(self, text: str, request: dict[str, Any], stats: DecodeStats) -> str | None:
        """An output as kept, or None to drop it (counted in ``stats``); a seq2seq output is kept as
        decoded (decoder-only models refuse chatter and echoed prompt text here)."""
        return text

    def _never_generated(self) -> list[int]:
        """Token ids the model's generation config never lets it produce (Marian's <pad>, ...)."""
        gen = getattr(self.model, "generation_config", None)
        ids = [seq[0] for seq in (getattr(gen, "bad_words_ids", None) or []) if len(seq) == 1]
        return sorted(set(ids) | set(getattr(gen, "suppress_tokens", None) or []))

    @functools.cached_property
    def phrase_bans(self) -> PhraseBans:
        """Constraint phrases to banned token sequences, each phrase tokenized once per job."""
        return PhraseBans(self.tokenizer)

    #: The constraint processor (ReferenceBannedSequences is the slow reference, for benchmarks).
    banned_processor = TensorBannedSequences

    def source_lengths(self, texts: Sequence[str], prefix: str = "", tokenizer: Any = None) -> list[int]:
        """Source lengths in tokenizer ids (special tokens included), as the encoder sees them."""
        enc = (tokenizer or self.tokenizer)([prefix + t for t in texts], truncation=True)
        return [len(ids) for ids in enc["input_ids"]]

    def search_kwargs(self, cfg: DecodeSettings) -> dict[str, Any]:
        """Search settings shared with the ct2 backend, set explicitly so that a model's own
        generation config (no_repeat_ngram_size, length_penalty, ...) does not change them."""
        common = {
            "length_penalty": 1.0,
            "no_repeat_ngram_size": 0,
            "repetition_penalty": 1.0,
            "min_length": 0,
            "forced_eos_token_id": None,
            "bad_words_ids": None,
            "suppress_tokens": None,
        }
        if cfg.mode == "beam":
            return {
                **common,
                "num_beams": cfg.beam_size,
                "num_return_sequences": cfg.beam_size,
                "do_sample": False,
                "early_stopping": True,
            }
        return {
            **common,
            "do_sample": True,
            "top_k": cfg.top_k,
            "num_beams": 1,
            "num_return_sequences": cfg.num_samples,
        }

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

    def prepare(self, requests: list[dict[str, Any]], cfg: DecodeSettings, tools: HostTools | None = None) -> Prepared:
        """A batch's inputs, made on the host with ``tools`` (the paraphraser's own by default)."""
        tokenizer, bans = tools or self.host_tools
        WORKER_GATE.wait()  # here and below: a worker pauses while the decoding thread launches a step
        enc = encoder_inputs(tokenizer, [r["source_text"] for r in requests], cfg.prefix)
        limits = [length_limit(n, cfg.max_new_tokens) for n in enc["attention_mask"].sum(1).tolist()]
        never = [(t,) for t in self._never_generated()]  # banned here too, so the renormalisation covers them
        bans.learn(phrase for r in requests for phrase in r["constraints"])
        banned = []
        for r in requests:
            WORKER_GATE.wait()
            banned.append(bans(r["constraints"]) + never)
        WORKER_GATE.wait()
        table = SequenceTable.of(banned) if self.banned_processor is TensorBannedSequences else None
        return Prepared(dict(enc), limits, banned, table)

    def on_device(self, enc: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device) for k, v in enc.items()}

    @torch.inference_mode()
    def decode_ids(self, prepared: Prepared, cfg: DecodeSettings, batch_index: int) -> list[SentenceBeams]:
        """The device's part of a batch: each sentence's beams (or samples) as token ids."""
        processor = self.banned_processor(prepared.constraints(), self.model.config.vocab_size, self.device)
        if cfg.mode == "beam" and hasattr(processor, "renormalize"):
            # Beam search hands processors log-probabilities: renormalise them over the tokens the
            # constraints leave, as CTranslate2 does (it bans before its softmax), so beams and
            # scores agree across backends.
            processor.renormalize = True
        stop = PerSentenceMaxNewTokens(prepared.limits, device=self.device)
        if cfg.mode == "sample":
            torch.manual_seed(cfg.seed * 100003 + batch_index)
        out = self.model.generate(
            **self.on_device(prepared.enc),
            **self.search_kwargs(cfg),
            max_new_tokens=max(prepared.limits),
            logits_processor=[processor],
            stopping_criteria=[stop],
            return_dict_in_generate=True,
            output_scores=cfg.mode == "beam",
        )
        ids = out.sequences.cpu()
        scores = out.sequences_scores.tolist() if cfg.mode == "beam" else [float("nan")] * len(ids)
        return per_sentence(ids.view(len(prepared.limits), cfg.width, -1), scores)

    def texts(self, beams: list[SentenceBeams], tools: HostTools | None = None) -> list[list[tuple[str, float]]]:
        """Each sentence's beams as (text, decoder score), detokenized on the host with ``tools``."""
        tokenizer = (tools or self.host_tools).tokenizer
        rows = [row for sentence in beams for row in sentence.ids.tolist()]
        texts = iter(decode_texts(tokenizer, rows))
        return [[(next(texts), score) for score in sentence.scores] for sentence in beams]

    def _decode_batch(
        self, requests: list[dict[str, Any]], cfg: DecodeSettings, batch_index: int
    ) -> list[list[tuple[str, float]]]:
        """Each request's beams (or samples) as (text, decoder score), best first for beams."""
        return self.texts(self.decode_ids(self.prepare(requests, cfg), cfg, batch_index))

    def _generate_batch(self, requests: list[dict[str, Any]], cfg: DecodeSettings, batch_index: int) -> list[list[str]]:
        return [[text for text, _ in beams] for beams in self._decode_batch(requests, cfg, batch_index)]

    def batches(
        self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings, tokenizer: Any = None
    ) -> list[list[int]]:
        """Request indices in decoder batches: a token budget, length-sorted. ``tokenizer``: the
        one to measure the sources with (the worker thread's own; the paraphraser's by default)."""
        lengths = self.source_lengths([r["source_text"] for r in requests], cfg.prefix, tokenizer)
        model_check.check_lengths(self.name, lengths, list(requests), self.positions)
        model_config = getattr(getattr(self, "model", None), "config", None)  # none on ct2
        budget = cfg.max_batch_tokens or default_max_batch_tokens(
            self.device, model_config, getattr(self, "dtype", None), self.rows_sharing_cross_state(cfg)
        )
        return token_budget_batches(lengths, cfg.width, budget, cfg.batch_size, self._batch_group(requests, cfg))

    def rows_sharing_cross_state(self, cfg: DecodeSettings) -> int | None:
        """Decoder rows that share a sentence's encoder states and cross-attention, for the memory
        estimate (None: every row has its own copy, as in ``generate``)."""
        return None

    def _batch_group(self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings) -> Callable[[int], Hashable] | None:
        """What a batch must not mix (nothing here: every sentence has its own constraints on the device)."""
        return None

    #: Overlap each batch's host work (inputs, detokenizing, checking) with the device's decoding,
    #: in a worker thread: None decides (on CUDA devices; a CPU has no idle device to fill).
    overlap_host: bool | None = None

    def overlaps_host(self) -> bool:
        return self.device.type == "cuda" if self.overlap_host is None else self.overlap_host

    def paraphrase(
        self,
        requests: Sequence[dict[str, Any]],
        cfg: DecodeSettings,
        stats: DecodeStats | None = None,
        progress: bool = True,
    ) -> Iterator[dict[str, Any]]:
        """Decode every request; yield PARAPHRASES rows (request keys + beam outputs), in input order."""
        for rows in self.paraphrase_chunks([requests], cfg, stats, progress):
            yield from rows

    def paraphrase_chunks(
        self,
        chunks: Iterable[Sequence[dict[str, Any]]],
        cfg: DecodeSettings,
        stats: DecodeStats | None = None,
        progress: bool = True,
    ) -> Iterator[list[dict[str, Any]]]:
        """Each chunk's PARAPHRASES rows, as :meth:`paraphrase` gives them, one list a chunk, in
        turn. Chunks are batched apart, but the host's work runs on across them: on GPUs a chunk's
        first batch is prepared while the chunk before finishes decoding, as any other batch is,
        instead of with the GPU idle (a job reads its shard a few thousand rows at a time)."""
        stats = stats if stats is not None else DecodeStats()
        self.new_record()
        overlapped = self.overlaps_host() and self.worker_tools is not None
        if overlapped:
            log.info("paraphrase: the host prepares and checks batches in a worker thread while the device decodes")
        tokenizer = self.worker_tools.tokenizer if overlapped else self.tokenizer
        pending: deque[Sequence[dict[str, Any]]] = deque()  # chunks planned, not given back yet
        given = 0  # chunks given back
        results: dict[int, list[dict[str, Any]]] = {}  # the oldest pending chunk's rows, by request
        with tqdm(desc="paraphrase", unit="batch", total=0, disable=not progress) as bar:
            planned = self._plan(chunks, cfg, tokenizer, pending, bar)
            decoded = self._overlapped(planned, cfg, stats) if overlapped else self._in_turn(planned, cfg, stats)
            for batch, keep in decoded:
                bar.update()
                for _ in range(batch.chunk - given):  # every batch of the chunks before is decoded
                    yield ranked(pending.popleft(), results)
                    results = {}
                given = batch.chunk
                self._score(batch, keep, cfg, results, stats)
            while pending:  # the last chunk, and empty chunks after it
                yield ranked(pending.popleft(), results)
                results = {}
        stats.engine = self.provenance(cfg)

    def _plan(
        self,
        chunks: Iterable[Sequence[dict[str, Any]]],
        cfg: DecodeSettings,
        tokenizer: Any,
        pending: deque[Sequence[dict[str, Any]]],
        bar: tqdm,
    ) -> Iterator[Batch]:
        """The decoder batches of each chunk in turn, the chunk read, added to ``pending`` and
        batched as its first batch is needed (by the worker thread when it prepares ahead:
        ``tokenizer`` is its own)."""
        for c, requests in enumerate(chunks):
            pending.append(requests)
            batches = self.batches(requests, cfg, tokenizer) if requests else []
            bar.total += len(batches)
            bar.refresh()
            for b, idx in enumerate(batches):
                yield Batch(c, b, idx, [requests[i] for i in idx])

    def _score(
        self,
        batch: Batch,
        keep: list[tuple[int, str]],
        cfg: DecodeSettings,
        results: dict[int, list[dict[str, Any]]],
        stats: DecodeStats,
    ) -> None:
        """A batch's kept outputs scored (:meth:`score`) into their requests' ``results`` rows."""
        if not keep:
            return
        requests = dict(zip(batch.idx, batch.requests))
        scores = split_on_oom(
            lambda part: self.score_outputs([requests[i] for i, _ in part], [t for _, t in part], cfg),
            keep,
            f"paraphrase batch {batch.index}'s scoring",
            log,
        )
        for (i, text), score in zip(keep, scores):
            results.setdefault(i, []).append(
                {
                    **requests[i],
                    "paraphrase_text": text,
                    "paraphrase_tokens": tokenize(text),
                    "paraphrase_score": float(score),
                }
            )
            stats.outputs += 1

    def _in_turn(
        self, planned: Iterator[Batch], cfg: DecodeSettings, stats: DecodeStats
    ) -> Iterator[tuple[Batch, list[tuple[int, str]]]]:
        """Each batch and the outputs it keeps, (request index, text): one batch after another."""
        for batch in planned:
            # A batch that runs out of GPU memory is decoded in halves (core.oom). Every sentence has
            # its own constraints and length limit, so beam outputs are the unsplit batch's; sampling
            # keeps the batch's seed (its index) for every part, so samples are reproducible for a
            # given split but differ from the unsplit batch's (one RNG stream serves a whole call).
            candidates = split_on_oom(
                lambda part, b=batch.index: self._generate_batch(part, cfg, b),
                batch.requests,
                f"paraphrase batch {batch.index}",
                log,
            )
            yield batch, kept_outputs(batch.idx, batch.requests, candidates, cfg, stats, self.check_output)

    def _overlapped(
        self, planned: Iterator[Batch], cfg: DecodeSettings, stats: DecodeStats
    ) -> Iterator[tuple[Batch, list[tuple[int, str]]]]:
        """As :meth:`_in_turn`, with the host's work in a worker thread while the device decodes: the
        next batch (reading and batching its chunk when it is a chunk's first) and its inputs, and
        the last batch's texts and checks (its scoring waits for the next batch's decoding). The
        worker runs its tasks in the order given, with its own tokenizer, and it alone advances
        ``planned``; the switch interval is short meanwhile (HOST_SWITCH_INTERVAL), so that the
        decoding thread gets the GIL back quickly, and the worker pauses between sentences while the
        decoding thread launches a step's kernels one by one (:mod:`.host_gate`)."""
        tools = self.worker_tools
        assert tools is not None  # paraphrase_chunks() decodes in turn without them
        with (
            switch_interval(HOST_SWITCH_INTERVAL),
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="paraphrase-host") as worker,
        ):

            def advance() -> tuple[Batch, Prepared] | None:
                batch = next(planned, None)
                return None if batch is None else (batch, self.prepare(batch.requests, cfg, tools))

            def finish(batch: Batch, beams: list[SentenceBeams]) -> Future:
                def keep() -> list[tuple[int, str]]:
                    WORKER_GATE.wait()
                    texts = self.texts(beams, tools)
                    candidates = [[t for t, _ in s] for s in texts]
                    return kept_outputs(batch.idx, batch.requests, candidates, cfg, stats, self.check_output)

                return worker.submit(keep)

            ahead = worker.submit(advance)
            last: tuple[Batch, Future] | None = None
            while (current := ahead.result()) is not None:
                batch, prepared = current
                ahead = worker.submit(advance)

                def decode(part: list[dict[str, Any]], batch: Batch = batch, whole: Prepared = prepared):
                    # A part of a batch split after running out of memory (core.oom) is prepared anew,
                    # by the worker, in turn with its other tasks.
                    if len(part) < len(whole.limits):
                        whole = worker.submit(self.prepare, part, cfg, tools).result()
                    return self.decode_ids(whole, cfg, batch.index)

                beams = split_on_oom(decode, batch.requests, f"paraphrase batch {batch.index}", log)
                if last is not None:
                    yield last[0], last[1].result()
                last = (batch, finish(batch, beams))
            if last is not None:
                yield last[0], last[1].result()


@dataclasses.dataclass
class Batch:
    """One decoder batch: its chunk's number, its index in the chunk (what a sampling batch seeds
    its generator with), its requests' indices in the chunk, and the requests."""

    chunk: int
    index: int
    idx: list[int]
    requests: list[dict[str, Any]]


def ranked(requests: Sequence[dict[str, Any]], results: dict[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A chunk's rows: each request's outputs ranked by their exact score (constraints make the
    decoder's own scores approximate), ``beam_rank`` from 0, in input order."""
    rows = []
    for i in range(len(requests)):
        for rank, row in enumerate(sorted(results.get(i, []), key=lambda r: r["paraphrase_score"])):
            rows.append({**row, "beam_rank": rank})
    return rows


def encoder_inputs(tokenizer, texts: list[str], prefix: str) -> dict[str, torch.Tensor]:
    """The encoder's inputs for ``texts`` (host tensors, padded, truncated to the model's limit)."""
    return dict(tokenizer([prefix + t for t in texts], padding=True, truncation=True, return_tensors="pt"))


def per_sentence(ids: torch.Tensor, scores: list[float]) -> list[SentenceBeams]:
    """``[B, width, T]`` host token ids and ``B x width`` scores as each sentence's beams."""
    width = ids.shape[1]
    return [SentenceBeams(ids[i], scores[i * width : (i + 1) * width]) for i in range(ids.shape[0])]


def kept_outputs(
    idx: list[int],
    batch: list[dict[str, Any]],
    candidates: list[list[str]],
    cfg: DecodeSettings,
    stats: DecodeStats,
    check: Callable[[str, dict[str, Any], DecodeStats], str | None] | None = None,
) -> list[tuple[int, str]]:
    """The outputs a batch keeps, (request index, text): each request's candidates in order, each
    passed through ``check`` first when given (None: dropped), blank ones and repeats dropped, and
    any that contains a constraint phrase dropped and counted; at most ``return_top`` beams (or
    ``num_samples`` samples) a request."""
    keep: list[tuple[int, str]] = []
    limit = cfg.return_top if cfg.mode == "beam" else cfg.num_samples
    for i, req, cands in zip(idx, batch, candidates):
        WORKER_GATE.wait()
        stats.requests += 1
        seen: set[str] = set()
        kept = []
        for text in cands:
            text = text.strip()
            if check is not None and text:
                text = (check(text, req, stats) or "").strip()
                if not text:
                    continue
            if not text or text in seen:
                stats.duplicates_dropped += bool(text)
                continue
            seen.add(text)
            if violates(text, req["constraints"]):
                stats.violations_dropped += 1
                continue
            kept.append(text)
        kept = kept[:limit]
        if not kept:
            stats.requests_without_output += 1
        keep.extend((i, t) for t in kept)
    return keep
