"""Splitting data into parts (train/dev/test) by whole groups: sentence pairs, documents, sentences."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def assign_parts(
    keys: Iterable[K], parts: Sequence[tuple[str, float | None]], order: str = "given", seed: int = 0
) -> dict[K, str]:
    """The part of each distinct key (all items sharing a key stay together).

    ``parts`` are taken in turn: a part with a share gets ``round(share * n)`` keys, the one part
    with share None gets the rest. ``order`` sets which keys come first: ``given`` (their first
    appearance), ``shuffle`` (sorted, then shuffled with ``seed``) or ``hash`` (by a stable hash of
    their text, so that neighbours in the input spread over the parts).
    """
    unique = list(dict.fromkeys(keys))
    if order == "shuffle":
        unique = sorted(unique)
        random.Random(seed).shuffle(unique)
    elif order == "hash":
        unique = sorted(unique, key=lambda k: hashlib.md5(str(k).encode()).hexdigest())
    elif order != "given":
        raise ValueError(f"order must be given, shuffle or hash, not {order!r}")
    sizes = {name: round(share * len(unique)) for name, share in parts if share is not None}
    rest = [name for name, share in parts if share is None]
    if len(rest) > 1:
        raise ValueError("at most one part takes the remainder")
    if rest:
        sizes[rest[0]] = max(0, len(unique) - sum(sizes.values()))
    out: dict[K, str] = {}
    start = 0
    for name, _ in parts:
        for key in unique[start : start + sizes[name]]:
            out[key] = name
        start += sizes[name]
    return out
