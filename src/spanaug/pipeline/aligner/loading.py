"""A trained aligner directory of any kind, loaded by the ``kind`` its ``config.json`` records
(transformers' ``Auto*`` style): ``AutoAligner.from_pretrained(path)``."""

from __future__ import annotations

import logging
from pathlib import Path

from spanaug.pipeline.aligner.interface import SpanAlignerModel
from spanaug.pipeline.aligner.kinds import aligner_kind, kind_entry, load_attribute

log = logging.getLogger(__name__)


def aligner_class(kind: str) -> type[SpanAlignerModel]:
    """The class of aligner ``kind`` (``paper``, ``cross``), imported only now (torch, transformers):
    the CLI reads a directory's kind, and reports a bad one, before any of that."""
    return load_attribute(kind_entry(kind).model)


class AutoAligner:
    """Loads a trained aligner directory as the class of the kind it records; never instantiated."""

    def __init__(self) -> None:
        raise TypeError("AutoAligner is not instantiated: use AutoAligner.from_pretrained(path)")

    @staticmethod
    def from_pretrained(
        path: Path | str, device: str | None = "auto", encoder: str | None = None, dtype: str | None = "auto"
    ) -> SpanAlignerModel:
        """The trained aligner in ``path``, of whichever kind its ``config.json`` records, for
        prediction: its encoder in ``dtype`` (auto: bf16 on GPUs, fp32 on CPU).

        ``encoder`` overrides the paper aligner's saved encoder; a cross aligner carries its own
        tuned one, so there it is ignored with a warning.
        """
        from spanaug.core.devices import choose_device  # torch: only once a model is loaded

        choose_device(device)  # a device this machine lacks is named as such, not as the model's fault
        kind = aligner_kind(path)
        cls = aligner_class(kind)
        if encoder and kind == "paper":
            # Only the paper kind takes the override (its scorer runs on any encoder of the saved width).
            return cls.from_pretrained(path, device=device, encoder=encoder, dtype=dtype)
        if encoder:
            log.warning("a %s aligner carries its own tuned encoder; ignoring the encoder override %r", kind, encoder)
        return cls.from_pretrained(path, device=device, dtype=dtype)
