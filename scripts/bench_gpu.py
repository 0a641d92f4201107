#!/usr/bin/env python
"""Constrained decoding and alignment throughput, and the run's GPU budget: the expansion of full
FrameNet and every other GPU rule of config/config.yaml. This module measures; the arithmetic that
turns its rates into hours is scripts/gpu_budget.py's.

On a GPU: a T5-base-sized paraphraser (random weights, vocabulary 32,128), beam 20, FrameNet dev
sentences, each under a constraint set of the size iterations 1, 5 and 10 produce; sentences/s
of transformers' generate (the hf backend, unconstrained and under iteration 10's constraints;
``--reference`` adds the host-side processor) and of the static backend (the engine backend auto
runs on CUDA; unconstrained and under each iteration's constraints), how many top-3 outputs the
two share, the aligners' pairs/s (random weights), an encoder's training rates; and the run's
GPU-hours. Without a GPU it runs a CPU-sized version of the same (a smaller T5 with the same
vocabulary, fewer sentences) and prints the same lines; ``--quick`` makes that a few minutes.

Constraint sets are measured, not assumed: ``constraints.expand`` on the FrameNet dev triggers
(/work/shared/data/fn1.7.dev.syntaxnet.conll, or ../shared/data beside the repository), accumulated
over simulated chains (iteration i carries the union of i triggers' forms: the seed's own, then
triggers of other sentences of the same frame as stand-ins for the aligned rewrites).

Output lengths: random weights never choose EOS, so every beam runs to its length limit; the limit
is set to each sentence's own source length in tokenizer ids, since a trained paraphraser's outputs
are about as long as their sources (on CPU, also at most 40 tokens, to finish in minutes). Beam
search runs one step per output token, so the stage's rate is counted in new tokens/s and the
projection decodes each seed's own length: the sum of the outputs' lengths, over the dev seeds'
distribution (the exemplars assumed as long). A constrained batch's time includes the host's share
of it, in turn: its phrases tokenized (each round with a fresh memo) and the processor's table
built. Each backend decodes batches of its own budget, each method interleaved over ``--repeats``
rounds; the median round counts. Then the whole paraphrase loop (inputs, decoding, detokenizing,
output checks, scoring) is timed as a GPU job runs it, on one of a job's chunks
(``--stage-sentences``, 4,096), with the host's work overlapped with the decoding: unconstrained and
under each iteration's constraints (and iteration 10's with the host's work in turn; on GPUs also at
other switch intervals, and with the worker never paused while a step's kernels are launched one by
one). The projection's decode rate is that stage's over the iterations: the harmonic mean, since
each iteration decodes as many tokens and their times add.

The expansion counts what production runs: the configured aligner kind (``aligner.kind`` of
config/config.yaml, cross; ``--aligner-kind``), timed in the device's dtype through its ``predict``
(the cross kind with a MiniLM-sized and a BERT-base-sized random encoder; the configured encoder's
size is projected), and for the cross kind one encoder pass per (pair, span), so every aligned beam
costs the trigger plus the frame elements the align stage places (overt and not the trigger: the
mean per annotated FN1.7 dev sentence, measured here). ``--decode-tokens-per-s`` projects with a
decode rate measured elsewhere (a new decoding backend's) and skips the decoding benchmark. Every
job pays a fixed cost (processes, models, checks) whatever its shard's size, so the projection adds
it per job (``scripts/bench_jobs.py`` measures it on a one-sentence shard with the job's Snakemake
start-ups, or ``--job-seconds`` gives it): with ``--shard-jobs chain`` (config/config.yaml's
``shard_jobs``) one job a shard, ``spanaug iterate`` over every iteration, whose constraint
expansion and selection (timed here) also hold its GPU; with ``iteration``, ``n_shards`` x 10 jobs
of two commands (paraphrase, align). It prints the expansion for 4 to 64 shards beside it.

The other GPU rules (those of workflow/rules/*.smk with GPU resources, their jobs from the run's
plan): aligner training and pre-training, the aligner evaluations, the Frame ID and argument-ID
points. Each is estimated from its work under the config's settings (instances, epochs, fractions x
seeds x augmenters) and an encoder's rates timed here: a few training steps of a random encoder of
the configured size, scaled to the configured epochs. The seed count is printed with its source.

    .venv/bin/python scripts/bench_gpu.py                 # GPU when present, else the CPU-sized run
    .venv/bin/python scripts/bench_gpu.py --device cpu --quick   # the whole budget in a few minutes
    .venv/bin/python scripts/bench_gpu.py --decode-tokens-per-s 9000   # skip the decoding benchmark
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import logging
import math
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import torch
from bench_common import ENCODER_SHAPES, PRODUCTION_CONFIG, encoder_size, framenet_rows, positive, production_config
from gpu_budget import (
    ALIGNED_BEAMS,
    FULLTEXT_ANNOTATIONS,
    SEEDS,
    SEEDS_SOURCE,
    ExpansionHours,
    RuleHours,
    TrainingRates,
    encoder_inputs_per_request,
    gpu_rules,
    harmonic_mean,
    hours_by_shards,
    planned_jobs,
    project_hours,
    rule_hours,
    run_hours,
    uncosted,
    with_jobs,
)

from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_dtype, device_name
from spanaug.core.heap import long_lived_objects_frozen
from spanaug.demo.standins import T5_BASE, T5_CPU, Size, bert_tokenizer, build_model, train_tokenizer
from spanaug.pipeline.constraints import expand, lu_upos
from spanaug.pipeline.frame_elements import has_span, to_place
from spanaug.pipeline.paraphraser import decode_loop, search_spec, step_runner
from spanaug.pipeline.paraphraser.banned import PhraseBans, banned_sequences
from spanaug.pipeline.paraphraser.batching import default_max_batch_tokens, token_budget_batches
from spanaug.pipeline.paraphraser.decode_loop import paraphrase_chunks
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE
from spanaug.pipeline.paraphraser.processors import (
    PerSentenceMaxNewTokens,
    ReferenceBannedSequences,
    SequenceTable,
    TensorBannedSequences,
)
from spanaug.pipeline.paraphraser.rust_tokenizer import decode_texts
from spanaug.pipeline.paraphraser.stage import CHUNK_ROWS
from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser

REPO = Path(__file__).resolve().parents[1]
#: The iterations the production config runs (config/config.yaml's ``iterations``).
ITERATIONS = production_config().iterations


def chain_constraints(rows: list[dict], iterations: list[int], seed: int = 0) -> dict[int, list[list[str]]]:
    """Per seed row, the constraint phrases of each iteration in ``iterations`` (simulated chains)."""
    rng = random.Random(seed)
    forms = [sorted(expand(r["tokens"][r["span_start"] : r["span_end"] + 1], lu_upos(r["lexical_unit"]))) for r in rows]
    by_frame = defaultdict(list)
    for i, r in enumerate(rows):
        by_frame[r["frame"]].append(i)
    out: dict[int, list[list[str]]] = {it: [] for it in iterations}
    for i, r in enumerate(rows):
        pool = [j for j in by_frame[r["frame"]] if j != i]
        others = rng.sample(pool, min(len(pool), max(iterations) - 1))
        while len(others) < max(iterations) - 1:  # small frames: triggers of any frame
            others.append(rng.randrange(len(rows)))
        chain = [i, *others]
        for it in iterations:
            out[it].append(sorted(set().union(*(forms[j] for j in chain[:it]))))
    return out


def draw_rows(rng: random.Random, population: int, n: int) -> list[int]:
    """``n`` row indices out of ``population``, without repeats while they last: past that, the rows
    again in a new order (the dev file's 2,257 rows are fewer than a production job's calls of 4,096
    sentences, or the 4,096 pairs the H100 run aligns). For ``n <= population``, ``rng.sample``'s draw."""
    picked: list[int] = []
    while len(picked) < n:
        picked += rng.sample(range(population), min(population, n - len(picked)))
    return picked


