"""A decoder-only paraphraser on unseen FrameNet sentences: the figures issue 50 asks of it.

Reads FrameNet 1.7 dev (open-SESAME CoNLL, ../shared/data) through the project's importer, makes
iteration 1's requests (the seed's trigger and its forms banned, as the pipeline does), and
paraphrases them with the paraphrase stage's decoder-only backend. Prints, for the quality run (the
first ``--beams``): the share of requests with an output, the share of top outputs that are not
copies of their source, banned forms found in any output (must be 0), the top outputs' mean MiniLM
cosine to their sources, the stats the stage counts (chatter refused, ...), and examples; then
sentences/s at every ``--beams`` (with ``--generate``, the same sentences on ``generate``'s beam
search too, the engine's ratio to it measured in one run; with ``--baseline``, with the prompt given
whole to ``generate``, as a user would first run it). CPU-seconds are process time (all threads).

    PYTHONPATH=src python scripts/lm_check.py --n 25 --beams 5 20 --speed-n 8
    PYTHONPATH=src python scripts/lm_check.py --dtypes float32 bfloat16   # the same sentences in each dtype
    PYTHONPATH=src python scripts/lm_check.py --pipeline results/gemma-paraphrase/iterations   # a run's outputs
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import logging
import re
import time
from pathlib import Path

import torch

from spanaug.core.config import ConstraintSettings, DecodeSettings
from spanaug.pipeline.constraints import requests_from_chain, violations
from spanaug.pipeline.importers.conll import read_conll
from spanaug.pipeline.iterations import seed_rows
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.stage import load_paraphraser

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fn1.7.dev.syntaxnet.conll"


def requests(path: Path, n: int, stride: int, max_tokens: int) -> list[dict]:
    """``n`` iteration-1 requests of distinct sentences, every ``stride``-th annotation."""
    seen: set[str] = set()
    picked = []
    for row in itertools.islice(read_conll(path, max_tokens=max_tokens), 0, None, stride):
        if row["text"] not in seen:
            seen.add(row["text"])
            picked.append(row)
        if len(picked) == n:
            break
    return list(requests_from_chain(seed_rows(picked), 1, ConstraintSettings()))


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def run(paraphraser, reqs: list[dict], cfg: DecodeSettings) -> tuple[list[dict], DecodeStats, float, float]:
    stats = DecodeStats()
    wall, cpu = time.perf_counter(), time.process_time()
    rows = list(paraphrase(paraphraser, reqs, cfg, stats, progress=False))
    return rows, stats, time.perf_counter() - wall, time.process_time() - cpu


def cosines(pairs: list[tuple[str, str]]) -> list[float]:
    """MiniLM cosines, as the statistics' meaning check computes them."""
    from spanaug.evaluation.meaning import SentenceEncoder

    return SentenceEncoder("minilm").cosines([p for p, _ in pairs], [s for _, s in pairs])


def quality(reqs: list[dict], rows: list[dict], what: str, examples: int) -> None:
    """The issue's figures of ``rows`` (PARAPHRASES rows) against their ``reqs``: outputs, copies,
    banned forms, MiniLM cosine, length, and examples."""
    top = {r["seed_id"]: r for r in rows if r["beam_rank"] == 0}
    copies = sum(norm(r["paraphrase_text"]) == norm(r["source_text"]) for r in top.values())
    banned = [(r["seed_id"], v) for r in rows for v in violations(r["paraphrase_text"], r["constraints"])]
    cos = cosines([(r["paraphrase_text"], r["source_text"]) for r in top.values()])
    print(f"\n== quality: {len(reqs)} requests, {what}")
    print(f"requests with an output:        {len(top) / len(reqs):.1%} ({len(top)}/{len(reqs)})")
    print(f"top outputs not copies:         {1 - copies / max(len(top), 1):.1%} ({len(top) - copies}/{len(top)})")
    print(f"banned forms found in outputs:  {len(banned)} {banned[:5]}")
    print(f"mean MiniLM cosine top/source:  {sum(cos) / max(len(cos), 1):.3f} (min {min(cos, default=0):.3f})")
    ratio = [len(r["paraphrase_text"].split()) / len(r["source_tokens"]) for r in top.values()]
    print(f"mean words top/source:          {sum(ratio) / max(len(ratio), 1):.2f} (a deleted trigger shortens)")
    print("\nexamples (word | source -> top output, cosine):")
    for r, c in list(zip(top.values(), cos))[:examples]:
        word = " ".join(r["source_tokens"][r["source_span_start"] : r["source_span_end"] + 1])
        print(f"  [{word}] {r['source_text']}\n      -> {r['paraphrase_text']}  ({c:.2f})")


