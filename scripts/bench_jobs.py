#!/usr/bin/env python
"""The fixed cost of an iteration's jobs: what each shard pays before its first sentence and after its last.

Production expands FrameNet in ``n_shards`` x ``iterations`` grouped jobs (``profiles/slurm``: a
shard's iteration is one SLURM job of its two GPU rules, paraphrase and align; its CPU rules run on
the head), and each holds its GPU from start to end. Every rule is a new process that imports its
libraries, initialises the device, loads its model and checks it (the static engine compares its
decoder step with the model's forward pass, the Triton kernel with torch, and captures a CUDA graph
per batch shape) before its shard's first sentence. Such costs do not shrink with the shard: with 64
shards over 10 iterations they are paid 640 times. ``scripts/bench_gpu.py`` adds them to its
projection; this script measures them.

It runs the two commands of one shard's iteration job as the workflow's rules run them, each in a
fresh process, on a shard of ``--sentences`` FrameNet dev sentences (default 1), with
production-sized random models saved to a temporary folder (a T5-base-sized paraphraser on the
static engine where CUDA is present, a cross aligner with a MiniLM-sized encoder), and prints each
command's wall seconds (median of ``--repeats``) and their sum, the part of it that is importing the
libraries (:func:`library_import_seconds`), then the start-ups of the three
Snakemake processes a group job runs (its own and one a rule), each timed as a fresh Snakemake
reading this workflow (:func:`snakemake_start_seconds`) where Snakemake is installed. Then it times
the job that replaces a shard's ten (``shard_jobs: chain``): ``spanaug iterate``, every iteration in
one process with each model loaded once (:func:`chain_seconds`), with its two Snakemake start-ups.

    .venv/bin/python scripts/bench_jobs.py                # the device torch sees
    .venv/bin/python scripts/bench_jobs.py --device cpu --repeats 3
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))  # bench_common, also when a test loads this file

import torch
from bench_common import ENCODER_SHAPES, framenet_rows, positive, production_config

from spanaug.core import artifacts
from spanaug.core.devices import device_name
from spanaug.demo.standins import T5_BASE, Size, bert_tokenizer, build_model, train_tokenizer
from spanaug.pipeline.constraints import expand, lu_upos
from spanaug.pipeline.iterations import init_shards, shard_file

#: The MiniLM-sized encoder of the production cross aligner (all-MiniLM-L6-v2's shape).
MINILM = ENCODER_SHAPES["minilm"]


def save_models(
    rows: list[dict], folder: Path, size: Size = T5_BASE, encoder_shape: dict[str, int] = MINILM
) -> tuple[Path, Path]:
    """A random paraphraser of ``size`` (T5-base's) and a cross aligner with a random encoder of
    ``encoder_shape`` (MiniLM's), saved in ``folder``."""
    from transformers import BertConfig, BertModel

    from spanaug.core.aligner_settings import CrossAlignerConfig
    from spanaug.pipeline.aligner.cross_model import CrossAligner

    texts = [r["text"] for r in rows]
    tokenizer = train_tokenizer("unigram", texts, vocab_size=8000)
    paraphraser = folder / "paraphraser"
    build_model("t5", tokenizer, size).save_pretrained(paraphraser)
    tokenizer.save_pretrained(paraphraser)
    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=30522, max_position_embeddings=512, **encoder_shape))
    aligner = folder / "aligner"
    CrossAligner(
        # Threshold 1: never null, so the chain job's shard goes on through every iteration, as most
        # production chains do (random weights would end it at once, leaving cheap empty iterations).
        CrossAlignerConfig(encoder="random-minilm", threshold=1.0),
        encoder=encoder,
        tokenizer=bert_tokenizer(texts, vocab_size=8000),
        device=torch.device("cpu"),
        dtype="float32",
    ).save_pretrained(aligner)
    return paraphraser, aligner


