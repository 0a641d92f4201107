"""``spanaug paraphraser train``: the paper's paraphraser, trained on a bitext."""

from __future__ import annotations

from spanaug.cli.options import command, group
from spanaug.core.config import ParaphraserTrainSettings, Runtime
from spanaug.core.settings import setting, settings

group("paraphraser", "the paper's paraphraser")


@settings
class ParaphraserFiles:
    out: str = setting(help="the model directory (save_pretrained); a rerun resumes from its last checkpoint")


@command("paraphraser", "train", help="train SentencePiece + Transformer on a bitext TSV")
def train(files: ParaphraserFiles, train: ParaphraserTrainSettings, runtime: Runtime) -> None:
    from spanaug.pipeline.paraphraser.training import train_paraphraser

    train_paraphraser(train, files.out, device=runtime.device)
