"""Seed selection (all rows, or from scratch as in the paper's §6.1) and stable sharding."""

from __future__ import annotations

import zlib
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core.config import SeedSettings
from spanaug.core.errors import ConfigError


def select_seeds(table: pa.Table, cfg: SeedSettings) -> tuple[pa.Table, dict[str, Any]]:
    """Choose the seed rows: ``all``, or ``from_scratch`` as in the paper's §6.1.

    ``from_scratch`` takes the first ``n_frames`` frames (by name) with at least ``lus_per_frame``
    annotated LUs, the first LUs of each and the first annotations of each LU by creation date;
    rows without dates fall back on their order in the input.
    """
    if cfg.mode == "all":
        return table, {"mode": cfg.mode, "seeds": table.num_rows}
    dates = table.column("annotation_date").to_pylist()
    orders = table.column("order").to_pylist()
    uses_order = all(d is None for d in dates)
    key_rows = sorted(range(table.num_rows), key=lambda i: (dates[i] is None, dates[i] or "", orders[i]))
    rank = {row: r for r, row in enumerate(key_rows)}
    frames = table.column("frame").to_pylist()
    lus = table.column("lexical_unit").to_pylist()
    by_frame: dict[str, dict[str, list[int]]] = {}
    for i in key_rows:
        by_frame.setdefault(frames[i], {}).setdefault(lus[i], []).append(i)
    chosen: list[int] = []
    chosen_frames: list[str] = []
    for frame in sorted(by_frame):
        lu_rows = by_frame[frame]
        if len(lu_rows) < cfg.lus_per_frame:
            continue
        # LUs in the order of their first annotation.
        first_lus = sorted(lu_rows, key=lambda lu: rank[lu_rows[lu][0]])
        for lu in first_lus[: cfg.lus_per_frame]:
            chosen.extend(lu_rows[lu][: cfg.annotations_per_lu])
        chosen_frames.append(frame)
        if len(chosen_frames) == cfg.n_frames:
            break
    if not chosen:
        raise ConfigError(
            f"lus_per_frame: no frame has {cfg.lus_per_frame} lexical units among the {table.num_rows} "
            "imported rows, so from_scratch chose no seed"
        )
    seeds = table.take(pa.array(sorted(chosen), type=pa.int64()))
    report = {
        "mode": cfg.mode,
        "seeds": seeds.num_rows,
        "frames": chosen_frames,
        "ordering": "input order stands in for annotation dates" if uses_order else "annotation date",
    }
    return seeds, report


def shard_of(key: str, n_shards: int) -> int:
    """A stable shard index for a key (the same on every machine and run)."""
    return zlib.crc32(key.encode("utf-8")) % n_shards


def shard_table(table: pa.Table, key: str, n_shards: int) -> list[pa.Table]:
    """Split ``table`` into ``n_shards`` parts by a stable hash of column ``key``."""
    idx = pa.array([shard_of(k, n_shards) for k in table.column(key).to_pylist()], type=pa.int32())
    return [table.filter(pc.equal(idx, j)) for j in range(n_shards)]