def write_requests(rows: list[dict], path: Path) -> None:
    """A REQUESTS shard of iteration 1: each row's sentence under its trigger's forms."""
    requests = [
        {
            "seed_id": f"bench-{i}",
            "frame": r["frame"],
            "lexical_unit": r["lexical_unit"],
            "seed_trigger": " ".join(r["tokens"][r["span_start"] : r["span_end"] + 1]),
            "iteration": 1,
            "source_tokens": r["tokens"],
            "source_text": r["text"],
            "source_span_start": r["span_start"],
            "source_span_end": r["span_end"],
            "constraints": sorted(expand(r["tokens"][r["span_start"] : r["span_end"] + 1], lu_upos(r["lexical_unit"]))),
            "source_frame_elements": r["frame_elements"],
        }
        for i, r in enumerate(rows)
    ]
    artifacts.write_table(requests, path, artifacts.REQUESTS)


#: The console script, run as the rules run it, from this checkout.
SPANAUG = [sys.executable, "-m", "spanaug.cli.main"]
#: The decoding settings of every timed command: paraphraser.beam_size and return_top as configured by default.
DECODE_OPTIONS = ["--beam-size", "20", "--return-top", "3"]


def commands(folder: Path, paraphraser: Path, aligner: Path, device: str, max_new: int) -> dict[str, list[str]]:
    """The commands of the shard's grouped job in ``folder`` (paraphrase, then align), as
    workflow/rules/*.smk call them."""
    return {
        "paraphrase": [
            *SPANAUG, "paraphrase", "--requests", str(folder / "requests.parquet"),
            "--out", str(folder / "paraphrases.parquet"), "--stats", str(folder / "paraphrase_stats.json"),
            "--model", str(paraphraser), *DECODE_OPTIONS, "--max-new-tokens", str(max_new), "--device", device,
        ],
        "align": [
            *SPANAUG, "align", "paraphrases", "--model", str(aligner),
            "--paraphrases", str(folder / "paraphrases.parquet"), "--out", str(folder / "aligned.parquet"),
            "--stats", str(folder / "align_stats.json"), "--device", device,
        ],
    }  # fmt: skip


