#!/usr/bin/env python
"""Frame ID on FrameNet 1.7 dev (the shared open-SESAME file): the model against the lexicon baseline.

Splits the file by contiguous sentence ranges (the last 20% is the test split, the 10% before it
dev), then prints test precision/recall/F1 of the most-frequent-frame baseline and of the
MiniLM Frame ID model, with the FrameNet lexicon restricting each span's frames and, with
``--no-lexicon-run``, also without it. Target: the model clearly beats the baseline.

    .venv/bin/python scripts/bench_frameid.py [--epochs 30] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spanaug.core.evaluation_settings import FrameIdTrainSettings, SplitSettings
from spanaug.downstream.frameid.baseline import LexiconBaseline, triple_scores
from spanaug.downstream.frameid.data import read_training_file, split_conll
from spanaug.downstream.frameid.training import train_frameid
from spanaug.pipeline.framenet import read_lexicon

SHARED = REPO.parent / "shared/data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    defaults = FrameIdTrainSettings()  # the command's defaults, unless changed here
    ap.add_argument("--epochs", type=int, default=defaults.epochs)
    ap.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    ap.add_argument("--batch-size", type=int, default=defaults.batch_size)
    ap.add_argument("--threads", type=int, default=defaults.threads)
    ap.add_argument("--seed", type=int, default=defaults.seed)
    ap.add_argument("--no-lexicon-run", action="store_true", help="also train without the lexicon restriction")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    conll = SHARED / "fn1.7.dev.syntaxnet.conll"
    if not conll.is_file():
        sys.exit(f"needs {conll} (see the shared data README)")
    with tempfile.TemporaryDirectory() as tmp:
        counts = split_conll(conll, tmp, SplitSettings())
        train, dev, test = (read_training_file(Path(tmp) / f"{n}.conll") for n in ("train", "dev", "test"))
    print(f"split (sentences): {json.dumps(counts)}")
    report(
        "lexicon baseline (most frequent frame per trigger string)",
        triple_scores(test, LexiconBaseline().fit(train).predict(test)),
    )
    runs = [("model + FrameNet lexicon candidates", read_lexicon(SHARED / "framenet17-lexicon.json"))]
    if args.no_lexicon_run:
        runs.append(("model, no lexicon", None))
    for name, lexicon in runs:
        start = time.perf_counter()
        model, summary = train_frameid(
            train,
            "minilm",
            FrameIdTrainSettings(
                epochs=args.epochs,
                batch_size=args.batch_size,
                learning_rate=args.learning_rate,
                seed=args.seed,
                threads=args.threads,
            ),
            dev=dev,
            device="cpu",
            progress=False,
            lexicon=lexicon,
        )
        report(
            f"{name} ({summary['epochs_run']} epochs run, best {summary['best_epoch']}, "
            f"{summary['seconds_per_epoch']:.1f} s/epoch, {time.perf_counter() - start:.0f} s, best dev F1 "
            f"{summary['best_dev_f1']:.3f})",
            triple_scores(test, model.predict(test)),
        )


def report(name: str, scores: dict) -> None:
    print(
        f"{name}: P {scores['precision']:.3f} R {scores['recall']:.3f} F1 {scores['f1']:.3f} "
        f"(gold {scores['n_gold']}, predicted {scores['n_pred']})"
    )


if __name__ == "__main__":
    main()
