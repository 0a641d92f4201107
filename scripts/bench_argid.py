#!/usr/bin/env python
"""Argument identification on FrameNet 1.7 dev (the shared open-SESAME file): the model against the
most-frequent-role baseline, with gold frames and triggers.

Splits the file as ``spanaug frameid split`` does (contiguous sentence ranges: 228/33/65 sentences),
trains on the training part with the ``spanaug argid train`` defaults (its own held-out share for
early stopping; the dev part is not used) and MiniLM on the CPU, for each seed, and prints test
precision/recall/F1 as open-SESAME scores them, the wall and CPU time of each training and the
load average (training runs on one thread: on a busy machine its CPU time is what it would take
alone). Target: F1 at least 0.35 and 10 points above the baseline, each training within 10 minutes.

    .venv/bin/python scripts/bench_argid.py [--seeds 0 1 2] [--threads 1] [--encoder minilm]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spanaug.core.argid_settings import ArgIdTrainSettings
from spanaug.core.evaluation_settings import SplitSettings
from spanaug.downstream.argid.data import read_annotations
from spanaug.downstream.argid.scoring import MostFrequentRoleBaseline, argument_scores
from spanaug.downstream.argid.training import train_argid
from spanaug.downstream.frameid.data import split_conll

SHARED = REPO.parent / "shared/data"


def line(name: str, scores: dict) -> str:
    return f"{name:<34} P {scores['precision']:.3f}  R {scores['recall']:.3f}  F1 {scores['f1']:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = ArgIdTrainSettings()  # the command's defaults, unless changed here
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--threads", type=int, default=defaults.threads)
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--frozen", action="store_true", help="train with a frozen encoder (--no-finetune)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    conll = SHARED / "fn1.7.dev.syntaxnet.conll"
    if not conll.is_file():
        sys.exit(f"needs {conll} (see the shared data README)")
    with tempfile.TemporaryDirectory() as tmp:
        counts = split_conll(conll, tmp, SplitSettings())
        train, test = (read_annotations(Path(tmp) / f"{n}.conll") for n in ("train", "test"))
    print(f"split (sentences): {json.dumps(counts)}; annotations: train {len(train)}, test {len(test)}")
    baseline = argument_scores(test, MostFrequentRoleBaseline().fit(train).predict(test))
    print(line("most-frequent-role baseline", baseline))
    f1s = []
    for seed in args.seeds:
        tcfg = dataclasses.replace(defaults, seed=seed, threads=args.threads, finetune=not args.frozen)
        load = os.getloadavg()[0]
        start, cpu = time.perf_counter(), time.process_time()
        model, summary = train_argid(train, args.encoder, tcfg, device="cpu", progress=False)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        scores = argument_scores(test, model.predict(test), model.inventory)
        f1s.append(scores["f1"])
        print(
            f"{line(f'model, seed {seed}', scores)}  unlabeled F1 {scores['unlabeled']['f1']:.3f}  "
            f"({summary['epochs_run']} epochs, best {summary['best_epoch']}; {seconds:.0f} s wall, {cpu:.0f} s CPU, "
            f"load {load:.1f} at start, {os.getloadavg()[0]:.1f} at end)",
            flush=True,
        )
    if len(f1s) > 1:
        print(
            f"model F1 {statistics.mean(f1s):.3f} +- {statistics.stdev(f1s):.3f} over seeds {args.seeds}; "
            f"baseline {baseline['f1']:.3f}; margin {statistics.mean(f1s) - baseline['f1']:+.3f}"
        )


if __name__ == "__main__":
    main()
