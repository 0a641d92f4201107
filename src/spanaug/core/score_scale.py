"""What scored a table's outputs, and so what scale its aligner scores are on.

The named filters (``evaluation.filtering``) bound the aligner score, and the seed paper's bounds
(.95, .99) are on its aligner's raw sigmoid scores. A cross aligner with a fitted Platt scaling
(``core.calibration``) scores on another scale: the probability that the aligned span is exactly
right. Its scores hardly ever reach .95, so the paper's bounds would silently keep almost nothing.
So the files that hold aligner scores record what made them (:data:`~spanaug.core.artifacts.SCORERS_KEY`):
the align stage writes the record, selection, gathering and assembly carry it, and a reader reads
it back with :func:`read`. A file without it (another tool's, an older spanaug's) has no known scale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from spanaug.core import artifacts
from spanaug.core.errors import ArtifactError

#: The aligner's score is not a calibrated probability (the paper kind's sigmoid, or a cross aligner
#: trained without calibration): the paper's bounds apply as the paper wrote them.
RAW = "raw"
#: The aligner's score is the Platt-calibrated probability that the aligned span is exactly right.
CALIBRATED = "calibrated"
Scale = Literal["raw", "calibrated"]
SCALES: tuple[str, ...] = (RAW, CALIBRATED)


@dataclasses.dataclass(frozen=True)
class Scorers:
    """The aligner (its kind and score scale) and the paraphraser (its backend, when known) whose
    scores a table holds."""

    aligner_kind: str
    aligner_scale: Scale
    paraphraser: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def parse(cls, value: Any, path: Path | str) -> Scorers:
        """The record as a file holds it (a JSON object), checked."""
        fields = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(value, Mapping) or set(value) - fields:
            raise ArtifactError(f"{path}: its {artifacts.SCORERS_KEY} metadata is not a scorers record: {value!r}")
        kind, scale, paraphraser = value.get("aligner_kind"), value.get("aligner_scale"), value.get("paraphraser")
        if (
            not isinstance(kind, str)
            or scale not in SCALES
            or not (paraphraser is None or isinstance(paraphraser, str))
        ):
            raise ArtifactError(
                f"{path}: its {artifacts.SCORERS_KEY} metadata has aligner_kind {kind!r}, aligner_scale {scale!r} "
                f"(one of {', '.join(SCALES)}) and paraphraser {paraphraser!r}"
            )
        return cls(kind, scale, paraphraser)


def of_aligner(kind: str, calibration: Sequence[float] | None, paraphraser: str | None = None) -> Scorers:
    """The record of an aligner of ``kind`` whose config holds ``calibration`` (Platt parameters, or None)."""
    return Scorers(kind, CALIBRATED if calibration else RAW, paraphraser)


def read(path: Path | str) -> Scorers | None:
    """The record ``path`` holds; None for a file without one."""
    raw = artifacts.read_scorers(path)
    return None if raw is None else Scorers.parse(raw, path)


def agreed(paths: Sequence[Path | str]) -> Scorers | None:
    """The record every file of ``paths`` holds, when they all hold the same one; None otherwise (a
    file without it, or files scored by different aligners: no one scale describes the merge)."""
    records = [read(p) for p in paths]
    if not records or any(r is None for r in records) or len(set(records)) > 1:
        return None
    return records[0]


def describe(scorers: Scorers | None) -> str:
    """The scale in words, for messages."""
    if scorers is None:
        return "the table does not record its aligner's score scale, so the paper's raw bounds apply"
    if scorers.aligner_scale == CALIBRATED:
        return f"the {scorers.aligner_kind} aligner's scores are calibrated probabilities"
    return f"the {scorers.aligner_kind} aligner's scores are raw (the paper's scale)"
