#!/usr/bin/env python
"""How many outputs of one shard agree between two runs (say, cuda and cpu): paraphrases and alignments.

    .venv/bin/python scripts/compare_shards.py results/gpu_check/shard0.cuda results/gpu_check/shard0.cpu

Each argument is a prefix P of ``P.paraphrases.parquet`` and ``P.aligned.parquet``. A paraphrase
agrees when the same request (seed, iteration) has the same text at the same beam rank; an
alignment agrees when that paraphrase has the same aligned span and the same frame-element spans.
Prints the counts and the first few disagreements; exits 0 (the figures are the result).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spanaug.core import artifacts


def _rows(prefix: str, kind: str) -> dict[tuple, dict]:
    schema = artifacts.PARAPHRASES if kind == "paraphrases" else artifacts.ALIGNED
    table = artifacts.read_table(f"{prefix}.{kind}.parquet", schema)
    return {(r["seed_id"], r["iteration"], r["beam_rank"]): r for r in table.to_pylist()}


def _fe_spans(row: dict) -> list[tuple]:
    return sorted((fe["name"], fe.get("start"), fe.get("end")) for fe in row.get("frame_elements") or [])


def compare(a: str, b: str) -> dict[str, int]:
    para = {p: _rows(p, "paraphrases") for p in (a, b)}
    aligned = {p: _rows(p, "aligned") for p in (a, b)}
    keys = para[a].keys() | para[b].keys()
    same_text = [
        k
        for k in keys
        if k in para[a] and k in para[b] and para[a][k]["paraphrase_text"] == para[b][k]["paraphrase_text"]
    ]
    both = [k for k in same_text if k in aligned[a] and k in aligned[b]]
    same_span = [
        k
        for k in both
        if (aligned[a][k]["aligned_start"], aligned[a][k]["aligned_end"])
        == (aligned[b][k]["aligned_start"], aligned[b][k]["aligned_end"])
    ]
    same_fes = [k for k in same_span if _fe_spans(aligned[a][k]) == _fe_spans(aligned[b][k])]
    differing = sorted(k for k in keys if k not in same_text)
    for k in differing[:5]:
        texts = [para[p].get(k, {}).get("paraphrase_text") for p in (a, b)]
        print(f"  differs {k}: {texts[0]!r} | {texts[1]!r}")
    return {
        "requests": len({k[:2] for k in keys}),
        "paraphrases_a": len(para[a]),
        "paraphrases_b": len(para[b]),
        "same_paraphrase": len(same_text),
        "aligned_both": len(both),
        "same_aligned_span": len(same_span),
        "same_frame_elements": len(same_fes),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--device", default="", help="the device's name, printed with the figures")
    args = ap.parse_args()
    counts = compare(args.a, args.b)
    where = f" [{args.device}]" if args.device else ""
    print(
        f"{Path(args.a).name} vs {Path(args.b).name}{where}: {counts['requests']} requests; paraphrases "
        f"{counts['paraphrases_a']} vs {counts['paraphrases_b']}, {counts['same_paraphrase']} identical (same "
        f"request, rank and text); of those, {counts['same_aligned_span']} of {counts['aligned_both']} with the "
        f"same aligned span and {counts['same_frame_elements']} with the same frame-element spans"
    )


if __name__ == "__main__":
    main()
