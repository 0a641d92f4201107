"""``spanaug constraints``, ``select``, ``gather``, ``assemble``: one iteration's stages around the
paraphraser (``spanaug paraphrase`` is in :mod:`spanaug.cli.paraphraser`)."""

from __future__ import annotations

import logging
from typing import Literal

from spanaug.cli.options import command, parse_settings
from spanaug.core.aligner_settings import AlignStageSettings
from spanaug.core.config import ConstraintSettings, DecodeSettings, FrameElementSettings, RunConfig, Runtime
from spanaug.core.settings import inherit, setting, settings

log = logging.getLogger(__name__)


@settings
class ConstraintOptions:
    chain: str = setting(help="iteration i-1's outputs (a CHAIN shard)")
    out: str = setting(help="iteration i's requests (a REQUESTS shard)")
    iteration: int = setting(help="i, the iteration the requests produce")


@command("constraints", help="expand constraints: chain shard -> requests")
def constraints(options: ConstraintOptions, constraints: ConstraintSettings) -> None:
    from spanaug.pipeline.constraints import expand_stage

    n = expand_stage(options.chain, options.out, options.iteration, constraints)
    log.info("iteration %d: %d requests", options.iteration, n)


@settings
class IterateOptions:
    chain: str = setting(help="the shard's seeds (iteration 0's CHAIN shard)")
    iterations_dir: str = setting(help="the run's iterations folder: iteration i goes to ITERATIONS_DIR/iter{i}/")
    shard: str = setting(help="the shard's name in its files' names (shard{SHARD}.*: 000, 001, ...)")
    iterations: int = inherit(RunConfig, "iterations")
    constraints: str = setting("", "spanaug constraints' settings, as its options")
    paraphrase: str = setting("", "spanaug paraphrase's settings, as its options (--model M --beam-size 20 ...)")
    align: str = setting(help="spanaug align paraphrases' settings, as its options (--model M --batch-size 64 ...)")
    frame_elements: str = setting("", "the frame-element settings align paraphrases and select take, as options")


@command("iterate", help="every iteration of one shard, each model loaded once (shard_jobs: chain)")
def iterate(options: IterateOptions, runtime: Runtime) -> None:
    from spanaug.pipeline.shard_chain import ShardModels, iterate_shard

    # Every setting is read and checked before any model loads or any file is written.
    (constraints,) = parse_settings(options.constraints, [ConstraintSettings], "--constraints")
    (decode,) = parse_settings(options.paraphrase, [DecodeSettings], "--paraphrase")
    (aligner,) = parse_settings(options.align, [AlignStageSettings], "--align")
    (frame_elements,) = parse_settings(options.frame_elements, [FrameElementSettings], "--frame-elements")
    rows = iterate_shard(
        options.chain,
        options.iterations_dir,
        options.shard,
        options.iterations,
        constraints,
        ShardModels(decode, aligner, runtime.device),
        frame_elements,
    )
    log.info("shard %s: chains going on after each iteration: %s", options.shard, rows)


@settings
class SelectOptions:
    aligned: str = setting(help="an ALIGNED shard")
    out: str = setting(help="the iteration's CHAIN shard")
    stats: str | None = setting(
        None, "selection statistics (JSON): requests, outputs, chains ended by require, outputs keeping every FE"
    )


@command("select", help="keep the best-aligned beam per seed")
def select(options: SelectOptions, frame_elements: FrameElementSettings) -> None:
    from spanaug.pipeline.iterations import select_stage

    select_stage(options.aligned, options.out, frame_elements, options.stats)


@settings
class GatherOptions:
    inputs: list[str] = setting(help="shards of one artifact type")
    out: str = setting(help="the merged artifact")
    schema: Literal["sentences", "chain", "augmented", "scored", "requests", "paraphrases", "aligned", "examples"] = (
        setting("chain", "the shards' schema")
    )


@command("gather", help="merge shards of one artifact type")
def gather(options: GatherOptions) -> None:
    from spanaug.core import artifacts
    from spanaug.pipeline.iterations import gather

    n = gather(options.inputs, options.out, artifacts.SCHEMAS[options.schema])
    log.info("gathered %d rows into %s", n, options.out)


@settings
class AssembleOptions:
    inputs: list[str] = setting(help="every iteration's CHAIN outputs")
    out: str = setting(help="the augmented dataset (AUGMENTED Parquet)")


@command("assemble", help="the augmented dataset from every iteration's outputs")
def assemble(options: AssembleOptions) -> None:
    from spanaug.pipeline.iterations import assemble

    log.info("augmented dataset: %d rows in %s", assemble(options.inputs, options.out), options.out)
