"""Training the Frame ID model (Adam; the best dev epoch is kept).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from typing import Any

import torch
from tqdm import tqdm

from spanaug.core.config import FrameIdTrainConfig
from spanaug.core.errors import ConfigError
from spanaug.downstream.frameid.baseline import triple_scores
from spanaug.downstream.frameid.data import NULL, Sentence
from spanaug.downstream.frameid.lexicon import FrameLexicon
from spanaug.downstream.frameid.model import FrameIdConfig, FrameIdentifier, glove_dimension

log = logging.getLogger(__name__)


def build_config(sentences: Sequence[Sentence], encoder: str, glove: str | None = None,
                 lexicon: dict[str, set[str]] | None = None) -> FrameIdConfig:
    """Label, POS and character inventories of the training data (and the lexicon's frames)."""
    frame_lexicon = FrameLexicon.build(sentences, lexicon) if lexicon is not None else None
    frames = {f for s in sentences for f in s.triggers.values()} | (frame_lexicon.frames() if frame_lexicon else set())
    tags = sorted({t for s in sentences for t in (s.pos or [])} | set(_universal_tags()))
    chars = sorted({ch for s in sentences for w in s.tokens for ch in w})
    return FrameIdConfig(encoder=encoder, frames=[NULL, *sorted(frames)], pos_tags=["<unk>", *tags],
                         chars=["<pad>", "<unk>", *chars], glove=glove, glove_dim=glove_dimension(glove) if glove else 0,
                         frame_lexicon=frame_lexicon.entries if frame_lexicon else None)


def _universal_tags() -> list[str]:
    return "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()


def train_frameid(train: Sequence[Sentence], encoder: str, tcfg: FrameIdTrainConfig, dev: Sequence[Sentence] | None = None,
                  glove: str | None = None, device: str | None = "auto", progress: bool = True,
                  lexicon: dict[str, set[str]] | None = None) -> tuple[FrameIdentifier, dict[str, Any]]:
    """Train with Adam; with ``dev``, keep the epoch with the best dev F1; with ``lexicon`` (frame
    -> LUs), each span chooses among the frames its lemma can evoke."""
    if not train:
        raise ConfigError("no training sentences")
    torch.manual_seed(tcfg.seed)
    rng = random.Random(tcfg.seed)
    model = FrameIdentifier(build_config(train, encoder, glove, lexicon), device=device)
    model._load_glove(train)
    opt = torch.optim.Adam(model.net.parameters(), lr=tcfg.learning_rate)
    order = list(train)
    history, best = [], (-1.0, None)
    for epoch in range(tcfg.epochs):
        model.net.train()
        rng.shuffle(order)
        total = 0.0
        for start in tqdm(range(0, len(order), tcfg.batch_size), desc=f"frameid {epoch + 1}", disable=not progress,
                          leave=False):
            loss = model.loss(order[start : start + tcfg.batch_size])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item()
        entry: dict[str, Any] = {"epoch": epoch + 1, "loss": total / max(1, -(-len(order) // tcfg.batch_size))}
        if dev:
            entry["dev"] = triple_scores(dev, model.predict(dev))
            if entry["dev"]["f1"] > best[0]:
                best = (entry["dev"]["f1"], {k: v.detach().clone() for k, v in model.net.state_dict().items()})
        history.append(entry)
        log.info("frameid epoch %d: %s", epoch + 1, entry)
    if best[1] is not None:
        model.net.load_state_dict(best[1])
    model.net.eval()
    return model, {"train_sentences": len(train), "history": history, "best_dev_f1": best[0] if dev else None,
                   "sentences_windowed": model.windowed}