def describe(values: list[int]) -> str:
    values = sorted(values)
    return (
        f"mean {statistics.mean(values):.1f}, median {statistics.median(values):.0f}, "
        f"p90 {values[int(0.9 * (len(values) - 1))]}, max {values[-1]}"
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


@torch.inference_mode()
def decode_hf(para: HFParaphraser, batch: list[dict], limits: list[int], cfg: DecodeSettings, processor):
    """transformers' generate as the hf backend runs it; the top beams' token ids ``[B * beams, T]``."""
    enc = para.encode([r["source_text"] for r in batch], "")
    kwargs = para.search_spec(cfg).generate_kwargs()
    stop = [PerSentenceMaxNewTokens(limits, device=para.device)]
    procs = []
    if processor is not None:
        banned = [para.phrase_bans(r["constraints"]) for r in batch]
        proc = processor(banned, para.model.config.vocab_size, para.device)
        if hasattr(proc, "renormalize"):
            proc.renormalize = True  # as the paraphrase stage runs it in beam search
        procs = [proc]
    return para.model.generate(
        **enc, **kwargs, max_new_tokens=max(limits), logits_processor=procs, stopping_criteria=stop
    )


@torch.inference_mode()
def decode_static(engine: StaticParaphraser, batch: list[dict], limits: list[int], cfg: DecodeSettings, processor):
    """The static backend's beam search on the same inputs; token ids ``[B * beams, T]``."""
    enc = engine.encode([r["source_text"] for r in batch], "")
    banned = [engine.phrase_bans(r["constraints"]) for r in batch] if processor else None
    tokens, _ = engine.search(enc, limits, banned, cfg)
    return tokens.view(-1, tokens.shape[-1])


def bench_decoding(
    para: HFParaphraser,
    engine: StaticParaphraser,
    rows: list[dict],
    sets: dict[int, list[list[str]]],
    n_sentences: int,
    budgets: dict[str, int],
    repeats: int,
    rng: random.Random,
    max_new: int | None,
    reference: bool,
    hf: bool = True,
) -> dict:
    """Seconds per method (hf: generate, static: the engine; unconstrained or under iteration i's
    constraints), each backend on its own batches (``budgets``: "hf" and "static"), interleaved over
    ``repeats`` rounds; and how many of the sentences' top-3 outputs the two backends share under
    iteration 10's constraints."""
    cfg = DecodeSettings(beam_size=20, return_top=3)
    picked = draw_rows(rng, len(rows), n_sentences)
    texts = [rows[i]["text"] for i in picked]
    lengths = para.source_lengths(texts)
    limits = [min(n, max_new) if max_new else n for n in lengths]
    batching = {name: token_budget_batches(lengths, cfg.width, budget) for name, budget in budgets.items()}
    twice = token_budget_batches(lengths, cfg.width, 2 * budgets["static"])
    print(
        f"decoding: {n_sentences} FrameNet dev sentences (source ids: {describe(lengths)}; new tokens: "
        f"{describe(limits)}), beam 20; "
        + "; ".join(
            f"{name}: {len(batching[name])} batches under a budget of {budget:,} tokens x beams"
            for name, budget in budgets.items()
        )
    )
    last = max(sets)
    methods = [("hf unconstrained", None, None), (f"hf iter {last}", last, TensorBannedSequences)] if hf else []
    if reference and hf:
        methods += [(f"hf iter {last} reference", last, ReferenceBannedSequences)]
    methods += [("static unconstrained", None, None)] + [
        (f"static iter {it}", it, TensorBannedSequences) for it in sorted(sets)
    ]
    if para.device.type == "cuda":  # what the CUDA graphs and the ancestry kernel are worth
        methods += [(f"static iter {last} (no CUDA graphs)", last, TensorBannedSequences)]
        if engine.uses_ancestry(cfg):
            methods += [(f"static iter {last} (cache reordered)", last, TensorBannedSequences)]
        # cross-attention with torch's fused kernel (one a layer) instead of two products and a softmax
        methods += [(f"static iter {last} (sdpa attention)", last, TensorBannedSequences)]
        # what selecting by chunks of the vocabulary and the engine's own memory estimate are worth
        methods += [(f"static iter {last} (one torch.topk)", last, TensorBannedSequences)]
        methods += [(f"static iter {last} (generate's batches)", last, TensorBannedSequences)]
        # sentences leave the batch later: fewer graph captures, more rows of finished sentences
        methods += [(f"static iter {last} (leave at 1/4 done)", last, TensorBannedSequences)]
        # whether batches past the memory estimate's would still decode faster
        methods += [(f"static iter {last} (twice the budget)", last, TensorBannedSequences)]
    times: dict[str, list[float]] = defaultdict(list)
    outputs: dict[str, list] = {}
    shrink_share = step_runner.GRAPH_SHRINK_SHARE

    def run(name, it, processor, warm=False):
        backend, fn = (engine, decode_static) if name.startswith("static") else (para, decode_hf)
        # Each round tokenizes its constraint phrases afresh, as a job meets each phrase once: the
        # timed time includes what the host spends on them between batches.
        backend.phrase_bans.clear()
        total, out = 0.0, []
        if "twice the budget" in name:
            batches = twice
        else:
            batches = batching["static" if name.startswith("static") and "generate's batches" not in name else "hf"]
        for b in batches[:1] if warm else batches:
            reqs = [{"source_text": texts[j], "constraints": sets[it][picked[j]] if it else []} for j in b]
            sync(para.device)
            start = time.perf_counter()
            c = dataclasses.replace(cfg, cuda_graphs=False) if "no CUDA graphs" in name else cfg
            engine.ancestry = False if "cache reordered" in name else None
            engine.step.attention = "sdpa" if "sdpa attention" in name else "matmul"
            engine.topk_chunk = 0 if "one torch.topk" in name else None
            step_runner.GRAPH_SHRINK_SHARE = 0.25 if "leave at 1/4" in name else shrink_share
            ids = fn(backend, reqs, [limits[j] for j in b], c, processor)
            sync(para.device)
            total += time.perf_counter() - start
            out.append(ids.view(len(b), cfg.beam_size, -1)[:, : cfg.return_top].cpu())
        outputs[name] = [o for _, o in sorted(zip((j for b in batches for j in b), (s for o in out for s in o)))]
        return total

    for name, it, proc in methods:  # warm-up: kernels, allocator, the engine's one check against the model
        run(name, it, proc, warm=True)
    for r in range(repeats):
        order = methods if r % 2 == 0 else methods[::-1]
        for name, it, proc in order:
            times[name].append(run(name, it, proc))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    same = _same_top(para.tokenizer, outputs[f"hf iter {last}"], outputs[f"static iter {last}"]) if hf else None
    one_topk = f"static iter {last} (one torch.topk)"
    if one_topk in outputs:  # selecting by chunks changes no values; ties may be ordered otherwise
        chunked = outputs[f"static iter {last}"]
        same_sentences, same_outputs, total = _same_top(para.tokenizer, outputs[one_topk], chunked)
        print(
            f"static outputs selected by chunks and by one torch.topk, iteration {last} ({para.dtype}): top-3 "
            f"identical for {same_sentences} of {n_sentences} sentences; {same_outputs} of {total} outputs"
        )
    widest = max(batching["static"], key=len)
    for it in sorted(sets):
        proc = TensorBannedSequences(
            [banned_sequences(para.tokenizer, sets[it][picked[j]]) for j in widest], para.model.config.vocab_size, "cpu"
        )
        rows_ = len(widest) * cfg.width
        print(
            f"  iter {it}: processor K = {proc.width} banned-token slots per row, {proc.comparisons_per_row()} "
            f"prefix-token comparisons per row; largest batch {rows_} rows"
        )
    return {"n": n_sentences, "median": med, "times": times, "same_top": same}


def bench_stage(
    engine: StaticParaphraser,
    rows: list[dict],
    sets: dict[int, list[list[str]]],
    n_sentences: int,
    budget: int | None,
    repeats: int,
    rng: random.Random,
    max_new: int | None,
) -> tuple[dict[str, float], float]:
    """Sentences/s of the whole paraphrase loop (``paraphrase_chunks``, in the stage's chunks of
    CHUNK_ROWS: inputs, decoding, detokenizing, the output checks and the scoring pass) as GPUs run
    it, the batches' host work overlapped with the decoding, without constraints and under each
    iteration's; and under the last iteration's with the host's work in turn. Methods interleaved,
    median of ``repeats`` rounds after one warm-up round on the first 128 sentences. ``budget``
    None: the engine's own batches. Each sentence decodes as many new tokens as its own source has
    ids (at most ``max_new``): random weights never end a beam, and a trained paraphraser's outputs
    are about as long as their sources (:func:`outputs_as_long_as_sources`). The objects alive before
    the rounds are frozen, as in the stage (core.heap), but in the round "heap not frozen"; each
    method's full garbage collections are counted. Returns the rates and the mean new tokens a sentence."""
    picked = draw_rows(rng, len(rows), n_sentences)
    last = max(sets)
    methods = [("unconstrained", None, True)] + [(f"iter {it}", it, True) for it in sorted(sets)]
    methods += [(f"iter {last}, host work in turn", last, False)]
    if engine.device.type == "cuda":  # what the short switch interval is worth, and a longer one
        methods += [(f"iter {last}, Python's switch interval", last, True)]
        methods += [(f"iter {last}, switch interval 0.1 ms", last, True)]
        methods += [(f"iter {last}, worker never paused", last, True)]
        methods += [(f"iter {last}, heap not frozen", last, True)]
    interval = decode_loop.HOST_SWITCH_INTERVAL

    def requests(it: int | None, n: int = n_sentences) -> list[dict]:
        return [
            {
                "seed_id": str(i),
                "source_text": rows[i]["text"],
                "source_tokens": rows[i]["tokens"],
                "constraints": sets[it][i] if it else [],
            }
            for i in picked[:n]
        ]

    lengths = engine.source_lengths([rows[i]["text"] for i in picked])
    new_tokens = [min(n, max_new or n) for n in lengths]
    cfg = DecodeSettings(beam_size=20, return_top=3, max_batch_tokens=budget)
    batches = len(engine.batches(requests(None), cfg))
    times: dict[str, list[float]] = defaultdict(list)
    pauses: dict[str, list[tuple[int, float]]] = defaultdict(list)
    collections = FullCollections()
    with long_lived_objects_frozen(), collections, outputs_as_long_as_sources(max_new):  # as the stage decodes
        for r in range(repeats + 1):  # the first round warms up
            for name, it, overlap in methods if r % 2 == 0 else methods[::-1]:
                engine.overlap_host = overlap
                decode_loop.HOST_SWITCH_INTERVAL = (
                    sys.getswitchinterval() if "Python's" in name else 1e-4 if "0.1 ms" in name else interval
                )
                WORKER_GATE.enabled = "never paused" not in name
                for tools in (engine.host_tools, engine.worker_tools):  # made once, before any timing
                    if tools is not None:
                        tools.phrase_bans.clear()  # a fresh memo, as a job starts
                reqs = requests(it, n_sentences if r else 128)
                sync(engine.device)
                collections.reset()
                if "not frozen" in name:
                    gc.unfreeze()
                start = time.perf_counter()
                chunks = [reqs[first : first + CHUNK_ROWS] for first in range(0, len(reqs), CHUNK_ROWS)]
                out = [row for rows in paraphrase_chunks(engine, chunks, cfg, progress=False) for row in rows]
                sync(engine.device)
                if "not frozen" in name:
                    gc.freeze()
                if r:
                    times[name].append(time.perf_counter() - start)
                    pauses[name].append((collections.count, collections.seconds))
    engine.overlap_host, decode_loop.HOST_SWITCH_INTERVAL, WORKER_GATE.enabled = None, interval, True
    print(
        f"paraphrase stage (static): {n_sentences} sentences in {batches} batches, each decoding its source's "
        f"length in new tokens ({describe(new_tokens)}), {len(out)} outputs under iteration {last}'s constraints"
    )
    for name, seen in pauses.items():
        print(
            f"paraphrase stage, {name:<30} full garbage collections: {max(n for n, _ in seen)} at most in a "
            f"round, {statistics.median(t for _, t in seen) * 1e3:.0f} ms a round (median)"
        )
    rates = {name: n_sentences / statistics.median(ts) for name, ts in times.items()}
    return rates, statistics.mean(new_tokens)


@contextlib.contextmanager
def outputs_as_long_as_sources(cap: int | None) -> Iterator[None]:
    """While the block runs, each sentence may generate as many new tokens as its source has ids (at
    most ``cap``) instead of the stage's ceiling (1.5 x source + 10). Random weights never choose EOS,
    so every beam runs to its limit: this makes each output as long as its source, as a trained
    paraphraser's outputs about are, and the decoding cost follow the sum of the outputs' lengths."""
    real = search_spec.length_limit
    search_spec.length_limit = lambda n, _max_new=None: min(n, cap) if cap else n
    try:
        yield
    finally:
        search_spec.length_limit = real


class FullCollections:
    """Counts the garbage collector's full collections (generation 2) and the time they held the
    GIL, through ``gc.callbacks``, while the block runs."""

    def __init__(self) -> None:
        self.count, self.seconds, self._start = 0, 0.0, 0.0

    def reset(self) -> None:
        self.count, self.seconds = 0, 0.0

    def _record(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._start

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._record)


def _same_top(tokenizer, a: list[torch.Tensor], b: list[torch.Tensor]) -> tuple[int, int, int]:
    """(sentences whose top-3 texts are identical, identical outputs at the same rank, outputs), from
    each sentence's top beams ``[3, T]`` in sentence order."""
    same_sentences = same_outputs = total = 0
    for x, y in zip(a, b):
        tx = tokenizer.batch_decode(x.tolist(), skip_special_tokens=True)
        ty = tokenizer.batch_decode(y.tolist(), skip_special_tokens=True)
        same_sentences += tx == ty
        same_outputs += sum(p == q for p, q in zip(tx, ty))
        total += len(tx)
    return same_sentences, same_outputs, total


def bench_aligner(
    device: torch.device, rows: list[dict], size: str, n_pairs: int, repeats: int, rng: random.Random
) -> float:
    from transformers import BertConfig, BertModel

    from spanaug.core.aligner_settings import AlignerConfig
    from spanaug.pipeline.aligner.model import SpanAligner

    fast = bert_tokenizer([r["text"] for r in rows], vocab_size=8000)
    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=28996, max_position_embeddings=512, **ENCODER_SHAPES[size]))
    aligner = SpanAligner(
        AlignerConfig(encoder="random-bert"), encoder=encoder, tokenizer=fast, device=str(device), dtype="auto"
    )
    aligner.scorer.eval()
    rate = pairs_per_second(aligner, frameset_instances(rows, n_pairs, rng), 64, device, repeats)
    print(
        f"paper aligner: BERT-{size}-sized encoder (random weights, {aligner.dtype}), {n_pairs} FrameNet-length "
        f"pairs, one span each: {rate:.1f} pairs/s  [{device_name(device)}]"
    )
    return rate


