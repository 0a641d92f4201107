"""The paraphrase loop with the host's work overlapped with decoding (a worker thread, as on GPUs):
the same rows and counts as batches decoded in turn."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
import torch
from conftest import CORPUS, stub_captures

from spanaug.core.config import DecodeSettings
from spanaug.pipeline.paraphraser.decode_loop import paraphrase, paraphrase_chunks
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BACKENDS = {"hf": HFParaphraser, "static": StaticParaphraser}


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def para(request, tiny_paraphraser):
    return BACKENDS[request.param].from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")


def _requests(n: int) -> list[dict]:
    return [
        {
            "seed_id": f"s{i}",
            "source_text": CORPUS[i % len(CORPUS)],
            "source_tokens": CORPUS[i % len(CORPUS)].split(),
            "constraints": [["the", "The"], ["a"], ["of", "is"]][i % 3],
        }
        for i in range(n)
    ]


def _settings(para, requests, mode: str) -> DecodeSettings:
    """Three or more batches of at most 4 sentences."""
    cfg = DecodeSettings(mode=mode, beam_size=4, return_top=2, num_samples=2, max_new_tokens=8)
    longest = max(para.source_lengths([r["source_text"] for r in requests]))
    return dataclasses.replace(cfg, max_batch_tokens=4 * longest * cfg.width)


def _run(para, requests, cfg, overlap: bool) -> tuple[list[dict], DecodeStats]:
    para.overlap_host = overlap
    stats = DecodeStats()
    try:
        return list(paraphrase(para, requests, cfg, stats, progress=False)), stats
    finally:
        para.overlap_host = None


@pytest.mark.parametrize("mode", ["beam", "sample"])
def test_overlapped_batches_give_the_rows_and_counts_of_batches_in_turn(para, mode):
    requests = _requests(14)
    cfg = _settings(para, requests, mode)
    assert len(para.batches(requests, cfg)) >= 3
    in_turn, stats_in_turn = _run(para, requests, cfg, overlap=False)
    overlapped, stats_overlapped = _run(para, requests, cfg, overlap=True)
    assert in_turn and overlapped == in_turn
    assert stats_overlapped == stats_in_turn


def test_a_batch_that_runs_out_of_memory_is_split_and_its_parts_prepared_anew(para, monkeypatch):
    requests = _requests(12)
    cfg = _settings(para, requests, "beam")
    whole, _ = _run(para, requests, cfg, overlap=False)
    real, sizes = para.decode, []

    def small_only(prepared, cfg, b):
        sizes.append(len(prepared.limits))
        if len(prepared.limits) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(prepared, cfg, b)

    monkeypatch.setattr(para, "decode", small_only)
    split, _ = _run(para, requests, cfg, overlap=True)
    assert max(sizes) > 2 and [r["paraphrase_text"] for r in split] == [r["paraphrase_text"] for r in whole]
    assert [r["paraphrase_score"] for r in split] == pytest.approx([r["paraphrase_score"] for r in whole], abs=1e-5)


@pytest.mark.parametrize("overlap", [False, True], ids=["in-turn", "overlapped"])
@pytest.mark.parametrize("mode", ["beam", "sample"])
def test_chunks_give_the_rows_and_counts_of_one_call_each(para, mode, overlap):
    """paraphrase_chunks, as the stage reads a shard, gives each chunk (an empty one too) what a
    call of paraphrase on it alone gives: the chunk's own batches and sampling seeds."""
    requests = _requests(14)
    chunks = [requests[:9], [], requests[9:]]
    cfg = _settings(para, requests, mode)
    alone = [_run(para, chunk, cfg, overlap) for chunk in chunks]
    para.overlap_host = overlap
    stats = DecodeStats()
    try:
        streamed = list(paraphrase_chunks(para, iter(chunks), cfg, stats, progress=False))
    finally:
        para.overlap_host = None
    assert streamed == [rows for rows, _ in alone] and streamed[0] and streamed[2]
    assert stats.counts() == {key: sum(s.counts()[key] for _, s in alone) for key in stats.counts()}
    assert stats.engine == alone[0][1].engine


