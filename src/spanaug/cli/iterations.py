"""``spanaug constraints``, ``select``, ``gather``, ``assemble``: one iteration's stages around the
paraphraser (``spanaug paraphrase`` is in :mod:`spanaug.cli.paraphraser`)."""

from __future__ import annotations

import logging
from typing import Literal

from spanaug.cli.options import command
from spanaug.core.config import ConstraintSettings, FrameElementSettings
from spanaug.core.settings import setting, settings

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