def frameset_instances(rows: list[dict], n_pairs: int, rng: random.Random) -> list:
    """``n_pairs`` FrameNet dev sentences, each paired with itself shuffled (a same-length stand-in for a
    paraphrase beam) and its trigger as the span (:func:`draw_rows`: sentences repeat past the file's)."""
    from spanaug.pipeline.aligner.instances import Instance

    picked = draw_rows(rng, len(rows), n_pairs)
    insts = []
    for k, i in enumerate(picked):
        r = rows[i]
        target = list(r["tokens"])
        rng.shuffle(target)
        insts.append(Instance(f"p{k}", list(r["tokens"]), target, (r["span_start"], r["span_end"])))
    return insts


def pairs_per_second(aligner, insts: list, batch_size: int, device: torch.device, repeats: int) -> float:
    """An aligner's ``predict`` over ``insts``: pairs/s, the median of ``repeats`` timed runs after a
    warm-up pass over all of them (each padded length is a new shape for the GPU libraries to
    choose kernels for, and a long run meets them all early: on an H100 a first pass over 4,096 pairs
    ran at 4,600 to 5,300 pairs/s, the second at 7,100 to 7,300)."""
    aligner.predict(insts, batch_size=batch_size)
    ts = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        aligner.predict(insts, batch_size=batch_size)
        sync(device)
        ts.append(time.perf_counter() - start)
    return len(insts) / statistics.median(ts)