def test_a_chunks_first_batch_is_prepared_while_the_chunk_before_decodes(para, monkeypatch):
    """The worker reads, batches and prepares the next chunk's first batch while the device decodes
    the last batch of the chunk before: the job's GPU waits for the host once, not once a chunk."""
    requests = _requests(12)
    chunks = [requests[:6], requests[6:]]
    cfg = _settings(para, requests, "beam")
    last_of_first = len(para.batches(chunks[0], cfg)) - 1
    second_prepared = threading.Event()
    prepare, decode, waited = para.prepare, para.decode, []

    def recording_prepare(batch, cfg, tools=None):
        prepared = prepare(batch, cfg, tools)
        if any(r in chunks[1] for r in batch):
            second_prepared.set()
        return prepared

    def waiting_decode(prepared, cfg, b):
        if len(waited) == last_of_first:  # the first chunk's last batch: the worker goes on meanwhile
            waited.append(second_prepared.wait(timeout=30))
        else:
            waited.append(None)
        return decode(prepared, cfg, b)

    monkeypatch.setattr(para, "prepare", recording_prepare)
    monkeypatch.setattr(para, "decode", waiting_decode)
    para.overlap_host = True
    try:
        rows = list(paraphrase_chunks(para, chunks, cfg, progress=False))
    finally:
        para.overlap_host = None
    assert waited[last_of_first] is True and len(rows) == 2


class ThreadRecorder:
    """A tokenizer that records the threads it is called from (a copy records its own)."""

    def __init__(self, tokenizer):
        self.inner, self.threads = tokenizer, set()

    def __call__(self, *args, **kwargs):
        self.threads.add(threading.current_thread().name)
        return self.inner(*args, **kwargs)

    def batch_decode(self, *args, **kwargs):
        self.threads.add(threading.current_thread().name)
        return self.inner.batch_decode(*args, **kwargs)

    def __getattr__(self, name):
        if name == "inner":  # not set yet: a copy in the making
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_the_worker_tokenizes_with_its_own_copy(tiny_paraphraser):
    """A Rust tokenizer called from two threads at once can refuse: the main thread's tokenizer is
    only ever called from the main thread, the worker's copy only from the worker."""
    para = HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    para.tokenizer = ThreadRecorder(para.tokenizer)
    requests = _requests(10)
    worker = para.worker_tools.tokenizer
    worker.threads.clear()  # the copy's record starts as the original's
    rows, _ = _run(para, requests, _settings(para, requests, "beam"), overlap=True)
    assert rows and worker is not para.tokenizer
    assert para.tokenizer.threads == {threading.main_thread().name}
    assert worker.threads and all(name.startswith("paraphrase-host") for name in worker.threads)


class Uncopyable(ThreadRecorder):
    def __deepcopy__(self, memo):
        raise TypeError("cannot pickle 'SentencePieceProcessor' object")


def test_a_tokenizer_that_cannot_be_copied_decodes_in_turn(tiny_paraphraser, caplog):
    import logging

    para = HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    requests = _requests(8)
    cfg = _settings(para, requests, "beam")
    expected, _ = _run(para, requests, cfg, overlap=False)
    para.tokenizer = Uncopyable(para.tokenizer)
    with caplog.at_level(logging.WARNING):
        rows, _ = _run(para, requests, cfg, overlap=True)
    assert rows == expected
    assert any("cannot be copied" in r.getMessage() for r in caplog.records)


def test_decoding_runs_under_a_short_switch_interval_restored_after(para, monkeypatch):
    """While the worker runs Python, each torch call of the decoding thread waits for the GIL at most
    the switch interval: short while overlapping, Python's own afterwards (also after an error)."""
    import sys

    from spanaug.pipeline.paraphraser import decode_loop

    requests = _requests(8)
    cfg = _settings(para, requests, "beam")
    before, seen = sys.getswitchinterval(), []
    real = para.decode

    def record(prepared, cfg, b):
        seen.append(sys.getswitchinterval())
        return real(prepared, cfg, b)

    monkeypatch.setattr(para, "decode", record)
    _run(para, requests, cfg, overlap=True)
    assert seen and seen == pytest.approx([decode_loop.HOST_SWITCH_INTERVAL] * len(seen))
    assert sys.getswitchinterval() == before
    seen.clear()
    _run(para, requests, cfg, overlap=False)
    assert set(seen) == {before}

    def fail(prepared, cfg, b):
        raise ValueError("a decoding error")

    monkeypatch.setattr(para, "decode", fail)
    with pytest.raises(ValueError, match="a decoding error"):
        _run(para, requests, cfg, overlap=True)
    assert sys.getswitchinterval() == before


