"""The paraphrase loop, over any :class:`~.paraphrase_decoder.ParaphraseDecoder`.

Requests come in chunks (a job reads its shard a few thousand rows at a time); each chunk is cut
into token-budget batches; each batch is prepared, decoded and detokenized by the decoder, a batch
that runs out of GPU memory decoded in halves (:mod:`spanaug.core.oom`); every output is checked
(the decoder's own check, blanks, repeats, and any banned form in its text: dropped and counted);
the outputs kept are scored, and each request's outputs ranked by that score. On GPUs the host's
work runs on a worker thread while the device decodes (:func:`paraphrase_chunks`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from spanaug.core.config import DecodeSettings
from spanaug.core.oom import split_on_oom
from spanaug.core.text import tokenize
from spanaug.pipeline.constraints import violates
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE
from spanaug.pipeline.paraphraser.paraphrase_decoder import ParaphraseDecoder, Prepared, SentenceBeams

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
class Batch:
    """One decoder batch: its chunk's number, its index in the chunk (what a sampling batch seeds
    its generator with), its requests' indices in the chunk, and the requests."""

    chunk: int
    index: int
    idx: list[int]
    requests: list[dict[str, Any]]


def paraphrase(
    decoder: ParaphraseDecoder,
    requests: Sequence[dict[str, Any]],
    cfg: DecodeSettings,
    stats: DecodeStats | None = None,
    progress: bool = True,
) -> Iterator[dict[str, Any]]:
    """Decode every request; yield PARAPHRASES rows (request keys + beam outputs), in input order."""
    for rows in paraphrase_chunks(decoder, [requests], cfg, stats, progress):
        yield from rows


def paraphrase_chunks(
    decoder: ParaphraseDecoder,
    chunks: Iterable[Sequence[dict[str, Any]]],
    cfg: DecodeSettings,
    stats: DecodeStats | None = None,
    progress: bool = True,
) -> Iterator[list[dict[str, Any]]]:
    """Each chunk's PARAPHRASES rows, as :func:`paraphrase` gives them, one list a chunk, in turn.
    Chunks are batched apart, but the host's work runs on across them: on GPUs a chunk's first
    batch is prepared while the chunk before finishes decoding, as any other batch is, instead of
    with the GPU idle. ``stats.engine`` says what decoded, when the decoding ends."""
    stats = stats if stats is not None else DecodeStats()
    keep_at_most = decoder.search_spec(cfg).keep  # built, and the model's generation config checked, first
    decoder.begin(cfg)
    overlapped = decoder.overlaps_host() and decoder.worker_tools is not None
    if overlapped:
        log.info("paraphrase: the host prepares and checks batches in a worker thread while the device decodes")
    tokenizer = decoder.worker_tools.tokenizer if overlapped else decoder.tokenizer
    pending: deque[Sequence[dict[str, Any]]] = deque()  # chunks planned, not given back yet
    given = 0  # chunks given back
    results: dict[int, list[dict[str, Any]]] = {}  # the oldest pending chunk's rows, by request

    def keep(batch: Batch, candidates: list[list[str]]) -> list[tuple[int, str]]:
        return kept_outputs(batch.idx, batch.requests, candidates, keep_at_most, stats, decoder.check_output)

    with tqdm(desc="paraphrase", unit="batch", total=0, disable=not progress) as bar:
        planned = _plan(decoder, chunks, cfg, tokenizer, pending, bar)
        decoded = _overlapped(decoder, planned, cfg, keep) if overlapped else _in_turn(decoder, planned, cfg, keep)
        for batch, kept in decoded:
            bar.update()
            for _ in range(batch.chunk - given):  # every batch of the chunks before is decoded
                yield ranked(pending.popleft(), results)
                results = {}
            given = batch.chunk
            _score(decoder, batch, kept, cfg, results, stats)
        while pending:  # the last chunk, and empty chunks after it
            yield ranked(pending.popleft(), results)
            results = {}
    stats.engine = decoder.provenance(cfg)


def _plan(
    decoder: ParaphraseDecoder,
    chunks: Iterable[Sequence[dict[str, Any]]],
    cfg: DecodeSettings,
    tokenizer: Any,
    pending: deque[Sequence[dict[str, Any]]],
    bar: tqdm,
) -> Iterator[Batch]:
    """The decoder batches of each chunk in turn, the chunk read, added to ``pending`` and batched
    as its first batch is needed (by the worker thread when it prepares ahead: ``tokenizer`` is its
    own)."""
    for c, requests in enumerate(chunks):
        pending.append(requests)
        batches = decoder.batches(requests, cfg, tokenizer) if requests else []
        bar.total += len(batches)
        bar.refresh()
        for b, idx in enumerate(batches):
            yield Batch(c, b, idx, [requests[i] for i in idx])