def bench_cross_aligner(
    device: torch.device, rows: list[dict], size: str, n_pairs: int, batch_size: int, repeats: int, seed: int
) -> float:
    """Pairs/s of ``CrossAligner.predict`` (one encoder pass per pair and span) with a random encoder of
    ``size``, in the device's dtype, ``batch_size`` pairs per batch (the config's ``aligner.batch_size``)."""
    from transformers import BertConfig, BertModel

    from spanaug.core.aligner_settings import CrossAlignerConfig
    from spanaug.pipeline.aligner.cross_model import CrossAligner

    fast = bert_tokenizer([r["text"] for r in rows], vocab_size=8000)
    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=30522, max_position_embeddings=512, **ENCODER_SHAPES[size]))
    aligner = CrossAligner(
        CrossAlignerConfig(encoder=f"random-{size}"), encoder=encoder, tokenizer=fast, device=device, dtype="auto"
    )
    insts = frameset_instances(rows, n_pairs, random.Random(seed))
    rate = pairs_per_second(aligner, insts, batch_size, device, repeats)
    print(
        f"cross aligner: {size}-sized encoder (random weights, {aligner.dtype}), {n_pairs} FrameNet-length pairs, "
        f"one span each, batches of {batch_size}: {rate:.1f} pairs/s  [{device_name(device)}]"
    )
    return rate


def frame_element_spans(rows: list[dict]) -> tuple[float, float]:
    """Per annotated sentence, the mean number of overt FE spans, and of those the align stage places
    (overt and not the trigger itself: ``frame_elements.to_place``)."""
    overt = [sum(has_span(fe) for fe in r["frame_elements"] or ()) for r in rows]
    placed = [len(to_place(r["frame_elements"], (r["span_start"], r["span_end"]))) for r in rows]
    return statistics.mean(overt), statistics.mean(placed)


