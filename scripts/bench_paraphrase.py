#!/usr/bin/env python
"""Paraphrase throughput: sentences/s of the hf and static backends (and ct2 when installed) on one model.

Decodes the same requests (the demo corpus's seed sentences, each under its trigger's expanded
constraints) with each backend and prints sentences/s and each backend's ratio to hf, measured in
one run.

    .venv/bin/python scripts/bench_paraphrase.py --model results/demo/models/paraphraser [--repeat 4]
    .venv/bin/python scripts/bench_paraphrase.py --standin t5-cpu --threads 1   # no trained model needed

``--standin t5-cpu`` builds a random-weight T5 (d_model 256, 3+3 layers, vocabulary 32,128;
spanaug.demo.standins) with a tokenizer trained on the demo corpus; ct2 runs with
``ct2_batching`` exact and union.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spanaug.core.config import DecodeSettings
from spanaug.pipeline.constraints import expand, lu_upos
from spanaug.pipeline.importers import read_framenet
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.stage import BACKENDS


def requests(repeat: int) -> list[dict]:
    rows = list(read_framenet(REPO / "resources/demo/fndata-demo"))
    out = []
    for k in range(repeat):
        for r in rows:
            span = r["tokens"][r["span_start"] : r["span_end"] + 1]
            out.append(
                {
                    "seed_id": f"{r['sentence_id']}#{k}",
                    "source_text": r["text"],
                    "source_tokens": r["tokens"],
                    "constraints": sorted(expand(span, lu_upos(r["lexical_unit"]))),
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=str(REPO / "results/demo/models/paraphraser"))
    ap.add_argument("--repeat", type=int, default=4, help="copies of the demo seeds to decode")
    ap.add_argument("--beam-size", type=int, default=20)
    ap.add_argument("--return-top", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--standin", choices=["t5-cpu"], help="decode with a random-weight stand-in model instead")
    ap.add_argument("--threads", type=int, help="torch CPU threads (ct2 uses one thread per concurrent call)")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    reqs = requests(args.repeat)
    if args.standin:
        import os
        import tempfile

        from spanaug.demo.standins import T5_CPU, save_standin

        # Removed at exit, with its CTranslate2 conversion (a new random model every run).
        work = Path(tempfile.mkdtemp(prefix="standin-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
        os.environ.setdefault("SPANAUG_CT2_CACHE", str(work / "ct2"))
        args.model = save_standin(work / "model", "t5", [r["source_text"] for r in reqs], T5_CPU, vocab_size=2000)
    if not Path(args.model).exists() and "/" not in args.model.strip("/"):
        sys.exit(f"no model at {args.model}: run `make demo` first, or pass --model")
    rates = {}
    runs = [("hf", "exact"), ("static", "exact"), ("ct2", "exact"), ("ct2", "union")]
    for name, batching in runs:
        cfg = DecodeSettings(
            beam_size=args.beam_size,
            return_top=args.return_top,
            batch_size=args.batch_size,
            max_new_tokens=args.max_new_tokens,
            ct2_batching=batching,
        )
        label = name if name != "ct2" else f"{name}/{batching}"
        try:
            para = BACKENDS[name].from_pretrained(
                args.model, device=args.device, dtype="float32" if args.device == "cpu" else "auto"
            )
        except Exception as exc:
            print(f"{label:<9} skipped: {exc}")
            continue
        list(paraphrase(para, reqs[:4], cfg, progress=False))  # warm-up
        stats = DecodeStats()
        start = time.perf_counter()
        list(paraphrase(para, reqs, cfg, stats, progress=False))
        elapsed = time.perf_counter() - start
        rates[label] = len(reqs) / elapsed
        print(
            f"{label:<9} {len(reqs)} sentences, beam {args.beam_size}, on {para.device}: {rates[label]:7.2f} "
            f"sentences/s ({stats.outputs} outputs, {stats.violations_dropped} violations dropped)"
        )
    for label in rates:
        if label != "hf" and "hf" in rates:
            print(f"{label}/hf throughput ratio: {rates[label] / rates['hf']:.2f}")


if __name__ == "__main__":
    main()