def _score(
    decoder: ParaphraseDecoder,
    batch: Batch,
    keep: list[tuple[int, str]],
    cfg: DecodeSettings,
    results: dict[int, list[dict[str, Any]]],
    stats: DecodeStats,
) -> None:
    """A batch's kept outputs scored (the decoder's ``score_outputs``) into their requests' rows."""
    if not keep:
        return
    requests = dict(zip(batch.idx, batch.requests))
    scores = split_on_oom(
        lambda part: decoder.score_outputs([requests[i] for i, _ in part], [t for _, t in part], cfg),
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


Keep = Callable[[Batch, list[list[str]]], list[tuple[int, str]]]


def _in_turn(
    decoder: ParaphraseDecoder, planned: Iterator[Batch], cfg: DecodeSettings, keep: Keep
) -> Iterator[tuple[Batch, list[tuple[int, str]]]]:
    """Each batch and the outputs it keeps, (request index, text): one batch after another."""
    for batch in planned:
        # A batch that runs out of GPU memory is decoded in halves (core.oom). Every sentence has
        # its own constraints and length limit, so beam outputs are the unsplit batch's; sampling
        # keeps the batch's seed (its index) for every part, so samples are reproducible for a
        # given split but differ from the unsplit batch's (one RNG stream serves a whole call).
        beams = split_on_oom(
            lambda part, b=batch.index: decoder.decode_batch(part, cfg, b),
            batch.requests,
            f"paraphrase batch {batch.index}",
            log,
        )
        yield batch, keep(batch, [[text for text, _ in sentence] for sentence in beams])


def _overlapped(
    decoder: ParaphraseDecoder, planned: Iterator[Batch], cfg: DecodeSettings, keep: Keep
) -> Iterator[tuple[Batch, list[tuple[int, str]]]]:
    """As :func:`_in_turn`, with the host's work in a worker thread while the device decodes: the
    next batch (reading and batching its chunk when it is a chunk's first) and its inputs, and the
    last batch's texts and checks (its scoring waits for the next batch's decoding). The worker runs
    its tasks in the order given, with its own tokenizer, and it alone advances ``planned``; the
    switch interval is short meanwhile (HOST_SWITCH_INTERVAL), so that the decoding thread gets the
    GIL back quickly, and the worker pauses between sentences while the decoding thread launches a
    step's kernels one by one (:mod:`.host_gate`)."""
    tools = decoder.worker_tools
    assert tools is not None  # paraphrase_chunks() decodes in turn without them
    with (
        switch_interval(HOST_SWITCH_INTERVAL),
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="paraphrase-host") as worker,
    ):

        def advance() -> tuple[Batch, Prepared] | None:
            batch = next(planned, None)
            return None if batch is None else (batch, decoder.prepare(batch.requests, cfg, tools))

        def finish(batch: Batch, beams: list[SentenceBeams]) -> Future:
            def texts_kept() -> list[tuple[int, str]]:
                WORKER_GATE.wait()
                texts = decoder.texts(beams, tools)
                return keep(batch, [[t for t, _ in s] for s in texts])

            return worker.submit(texts_kept)

        ahead = worker.submit(advance)
        last: tuple[Batch, Future] | None = None
        while (current := ahead.result()) is not None:
            batch, prepared = current
            ahead = worker.submit(advance)

            def decode(part: list[dict[str, Any]], batch: Batch = batch, whole: Prepared = prepared):
                # A part of a batch split after running out of memory (core.oom) is prepared anew,
                # by the worker, in turn with its other tasks.
                if len(part) < len(whole.limits):
                    whole = worker.submit(decoder.prepare, part, cfg, tools).result()
                return decoder.decode(whole, cfg, batch.index)

            beams = split_on_oom(decode, batch.requests, f"paraphrase batch {batch.index}", log)
            if last is not None:
                yield last[0], last[1].result()
            last = (batch, finish(batch, beams))
        if last is not None:
            yield last[0], last[1].result()


def ranked(requests: Sequence[dict[str, Any]], results: dict[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A chunk's rows: each request's outputs ranked by their exact score (constraints make the
    decoder's own scores approximate), ``beam_rank`` from 0, in input order."""
    rows = []
    for i in range(len(requests)):
        for rank, row in enumerate(sorted(results.get(i, []), key=lambda r: r["paraphrase_score"])):
            rows.append({**row, "beam_rank": rank})
    return rows


def kept_outputs(
    idx: list[int],
    batch: list[dict[str, Any]],
    candidates: list[list[str]],
    keep_at_most: int,
    stats: DecodeStats,
    check: Callable[[str, dict[str, Any], DecodeStats], str | None] | None = None,
) -> list[tuple[int, str]]:
    """The outputs a batch keeps, (request index, text): each request's candidates in order, each
    passed through ``check`` first when given (None: dropped), blank ones and repeats dropped, and
    any that contains a constraint phrase dropped and counted; at most ``keep_at_most`` a request
    (the best beams, or every sample)."""
    keep: list[tuple[int, str]] = []
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
        kept = kept[:keep_at_most]
        if not kept:
            stats.requests_without_output += 1
        keep.extend((i, t) for t in kept)
    return keep
