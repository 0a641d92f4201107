#!/usr/bin/env python
"""The constraint processor's cost per decode step, under the constraint sets of iterations 1, 5 and 10.

For one decoder batch of FrameNet dev sentences (beam 20, the sets ``bench_gpu.py`` simulates,
tokenized with its tokenizer): the host time to build the processor's tensors, and per step (as a
step replayed from a CUDA graph calls it: the token buffer and a device position) the operators it
runs (torch.profiler's count: on a GPU each is a kernel, and a graph's replay costs at least a few
microseconds a kernel) and its time (median over ``--steps`` calls), with the table's size.

    .venv/bin/python scripts/bench_processor.py                 # CPU
    .venv/bin/python scripts/bench_processor.py --device cuda --sentences 96
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu
import torch
from torch.profiler import ProfilerActivity, profile

from spanaug.demo.standins import train_tokenizer
from spanaug.pipeline.paraphraser.banned import PhraseBans
from spanaug.pipeline.paraphraser.processors import TensorBannedSequences

BEAMS, VOCAB = 20, 32128


def operators(processor: TensorBannedSequences, buffer: torch.Tensor, scores: torch.Tensor, last: torch.Tensor) -> int:
    """The operators one call runs (aten ops on the CPU, kernels on a GPU)."""
    activities = [ProfilerActivity.CUDA] if buffer.is_cuda else [ProfilerActivity.CPU]
    with profile(activities=activities) as prof:
        processor.ban(buffer, scores, last)
        if buffer.is_cuda:
            torch.cuda.synchronize()
    events = prof.events()
    if buffer.is_cuda:
        return sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
    # the CPU ops that do work: the leaves of the call tree
    return sum(1 for e in events if e.name.startswith("aten::") and not e.cpu_children)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sentences", type=int, default=24, help="sentences in the batch (rows: x 20 beams)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.set_grad_enabled(False)
    rows = bench_gpu.framenet_rows()
    sets = bench_gpu.chain_constraints(rows, [1, 5, 10], args.seed)
    tokenizer = train_tokenizer("unigram", [r["text"] for r in rows], vocab_size=8000)
    picked = random.Random(args.seed).sample(range(len(rows)), args.sentences)
    n_rows = args.sentences * BEAMS
    print(f"{args.sentences} FrameNet dev sentences x {BEAMS} beams = {n_rows} rows, vocabulary {VOCAB}, {device}")
    gen = torch.Generator().manual_seed(args.seed)
    buffer = torch.randint(0, len(tokenizer), (n_rows, 40), generator=gen).to(device)
    base = torch.randn(n_rows, VOCAB, generator=gen).to(device)
    for it in (1, 5, 10):
        bans = PhraseBans(tokenizer)
        banned = [bans(sets[it][j]) for j in picked]
        start = time.perf_counter()
        processor = TensorBannedSequences(banned, VOCAB, device)
        built = time.perf_counter() - start
        last = torch.tensor(30, device=device)
        times = []
        for _ in range(args.steps):
            scores = base.clone()
            bench_gpu.sync(device)
            start = time.perf_counter()
            processor.ban(buffer, scores, last)
            bench_gpu.sync(device)
            times.append(time.perf_counter() - start)
        ops = operators(processor, buffer, base.clone(), last)
        print(
            f"iteration {it:>2}: K = {processor.width} slots x P = {processor.prefixes.shape[2]} prefix columns; "
            f"built in {built * 1e3:.1f} ms; a step: {ops} operators, {statistics.median(times) * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