def test_the_worker_builds_the_constraint_table(para, monkeypatch):
    """The processor's host table is made with the batch's other inputs, in the worker, and the
    device's part is made from it."""
    from spanaug.pipeline.paraphraser import processors

    requests = _requests(10)
    cfg = _settings(para, requests, "beam")
    threads, tables = [], []
    real_of, real_decode = processors.SequenceTable.of, para.decode

    def of(banned):
        threads.append(threading.current_thread().name)
        return real_of(banned)

    def decode(prepared, cfg, b):
        tables.append(prepared.table)
        expected = real_of(prepared.banned)
        for name in ("prefixes", "lasts", "valid"):
            assert np.array_equal(getattr(prepared.table, name), getattr(expected, name))
        return real_decode(prepared, cfg, b)

    monkeypatch.setattr(processors.SequenceTable, "of", staticmethod(of))
    monkeypatch.setattr(para, "decode", decode)
    rows, _ = _run(para, requests, cfg, overlap=True)
    assert rows and len(tables) >= 3 and all(t is not None for t in tables)
    assert threads and all(name.startswith("paraphrase-host") for name in threads)


def test_the_workers_preparing_pauses_while_the_gate_is_closed(para):
    """While the decoding thread launches a step's kernels one by one (the gate closed), a batch's
    preparation waits at its next sentence, then finishes as it would have."""
    from concurrent.futures import ThreadPoolExecutor

    from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE

    requests = _requests(6)
    cfg = _settings(para, requests, "beam")
    expected = para.prepare(requests, cfg, para.worker_tools)
    with ThreadPoolExecutor(max_workers=1) as worker:
        with WORKER_GATE.closed():
            future = worker.submit(para.prepare, requests, cfg, para.worker_tools)
            with pytest.raises(TimeoutError):
                future.result(timeout=0.3)
        prepared = future.result(timeout=30)
    assert prepared.banned == expected.banned and prepared.limits == expected.limits


def test_overlapped_decoding_with_the_gate_closing_gives_the_rows_in_turn(tiny_paraphraser, monkeypatch):
    """As a GPU runs it: the graph runner closes the gate around its launched steps (capture stubbed
    to run the step eagerly on the CPU), the worker pauses at it, batches also split after running
    out of memory: nothing waits forever, and the rows are those of batches decoded in turn."""
    from spanaug.pipeline.paraphraser import step_runner
    from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE

    para = StaticParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    requests = _requests(12)
    cfg = _settings(para, requests, "beam")
    expected, _ = _run(para, requests, cfg, overlap=False)
    closings = []

    def runner(state, cfg):
        graphed = step_runner.GraphRunner(para.step, state, bucket=4, capture=False)

        def position(kind):
            return step_runner.Position(graphed.t, graphed.span_now)

        stub_captures(monkeypatch, graphed, position, launched=lambda kind: closings.append(WORKER_GATE.is_open))
        return graphed

    real = para.decode

    def small_only(prepared, cfg, b):
        if len(prepared.limits) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(prepared, cfg, b)

    monkeypatch.setattr(para, "runner", runner)
    monkeypatch.setattr(para, "decode", small_only)
    rows, _ = _run(para, requests, cfg, overlap=True)
    assert closings and not any(closings)  # every warm-up and capture ran with the gate closed
    assert WORKER_GATE.is_open
    assert [r["paraphrase_text"] for r in rows] == [r["paraphrase_text"] for r in expected]
    assert [r["paraphrase_score"] for r in rows] == pytest.approx([r["paraphrase_score"] for r in expected], abs=1e-5)
