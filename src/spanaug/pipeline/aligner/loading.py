"""A trained aligner directory of either kind: the paper's ``SpanAligner`` or the ``CrossAligner``."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from spanaug.core import modeldir
from spanaug.core.errors import ConfigError

log = logging.getLogger(__name__)


def aligner_kind(path: Path | str) -> str:
    """``cross`` or ``paper``: the ``kind`` saved in a trained aligner's config (the paper's has none)."""
    config = Path(path) / modeldir.CONFIG_FILE
    if not config.is_file():
        raise ConfigError(f"{path}: not a trained aligner (no {modeldir.CONFIG_FILE})")
    try:
        return str(json.loads(config.read_text(encoding="utf-8")).get("kind", "paper"))
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
        raise ConfigError(f"{config}: not a trained aligner's config ({exc})") from None


def load_aligner(path: Path | str, device: str | None = "auto", encoder: str | None = None) -> Any:
    """The trained aligner in ``path``, of either kind; both ``predict`` instances the same way.

    ``encoder`` overrides the paper aligner's saved encoder; a cross aligner carries its own tuned one.
    """
    if aligner_kind(path) == "cross":
        from spanaug.pipeline.aligner.cross_model import CrossAligner

        if encoder:
            log.warning("a cross aligner carries its own tuned encoder; ignoring the encoder override %r", encoder)
        return CrossAligner.from_pretrained(path, device=device)
    from spanaug.pipeline.aligner.model import SpanAligner

    return SpanAligner.from_pretrained(path, device=device, encoder=encoder)
