#!/usr/bin/env python
"""Aligner prediction throughput on CPU with MiniLM, per aligner kind: instances/s and pairs/s.

The paper's aligner is trained briefly on the shared Edinburgh++ span instances (or on instances
made from the demo bitext when ../shared/data is absent); the cross encoder is timed untrained (its
cost does not depend on its weights: one encoder pass per (pair, span), then the span head).
Target: at least 100 sentence pairs/s on 2 CPU cores. Two workloads: every instance (several
source spans per pair; the paper's aligner encodes a pair once for all its spans), and one span per
pair, the shape of the pipeline's align stage (each paraphrase beam is a pair with one span).

    .venv/bin/python scripts/bench_align.py [--threads 2] [--kinds paper,cross] [--limit N]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import torch

from spanaug.core.aligner_settings import AlignerConfig, AlignerTrainSettings
from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext, pair_key, read_instances
from spanaug.pipeline.aligner.interface import SpanAlignerModel
from spanaug.pipeline.aligner.training import train_aligner


def build(kind: str, insts: list) -> SpanAlignerModel:
    """A MiniLM aligner of ``kind``: the paper's trained one epoch on 300 instances, the cross one untrained."""
    if kind == "paper":
        settings = AlignerTrainSettings(epochs=1, threshold_holdout=0.0)
        return train_aligner(insts[:300], AlignerConfig(encoder="minilm"), settings, device="cpu", progress=False)[0]
    from spanaug.core.aligner_settings import CrossAlignerConfig
    from spanaug.pipeline.aligner.cross_model import CrossAligner

    return CrossAligner(CrossAlignerConfig(encoder="minilm"), device="cpu")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--kinds", default="paper,cross", help="comma-separated aligner kinds to time")
    ap.add_argument("--limit", type=int, help="time at most this many instances per workload")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    shared = REPO.parent / "shared/data/edinburgh-train.spans.jsonl"
    if shared.is_file():
        insts = read_instances(shared)
    else:
        insts = instances_from_bitext(iter_pairs_from_bitext(REPO / "resources/demo/bitext.tsv"))
    one_per_pair = list({pair_key(i): i for i in reversed(insts)}.values())
    for kind in args.kinds.split(","):
        aligner = build(kind, insts)
        batch = args.batch_size if kind == "paper" else min(args.batch_size, 32)
        aligner.predict(insts[:64], batch_size=batch)  # warm-up
        for name, workload in (("all spans", insts), ("one span per pair", one_per_pair)):
            workload = workload[: args.limit] if args.limit else workload
            start = time.perf_counter()
            aligner.predict(workload, batch_size=batch)
            elapsed = time.perf_counter() - start
            pairs = len({pair_key(i) for i in workload})
            print(
                f"{kind} aligner, {name}: {len(workload)} instances over {pairs} sentence pairs in {elapsed:.1f} s "
                f"on {args.threads} threads: {len(workload) / elapsed:.0f} instances/s, {pairs / elapsed:.0f} pairs/s "
                "(target >= 100 pairs/s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
