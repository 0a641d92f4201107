"""Out-of-memory recovery: a batch that runs out of GPU memory is split in halves and retried.

A decoder or aligner batch is sized by a budget estimated before it runs (the paraphraser's follows
the card's free memory), and a long batch, another process on the card or fragmentation can still
exhaust it. Without recovery the job stops, and a resubmission (``retries``) meets the same batch.
Every caller here computes each item of a batch independently of its batch-mates, so the halves'
results, concatenated, are the batch's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Result = TypeVar("Result")

#: torch's out-of-memory error (``torch.cuda.OutOfMemoryError`` is the same class; torch >= 2.5 names it
#: at the top level too).
OutOfMemoryError: type[Exception] = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


def free_cached_memory() -> None:
    """Give the failed call's cached blocks back, so the halves start from a clean allocator."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def split_on_oom(
    fn: Callable[[list[Item]], Sequence[Result]],
    items: Sequence[Item],
    what: str = "batch",
    logger: logging.Logger | None = None,
) -> list[Result]:
    """``fn(items)``, one result per item; on an out-of-memory error the items are split in halves and
    each half retried the same way, down to single items (an item that still runs out re-raises).
    One WARNING per call (``what``: the batch, as the log names it), however often it was split."""
    parts: list[int] = []
    results = _split(fn, list(items), parts)
    if len(parts) > 1:
        (logger or log).warning(
            "%s (%d items) ran out of GPU memory: split and retried as %d parts of %d to %d items",
            what,
            len(items),
            len(parts),
            min(parts),
            max(parts),
        )
    return results


def _split(fn: Callable[[list[Item]], Sequence[Result]], items: list[Item], parts: list[int]) -> list[Result]:
    try:
        results = list(fn(items))
    except OutOfMemoryError:
        if len(items) <= 1:
            raise
        # Retried after the except block: the exception's traceback holds the failed call's frames, and
        # with them its tensors, until the block ends.
        results = None
    if results is not None:
        parts.append(len(items))
        return results
    free_cached_memory()
    half = len(items) // 2
    return _split(fn, items[:half], parts) + _split(fn, items[half:], parts)