def command_env() -> dict[str, str]:
    """The environment of the timed processes: this checkout's ``src`` first on the path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}


def run_seconds(cmd: list[str], what: str, **run: object) -> float:
    """Wall seconds of one run of ``cmd`` (``run``: subprocess.run's keywords); a failed run stops the
    benchmark with its error, naming ``what`` ran."""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, **run)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{what} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def median_run_seconds(cmd: list[str], repeats: int, what: str, **run: object) -> float:
    """Median of ``repeats`` :func:`run_seconds`."""
    return statistics.median(run_seconds(cmd, what, **run) for _ in range(repeats))


@contextlib.contextmanager
def bench_folder(models: dict | None = None) -> Iterator[tuple[Path, Path, Path, dict[str, str]]]:
    """A temporary folder with the models saved (``models``: :func:`save_models`' sizes; tests make tiny
    ones): the folder, the paraphraser, the aligner and the commands' environment."""
    with tempfile.TemporaryDirectory(prefix="spanaug-bench-jobs-") as tmp:
        folder = Path(tmp)
        paraphraser, aligner = save_models(framenet_rows(), folder, **(models or {}))
        # A run converts the paraphraser for the ct2 backend (CPU) once, into this cache.
        yield folder, paraphraser, aligner, {**command_env(), "SPANAUG_CT2_CACHE": str(folder / "ct2")}


def job_seconds(
    device: str, sentences: int = 1, repeats: int = 3, max_new: int = 8, models: dict | None = None
) -> dict[str, float]:
    """Median wall seconds of each rule's command on a shard of ``sentences``, in fresh processes;
    ``models``: :func:`save_models`' sizes (tests make tiny ones)."""
    with bench_folder(models) as (folder, paraphraser, aligner, env):
        write_requests(framenet_rows()[:sentences], folder / "requests.parquet")
        # The first round is not timed: it converts the paraphraser for the ct2 backend (CPU), which
        # a run does once into its cache, compiles the Triton kernel into Triton's cache (GPU), and
        # reads the models into the page cache.
        times: dict[str, list[float]] = {}
        for r in range(repeats + 1):
            for rule, cmd in commands(folder, paraphraser, aligner, device, max_new).items():
                seconds = run_seconds(cmd, rule, env=env)
                if r:
                    times.setdefault(rule, []).append(seconds)
    return {rule: statistics.median(ts) for rule, ts in times.items()}


def chain_command(
    folder: Path, paraphraser: Path, aligner: Path, device: str, max_new: int, iterations: int
) -> list[str]:
    """``spanaug iterate`` on the shard in ``folder`` (shard_jobs: chain's one command per shard), with
    the settings :func:`commands` gives the per-stage commands."""
    return [
        *SPANAUG, "iterate", "--chain", str(folder / "iter0.chain.parquet"),
        "--iterations-dir", str(folder / "iterations"), "--shard", "000", "--iterations", str(iterations),
        f"--paraphrase=--model {shlex.quote(str(paraphraser))} {shlex.join(DECODE_OPTIONS)} --max-new-tokens {max_new}",
        f"--align=--model {shlex.quote(str(aligner))}", "--device", device,
    ]  # fmt: skip


@dataclasses.dataclass
class ChainSeconds:
    """A chain job's command, timed: its first iteration (the process, the models and one iteration),
    each later iteration's added seconds, and the shard's chains going on after the first (0: the
    second iteration ran on an empty shard, and the figure is too low)."""

    first: float
    each_later: float
    going_on: int

    def over(self, iterations: int) -> float:
        """The command's seconds over ``iterations``."""
        return self.first + (iterations - 1) * self.each_later


def chain_seconds(
    device: str, sentences: int = 1, repeats: int = 3, max_new: int = 8, models: dict | None = None
) -> ChainSeconds:
    """A shard's chain job's command (``spanaug iterate``, every iteration in one process) on a shard of
    ``sentences`` seeds, in fresh processes: medians over ``repeats`` of one and of two iterations.

    Ten iterations are not timed as such: a random paraphraser soon decodes nothing the constraints
    allow, and the shard's later iterations would run empty, and cheaper than a production shard's.
    The second iteration's added seconds stand for each later one's instead."""
    with bench_folder(models) as (folder, paraphraser, aligner, env):
        sentences_path = folder / "seeds.parquet"
        artifacts.write_table(framenet_rows()[:sentences], sentences_path, artifacts.SENTENCES)
        init_shards(sentences_path, [folder / "iter0.chain.parquet"])
        times: dict[int, list[float]] = {1: [], 2: []}
        for r in range(repeats + 1):  # the first round untimed, as in job_seconds
            for n in times:
                cmd = chain_command(folder, paraphraser, aligner, device, max_new, n)
                seconds = run_seconds(cmd, "spanaug iterate", env=env)
                if r:
                    times[n].append(seconds)
        stats = json.loads(Path(shard_file(folder / "iterations", 1, "000", "select_stats")).read_text())
    one, two = statistics.median(times[1]), statistics.median(times[2])
    return ChainSeconds(first=one, each_later=max(two - one, 0.0), going_on=stats["outputs"])


#: What each command's process imports before its work: the CLI, torch, and transformers' model
#: classes of the paraphraser (T5) and the cross aligner's encoder (BERT), whose import brings in
#: transformers' generation, masking and distributed code (and torch's compiler and sympy with them).
LIBRARY_IMPORTS = "import spanaug.cli.main, torch\nfrom transformers import BertModel, T5ForConditionalGeneration"


def library_import_seconds(repeats: int = 3) -> float:
    """Median wall seconds of a fresh Python importing :data:`LIBRARY_IMPORTS`: the floor under each
    command of a job, whatever the shard and the device (on the H100 image, 13 of the 16 s of each
    command; align loads no T5, whose modeling module is a small part of it). ``bench_gpu.py``'s
    projection counts it through the commands' seconds, not again."""
    return median_run_seconds([sys.executable, "-c", LIBRARY_IMPORTS], repeats, "the imports", env=command_env())


#: Snakemake processes a shard's iteration job starts under ``profiles/slurm``: the group job's own,
#: then one for each of its two rules (the SLURM jobstep executor runs a rule through ``srun`` in a
#: Snakemake of its own, in remote mode, which reads the workflow again: ``make demo-slurm``'s group
#: logs show the three).
SNAKEMAKE_STARTS_PER_JOB = 1 + 2


#: Snakemake processes a shard's chain job (shard_jobs: chain, one rule) starts: its own and its rule's.
CHAIN_SNAKEMAKE_STARTS = 1 + 1


def snakemake_start_seconds(repeats: int = 3) -> float | None:
    """Median wall seconds of a fresh Snakemake reading this workflow (``--list-rules`` with the demo
    config): its start-up and the workflow's parse, which each of a group job's Snakemake processes
    pays before its rule. On this project's CPU it took 1.8 s, and a rule's Snakemake 1.5 to 2 s in
    ``make demo-slurm``'s group logs (timestamps to the second). None where Snakemake is not
    installed."""
    if importlib.util.find_spec("snakemake") is None:
        return None
    cmd = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow" / "Snakefile"),
        "--configfile", str(REPO / "config" / "demo.yaml"), "--list-rules",
    ]  # fmt: skip
    return median_run_seconds(cmd, repeats, "snakemake --list-rules", cwd=REPO)


