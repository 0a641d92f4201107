"""What every span-aligner kind offers: the protocol the pipeline, the CLI and the evaluations program to.

Two kinds implement it: the paper's ``SpanAligner`` (``kind = "paper"``, ``pipeline.aligner.model``)
and the cross encoder ``CrossAligner`` (``kind = "cross"``, ``pipeline.aligner.cross_model``). A
trained aligner is a model directory (``core.modeldir``) whose ``config.json`` records the kind;
``pipeline.aligner.loading.AutoAligner`` reads it and loads the right class. This module imports
neither kind (nor torch), so code that only passes aligners around stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, Self, runtime_checkable

from spanaug.pipeline.aligner.instances import Instance

#: One prediction: the target span (inclusive word indices; None: no counterpart) and its score.
Prediction = tuple[tuple[int, int] | None, float]

#: One instance's candidates: the target spans the aligner accepts, best first, each with its score
#: (empty: no counterpart), and the best score of all (what a null prediction reports).
Candidates = tuple[list[tuple[tuple[int, int], float]], float]


def best_predictions(candidates: Sequence[Candidates]) -> list[Prediction]:
    """Each instance's best accepted span (None when it has none) and the best score: ``predict``."""
    return [(accepted[0][0] if accepted else None, best) for accepted, best in candidates]


class AlignerModelConfig(Protocol):
    """The settings every kind's config has (``AlignerConfig``, ``CrossAlignerConfig``)."""

    @property
    def kind(self) -> str:
        """``paper`` or ``cross``: saved in ``config.json`` so a directory tells its kind."""

    @property
    def encoder(self) -> str:
        """The encoder's hub name or path."""

    @property
    def k(self) -> int:
        """Candidate spans differ from the source span's length by at most ``k`` words."""

    @property
    def threshold(self) -> float:
        """The null threshold (its meaning is the kind's: a minimum score, or a maximum null probability)."""

    @property
    def threshold_source(self) -> str:
        """How the threshold was set (dev, held-out pairs or untuned)."""


@runtime_checkable
class SpanAlignerModel(Protocol):
    """A trained (or trainable) span aligner of any kind, loaded with ``AutoAligner.from_pretrained``."""

    #: The kind's name, as its config saves it (``paper``, ``cross``).
    kind: str
    #: Whether every instance costs an encoder pass of its own (the cross kind encodes each span's
    #: marked pair), rather than sharing its sentence pair's encoding with the pair's other spans
    #: (the paper kind): where it does, placing fewer spans saves encoder work.
    encodes_each_span: bool

    @property
    def config(self) -> AlignerModelConfig:
        """The aligner's settings, saved as its directory's ``config.json``."""

    @classmethod
    def from_pretrained(cls, path: Path | str, device: str | None = "auto", dtype: str | None = "auto") -> Self:
        """The aligner saved in ``path``, on ``device`` (``auto``: the accelerator when there is one), its
        encoder in ``dtype`` for prediction (``auto``: bf16 on GPUs, fp32 on CPU)."""

    def save_pretrained(self, out: Path | str) -> Path:
        """Write the model directory ``out`` atomically (config.json, weights, a tuned encoder in ``encoder/``)."""

    def predict(
        self,
        instances: Sequence[Instance],
        batch_size: int | None = None,
        progress: bool = False,
        threshold: float | None = None,
    ) -> list[Prediction]:
        """(span or None, score) per instance; ``batch_size`` None: the kind's default; ``threshold``
        None: the config's."""

    def predict_candidates(
        self,
        instances: Sequence[Instance],
        top_k: int,
        batch_size: int | None = None,
        progress: bool = False,
        threshold: float | None = None,
    ) -> list[Candidates]:
        """Per instance, up to ``top_k`` accepted target spans, best first, and the best score: what a
        search over several spans' joint consistency (frame elements) chooses among. ``predict`` is
        its first span."""

    def limit_stats(self) -> dict[str, int]:
        """Inputs over the encoder's limit so far (for the align stage's statistics)."""
