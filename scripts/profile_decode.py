#!/usr/bin/env python
"""Where a decode batch's time goes: the static backend as ``backend: auto`` runs it, one batch of
FrameNet dev sentences, unconstrained and under iteration N's constraints, under torch.profiler.

Prints, per run: the wall time, the GPU's kernel time and busy share, the steps, the CUDA graphs
captured (each costs the host about one eager step), and the kernels that took the most GPU time.
On an H100 at this stop the engine decoded iteration 10 at 2.66 times the unconstrained time;
this is the measurement that says why. The model and inputs are ``bench_gpu.py``'s (a T5-base-sized
paraphraser with random weights, beam 20; on CPU a smaller T5, for checking the script).

    .venv/bin/python scripts/profile_decode.py                  # GPU when present
    .venv/bin/python scripts/profile_decode.py --device cpu --sentences 4 --steps 6
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu
import torch
from torch.profiler import ProfilerActivity, profile

from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_dtype, device_name
from spanaug.demo.standins import T5_BASE, T5_CPU, build_model, train_tokenizer
from spanaug.pipeline.paraphraser.batching import default_max_batch_tokens, token_budget_batches
from spanaug.pipeline.paraphraser.processors import TensorBannedSequences
from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser
from spanaug.pipeline.paraphraser.step_runner import EagerRunner, GraphRunner


class Counts:
    """Steps run and graphs captured, counted by wrapping the runners' methods."""

    def __init__(self) -> None:
        self.steps = self.captures = 0
        for cls in (EagerRunner, GraphRunner):
            cls.run = self._counting(cls.run, "steps")
        GraphRunner._capture = self._counting(GraphRunner._capture, "captures")

    def _counting(self, method, name: str):
        def counted(*args):
            setattr(self, name, getattr(self, name) + 1)
            return method(*args)

        return counted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--iteration", type=int, default=10, help="the constraint sets of this iteration")
    ap.add_argument("--sentences", type=int, default=256, help="sentences drawn (the first batch is profiled)")
    ap.add_argument("--steps", type=int, help="cap on each sentence's new tokens (default: its source length)")
    ap.add_argument("--kernels", type=int, default=15, help="kernels listed per run")
    args = ap.parse_args()
    auto = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = auto if args.device == "auto" else torch.device(args.device)
    gpu = device.type == "cuda"
    rows = bench_gpu.framenet_rows()
    sets = bench_gpu.chain_constraints(rows, [args.iteration])[args.iteration]
    tokenizer = train_tokenizer("unigram", [r["text"] for r in rows], vocab_size=8000)
    model = build_model("t5", tokenizer, T5_BASE if gpu else T5_CPU)
    engine = StaticParaphraser(model, tokenizer, device, choose_dtype(device))
    cfg = DecodeSettings(beam_size=20, return_top=3)
    picked = random.Random(0).sample(range(len(rows)), min(args.sentences, len(rows)))
    lengths = engine.source_lengths([rows[i]["text"] for i in picked])
    budget = default_max_batch_tokens(device, model.config, engine.dtype, engine.rows_sharing_cross_state(cfg))
    batch = token_budget_batches(lengths, cfg.width, budget)[0]
    limits = [min(lengths[j], args.steps or lengths[j]) for j in batch]
    print(
        f"{device_name(device)}: {len(batch)} sentences x 20 beams ({len(batch) * 20} rows), up to {max(limits)} "
        f"steps; ancestry kernel {engine.uses_ancestry(cfg)}, CUDA graphs {gpu and cfg.cuda_graphs}"
    )
    counts = Counts()
    for constrained in (False, True):
        requests = [
            {"source_text": rows[picked[j]]["text"], "constraints": sets[picked[j]] if constrained else []}
            for j in batch
        ]
        processor = TensorBannedSequences if constrained else None
        bench_gpu.decode_static(engine, requests, limits, cfg, processor)  # warm-up: kernels, the check
        counts.steps = counts.captures = 0
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
        with profile(activities=activities) as prof:
            start = time.perf_counter()
            bench_gpu.decode_static(engine, requests, limits, cfg, processor)
            bench_gpu.sync(device)
            wall = time.perf_counter() - start
        events = prof.key_averages()
        label = f"iteration {args.iteration}" if constrained else "unconstrained"
        kernels = sum(e.self_device_time_total for e in events) / 1e6 if gpu else None
        busy = f"GPU kernels {kernels:.3f} s (busy {kernels / wall:.0%})" if kernels is not None else "no GPU"
        print(
            f"{label}: wall {wall:.3f} s (profiler on), {busy}, {counts.steps} steps, {counts.captures} graph captures"
        )
        sort = "self_device_time_total" if gpu else "self_cpu_time_total"
        print(events.table(sort_by=sort, row_limit=args.kernels, max_name_column_width=60))


if __name__ == "__main__":
    main()
