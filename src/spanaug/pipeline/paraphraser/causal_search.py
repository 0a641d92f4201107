"""Beam search for decoder-only models: the engine's search (:mod:`.beam_search`) over a model's
own forward pass and cache.

``generate``'s beam search selects each step's ``2 x beams`` best continuations with one
``torch.topk`` over every beam's whole vocabulary flattened into one row (Gemma 3's 262,144
tokens times 20 beams: 30% of a beam-20 step on this project's 2-core CPU), and with the bans as a
processor on log-probabilities computes two log-softmaxes over it. The engine's search is the
same search step for step, with the same constraints, limits and scores, and it may select each
beam's best tokens first (two-stage top-k) from the logits shifted by their logsumexp, with the
bans applied before the one normalisation (``fuse_constraints``); sentences whose hypotheses can
no longer change leave the batch.

:class:`CausalState` is what a batch keeps: the model's key/value cache (the prompt's, computed once
per sentence and repeated for its beams), the attention mask and each row's next position. The
search's first step reads the prompt's last logits (the prompt is run whole before the search,
so the search's start token is a placeholder no step feeds to the model); every later step runs
the model on the beams' last tokens. A beam reorder moves the cache's rows within a sentence (so the
mask and positions stay), and of them only the tokens after the prompt, which the sentence's beams
share (:class:`.beam_cache.BeamCache`); a sentence leaving takes its rows out of all three.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from spanaug.pipeline.paraphraser.beam_search import SearchSettings, beam_search
from spanaug.pipeline.paraphraser.processors import TensorBannedSequences

#: The search's start token: a placeholder (the first step reads the prompt's logits), and a value
#: no banned prefix holds (ids are >= 0), so the bans see the continuation alone, as ``generate``'s
#: processor sees it (:class:`.causal_backend.ContinuationBans`).
PLACEHOLDER_START = -3


@dataclasses.dataclass
class CausalState:
    """A batch's decoding state on the device, ``rows = sentences x beams``."""

    cache: Any  # the model's key/value cache, rows in sentence-major order
    mask: torch.Tensor  # [rows, prompt + steps] attention mask, preallocated; the first `seen` columns hold
    next_position: torch.Tensor  # [rows] each row's position of the next token
    first_logits: torch.Tensor  # [rows, V] the next-token logits after the prompt
    beams: int
    seen: int  # tokens in the cache (and mask columns in use)

    @property
    def sentences(self) -> int:
        return self.mask.shape[0] // self.beams

    def keep(self, sentences: torch.Tensor) -> None:
        rows = (sentences[:, None] * self.beams + torch.arange(self.beams, device=sentences.device)).view(-1)
        self.cache.batch_select_indices(rows)
        self.mask = self.mask.index_select(0, rows)
        self.next_position = self.next_position.index_select(0, rows)


class CausalRunner:
    """The search's steps on a decoder-only model, run eagerly (the runner interface of
    :mod:`.step_runner`)."""

    sync_every: int | None = None

    def __init__(self, model: Any, cache_kwarg: str, state: CausalState):
        self.model, self.cache_kwarg, self.state = model, cache_kwarg, state

    def run(self, search_step, s: int) -> None:
        search_step(s)

    def decode(self, tokens: torch.Tensor, s: int) -> torch.Tensor:
        """Step ``s``'s next-token logits ``[rows, V]`` (float32): the prompt's at the first step
        (``tokens`` then hold the placeholder), the model's on ``tokens`` after."""
        state = self.state
        if s == 0:
            return state.first_logits
        state.mask[:, state.seen] = 1
        state.seen += 1
        out = self.model(
            input_ids=tokens[:, None],
            attention_mask=state.mask[:, : state.seen],
            position_ids=state.next_position[:, None],
            **{self.cache_kwarg: state.cache},
            use_cache=True,
        )
        state.next_position += 1
        return out.logits[:, -1].float()

    def reorder(self, rows: torch.Tensor, upto: int | torch.Tensor) -> None:
        if upto != 1:  # after the first step a sentence's rows all hold its prompt alone: nothing to move
            self.state.cache.reorder_cache(rows)

    def keep(self, sentences: torch.Tensor, upto: int) -> None:
        self.state.keep(sentences)

    def worth_shrinking(self, done: int, sentences: int) -> bool:
        return True


def search(
    model: Any,
    cache_kwarg: str,
    state: CausalState,
    limits: torch.Tensor,
    settings: SearchSettings,
    processor: TensorBannedSequences | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Beam search of a batch whose prompts are in ``state``: each sentence's continuations
    ``[B, beams, max(limits)]`` (the end token included, ``settings.fill_token`` after it) and their
    scores ``[B, beams]``, best first."""
    tokens, scores = beam_search(CausalRunner(model, cache_kwarg, state), limits, settings, processor)
    return tokens[:, :, 1:], scores
