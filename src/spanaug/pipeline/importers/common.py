"""What every importer shares: the import's statistics, span checks, the kept-row filter and the
frame-element item."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

from spanaug.core.errors import InputError


@dataclasses.dataclass
class ImportStats:
    """What an importer kept and skipped, written beside its Parquet output."""

    rows_read: int = 0
    rows_kept: int = 0
    discontiguous_skipped: int = 0
    too_long_filtered: int = 0
    max_tokens: int | None = None
    #: Kept rows whose input annotates frame elements (their ``frame_elements`` is not null).
    fe_annotated_rows: int = 0
    #: Overt FEs of the kept rows (a discontiguous FE counts once per piece).
    fe_overt: int = 0
    #: Null-instantiated FEs (CNI, DNI, INI) of the kept rows.
    fe_null_instantiated: int = 0
    #: Overt FEs that share a token with the trigger (incorporated FEs such as Degree = "strongest").
    fe_covering_trigger: int = 0
    #: FEs of one annotation in several pieces, kept split (one item per piece, the same name).
    fe_discontiguous: int = 0
    #: FrameNet XML FE labels skipped: overlapping an earlier FE of their annotation, or holding no token.
    fe_overlapping_skipped: int = 0
    fe_empty_skipped: int = 0

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        kept_or_long = self.rows_kept + self.too_long_filtered
        out["share_kept_after_length_filter"] = self.rows_kept / kept_or_long if kept_or_long else None
        return out


def check_span(tokens: list[str], start: int, end: int, path: Path | str, where: str | int) -> None:
    if not tokens:
        raise InputError(path, where, "empty sentence (no tokens)")
    if not (0 <= start <= end < len(tokens)):
        raise InputError(
            path,
            where,
            f"span [{start}, {end}] out of range for {len(tokens)} tokens (expected 0 <= start <= end < {len(tokens)})",
        )


def keep(row: dict[str, Any], stats: ImportStats, max_tokens: int | None) -> bool:
    stats.rows_read += 1
    if max_tokens is not None and len(row["tokens"]) > max_tokens:
        stats.too_long_filtered += 1
        return False
    stats.rows_kept += 1
    _count_fes(row, stats)
    return True


def _count_fes(row: dict[str, Any], stats: ImportStats) -> None:
    fes = row.get("frame_elements")
    if fes is None:
        return
    stats.fe_annotated_rows += 1
    overt = [fe for fe in fes if fe["null_type"] is None]
    stats.fe_overt += len(overt)
    stats.fe_null_instantiated += len(fes) - len(overt)
    stats.fe_covering_trigger += sum(fe["start"] <= row["span_end"] and row["span_start"] <= fe["end"] for fe in overt)
    pieces = Counter(fe["name"] for fe in overt)
    stats.fe_discontiguous += sum(n > 1 for n in pieces.values())


def frame_element(
    name: str,
    start: int | None = None,
    end: int | None = None,
    null_type: str | None = None,
    coreness: str | None = None,
) -> dict[str, Any]:
    """One item of a ``frame_elements`` list (:data:`spanaug.core.artifacts.FRAME_ELEMENT`)."""
    return {"name": name, "start": start, "end": end, "null_type": null_type, "coreness": coreness}
