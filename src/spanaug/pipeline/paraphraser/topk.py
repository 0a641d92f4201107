"""Each row's ``k`` largest values over a vocabulary, in two short passes instead of one long one.

Beam search picks each beam's ``2 x beams`` best next tokens out of the vocabulary at every step.
``torch.topk`` over 32,128 float32 logits a row selects by radix on a GPU: on an H100, with 1,840
rows (92 sentences x 20 beams), four counting passes and a gather over the whole row took 0.42 ms a
step, 12% of the step's kernel time. A row's ``k`` largest values all lie in the ``k`` chunks of
its columns whose maxima are largest (a value outside them has ``k`` chunk maxima above it), so
:func:`row_topk` reads the row once for the chunks' maxima and selects among ``k x chunk`` values.
The values are ``torch.topk``'s; where values tie, which of the tied columns comes first may differ.
"""

from __future__ import annotations

import torch

#: Columns per chunk: ``k = 40`` candidates then select among 5,120 values, not 32,128.
TOPK_CHUNK = 128


def row_topk(x: torch.Tensor, k: int, chunk: int = TOPK_CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` largest values of each row of ``x`` (``[..., V]``) and their columns, largest first, as
    ``torch.topk(x, k, dim=-1)``; rows too short for chunks to pay (fewer than ``2 k`` chunks), or
    ``chunk`` 0, go to ``torch.topk`` itself."""
    *lead, vocab = x.shape
    full = vocab // chunk if chunk > 0 else 0
    if full < 2 * k:
        return torch.topk(x, k, dim=-1)
    flat = x.reshape(-1, vocab)
    rows = flat.shape[0]
    maxima = flat[:, : full * chunk].view(rows, full, chunk).amax(-1)  # [rows, chunks]
    best = torch.topk(maxima, k, dim=-1).indices  # [rows, k]
    cols = (best[:, :, None] * chunk + torch.arange(chunk, device=x.device)).view(rows, k * chunk)
    # The columns past the last full chunk (fewer than ``chunk``) are always candidates. Every
    # candidate is then a real column, once: a row with fewer than k finite values fills its
    # top-k with -inf at columns that exist, as torch.topk does (padding the tail to a chunk of
    # its own let -inf ties land past the vocabulary's end, and an embedding lookup fail).
    if full * chunk < vocab:  # T5's 32,128 columns have none: no copy of the candidates then
        tail = torch.arange(full * chunk, vocab, device=x.device).expand(rows, -1)
        cols = torch.cat((cols, tail), dim=1)
    top, where = torch.topk(flat.gather(1, cols), k, dim=-1)
    return top.view(*lead, k), cols.gather(1, where).view(*lead, k)
