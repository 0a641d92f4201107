#!/usr/bin/env python
"""Paraphrase throughput: sentences/s of the hf backend (and ct2 when installed) on one model.

Decodes the same requests (the demo corpus's seed sentences, each under its trigger's expanded
constraints) with each backend and prints sentences/s and the ct2/hf ratio, measured in one run.

    .venv/bin/python scripts/bench_paraphrase.py --model results/demo/models/paraphraser [--repeat 4]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spanaug.core.config import DecodeSettings
from spanaug.pipeline.constraints import expand, lu_upos
from spanaug.pipeline.importers import read_framenet
from spanaug.pipeline.paraphraser.hf_backend import DecodeStats
from spanaug.pipeline.paraphraser.stage import BACKENDS


def requests(repeat: int) -> list[dict]:
    rows = list(read_framenet(REPO / "resources/demo/fndata-demo"))
    out = []
    for k in range(repeat):
        for r in rows:
            span = r["tokens"][r["span_start"] : r["span_end"] + 1]
            out.append({"seed_id": f"{r['sentence_id']}#{k}", "source_text": r["text"], "source_tokens": r["tokens"],
                        "constraints": sorted(expand(span, lu_upos(r["lexical_unit"])))})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=str(REPO / "results/demo/models/paraphraser"))
    ap.add_argument("--repeat", type=int, default=4, help="copies of the demo seeds to decode")
    ap.add_argument("--beam-size", type=int, default=20)
    ap.add_argument("--return-top", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not Path(args.model).exists() and "/" not in args.model.strip("/"):
        sys.exit(f"no model at {args.model}: run `make demo` first, or pass --model")
    reqs = requests(args.repeat)
    cfg = DecodeSettings(beam_size=args.beam_size, return_top=args.return_top, batch_size=args.batch_size, max_new_tokens=48)
    rates = {}
    for name, cls in BACKENDS.items():
        try:
            para = cls.from_pretrained(args.model, device=args.device)
        except Exception as exc:  # noqa: BLE001 - an optional backend that is not installed
            print(f"{name:<4} skipped: {exc}")
            continue
        list(para.paraphrase(reqs[:4], cfg, progress=False))  # warm-up
        stats = DecodeStats()
        start = time.perf_counter()
        list(para.paraphrase(reqs, cfg, stats, progress=False))
        elapsed = time.perf_counter() - start
        rates[name] = len(reqs) / elapsed
        print(f"{name:<4} {len(reqs)} sentences, beam {args.beam_size}, on {para.device}: {rates[name]:7.1f} sentences/s "
              f"({stats.outputs} outputs, {stats.violations_dropped} violations dropped)")
    if len(rates) == 2:
        print(f"ct2/hf throughput ratio: {rates['ct2'] / rates['hf']:.2f}")


if __name__ == "__main__":
    main()