def group_start_seconds(repeats: int = 3, starts: int = SNAKEMAKE_STARTS_PER_JOB) -> float | None:
    """The Snakemake start-ups a job pays: ``starts`` (a group job's, ``SNAKEMAKE_STARTS_PER_JOB``, or
    a chain job's, ``CHAIN_SNAKEMAKE_STARTS``) x :func:`snakemake_start_seconds` (None where Snakemake
    is not installed)."""
    start = snakemake_start_seconds(repeats)
    return None if start is None else starts * start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    ap.add_argument("--sentences", type=positive, default=1, help="sentences in the shard (default 1)")
    ap.add_argument("--repeats", type=positive, default=3)
    ap.add_argument("--max-new-tokens", type=positive, default=8, help="each beam's length (random weights)")
    iterations = production_config().iterations
    ap.add_argument(
        "--iterations", type=positive, default=iterations, help=f"the chain job's iterations (default {iterations})"
    )
    args = ap.parse_args()
    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    device = "cpu" if device == "auto" else device
    name = device_name(torch.device(device))
    seconds = job_seconds(device, args.sentences, args.repeats, args.max_new_tokens)
    for rule, s in seconds.items():
        print(f"job seconds, {rule:<20} {s:6.2f} s  [{name}]")
    commands = sum(seconds.values())
    print(f"job seconds, the two commands      {commands:6.2f} s  [{name}]")
    imports = library_import_seconds(args.repeats)
    print(
        f"job seconds, of which imports       {len(seconds) * imports:6.2f} s ({len(seconds)} x {imports:.2f} s: "
        f"the CLI, torch, transformers' T5 and BERT)  [{name}]"
    )
    # One Snakemake start-up, measured once, counted for each job's processes.
    start = snakemake_start_seconds(args.repeats)
    snakemake = None if start is None else SNAKEMAKE_STARTS_PER_JOB * start
    if snakemake is None:
        print("job seconds, Snakemake's start-ups not measured: snakemake is not installed here")
    else:
        print(
            f"job seconds, Snakemake's start-ups  {snakemake:6.2f} s "
            f"({SNAKEMAKE_STARTS_PER_JOB} x {start:.2f} s)  [{name}]"
        )
        print(f"job seconds, in all                 {commands + snakemake:6.2f} s  [{name}]")
    # shard_jobs: chain: one process per shard for every iteration, against the jobs per iteration.
    chain = chain_seconds(device, args.sentences, args.repeats, args.max_new_tokens)
    n = args.iterations
    print(
        f"chain job seconds, spanaug iterate   {chain.over(n):6.2f} s for {n} iterations: the first "
        f"{chain.first:.2f} s, each later {chain.each_later:.2f} s (chains going on after the first: "
        f"{chain.going_on})  [{name}]"
    )
    print(
        f"the same iterations as per-stage jobs {n * commands:6.2f} s ({n} x the two commands): "
        f"{n * commands / chain.over(n):.1f} x the chain job's command  [{name}]"
    )
    if start is not None:
        chain_starts = CHAIN_SNAKEMAKE_STARTS * start
        print(
            f"chain job seconds, in all           {chain.over(n) + chain_starts:6.2f} s, with {CHAIN_SNAKEMAKE_STARTS} "
            f"Snakemake start-ups; per-stage jobs, in all {n * (commands + snakemake):6.2f} s  [{name}]"
        )


if __name__ == "__main__":
    main()