def pipeline_quality(folder: Path, examples: int) -> None:
    """The figures of a pipeline run's first iteration: every ``iter1/shard*.requests.parquet`` of
    ``folder`` (a run's ``iterations/``) and its paraphrases, as the paraphrase rule wrote them."""
    from spanaug.core import artifacts

    reqs, rows = [], []
    for path in sorted((folder / "iter1").glob("shard*.requests.parquet")):
        reqs += artifacts.read_table(path, artifacts.REQUESTS).to_pylist()
        out = path.with_name(path.name.replace(".requests.", ".paraphrases."))
        rows += artifacts.read_table(out, artifacts.PARAPHRASES).to_pylist()
    if not reqs:
        raise SystemExit(f"lm_check: no iter1/shard*.requests.parquet under {folder}")
    quality(reqs, rows, f"iteration 1 of {folder}", examples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gguf:gemma3-270m")
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--n", type=int, default=25, help="sentences of the quality run")
    ap.add_argument("--stride", type=int, default=37, help="take every STRIDE-th annotation of the file")
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--beams", type=int, nargs="+", default=[5, 20])
    ap.add_argument("--speed-n", type=int, default=8, help="sentences timed at the other beam sizes")
    ap.add_argument("--baseline", action="store_true", help="also time the prompt given whole to generate")
    ap.add_argument(
        "--generate",
        action="store_true",
        help="also time generate's beam search (the prompt cache shared) at every beam size, against the engine's",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-batch-tokens", type=int, help="paraphraser.max_batch_tokens (default: the backend's)")
    ap.add_argument("--examples", type=int, default=8)
    ap.add_argument("--instruction", default=None)
    ap.add_argument("--few-shot", default=None)
    ap.add_argument(
        "--dtypes",
        nargs="+",
        default=["float32"],
        choices=["float32", "bfloat16", "int8"],
        help="run everything once per dtype, in one process (bf16 on a CPU with AVX512-BF16 or AMX: the "
        "output projection's matmul runs natively; int8: dynamic int8 matrix products); later dtypes' top outputs "
        "are compared with the first's",
    )
    ap.add_argument(
        "--pipeline",
        type=Path,
        help="no decoding: the figures of a run's iteration 1 (its iterations/ folder, e.g. results/gemma/iterations)",
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in ("transformers", "sentence_transformers", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    torch.set_num_threads(args.threads)
    if args.pipeline:
        pipeline_quality(args.pipeline, args.examples)
        return

    reqs = requests(args.data, args.n, args.stride, args.max_tokens)
    first: dict[str, str] | None = None
    for dtype in args.dtypes:
        print(f"\n=== dtype {dtype} ===")
        top = check(args, reqs, dtype)
        if first is None:
            first = top
        else:
            same = sum(top.get(k) == v for k, v in first.items())
            print(f"top outputs equal to {args.dtypes[0]}'s: {same} of {len(first)}")


def check(args: argparse.Namespace, reqs: list[dict], dtype: str) -> dict[str, str]:
    """The quality run and the timings with ``dtype``; each request's top output."""
    base = DecodeSettings(model=args.model, beam_size=args.beams[0], return_top=3, backend="auto", dtype=dtype)
    if args.instruction is not None:
        base = dataclasses.replace(base, instruction=args.instruction)
    if args.few_shot is not None:
        base = dataclasses.replace(base, few_shot=args.few_shot)
    if args.max_batch_tokens is not None:
        base = dataclasses.replace(base, max_batch_tokens=args.max_batch_tokens)
    t = time.perf_counter()
    paraphraser = load_paraphraser(base, "cpu")
    print(f"loaded {args.model} in {time.perf_counter() - t:.1f} s")

    rows, stats, wall, cpu = run(paraphraser, reqs, base)
    quality(reqs, rows, f"beam {base.beam_size}, top 3 kept", args.examples)
    print(f"stats: {dataclasses.asdict(stats)}")
    print(
        f"beam {base.beam_size}: {len(reqs) / wall:.3f} sentences/s, {wall / len(reqs):.2f} s and "
        f"{cpu / len(reqs):.2f} CPU-s a sentence"
    )

    timed = reqs[: args.speed_n]
    for beams in args.beams[1:]:
        cfg = dataclasses.replace(base, beam_size=beams)
        _, _, wall, cpu = run(paraphraser, timed, cfg)
        print(
            f"beam {beams}: {len(timed) / wall:.3f} sentences/s, {wall / len(timed):.2f} s and "
            f"{cpu / len(timed):.2f} CPU-s a sentence ({len(timed)} sentences)"
        )
    if args.generate:  # the same sentences on generate's beam search, in this process: a ratio
        for beams in args.beams:
            cfg = dataclasses.replace(base, beam_size=beams)
            own, _, own_wall, _ = run(paraphraser, timed, cfg)
            paraphraser.own_search = False
            gen, _, wall, cpu = run(paraphraser, timed, cfg)
            paraphraser.own_search = True
            same = sum(a["paraphrase_text"] == b["paraphrase_text"] for a, b in zip(tops(own), tops(gen)))
            print(
                f"beam {beams}, generate's search: {wall / len(timed):.2f} s and {cpu / len(timed):.2f} CPU-s "
                f"a sentence; the engine's {own_wall / len(timed):.2f} s ({wall / own_wall:.2f}x); "
                f"top outputs the same: {same} of {len(timed)}"
            )
    if args.baseline:  # at the first beam size: generate given the whole prompt, its own cache
        paraphraser.own_search, paraphraser.share_prompt = False, False
        _, _, wall, cpu = run(paraphraser, timed, base)
        paraphraser.own_search, paraphraser.share_prompt = True, True
        print(
            f"beam {base.beam_size}, the whole prompt given to generate (baseline): {len(timed) / wall:.3f} "
            f"sentences/s, {wall / len(timed):.2f} s and {cpu / len(timed):.2f} CPU-s a sentence"
        )
    return {r["seed_id"]: r["paraphrase_text"] for r in tops(rows)}


def tops(rows: list[dict]) -> list[dict]:
    """Each request's top output, in order."""
    return [r for r in rows if r["beam_rank"] == 0]


if __name__ == "__main__":
    main()
