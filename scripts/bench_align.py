#!/usr/bin/env python
"""Aligner prediction throughput on CPU with MiniLM: instances/s and sentence pairs/s.

Trains a scorer briefly on the shared Edinburgh++ span instances (or on instances made from the
demo bitext when ../shared/data is absent), then times prediction on all instances.
Target: at least 100 sentence pairs/s on 2 CPU cores. Two workloads: every instance (several
source spans per pair), and one span per pair, the shape of the pipeline's align stage (each
paraphrase beam is a pair with one span).

    .venv/bin/python scripts/bench_align.py [--threads 2]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from spanaug.core.config import AlignerConfig, AlignerTrainSettings
from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext, pair_key, read_instances
from spanaug.pipeline.aligner.training import train_aligner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    shared = REPO.parent / "shared/data/edinburgh-train.spans.jsonl"
    if shared.is_file():
        insts = read_instances(shared)
    else:
        insts = instances_from_bitext(iter_pairs_from_bitext(REPO / "resources/demo/bitext.tsv"))
    aligner, _ = train_aligner(insts[:300], AlignerConfig(encoder="minilm"), AlignerTrainSettings(epochs=1), device="cpu", progress=False)
    aligner.predict(insts[:64], batch_size=args.batch_size)  # warm-up
    one_per_pair = list({pair_key(i): i for i in reversed(insts)}.values())
    for name, workload in (("all spans", insts), ("one span per pair", one_per_pair)):
        start = time.perf_counter()
        aligner.predict(workload, batch_size=args.batch_size)
        elapsed = time.perf_counter() - start
        pairs = len({pair_key(i) for i in workload})
        print(f"{name}: {len(workload)} instances over {pairs} sentence pairs in {elapsed:.1f} s on {args.threads} "
              f"threads: {len(workload) / elapsed:.0f} instances/s, {pairs / elapsed:.0f} pairs/s (target >= 100 pairs/s)")


if __name__ == "__main__":
    main()
