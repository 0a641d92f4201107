"""The gate that pauses the host's worker while the decoding thread launches a step's kernels one by
one (pipeline.paraphraser.host_gate), and where the graph runner closes it."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import torch
from conftest import stub_captures

from spanaug.pipeline.paraphraser import step_runner
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE, HostGate


def test_the_gate_opens_when_the_last_block_leaves_also_on_an_error():
    gate = HostGate()
    assert gate.is_open
    with gate.closed():
        assert not gate.is_open
        with gate.closed():
            assert not gate.is_open
        assert not gate.is_open  # the outer block still holds it
    assert gate.is_open
    with pytest.raises(RuntimeError, match="capture"), gate.closed():
        raise RuntimeError("capture failed")
    assert gate.is_open
    gate.enabled = False
    with gate.closed():
        assert gate.is_open


def test_a_waiting_worker_resumes_once_the_gate_opens():
    gate = HostGate()
    passed = threading.Event()

    def worker():
        gate.wait()
        passed.set()

    with gate.closed():
        thread = threading.Thread(target=worker)
        thread.start()
        assert not passed.wait(0.2)  # paused while closed
    assert passed.wait(10)
    thread.join(10)
    gate.wait()  # open: returns at once


def _runner(monkeypatch, capture: bool, seen: list) -> step_runner.GraphRunner:
    """A graph runner over a stand-in state, capturing (stubbed, on the CPU; each capture noted in
    ``seen`` with the gate's state) or not."""
    state = SimpleNamespace(self_kv=torch.zeros(1, 1, 1, 1, 8), ancestry=None, after_graph_step=lambda: None)
    runner = step_runner.GraphRunner(None, state, bucket=4, capture=False)
    if capture:

        def note(kind: str) -> None:
            if kind == "capture":  # the warm-up shows itself: it runs the step
                seen.append((kind, WORKER_GATE.is_open))

        stub_captures(monkeypatch, runner, launched=note)
    return runner


@pytest.mark.parametrize("capture", [True, False])
def test_the_graph_runner_closes_the_gate_around_launched_steps_only(monkeypatch, capture):
    """With graphs: the first step, the warm-up and each capture run with the gate closed, the
    replays with it open (a new span, at step 4, captures again). Without graphs every step runs
    eagerly and the worker runs beside them: the gate stays open."""
    seen = []
    runner = _runner(monkeypatch, capture, seen)

    def search_step(position):
        kind = position if isinstance(position, str) else "first" if position == 0 else "eager"
        seen.append((kind, WORKER_GATE.is_open))

    for s in range(6):
        runner.run(search_step, s)
    if capture:
        assert seen == [
            ("first", False),
            ("warm-up", False),
            ("capture", False),
            ("replay", True),
            ("replay", True),
            ("capture", False),
            ("replay", True),
            ("replay", True),
        ]
    else:
        assert seen == [("first", True)] + [("eager", True)] * 5
    assert WORKER_GATE.is_open


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_engine_closes_the_gate_while_it_captures(tiny_paraphraser, monkeypatch):
    """With real CUDA graphs: the gate closes (the first steps, warm-ups, captures) and is open
    once decoding ends; the outputs are those of a decode with the gate never closing."""
    from spanaug.core.config import DecodeSettings
    from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser

    para = StaticParaphraser.from_pretrained(tiny_paraphraser, device="cuda", dtype="float32")
    requests = [
        {"seed_id": str(i), "source_text": t, "source_tokens": t.split(), "constraints": ["the"]}
        for i, t in enumerate(["Abby bought a car from Robin last week .", "The children walked to school ."])
    ]
    cfg = DecodeSettings(beam_size=4, return_top=2, max_new_tokens=12)
    gate = HostGate()
    closings = []
    real_closed = gate.closed

    def closed():
        closings.append(True)
        return real_closed()

    monkeypatch.setattr(gate, "closed", closed)
    monkeypatch.setattr(step_runner, "WORKER_GATE", gate)
    gated = list(paraphrase(para, requests, cfg, progress=False))
    assert closings and gate.is_open
    gate.enabled = False
    plain = list(paraphrase(para, requests, cfg, progress=False))
    assert [r["paraphrase_text"] for r in gated] == [r["paraphrase_text"] for r in plain]
