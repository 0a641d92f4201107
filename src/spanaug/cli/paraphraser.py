"""``spanaug paraphrase``: one iteration's constrained decoding; ``spanaug paraphraser train``: the paper's
paraphraser, trained on a bitext."""

from __future__ import annotations

from spanaug.cli.options import command, group
from spanaug.core.config import DecodeSettings, ParaphraserTrainSettings, Runtime
from spanaug.core.settings import setting, settings

group("paraphraser", "the paper's paraphraser")


@settings
class ParaphraseOptions:
    requests: str = setting(help="a REQUESTS shard")
    out: str = setting(help="the PARAPHRASES shard to write")
    stats: str | None = setting(None, "decoding statistics (JSON): outputs, constraint violations dropped")


@command("paraphrase", help="constrained decoding: requests -> paraphrases")
def paraphrase(options: ParaphraseOptions, decode: DecodeSettings, runtime: Runtime) -> None:
    from spanaug.pipeline.paraphraser.stage import paraphrase_stage

    paraphrase_stage(options.requests, options.out, decode, runtime.device, stats_path=options.stats)


@settings
class ParaphraserOptions:
    out: str = setting(help="the model directory (save_pretrained); a rerun resumes from its last checkpoint")


@command("paraphraser", "train", help="train SentencePiece + Transformer on a bitext TSV")
def train(options: ParaphraserOptions, train: ParaphraserTrainSettings, runtime: Runtime) -> None:
    from spanaug.pipeline.paraphraser.training import train_paraphraser

    train_paraphraser(train, options.out, device=runtime.device)