def bench_training_rates(
    device: torch.device, rows: list[dict], size: str, batch_sizes: tuple[int, int, int], tune_layers: int, steps: int
) -> TrainingRates:
    """Examples/s of a random BERT encoder of ``size`` (a linear head on its first token) on FrameNet dev
    sentences of their own lengths in wordpieces: a forward pass without gradients, a training step
    (AdamW) through every layer, and one through the top ``tune_layers`` layers on sentence pairs (a
    sentence and a same-length stand-in for its paraphrase, as the cross aligner reads them).
    ``batch_sizes``: the encoding's, the fully tuned and the top-tuned steps'. One warm-up step each,
    then ``steps`` timed; bfloat16 autocast on CUDA."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    shape = ENCODER_SHAPES[size]
    encoder = BertModel(BertConfig(vocab_size=28996, max_position_embeddings=512, **shape)).to(device)
    head = torch.nn.Linear(shape["hidden_size"], 2).to(device)
    tokenizer = bert_tokenizer([r["text"] for r in rows], vocab_size=8000)
    lengths = [len(ids) for ids in tokenizer([r["text"] for r in rows])["input_ids"]]
    rng = random.Random(0)
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else contextlib.nullcontext()

    def batch(n: int, pairs: bool) -> torch.Tensor:
        picked = [lengths[i] for i in draw_rows(rng, len(lengths), n)]
        longest = max(2 * k + 1 if pairs else k for k in picked)  # [CLS] a [SEP] b [SEP]: the pair's ids
        return torch.randint(1000, 28000, (n, min(longest, 512)), device=device)

    def rate(n: int, pairs: bool, step) -> float:
        step(batch(n, pairs))  # warm-up: kernels, the allocator, the optimizer's state
        inputs = [batch(n, pairs) for _ in range(steps)]
        sync(device)
        start = time.perf_counter()
        for ids in inputs:
            step(ids)
        sync(device)
        return n * steps / (time.perf_counter() - start)

    def encode(ids: torch.Tensor) -> None:
        with torch.inference_mode(), amp:
            head(encoder(input_ids=ids).last_hidden_state[:, 0])

    def trainer(params: list[torch.nn.Parameter]):
        opt = torch.optim.AdamW(params, lr=1e-5)

        def step(ids: torch.Tensor) -> None:
            with amp:
                logits = head(encoder(input_ids=ids).last_hidden_state[:, 0]).float()
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(ids), dtype=torch.long, device=device))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        return step

    encode_bs, all_bs, top_bs = batch_sizes
    encoded = rate(encode_bs, False, encode)
    tune_all = rate(all_bs, False, trainer([*encoder.parameters(), *head.parameters()]))
    top = [p for layer in encoder.encoder.layer[-tune_layers:] for p in layer.parameters()] if tune_layers else []
    for p in encoder.parameters():
        p.requires_grad_(False)
    for p in top:
        p.requires_grad_(True)
    tune_top = rate(top_bs, True, trainer([*top, *head.parameters()]))
    print(
        f"training rates: random BERT-{size}-sized encoder on FrameNet dev lengths ({steps} timed steps each): "
        f"{encoded:,.1f} examples/s encoded (batches of {encode_bs}), {tune_all:,.1f} trained with every layer "
        f"tuned (batches of {all_bs}), {tune_top:,.1f} sentence pairs trained with the top {tune_layers} layers "
        f"tuned (batches of {top_bs})  [{device_name(device)}]"
    )
    return TrainingRates(encode=encoded, tune_all=tune_all, tune_top=tune_top)


def prepare_time(engine: StaticParaphraser, rows: list[dict], sets: list[list[str]] | None) -> float:
    """Milliseconds of host time per sentence ``engine.prepare`` takes for two batches of 256 dev
    sentences, each with a fresh phrase memo, as a job's first batch (best of 3)."""
    cfg = DecodeSettings(beam_size=20)
    batches = [
        [{"source_text": rows[i]["text"], "constraints": sets[i] if sets else []} for i in range(first, first + 256)]
        for first in (0, 256)
    ]
    best = math.inf
    for _ in range(3):
        elapsed = 0.0
        for batch in batches:
            engine.host_tools.phrase_bans.clear()
            start = time.perf_counter()
            engine.prepare(batch, cfg)
            elapsed += time.perf_counter() - start
        best = min(best, elapsed)
    return best / 512 * 1e3


