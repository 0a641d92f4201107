"""The meaning check's threshold, from human paraphrases (``stats.meaning_threshold``).

Embeds the sentence pairs of the shared word-aligned paraphrase corpora (``../shared/data``:
Edinburgh++ and MultiMWA-MTRef, where both sides were written by people to mean the same; Wiki is
simplification and mostly near copies, so it is left out) with the meaning check's encoder, and the
same sentences paired with another pair's target (mismatched: two unrelated sentences of the same
corpus). Prints the percentiles of both cosines and, for candidate thresholds, the share of human
paraphrases kept and of mismatched pairs passed. The threshold is the highest candidate that keeps
at least ``--keep`` of the human paraphrases.

    .venv/bin/python scripts/meaning_threshold.py            # about a minute on 2 cores
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from spanaug.evaluation.meaning import SentenceEncoder

CORPORA = ("edinburgh-train.gold.json", "multimwa-mtref-train.gold.json")


def pairs(path: Path) -> list[tuple[str, str]]:
    return [(row["source"], row["target"]) for row in json.loads(path.read_text())]


def percentiles(values: list[float], points=(1, 5, 10, 25, 50)) -> str:
    ordered = sorted(values)
    return "  ".join(f"p{p}={ordered[min(len(ordered) - 1, len(ordered) * p // 100)]:.3f}" for p in points)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--keep", type=float, default=0.95, help="share of human paraphrases the threshold keeps")
    args = ap.parse_args()
    encoder = SentenceEncoder(args.encoder)
    human, mismatched = [], []
    for name in CORPORA:
        rows = pairs(args.data / name)
        sources = [s for s, _ in rows]
        targets = [t for _, t in rows]
        shifted = targets[len(targets) // 2 :] + targets[: len(targets) // 2]  # another pair's target
        h, m = encoder.cosines(sources, targets), encoder.cosines(sources, shifted)
        print(f"{name}: {len(rows)} pairs")
        print(f"  human paraphrases  {percentiles(h)}  mean={sum(h) / len(h):.3f}")
        print(f"  mismatched pairs   {percentiles(m, (50, 90, 99))}  max={max(m):.3f}")
        human += h
        mismatched += m
    print(f"all: {len(human)} human pairs, {len(mismatched)} mismatched pairs")
    print("threshold  human kept  mismatched passed")
    chosen = None
    for t in [x / 100 for x in range(40, 91, 5)]:
        kept = sum(c >= t for c in human) / len(human)
        passed = sum(c >= t for c in mismatched) / len(mismatched)
        print(f"  {t:.2f}      {kept:6.1%}      {passed:6.1%}")
        if kept >= args.keep:
            chosen = t
    print(f"threshold: {chosen} (the highest that keeps at least {args.keep:.0%} of human paraphrases)")


if __name__ == "__main__":
    main()
