#!/usr/bin/env python
"""The cross aligner's host-side cost per pair, without its encoder: what bounds ``CrossAligner.predict``
on a GPU once the encoder is fast (issue 34: on an H100 a MiniLM-sized encoder took 0.59 s of 4.6 s).

Times, on FrameNet-length pairs (``bench_gpu.frameset_instances``: a dev sentence and itself shuffled,
the trigger as the span) and a tokenizer as ``bench_gpu.bench_cross_aligner`` builds it, each part
``raw_scores``/``predict`` runs on the host:

- encode, cold: a fresh ``Encoder`` (empty caches) on the pairs;
- encode, warm: new pairs of the same sentences (new shuffles: new targets, known words), as a
  paraphrase chain meets new beams of known words;
- collate: the batches ``raw_scores`` builds (sorted by length), on the CPU;
- scores out: ``padded_logits`` and ``split_scores`` on random head outputs of each batch;
- decide and ranked (top 3): the per-pair probabilities from those scores.

Each part is the median of ``--repeats`` runs; it prints µs per pair and the pairs/s the host alone
allows (encode warm + collate + scores out + decide).

    .venv/bin/python scripts/bench_aligner_host.py
    .venv/bin/python scripts/bench_aligner_host.py --pairs 4096 --batch-size 256
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from bench_common import ENCODER_SHAPES, framenet_rows
from bench_gpu import frameset_instances

from spanaug.core.aligner_settings import CrossAlignerConfig
from spanaug.demo.standins import bert_tokenizer
from spanaug.pipeline.aligner.cross_inputs import Encoder, collate, padded_logits, split_scores
from spanaug.pipeline.aligner.cross_model import CrossAligner


def median_seconds(fn: Callable[[], object], repeats: int, setup: Callable[[], object] | None = None) -> float:
    """The median wall time of ``fn`` over ``repeats`` runs, ``setup`` (untimed) before each."""
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def build_aligner(rows: list[dict], size: str) -> CrossAligner:
    """The cross aligner ``bench_gpu.bench_cross_aligner`` times, on the CPU (its encoder is never run)."""
    from transformers import BertConfig, BertModel

    fast = bert_tokenizer([r["text"] for r in rows], vocab_size=8000)
    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=30522, max_position_embeddings=512, **ENCODER_SHAPES[size]))
    return CrossAligner(CrossAlignerConfig(encoder=f"random-{size}"), encoder=encoder, tokenizer=fast, device="cpu")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=4096)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--size", default="small", choices=sorted(ENCODER_SHAPES), help="the (unused) encoder's shape")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)  # the host side is single-threaded Python; one thread keeps timings steady
    rows = framenet_rows()
    aligner = build_aligner(rows, args.size)
    first = frameset_instances(rows, args.pairs, random.Random(args.seed))
    again = frameset_instances(rows, args.pairs, random.Random(args.seed + 1))
    n, bs = len(first), args.batch_size

    def fresh_encoder() -> None:
        old = aligner.inputs
        aligner.inputs = Encoder(old.tokenizer, old.markers, old.max_length)

    cold = median_seconds(lambda: aligner.encode(first), args.repeats, setup=fresh_encoder)

    def warm_setup() -> None:
        fresh_encoder()
        aligner.encode(first)

    warm = median_seconds(lambda: aligner.encode(again), args.repeats, setup=warm_setup)
    encs = [x for x in aligner.encode(again)[0] if x is not None]
    encs.sort(key=lambda x: len(x.ids))
    batches = [encs[s : s + bs] for s in range(0, len(encs), bs)]
    pad = aligner.tokenizer.pad_token_id
    k, pooling, cpu = aligner.config.k, aligner.config.pooling, torch.device("cpu")
    coll = median_seconds(lambda: [collate(b, k, pooling, pad, cpu) for b in batches], args.repeats)
    collated = [collate(b, k, pooling, pad, cpu) for b in batches]
    gen = torch.Generator().manual_seed(args.seed)
    heads = [(torch.randn(len(b.cands), generator=gen), torch.randn(len(b.counts), generator=gen)) for b in collated]
    out: list = [None] * len(encs)

    def scores_out() -> None:
        offset = 0
        for b, (span, null) in zip(collated, heads):
            idx = list(range(offset, offset + len(b.counts)))
            split_scores(b, padded_logits(span, null, b.item, b.counts), idx, out)
            offset += len(idx)

    post = median_seconds(scores_out, args.repeats)
    decide = median_seconds(lambda: aligner.decide(out), args.repeats)
    ranked = median_seconds(lambda: aligner.ranked(out, 3), args.repeats)
    parts = {
        "encode, cold caches": cold,
        "encode, warm caches (new pairs)": warm,
        f"collate (batches of {bs})": coll,
        "padded_logits + split_scores": post,
        "decide": decide,
        "ranked (top 3)": ranked,
    }
    print(f"cross aligner host side: {n} FrameNet-length pairs, batches of {bs}, median of {args.repeats} runs")
    for name, seconds in parts.items():
        print(f"  {name:34s} {1e6 * seconds / n:8.1f} µs/pair")
    steady = warm + coll + post + decide
    print(f"  {'host total (warm encode .. decide)':34s} {1e6 * steady / n:8.1f} µs/pair = {n / steady:,.0f} pairs/s")


if __name__ == "__main__":
    main()
