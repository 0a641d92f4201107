"""Every iteration of one shard in one process (``shard_jobs: chain``, ``spanaug iterate``).

A shard's iteration ``i`` reads only the same shard's iteration ``i - 1`` (:mod:`spanaug.pipeline.iterations`),
so one process can run a shard's whole chain: constraint expansion, paraphrasing, alignment and
selection, ten times over, with the paraphraser and the aligner loaded once. Run as a job per stage
instead, every iteration pays two processes' imports and model loads on the GPU node (about 16 s each
on an H100 node, docs/gpus.md) while the GPU waits.

Each stage is the one the per-stage jobs run, writing the same files (:data:`SHARD_FILES`), with the
same record of the command that wrote them, so both ways give the same rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from spanaug.core import artifacts
from spanaug.core.aligner_settings import AlignStageSettings
from spanaug.core.config import ConstraintSettings, DecodeSettings, FrameElementSettings
from spanaug.core.errors import ConfigError
from spanaug.pipeline.aligner.interface import SpanAlignerModel
from spanaug.pipeline.aligner.stage import align_stage, load_aligner
from spanaug.pipeline.constraints import expand_stage
from spanaug.pipeline.iterations import SHARD_FILES, select_stage, shard_file
from spanaug.pipeline.paraphraser.paraphrase_decoder import ParaphraseDecoder
from spanaug.pipeline.paraphraser.stage import load_paraphraser, paraphrase_stage

log = logging.getLogger(__name__)


@dataclass
class ShardModels:
    """The shard's two models, loaded once (:meth:`load`) and kept for every iteration."""

    decode: DecodeSettings
    aligner_settings: AlignStageSettings
    device: str
    paraphraser: ParaphraseDecoder | None = None
    aligner: SpanAlignerModel | None = None

    def loaded_paraphraser(self) -> ParaphraseDecoder:
        if self.paraphraser is None:
            self.paraphraser = load_paraphraser(self.decode, self.device)
        return self.paraphraser

    def loaded_aligner(self) -> SpanAlignerModel:
        if self.aligner is None:
            a = self.aligner_settings
            self.aligner = load_aligner(a.model, a.encoder, self.device, a.dtype)
        return self.aligner

    def load(self) -> None:
        """Both models loaded and checked (the static engine checks its step when it loads), before
        the chain's first stage writes anything: a wrong model or folder leaves no file behind."""
        self.loaded_paraphraser()
        self.loaded_aligner()


def check_inputs(seeds: Path | str, iterations_dir: Path | str) -> None:
    """The seeds are a CHAIN artifact and the iterations folder can be one, before any model loads."""
    artifacts.iter_batches(seeds, artifacts.CHAIN)  # checks the file's schema and artifact now
    folder = Path(iterations_dir)
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ConfigError(f"--iterations-dir {iterations_dir}: {blocker} is a file, not a folder")


def iterate_shard(
    seeds: Path | str,
    iterations_dir: Path | str,
    shard: str,
    iterations: int,
    constraints: ConstraintSettings,
    models: ShardModels,
    fe: FrameElementSettings,
) -> list[int]:
    """Iterations 1..``iterations`` of shard ``shard``, from its seeds (iteration 0's CHAIN shard);
    returns each iteration's chain rows. The seeds, the iterations folder and both models are
    checked before anything is written; each file appears whole when its stage ends (core.files), so
    a killed process leaves the iterations it finished."""
    check_inputs(seeds, iterations_dir)
    models.load()
    chain_rows = []
    previous: Path | str = seeds
    for i in range(1, iterations + 1):
        path = {name: shard_file(iterations_dir, i, shard, name) for name in SHARD_FILES}
        with artifacts.writing_stage("constraints"):
            expand_stage(previous, path["requests"], i, constraints)
        with artifacts.writing_stage("paraphrase"):
            paraphrase_stage(
                path["requests"],
                path["paraphrases"],
                models.decode,
                models.device,
                stats_path=path["paraphrase_stats"],
                paraphraser=models.loaded_paraphraser(),
            )
        a = models.aligner_settings
        with artifacts.writing_stage("align paraphrases"):
            align_stage(
                a.model,
                path["paraphrases"],
                path["aligned"],
                fe,
                encoder=a.encoder,
                device=models.device,
                dtype=a.dtype,
                batch_size=a.batch_size,
                stats_path=path["align_stats"],
                aligner=models.loaded_aligner(),
            )
        with artifacts.writing_stage("select"):
            chain_rows.append(select_stage(path["aligned"], path["chain"], fe, path["select_stats"]))
        previous = path["chain"]
        log.info("shard %s, iteration %d of %d: %d chains go on", shard, i, iterations, chain_rows[-1])
    return chain_rows
