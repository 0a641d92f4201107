#!/usr/bin/env python
"""Decoder-only paraphrasers' constrained beam search: sentences/s at real models' shapes, and the
decoding's share of expanding full FrameNet with them.

Random weights of Gemma 3 270M's shape (vocabulary 262,144, 18 layers, width 640) and Qwen2.5
1.5B's (vocabulary 151,936, 28 layers, width 1,536), the default few-shot prompt (shared by every
sentence: computed once, as the decoder-only backend does), FrameNet dev sentences, beam 20 (the
production config's), each sentence under a constraint set of the size iterations 1, 5 and 10
produce (``bench_gpu.chain_constraints``: simulated chains). The tokenizer is a byte-level BPE in
the family's layout trained on the sentences and the prompt; a real one splits text a little
otherwise, so prompt and output lengths in tokens are near a real run's, not equal. Random
weights never end an output, so each runs to its length limit, set to its source's length in
tokens (``bench_gpu.outputs_as_long_as_sources``): outputs as long as their sources, as a trained
paraphraser's about are. A batch's time includes its inputs and constraint table made on the host.

Prints, per shape: sentences/s and new tokens/s of the engine's beam search (``causal_search``)
unconstrained and under each iteration's constraints, their time against the unconstrained one,
with ``--generate`` the same batches on transformers' ``generate`` under the last iteration's
constraints (the engine's speed-up, measured in one run), and the projection: the decoding of
``--seeds`` seeds x ``--iterations-run`` iterations at the harmonic mean of the iterations'
rates (every chain assumed to continue; the aligner, selection and jobs' fixed costs are
``bench_gpu.py``'s to count).

    PYTHONPATH=src python scripts/bench_causal.py                       # GPU: both shapes, 256 sentences
    PYTHONPATH=src python scripts/bench_causal.py --device cpu --sentences 4 --iterations 1 10 --generate
"""

from __future__ import annotations

import argparse
import random
import time

import torch
from bench_common import framenet_rows, positive
from bench_gpu import chain_constraints, draw_rows, outputs_as_long_as_sources, sync
from gpu_budget import SEEDS, harmonic_mean

from spanaug.core import int8_linear
from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_device, device_name
from spanaug.demo.standins import causal_tokenizer
from spanaug.pipeline.paraphraser.causal_backend import CausalParaphraser
from spanaug.pipeline.paraphraser.prompts import DEFAULT_EXAMPLES

#: The published configurations' shapes (config.json of google/gemma-3-270m, Qwen/Qwen2.5-1.5B-Instruct).
SHAPES = {
    "gemma3-270m": (
        "gemma3",
        {
            "vocab_size": 262_144,
            "hidden_size": 640,
            "intermediate_size": 2048,
            "num_hidden_layers": 18,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 256,
            "sliding_window": 512,
            "query_pre_attn_scalar": 256,
            "max_position_embeddings": 32_768,
        },
    ),
    "qwen2.5-1.5b": (
        "qwen2",
        {
            "vocab_size": 151_936,
            "hidden_size": 1536,
            "intermediate_size": 8960,
            "num_hidden_layers": 28,
            "num_attention_heads": 12,
            "num_key_value_heads": 2,
            "max_position_embeddings": 32_768,
            "tie_word_embeddings": True,
        },
    ),
}


def shaped_paraphraser(
    shape: str, texts: list[str], device: torch.device, dtype: torch.dtype, int8: bool = False
) -> CausalParaphraser:
    """A random model of ``shape`` in ``dtype`` (its linear layers int8 with ``int8``) on ``device``,
    with a tokenizer trained on ``texts``."""
    import transformers as tf

    family, sizes = SHAPES[shape]
    tokenizer = causal_tokenizer(family, texts, vocab_size=8000)
    special = {"eos_token_id": tokenizer.eos_token_id, "bos_token_id": tokenizer.bos_token_id}
    special["pad_token_id"] = tokenizer.pad_token_id
    config_class = tf.Gemma3TextConfig if family == "gemma3" else tf.Qwen2Config
    torch.manual_seed(0)
    with torch.device(device):
        model = tf.AutoModelForCausalLM.from_config(config_class(**sizes, **special), dtype=dtype)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    paraphraser = CausalParaphraser(model.eval(), tokenizer, device, dtype, int8)
    paraphraser.name = f"random {shape}"
    return paraphraser


def requests(rows: list[dict], picked: list[int], sets: list[list[str]] | None) -> list[dict]:
    return [
        {
            "seed_id": f"r{i}",
            "source_text": rows[i]["text"],
            "source_tokens": rows[i]["tokens"],
            "source_span_start": rows[i]["span_start"],
            "source_span_end": rows[i]["span_end"],
            "constraints": sets[i] if sets is not None else [],
        }
        for i in picked
    ]


