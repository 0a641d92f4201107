#!/usr/bin/env python
"""What to do with an augmented example that lost a frame element (``argid.lost_fes``): leave it out
(``drop_example``) or train on the FEs it kept (``keep_example``, the lost FE's words then count as
no FE). Measured on a run's own files, as its ``argid`` points read them: Frame ID's split of the run
(``frameid/split``) and an augmenter's examples (``augmenters/<name>.parquet``).

For each seed, one point without augmentation and one per choice, at one share of the training
sentences, with the ``spanaug argid train`` defaults (MiniLM on the CPU unless --encoder says
otherwise); prints test F1 per seed, the mean and s.d. per choice, and the examples each trained on.

    .venv/bin/python scripts/bench_argid_lost_fes.py results/fn-dev-argid [--fraction 0.25] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spanaug.core import artifacts
from spanaug.core.argid_settings import ArgIdTrainSettings
from spanaug.downstream.argid.data import read_annotations
from spanaug.downstream.argid.experiment import ArgIdPointData, run_argid_point
from spanaug.downstream.augmenter_comparison import Point

CHOICES = ("drop_example", "keep_example")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a run's results folder (results/<run_name>)")
    ap.add_argument("--augmenter", default="paraphrastic", choices=("paraphrastic", "lexsub"))
    ap.add_argument("--fraction", type=float, default=0.25)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--encoder", default="minilm")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    split = args.run / "frameid" / "split"
    examples_path = args.run / "augmenters" / f"{args.augmenter}.parquet"
    for path in (split / "train.parquet", split / "test.parquet", examples_path):
        if not path.is_file():
            sys.exit(f"needs {path}: run the workflow's argid points of {args.run} first")
    pool, test = read_annotations(split / "train.parquet"), read_annotations(split / "test.parquet")
    dev = read_annotations(split / "dev.parquet") if (split / "dev.parquet").is_file() else None
    examples = artifacts.read_table(examples_path, artifacts.EXAMPLES).to_pylist()
    results: dict[str, list[float]] = {"none": [], **{c: [] for c in CHOICES}}
    counts: dict[str, tuple[int, int]] = {}
    for seed in args.seeds:
        for choice in ("none", *CHOICES):
            data = ArgIdPointData(
                pool=pool,
                test=test,
                dev=dev,
                examples=examples,
                lost_fes="drop_example" if choice == "none" else choice,
            )
            augmenter = "none" if choice == "none" else args.augmenter
            point = run_argid_point(Point(augmenter, args.fraction, seed), data, args.encoder, ArgIdTrainSettings())
            results[choice].append(point["f1"])
            counts[choice] = (point["augmented_examples"], point["augmented_left_out"])
            print(
                f"seed {seed} {choice:<13} F1 {point['f1']:.3f}  examples {point['augmented_examples']:>5}"
                f"  left out {point['augmented_left_out']:>5}  best epoch {point['best_epoch']}"
                f"  {point['seconds']:.0f} s",
                flush=True,
            )
    print(f"\n{args.run} {args.augmenter}, {args.fraction:.0%} of the training sentences, seeds {args.seeds}:")
    for choice, f1s in results.items():
        sd = statistics.stdev(f1s) if len(f1s) > 1 else 0.0
        examples, left_out = counts[choice]
        print(
            f"  {choice:<13} F1 {statistics.mean(f1s):.3f} (s.d. {sd:.3f})"
            f"  last seed: {examples} examples, {left_out} left out"
        )


if __name__ == "__main__":
    main()
