"""A decoder-only model's key/value cache for beam search over prompts that each sentence's beams share.

transformers' ``DynamicCache`` grows by concatenation (every step copies every layer's whole cache
into a new tensor) and a beam reorder copies every row's whole cache again. With a few-shot prompt
of about 300 tokens and 20 beams, those copies of the same prompt, not the model, took most of a
beam-20 step on this project's 2-core CPU (Gemma 3 270M, int8). :class:`BeamCache` keeps the
prompt where it is:

- after :meth:`BeamCache.share_prefix` (a batch's prompts run, each repeated for its sentence's
  beams), a beam reorder, which stays within sentences, moves only the tokens added since;
- after :meth:`BeamCache.reserve`, each layer writes new tokens into room reserved behind its
  cache, and its keys and values are views of that room (a sliding-window layer only where the
  search cannot outgrow its window; otherwise it keeps concatenating).

Taking sentences out of the batch (``batch_select_indices``) moves every token, as before.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer


class ReservedRoom:
    """A cache layer mixin: new tokens are written into ``room_keys`` / ``room_values``
    (``[rows, heads, held + steps, dim]``) and ``keys`` / ``values`` are views of what is used."""

    room_keys: torch.Tensor
    room_values: torch.Tensor

    def reserve(self, steps: int) -> None:
        rows, heads, held, dim = self.keys.shape
        self.room_keys = self.keys.new_empty(rows, heads, held + steps, dim)
        self.room_values = self.values.new_empty(rows, heads, held + steps, self.values.shape[-1])
        self.room_keys[:, :, :held] = self.keys
        self.room_values[:, :, :held] = self.values
        self._use(held)

    def _use(self, used: int) -> None:
        self.keys, self.values = self.room_keys[:, :, :used], self.room_values[:, :, :used]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        held, new = self.keys.shape[-2], key_states.shape[-2]
        if held + new > self.room_keys.shape[-2]:
            raise RuntimeError(f"beam cache: {held + new} tokens outgrow the {self.room_keys.shape[-2]} reserved")
        self.room_keys[:, :, held : held + new] = key_states
        self.room_values[:, :, held : held + new] = value_states
        self._use(held + new)
        if hasattr(self, "cumulative_length"):  # a sliding-window layer's count of tokens seen
            self.cumulative_length += new
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        used = self.keys.shape[-2]
        self.room_keys, self.room_values = self.room_keys[indices], self.room_values[indices]
        self._use(used)

    def batch_repeat_interleave(self, repeats: int) -> None:
        used = self.keys.shape[-2]
        self.room_keys = self.room_keys.repeat_interleave(repeats, dim=0)
        self.room_values = self.room_values.repeat_interleave(repeats, dim=0)
        self._use(used)


class ReservedLayer(ReservedRoom, DynamicLayer):
    """A full-attention layer with reserved room."""


class ReservedSlidingLayer(ReservedRoom, DynamicSlidingWindowLayer):
    """A sliding-window layer with reserved room, for a search that stays inside its window."""


def _reserved_class(layer: object, steps: int) -> type | None:
    """The reserved-room class ``layer`` becomes for ``steps`` more tokens, or None (it stays)."""
    if type(layer) is DynamicLayer:
        return ReservedLayer
    if type(layer) is DynamicSlidingWindowLayer:
        held = layer.keys.shape[-2]
        # never cropped so far, and never will be: the window's mask then equals the full one
        if layer.cumulative_length == held and held + steps <= layer.sliding_window - 1:
            return ReservedSlidingLayer
    return None


class BeamCache(DynamicCache):
    """A ``DynamicCache`` for beam search over shared prompts (see the module's text). The rows a
    reorder moves are indexed (``keys[beam_idx]``), not ``index_select``-ed: on this project's CPU
    (torch 2.13) selecting 30 rows of a ``[30, 1, 300, 256]`` float32 tensor took 0.47 s with
    ``index_select`` and 0.016 s by indexing."""

    #: Per layer, the tokens a sentence's rows share (None: none; every reorder moves everything).
    shared: list[int] | None = None

    def share_prefix(self) -> None:
        """Mark the tokens now cached as the same in every row of a sentence."""
        self.shared = [layer.get_seq_length() for layer in self.layers]

    def reserve(self, steps: int) -> int:
        """Reserve room for ``steps`` more tokens in every layer that can take it; returns how many did."""
        reserved = 0
        for i, layer in enumerate(self.layers):
            keys = getattr(layer, "keys", None)
            kind = _reserved_class(layer, steps) if keys is not None and keys.dim() == 4 else None
            if kind is not None:
                room = kind.__new__(kind)  # the layer's state, and updates that write into the room
                room.__dict__.update(vars(layer))
                room.reserve(steps)
                self.layers[i] = room
                reserved += 1
        return reserved

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        for i, layer in enumerate(self.layers):
            keys = getattr(layer, "keys", None)
            if keys is None or not keys.numel():
                continue
            index = beam_idx.to(keys.device)
            held = keys.shape[-2]
            # a sliding-window layer may hold fewer tokens than it has seen: its newest are at the end
            moved = held if self.shared is None else min(held, layer.get_seq_length() - self.shared[i])
            if moved == held and not isinstance(layer, ReservedRoom):
                layer.keys, layer.values = keys[index], layer.values[index]
            elif moved > 0:  # in place: the shared tokens stay, and a reserved layer's views stay its room's
                keys[:, :, -moved:] = keys[index, :, -moved:]
                layer.values[:, :, -moved:] = layer.values[index, :, -moved:]