def timed(paraphraser: CausalParaphraser, reqs: list[dict], cfg: DecodeSettings, own: bool) -> tuple[float, int]:
    """Seconds to decode ``reqs`` in the backend's batches (inputs made in turn), and new tokens."""
    paraphraser.own_search = own
    batches = paraphraser.batches(reqs, cfg)
    tokens = 0
    sync(paraphraser.device)
    start = time.perf_counter()
    for index, batch in enumerate(batches):
        prepared = paraphraser.prepare([reqs[i] for i in batch], cfg)
        paraphraser.decode(prepared, cfg, index)
        tokens += sum(prepared.limits) * cfg.beam_size
    sync(paraphraser.device)
    paraphraser.own_search = True
    return time.perf_counter() - start, tokens


def bench_shape(args: argparse.Namespace, shape: str, rows: list[dict], device: torch.device) -> None:
    dtype, int8 = CausalParaphraser.torch_dtype(device, args.dtype)
    cfg = DecodeSettings(model=shape, beam_size=args.beams, return_top=3, max_batch_tokens=args.max_batch_tokens)
    prompt_texts = [cfg.instruction, cfg.prompt] + [f"{e.word} {e.sentence} {e.rewrite}\n" for e in DEFAULT_EXAMPLES]
    paraphraser = shaped_paraphraser(shape, [r["text"] for r in rows] + prompt_texts, device, dtype, int8)
    params = int8_linear.parameter_count(paraphraser.model) / 1e6
    picked = draw_rows(random.Random(args.seed), len(rows), args.sentences)
    sets = chain_constraints(rows, args.iterations, args.seed)
    what = "int8" if int8 else dtype
    print(f"\n== {shape}: random weights, {params:.0f}M parameters, {what}, beam {args.beams}, {len(picked)} sentences")
    # Warm-up, unconstrained and constrained: the prompt's head, the kernels of both paths.
    timed(paraphraser, requests(rows, picked[:2], None), cfg, True)
    timed(paraphraser, requests(rows, picked[:2], sets[args.iterations[-1]]), cfg, True)
    free_s, free_tokens = timed(paraphraser, requests(rows, picked, None), cfg, True)
    print(f"unconstrained: {len(picked) / free_s:.2f} sentences/s, {free_tokens / free_s:,.0f} new tokens/s")
    rates = []
    last = None
    for it in args.iterations:
        reqs = requests(rows, picked, sets[it])
        banned = sum(len(paraphraser.phrase_bans(r["constraints"])) for r in reqs) / len(reqs)
        seconds, tokens = timed(paraphraser, reqs, cfg, True)
        rates.append(len(picked) / seconds)
        last = (reqs, seconds)
        print(
            f"iteration {it} ({banned:.0f} banned sequences a sentence): {len(picked) / seconds:.2f} sentences/s, "
            f"{tokens / seconds:,.0f} new tokens/s, {seconds / free_s:.2f}x the unconstrained time"
        )
    if args.generate and last is not None:
        seconds, _ = timed(paraphraser, last[0], cfg, False)
        print(
            f"iteration {args.iterations[-1]} on generate's beam search: {len(picked) / seconds:.2f} sentences/s "
            f"(the engine {seconds / last[1]:.2f}x as fast)"
        )
    rate = harmonic_mean(rates)
    hours = args.seeds * args.iterations_run / rate / 3600
    print(
        f"projection: {args.seeds:,} seeds x {args.iterations_run} iterations at {rate:.2f} sentences/s "
        f"(harmonic mean of iterations {', '.join(map(str, args.iterations))}): {hours:,.1f} device-hours of decoding"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto")
    ap.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16", "int8"],
        help="the model's dtype (auto: bf16 on GPUs, float32 on CPU; int8: CPU only)",
    )
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), help="default: both on GPUs, Gemma's on CPU")
    ap.add_argument("--sentences", type=positive, help="sentences decoded per method (default: 256 GPU, 4 CPU)")
    ap.add_argument("--beams", type=positive, default=20)
    ap.add_argument("--iterations", type=positive, nargs="+", default=[1, 5, 10])
    ap.add_argument("--max-batch-tokens", type=positive, help="decoder batch budget (default: the backend's own)")
    ap.add_argument("--max-tokens", type=positive, help="new tokens a sentence at most (default: none GPU, 40 CPU)")
    ap.add_argument("--generate", action="store_true", help="also time generate's beam search, last iteration")
    ap.add_argument("--seeds", type=positive, default=SEEDS, help=f"seeds projected (default {SEEDS:,})")
    ap.add_argument("--iterations-run", type=positive, default=10, help="iterations projected")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=positive, default=2, help="CPU threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = choose_device(args.device)
    gpu = device.type == "cuda"
    args.sentences = args.sentences or (256 if gpu else 4)
    shapes = args.shapes or (sorted(SHAPES) if gpu else ["gemma3-270m"])
    print(f"device: {device_name(device)}")
    rows = framenet_rows()
    with outputs_as_long_as_sources(args.max_tokens or (None if gpu else 40)):
        for shape in shapes:
            bench_shape(args, shape, rows, device)
            if gpu:
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
