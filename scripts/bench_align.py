#!/usr/bin/env python
"""Aligner prediction throughput on CPU with MiniLM, per aligner kind: instances/s and pairs/s.

The paper's aligner is trained briefly on the shared Edinburgh++ span instances (or on instances
made from the demo bitext when ../shared/data is absent); the cross encoder is timed untrained (its
cost does not depend on its weights: one encoder pass per (pair, span), then the span head).
Target: at least 100 sentence pairs/s on 2 CPU cores. Two workloads: every instance (several
source spans per pair; the paper's aligner encodes a pair once for all its spans), and one span per
pair, the shape of the pipeline's align stage (each paraphrase beam is a pair with one span).

With the shared FN1.7 dev CoNLL, a third workload is the align stage itself (``align_rows``) on its
frame annotations, with the frame elements off (trigger only) and on (``frame_elements.mode: align``):
outputs/s of each, their ratio, and the time per output by its number of FEs to place, which must
grow at most linearly. The "paraphrase" of each annotation is its sentence with the trigger's words
replaced (the FEs' words stay), so the workload has the dev's real FE counts and lengths.

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
        conll = REPO.parent / "shared/data/fn1.7.dev.syntaxnet.conll"
        if conll.is_file():
            time_stage(aligner, kind, stage_rows(conll, args.limit), batch, args.threads)


def stage_rows(conll: Path, limit: int | None) -> list[dict]:
    """PARAPHRASES-shaped rows from the dev's frame annotations (see the module's doc)."""
    from spanaug.pipeline.importers import read_conll

    rows = []
    for n, s in enumerate(read_conll(conll)):
        if limit and n >= limit:
            break
        tokens = list(s["tokens"])
        target = (
            tokens[: s["span_start"]] + ["xyzzy"] * (s["span_end"] - s["span_start"] + 1) + tokens[s["span_end"] + 1 :]
        )
        rows.append(
            {
                "seed_id": s["sentence_id"],
                "beam_rank": 0,
                "source_tokens": tokens,
                "source_span_start": s["span_start"],
                "source_span_end": s["span_end"],
                "source_frame_elements": s["frame_elements"],
                "paraphrase_tokens": target,
            }
        )
    return rows


def time_stage(aligner: SpanAlignerModel, kind: str, rows: list[dict], batch: int, threads: int) -> None:
    """Outputs/s with FEs off and on, and seconds per output by FE count."""
    from collections import defaultdict

    from spanaug.core.config import FrameElementSettings
    from spanaug.pipeline import frame_elements as fe_rules
    from spanaug.pipeline.aligner.stage import align_rows

    rate = {}
    for mode in ("off", "align"):
        work = [dict(r) for r in rows]
        start = time.perf_counter()
        align_rows(aligner, work, FrameElementSettings(mode=mode), batch)
        rate[mode] = len(rows) / (time.perf_counter() - start)
    n_fes = [
        len(fe_rules.to_place(r["source_frame_elements"], (r["source_span_start"], r["source_span_end"]))) for r in rows
    ]
    print(
        f"{kind} aligner, align stage on {len(rows)} FN1.7 dev annotations ({sum(n_fes) / len(rows):.2f} FEs to place "
        f"per output) on {threads} threads: trigger only {rate['off']:.1f} outputs/s, with FEs {rate['align']:.1f} "
        f"outputs/s ({rate['off'] / rate['align']:.2f}x the time)",
        flush=True,
    )
    groups = defaultdict(list)
    for row, n in zip(rows, n_fes):
        groups[min(n, 4)].append(dict(row))
    cells = []
    for n, group in sorted(groups.items()):
        start = time.perf_counter()
        align_rows(aligner, group, FrameElementSettings(mode="align"), batch)
        cells.append(
            f"{n}{'+' if n == 4 else ''} FEs: {1000 * (time.perf_counter() - start) / len(group):.1f} ms ({len(group)})"
        )
    print(f"{kind} aligner, milliseconds per output by FEs to place (outputs): " + ", ".join(cells), flush=True)


if __name__ == "__main__":
    main()