def bench_decoders(args: argparse.Namespace, device: torch.device, rows: list[dict], rng: random.Random) -> float:
    """The decoding benchmark: generate (hf) and the static engine, beam 20, without constraints and
    under the constraint sets of iterations 1, 5, 10 (not with ``--quick`` or ``--stage-only``), then
    the whole paraphrase stage on the engine; returns the projection's decode rate: the stage's new
    tokens/s under constraints, host work overlapped (the harmonic mean over the iterations, whose
    times add), what a paraphrase job with backend auto runs on CUDA."""
    gpu = device.type == "cuda"
    iterations = [1, 5, 10]
    sets = chain_constraints(rows, iterations, args.seed)
    texts = [r["text"] for r in rows]
    size: Size = T5_BASE if gpu else T5_CPU
    tokenizer = train_tokenizer("unigram", texts, vocab_size=8000)
    model = build_model("t5", tokenizer, size, seed=args.seed)
    para = HFParaphraser(model, tokenizer, device, choose_dtype(device))
    engine = StaticParaphraser(para.model, tokenizer, device, para.dtype)
    name = device_name(device)
    print(
        f"device: {name}; paraphraser: T5 d_model {size.d_model}, {size.layers}+{size.layers} layers, "
        f"vocabulary {size.vocab_size}, {para.dtype}, random weights"
    )
    for it in iterations:
        phrases = [len(s) for s in sets[it]]
        bans = PhraseBans(tokenizer)  # a fresh memo, as a job starts
        start = time.perf_counter()
        banned = []
        for first in range(0, 512, 256):  # as a batch's preparation asks: its phrases at once, then each sentence's
            bans.learn(phrase for phrases in sets[it][first : first + 256] for phrase in phrases)
            banned += [bans(phrases) for phrases in sets[it][first : first + 256]]
        tokenize_ms = (time.perf_counter() - start) / len(banned) * 1e3
        start = time.perf_counter()
        SequenceTable.of(banned)
        table_ms = (time.perf_counter() - start) / len(banned) * 1e3
        print(
            f"constraint sets, iteration {it}: phrases per sentence {describe(phrases)}; "
            f"banned token sequences per sentence (first 512) {describe([len(b) for b in banned])}; host time "
            f"per sentence: {tokenize_ms:.2f} ms to tokenize them (a job's fresh memo), "
            f"{table_ms:.2f} ms for the processor's table"
        )
    prepare_ms = {it: prepare_time(engine, rows, sets.get(it)) for it in [None, *iterations]}
    print(
        "host time per sentence to prepare a batch of 256 (sources, phrases with a fresh memo, the table), "
        "what nothing overlaps in a job's first batch: "
        + ", ".join(
            f"{'unconstrained' if it is None else f'iteration {it}'} {ms:.3f} ms" for it, ms in prepare_ms.items()
        )
    )
    beams = [ids for ids in tokenizer([r["text"] for r in rows[:256]])["input_ids"] for _ in range(20)]
    start = time.perf_counter()
    tokenizer.batch_decode(beams, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    row_by_row = (time.perf_counter() - start) / 256 * 1e3
    start = time.perf_counter()
    decode_texts(tokenizer, beams)
    at_once = (time.perf_counter() - start) / 256 * 1e3
    print(
        f"host time to detokenize 20 beams a sentence: {at_once:.2f} ms per sentence in one backend call "
        f"(batch_decode, row by row: {row_by_row:.2f} ms)"
    )
    n = args.sentences or (256 if gpu else 6)
    budgets = {
        "hf": args.max_batch_tokens or default_max_batch_tokens(device, model.config, para.dtype),
        "static": args.max_batch_tokens
        or default_max_batch_tokens(
            device, model.config, para.dtype, engine.rows_sharing_cross_state(DecodeSettings(beam_size=20))
        ),
    }
    max_new = args.max_new_tokens or (None if gpu else 40)
    if args.stage_only or args.quick:
        draw_rows(rng, len(rows), n)  # the decoder rows' draw: the stage gets the sentences it gets after them
    else:
        res = bench_decoding(
            para, engine, rows, sets, n, budgets, args.repeats, rng, max_new, args.reference, not args.no_hf
        )
    # On GPUs, one of a production job's chunks: a job's first batch, whose preparation nothing
    # overlaps, is a smaller share of it than of a shorter run, and its rounds move less from run to run.
    n_stage = args.stage_sentences or (CHUNK_ROWS if gpu else n)
    stage, new_tokens = bench_stage(engine, rows, sets, n_stage, args.max_batch_tokens, args.repeats, rng, max_new)
    for name_, rate in stage.items():
        print(f"paraphrase stage, {name_:<30} {rate:8.2f} sentences/s, {rate * new_tokens:9.1f} new tokens/s  [{name}]")
    for it in iterations:
        print(
            f"paraphrase stage, iteration {it:>2}: constrained/unconstrained time "
            f"{stage['unconstrained'] / stage[f'iter {it}']:.2f}  [{name}]"
        )
    # What production runs: the whole stage, overlapped, over the iterations' constraint sets.
    tokens_per_s = harmonic_mean(stage[f"iter {it}"] for it in iterations) * new_tokens
    if args.stage_only or args.quick:
        return tokens_per_s
    med = res["median"]
    for name_, t in med.items():
        print(f"{name_:<24} {n / t:8.2f} sentences/s   ({t:.2f} s, median of {args.repeats})  [{name}]")
    last = max(iterations)
    ratios = {it: med[f"static iter {it}"] / med["static unconstrained"] for it in iterations}
    for it in iterations:
        print(f"iteration {it:>2}: static constrained/unconstrained time {ratios[it]:.2f}  [{name}]")
    hf = "hf unconstrained" in med
    print(
        f"constrained/unconstrained time: {max(ratios.values()):.2f} (static, worst of iterations "
        f"{', '.join(map(str, iterations))})"
        + (f"; hf at iteration {last}: {med[f'hf iter {last}'] / med['hf unconstrained']:.2f}" if hf else "")
        + f"  [{name}]"
    )
    print(
        (
            f"static/hf speed at iteration {last}: {med[f'hf iter {last}'] / med[f'static iter {last}']:.2f}x; "
            if hf
            else ""
        )
        + f"static at iteration {last}: {n / med[f'static iter {last}']:.1f} sentences/s  [{name}]"
    )
    if res["same_top"] is not None:
        same_sentences, same_outputs, total = res["same_top"]
        print(
            f"hf and static outputs under iteration {last}'s constraints ({para.dtype}): top-3 identical for "
            f"{same_sentences} of {n} sentences; {same_outputs} of {total} outputs identical at the same rank  [{name}]"
        )
    del para, model, engine
    if gpu:
        torch.cuda.empty_cache()
    return tokens_per_s


def _number(text: str) -> float:
    """``text`` as a float, nan when it is none (which every range check below refuses)."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def positive_rate(text: str) -> float:
    """A rate option: a finite number above 0."""
    value = _number(text)
    if not (0 < value < math.inf):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number above 0")
    return value


def non_negative_seconds(text: str) -> float:
    """A duration option: a finite number of seconds, 0 or more."""
    value = _number(text)
    if not (0 <= value < math.inf):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds, 0 or more")
    return value


def non_negative(text: str) -> float:
    """A finite number, 0 or more."""
    value = _number(text)
    if not (0 <= value < math.inf):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number, 0 or more")
    return value


def main() -> None:
    config = production_config()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--sentences", type=positive, help="sentences decoded per method (default: 256 GPU, 6 CPU)")
    ap.add_argument(
        "--max-new-tokens",
        type=positive,
        help="cap on each sentence's decoding length (its source length; default: none on GPU, 40 on CPU)",
    )
    ap.add_argument("--max-batch-tokens", type=positive, help="decoder batch budget (default: each backend's own)")
    ap.add_argument(
        "--stage-sentences",
        type=positive,
        help=(
            f"sentences of the paraphrase stage's run (default: {CHUNK_ROWS:,} on GPU, one of the chunks a production "
            "job decodes its shard in; as --sentences on CPU; past the dev file's 2,257 sentences repeat)"
        ),
    )
    ap.add_argument("--repeats", type=positive, default=3)
    ap.add_argument(
        "--threads",
        type=positive,
        default=1,
        help="CPU threads (default 1: on a shared 2-core machine more threads only add contention)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", action="store_true", help="also time generate with the host-side processor")
    ap.add_argument("--no-hf", action="store_true", help="time the static backend only (not transformers' generate)")
    ap.add_argument(
        "--stage-only",
        action="store_true",
        help="time the paraphrase stage only (no decoder rows, aligners, projection)",
    )
    ap.add_argument(
        "--aligner-kind",
        choices=["paper", "cross"],
        default=config.aligner.kind,
        help=f"the aligner kind projected (default: {PRODUCTION_CONFIG.name}'s, {config.aligner.kind})",
    )
    ap.add_argument(
        "--decode-tokens-per-s",
        type=positive_rate,
        help="project with this decode rate (new tokens/s of the paraphrase stage, e.g. a new backend's measured "
        "elsewhere) and skip the decoding benchmark",
    )
    ap.add_argument(
        "--shard-jobs",
        choices=["iteration", "chain"],
        default=config.shard_jobs,
        help=f"how the shards' iterations run as jobs (default: {PRODUCTION_CONFIG.name}'s, {config.shard_jobs})",
    )
    ap.add_argument(
        "--job-seconds",
        type=non_negative_seconds,
        help="fixed seconds of one job: a shard's iteration's (--shard-jobs iteration) or a shard's chain's "
        "(chain) (default: measured with scripts/bench_jobs.py, the job's commands on a one-sentence shard "
        f"and its Snakemake start-ups; with --quick, {RECORDED_CHAIN_JOB_SECONDS} s, run E's chain job on an H100)",
    )
    ap.add_argument("--seeds", type=positive, default=SEEDS, help=f"seeds expanded (default {SEEDS:,}: see its source)")
    ap.add_argument(
        "--augmented-per-seed",
        type=non_negative,
        default=float(ITERATIONS),
        help=f"examples an augmenter adds a training annotation in the Frame ID and argument-ID points (default "
        f"{ITERATIONS}: one a chain's iteration, every output kept by the lax filter, an upper bound)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a few minutes on a CPU: no hf/static comparison, one round, smaller aligner runs, two timed training "
        f"steps, the chain job's fixed cost as recorded ({RECORDED_CHAIN_JOB_SECONDS} s) unless --job-seconds",
    )
    args = ap.parse_args()
    if args.quick:
        args.repeats = 1
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    device = torch.device(
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else ("cpu" if args.device == "auto" else args.device)
    )
    name = device_name(device)
    rng = random.Random(args.seed)
    rows = framenet_rows()
    # The projection's decode rate: the static backend's as measured here, unless one is given.
    decode_source = (
        "given (--decode-tokens-per-s)"
        if args.decode_tokens_per_s
        else "the paraphrase stage with the static backend, measured: harmonic mean of iterations 1, 5, 10"
    )
    decode_rate = args.decode_tokens_per_s or bench_decoders(args, device, rows, rng)
    if args.stage_only:
        print(
            f"paraphrase stage under constraints, harmonic mean of iterations 1, 5, 10: {decode_rate:.1f} new "
            f"tokens/s  [{name}]"
        )
        return
    expansion, chain_note = project_expansion(args, config, device, rows, rng, decode_rate, decode_source)
    rules = project_rules(args, config, device, rows)
    print_budget(args, config, expansion, rules, device, chain_note)


#: Seconds of one chain job's fixed cost as run E measured it on an H100 node (docs/benchmarks.md):
#: ``spanaug iterate`` on a one-sentence shard, the first iteration 17.0 s, each later 1.73 s, and
#: its two Snakemake start-ups; ``--quick`` counts it instead of timing the job on this machine.
RECORDED_CHAIN_JOB_SECONDS = 32.6


def mean_output_tokens(rows: list[dict], max_tokens: int | None) -> tuple[float, str]:
    """New tokens a request decodes on average, with each output as long as its source in the timed
    paraphraser's tokenizer ids: the mean over the FrameNet dev seeds of at most ``max_tokens``
    words (config/config.yaml's data.max_tokens), and how it was drawn."""
    tokenizer = train_tokenizer("unigram", [r["text"] for r in rows], vocab_size=8000)  # as bench_decoders'

    kept = [r["text"] for r in rows if max_tokens is None or len(r["tokens"]) <= max_tokens]
    lengths = [len(ids) for ids in tokenizer(kept)["input_ids"]]
    how = (
        f"{statistics.mean(lengths):.1f} new tokens a request: each output as long as its source (a trained "
        f"paraphraser's outputs are about as long as their sources, and a later iteration's source is the previous "
        f"output), over the {len(kept):,} FN1.7 dev seeds of at most {max_tokens} words (full text; exemplars, "
        f"{SEEDS - FULLTEXT_ANNOTATIONS:,} of the seeds, are assumed to be as long: the dev split is the only FN1.7 "
        "text here)"
    )
    return statistics.mean(lengths), how


def project_expansion(
    args: argparse.Namespace,
    config,
    device: torch.device,
    rows: list[dict],
    rng: random.Random,
    decode_rate: float,
    decode_source: str,
) -> tuple[ExpansionHours, list[str]]:
    """The expansion's hours and the lines that say how: the aligners timed, the output lengths, the
    chain jobs' CPU stages, the jobs' fixed cost."""
    gpu = device.type == "cuda"
    name = device_name(device)
    lines: list[str] = []
    paper_size = "base" if gpu else "small"
    few = 4 if args.quick else 1
    pairs_rates = {
        ("paper", paper_size): bench_aligner(device, rows, paper_size, (1024 if gpu else 128) // few, args.repeats, rng)
    }
    batch = config.aligner.batch_size
    for size, n_pairs in (("minilm", 4096 if gpu else 256), ("base", 2048 if gpu else 64)):
        pairs_rates["cross", size] = bench_cross_aligner(
            device, rows, size, max(n_pairs // few, 16), batch, args.repeats, args.seed
        )
    overt, placed = frame_element_spans(rows)
    kind = args.aligner_kind
    fe = config.frame_elements
    inputs = encoder_inputs_per_request(kind, placed, fe, ALIGNED_BEAMS)
    print(
        f"frame elements per annotated FN1.7 dev sentence ({len(rows):,}): {overt:.2f} overt spans, {placed:.2f} "
        f"placed by the align stage (overt, not the trigger); {kind} aligner, frame_elements mode {fe.mode}, select "
        f"{fe.select}, require {fe.require}: {inputs:.2f} encoder inputs per request ({ALIGNED_BEAMS} beams)"
    )
    size = paper_size if kind == "paper" else encoder_size(config.aligner.encoder)
    tokens, how = mean_output_tokens(rows, config.data.max_tokens)
    iterations = config.iterations
    compute = project_hours(decode_rate, tokens, pairs_rates[kind, size], inputs, args.seeds, iterations)
    chain = args.shard_jobs == "chain"
    per_request = cpu_stage_seconds_per_request(rows, 500 if args.quick else 4000) if chain else 0.0
    job_s, job_source = job_fixed_seconds(args, device)
    expansion = with_jobs(compute, config.n_shards, iterations, chain, job_s, per_request)
    n = expansion.requests
    lines.append(
        f"  requests: {args.seeds:,} seeds x {iterations} iterations = {n:,}, beam 20, top {ALIGNED_BEAMS} aligned"
    )
    lines.append(
        f"  decoding: {n:,} x {how} = {n * tokens:,.0f} tokens / {decode_rate:,.1f} new tokens/s ({decode_source}) "
        f"= {expansion.decode:,.2f} h  [{name}]"
    )
    lines.append(
        f"  aligning ({kind}, {size}-sized encoder as {config.aligner.encoder!r}): {n:,} x {inputs:.2f} encoder inputs "
        f"= {n * inputs:,.0f} / {pairs_rates[kind, size]:,.1f} pairs/s = {expansion.align:,.2f} h  [{name}]"
    )
    if chain:
        lines.append(
            f"  constraint expansion and selection in the GPU job (shard_jobs: chain): {per_request * 1e6:,.0f} us a "
            f"request, measured on this host = {expansion.cpu_stages:,.2f} h  [{name}]"
        )
    what = "1 chain job" if chain else f"{iterations} iterations"
    lines.append(
        f"  jobs (shard_jobs: {args.shard_jobs}): n_shards {config.n_shards} x {what} = {expansion.jobs:,} jobs x "
        f"{job_s:.1f} s each before the first sentence and after the last ({job_source}) = {expansion.fixed:,.2f} h"
    )
    by_shards = hours_by_shards(expansion.compute, iterations, chain, job_s)
    lines.append(
        f"  by n_shards (the compute {expansion.compute:,.2f} h, plus the jobs' fixed cost): "
        + ", ".join(f"{k}: {h:,.2f} h" for k, h in by_shards.items())
    )
    if kind == "cross":  # the other encoder size, for comparison
        other = "minilm" if size == "base" else "base"
        alt = project_hours(decode_rate, tokens, pairs_rates[kind, other], inputs, args.seeds, iterations)
        lines.append(f"  with a {other}-sized cross encoder instead, aligning takes {alt.align:,.2f} h")
    return expansion, lines


def project_rules(args: argparse.Namespace, config, device: torch.device, rows: list[dict]) -> list[RuleHours]:
    """Every GPU rule of the workflow besides the expansion's, with its jobs under config/config.yaml,
    from training rates timed here."""
    gpu = device.type == "cuda"
    cross = config.aligner.train.cross if config.aligner.train and config.aligner.train.cross else None
    argid_batch = config.argid.batch_size if config.argid else 16
    rates = bench_training_rates(
        device,
        rows,
        encoder_size(config.argid.encoder if config.argid else config.aligner.encoder),
        (64, argid_batch, cross.batch_size if cross else 16),
        cross.tune_layers if cross else 0,
        steps=(20 if gpu else 5) if not args.quick else 2,
    )
    jobs = planned_jobs(config)
    return rule_hours(config, jobs, rates, args.seeds, args.augmented_per_seed)


def print_budget(
    args: argparse.Namespace,
    config,
    expansion: ExpansionHours,
    rules: list[RuleHours],
    device: torch.device,
    lines: list[str],
) -> None:
    """The run's GPU-hours: the expansion with its parts, each other GPU rule, their sum, and where the
    seed count comes from."""
    name = device_name(device)
    gpu = device.type == "cuda"
    unit = "GPU" if gpu else "CPU"
    note = "" if gpu else "  [CPU-sized decoder and CPU rates: not a GPU projection]"
    print(f"\nthe run's {unit}-hours, {PRODUCTION_CONFIG.name} on {name}:{note}")
    print(f"seeds: {args.seeds:,}" + (f" ({SEEDS_SOURCE})" if args.seeds == SEEDS else " (given, --seeds)"))
    print(f"expansion (rule iterate_shard or paraphrase + align): {expansion.total:,.2f} h")
    for line in lines:
        print(line)
    all_rules = gpu_rules(REPO / "workflow" / "rules")
    jobs = planned_jobs(config)
    for rule in rules:
        print(
            f"{rule.rule}: {rule.jobs} job{'s' if rule.jobs != 1 else ''} x {rule.hours_per_job:,.3f} h = "
            f"{rule.hours:,.2f} h (estimate: {rule.basis})"
        )
    off = [r for r in all_rules if jobs.get(r) == 0]
    print(f"GPU rules with no job in this config: {', '.join(off) or 'none'}")
    missing = uncosted(all_rules, jobs, [r.rule for r in rules])
    if missing:
        print(f"GPU rules NOT estimated (new to the workflow?): {', '.join(missing)}")
    total = run_hours(expansion.total, rules)
    print(
        f"the run's {unit}-hours: {total:,.1f} (expansion {expansion.total:,.2f} + other GPU rules "
        f"{total - expansion.total:,.2f}; the expansion's parts are measured, the other rules' estimated)  [{name}]"
    )


def job_fixed_seconds(args: argparse.Namespace, device: torch.device) -> tuple[float, str]:
    """The fixed seconds of one job: ``--job-seconds``, or its commands timed on a one-sentence shard in
    fresh processes (a shard's iteration: paraphrase and align; a shard's chain: ``spanaug iterate`` over
    every iteration) and the job's Snakemake start-ups (``bench_jobs.py``), and where it comes from."""
    if args.job_seconds is not None:
        return args.job_seconds, "given (--job-seconds)"
    from bench_jobs import (  # on sys.path
        CHAIN_SNAKEMAKE_STARTS,
        SNAKEMAKE_STARTS_PER_JOB,
        chain_seconds,
        group_start_seconds,
        job_seconds,
    )

    if args.quick and args.shard_jobs == "chain":
        return RECORDED_CHAIN_JOB_SECONDS, "recorded: run E's chain job on an H100 node, not measured here (--quick)"
    if args.shard_jobs == "chain":
        chain = chain_seconds(device.type, sentences=1, repeats=args.repeats)
        commands = chain.over(production_config().iterations)
        source = (
            f"spanaug iterate on a one-sentence shard, measured: the first iteration {chain.first:.1f} s, "
            f"each later {chain.each_later:.2f} s"
        )
        starts = CHAIN_SNAKEMAKE_STARTS
    else:
        seconds = job_seconds(device.type, sentences=1, repeats=args.repeats)
        commands = sum(seconds.values())
        parts = ", ".join(f"{rule} {s:.1f} s" for rule, s in seconds.items())
        source = f"the job's commands on a one-sentence shard, measured: {parts}"
        starts = SNAKEMAKE_STARTS_PER_JOB
    snakemake = group_start_seconds(args.repeats, starts)
    if snakemake is None:
        return commands, source + "; Snakemake's start-ups not counted (snakemake is not installed here)"
    return commands + snakemake, source + f", Snakemake's {starts} start-ups {snakemake:.1f} s"


def cpu_stage_seconds_per_request(rows: list[dict], n: int = 4000) -> float:
    """Seconds of constraint expansion and best-beam selection per request (``ALIGNED_BEAMS`` beams
    each), timed on ``n`` FrameNet dev seeds through the stages' own functions: the CPU work a chain
    job does inside its GPU job."""
    import tempfile

    from bench_scale import fake_aligned  # on sys.path

    from spanaug.core import artifacts
    from spanaug.core.config import ConstraintSettings
    from spanaug.pipeline.constraints import expand_stage
    from spanaug.pipeline.iterations import init_shards, select_stage

    seeds = (rows * (n // len(rows) + 1))[:n]
    seeds = [{**r, "sentence_id": f"{r['sentence_id']}#{i}"} for i, r in enumerate(seeds)]
    with tempfile.TemporaryDirectory(prefix="spanaug-bench-cpu-stages-") as tmp:
        folder = Path(tmp)
        artifacts.write_table(seeds, folder / "seeds.parquet", artifacts.SENTENCES)
        init_shards(folder / "seeds.parquet", [folder / "iter0.parquet"])
        # Loading lemminflect's tables is once per process, counted in the job's fixed cost.
        expand(["bought"], "VERB")
        start = time.perf_counter()
        expand_stage(folder / "iter0.parquet", folder / "requests.parquet", 1, ConstraintSettings())
        expanded = time.perf_counter() - start
        fake_aligned(folder / "requests.parquet", folder / "aligned.parquet", ALIGNED_BEAMS, seed=0)
        start = time.perf_counter()
        select_stage(folder / "aligned.parquet", folder / "chain.parquet", production_config().frame_elements)
        selected = time.perf_counter() - start
    return (expanded + selected) / n


if __name__ == "__main__":
    main()
