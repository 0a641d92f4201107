"""``spanaug constraints``, ``paraphrase``, ``select``, ``gather``, ``assemble``: one iteration's stages."""

from __future__ import annotations

import logging
from typing import Literal

from spanaug.cli.options import command
from spanaug.core.config import ConstraintSettings, DecodeSettings, Runtime
from spanaug.core.settings import setting, settings

log = logging.getLogger(__name__)


@settings
class ConstraintFiles:
    chain: str = setting(help="iteration i-1's outputs (a CHAIN shard)")
    out: str = setting(help="iteration i's requests (a REQUESTS shard)")
    iteration: int = setting(help="i, the iteration the requests produce")


@command("constraints", help="expand constraints: chain shard -> requests")
def constraints(files: ConstraintFiles, constraints: ConstraintSettings) -> None:
    from spanaug.pipeline.constraints import expand_stage

    n = expand_stage(files.chain, files.out, files.iteration, constraints)
    log.info("iteration %d: %d requests", files.iteration, n)


@settings
class ParaphraseFiles:
    requests: str = setting(help="a REQUESTS shard")
    out: str = setting(help="the PARAPHRASES shard to write")
    stats: str | None = setting(None, "decoding statistics (JSON): outputs, constraint violations dropped")


@command("paraphrase", help="constrained decoding: requests -> paraphrases")
def paraphrase(files: ParaphraseFiles, decode: DecodeSettings, runtime: Runtime) -> None:
    from spanaug.pipeline.paraphraser.stage import paraphrase_stage

    paraphrase_stage(files.requests, files.out, decode, runtime.device, stats_path=files.stats)


@settings
class SelectFiles:
    aligned: str = setting(help="an ALIGNED shard")
    out: str = setting(help="the iteration's CHAIN shard")


@command("select", help="keep the best-aligned beam per seed")
def select(files: SelectFiles) -> None:
    from spanaug.pipeline.iterations import select_stage

    select_stage(files.aligned, files.out)


@settings
class GatherFiles:
    inputs: list[str] = setting(help="shards of one artifact type")
    out: str = setting(help="the merged artifact")
    schema: Literal["sentences", "chain", "augmented", "scored", "requests", "paraphrases", "aligned", "examples"] = (
        setting("chain", "the shards' schema")
    )


@command("gather", help="merge shards of one artifact type")
def gather(files: GatherFiles) -> None:
    from spanaug.core import artifacts
    from spanaug.pipeline.iterations import gather

    n = gather(files.inputs, files.out, artifacts.SCHEMAS[files.schema])
    log.info("gathered %d rows into %s", n, files.out)


@settings
class AssembleFiles:
    inputs: list[str] = setting(help="every iteration's CHAIN outputs")
    out: str = setting(help="the augmented dataset (AUGMENTED Parquet)")


@command("assemble", help="the augmented dataset from every iteration's outputs")
def assemble(files: AssembleFiles) -> None:
    from spanaug.pipeline.iterations import assemble

    log.info("augmented dataset: %d rows in %s", assemble(files.inputs, files.out), files.out)
