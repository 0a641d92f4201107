#!/usr/bin/env python
"""Scale benchmark: 200,000 synthetic seed rows through the CPU stages; prints rows/s and peak memory.

Stages: import (JSONL), seed selection, sharding, constraint expansion, best-beam selection,
gather/assemble and statistics, then the cost of the artifacts' semantic checks (which run on every
read and write). Target: under 4 GiB peak, minutes on 2 cores.

    .venv/bin/python scripts/bench_scale.py [--rows 200000] [--shards 64] [--compare]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import pyarrow.parquet as pq

from spanaug.core import artifacts
from spanaug.core.config import ConstraintSettings, ImportSettings, SeedSettings
from spanaug.core.validation import validate
from spanaug.evaluation.statistics import write_stats
from spanaug.pipeline.constraints import expand_stage
from spanaug.pipeline.importers import import_corpus
from spanaug.pipeline.iterations import assemble, init_shards, select_stage
from spanaug.pipeline.seeds import select_seeds

VERBS = [
    "bought",
    "purchased",
    "walked",
    "ran",
    "said",
    "announced",
    "gave",
    "donated",
    "noticed",
    "found",
    "stopped",
    "quit",
    "acquired",
    "strolled",
    "declared",
    "handed",
    "discovered",
    "ceased",
]
NOUNS = ["company", "children", "museum", "bank", "dog", "minister", "teacher", "scientists", "workers", "family"]


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synth_jsonl(path: Path, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w") as handle:
        for i in range(rows):
            n = rng.randint(6, 30)
            tokens = [rng.choice(NOUNS) for _ in range(n)]
            pos = rng.randrange(1, n - 1)
            tokens[pos] = rng.choice(VERBS)
            handle.write(
                json.dumps(
                    {
                        "id": f"s{i}",
                        "tokens": tokens,
                        "span": [pos, pos],
                        "frame": f"Frame_{i % 800}",
                        "lexical_unit": f"{tokens[pos]}.v",
                    }
                )
                + "\n"
            )


def fake_aligned(chain: Path, out: Path, beams: int, seed: int) -> None:
    """Stand-in for the GPU stages: each request gets ``beams`` scored rewrites of its span."""
    rng = random.Random(seed)
    with artifacts.open_writer(out, artifacts.ALIGNED) as writer:
        for table in artifacts.iter_batches(chain, artifacts.REQUESTS, 8192):
            rows = []
            for r in table.to_pylist():
                for b in range(beams):
                    toks = list(r["source_tokens"])
                    toks[r["source_span_start"]] = rng.choice(VERBS)
                    rows.append(
                        {
                            **r,
                            "beam_rank": b,
                            "paraphrase_tokens": toks,
                            "paraphrase_text": " ".join(toks),
                            "paraphrase_score": rng.random(),
                            "aligned_start": r["source_span_start"],
                            "aligned_end": r["source_span_end"],
                            "aligner_score": rng.random(),
                        }
                    )
            writer.write(rows)


def run_stages(d: Path, args: argparse.Namespace, label: str | None) -> dict[str, float]:
    """The CPU stages on the synthetic corpus in ``d``; prints (unless ``label`` is None) and returns
    seconds per stage."""
    timings: dict[str, float] = {}

    def timed(name, fn):
        t = time.perf_counter()
        out = fn()
        timings[name] = time.perf_counter() - t
        if label is not None:
            print(
                f"{label + name:<32} {timings[name]:8.1f} s  {args.rows / timings[name]:10.0f} rows/s  "
                f"peak {peak_mib():7.0f} MiB",
                flush=True,
            )
        return out

    timed(
        "import",
        lambda: import_corpus(ImportSettings(format="jsonl", inputs=[str(d / "in.jsonl")]), d / "sentences.parquet"),
    )
    timed(
        "select_seeds",
        lambda: artifacts.write_table(
            select_seeds(artifacts.read_table(d / "sentences.parquet", artifacts.SENTENCES), SeedSettings())[0],
            d / "seeds.parquet",
            artifacts.SENTENCES,
        ),
    )
    shards = [d / f"iter0.{j}.parquet" for j in range(args.shards)]
    timed("shard", lambda: init_shards(d / "seeds.parquet", shards))
    timed(
        "expand_constraints",
        lambda: [expand_stage(p, d / f"req.{j}.parquet", 1, ConstraintSettings()) for j, p in enumerate(shards)],
    )
    for j in range(args.shards):
        fake_aligned(d / f"req.{j}.parquet", d / f"al.{j}.parquet", args.beams, j)
    timed(
        "select_best",
        lambda: [select_stage(d / f"al.{j}.parquet", d / f"iter1.{j}.parquet") for j in range(args.shards)],
    )
    timed(
        "gather+assemble",
        lambda: assemble([d / f"iter1.{j}.parquet" for j in range(args.shards)], d / "augmented.parquet"),
    )
    timed("stats", lambda: write_stats(d / "augmented.parquet", d / "seeds.parquet", d / "s.json", d / "s.csv"))
    total = sum(timings.values())
    if label is not None:
        print(
            f"{label + 'total':<32} {total:8.1f} s  peak RSS {peak_mib():.0f} MiB ({peak_mib() / 1024:.2f} GiB; "
            "target < 4 GiB)",
            flush=True,
        )
    return timings


def validation_cost(d: Path, args: argparse.Namespace) -> tuple[float, int]:
    """Seconds the semantic checks take over one read of every artifact the stages wrote."""
    paths = [
        (d / "sentences.parquet", "sentences"),
        (d / "seeds.parquet", "sentences"),
        *((d / f"iter0.{j}.parquet", "chain") for j in range(args.shards)),
        *((d / f"req.{j}.parquet", "requests") for j in range(args.shards)),
        *((d / f"al.{j}.parquet", "aligned") for j in range(args.shards)),
        *((d / f"iter1.{j}.parquet", "chain") for j in range(args.shards)),
        (d / "augmented.parquet", "augmented"),
    ]
    seconds, rows = 0.0, 0
    for path, name in paths:
        table = artifacts.conform(pq.read_table(path), artifacts.SCHEMAS[name], path)  # read and checked once
        t = time.perf_counter()
        validate(table, path)
        seconds += time.perf_counter() - t
        rows += table.num_rows
    return seconds, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--shards", type=int, default=64)
    ap.add_argument("--beams", type=int, default=3)
    ap.add_argument("--compare", action="store_true", help="also run the stages with the semantic checks off")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        synth_jsonl(d / "in.jsonl", args.rows)
        checked = run_stages(d, args, "")
        seconds, rows = validation_cost(d, args)
        print(
            f"{'validation':<32} {seconds:8.1f} s  {rows / seconds:10.0f} rows/s  over one read of every artifact "
            f"({rows:,} rows); the stages read and write each once, so about {2 * seconds:.1f} s of their "
            f"{sum(checked.values()):.1f} s",
            flush=True,
        )
        if args.compare:
            import spanaug.core.artifacts as module

            checks = module.validate
            module.validate = lambda *a, **k: None  # the stages as they were before the checks
            unchecked = run_stages(d, args, "unchecked ")
            module.validate = checks
            again = run_stages(d, args, "checked again ")  # as warm as the unchecked run
            print(
                f"{'checks cost':<32} {sum(again.values()) - sum(unchecked.values()):8.1f} s of "
                f"{sum(again.values()):.1f} s (noisy: the runs share the machine)"
            )


if __name__ == "__main__":
    main()
