"""Degraded results: a stage that yields nothing, or runs in a weaker mode than configured, says so.

It logs a warning and records it in its JSON summary's ``warnings`` list, as ``{"kind", "message"}``:
``empty`` when the stage produced nothing (a filter that passes no output, an augmenter with no
examples), ``degraded`` when it ran but weaker than a user would assume (a skipped tagger, an
aligner scoring below the untrained baseline). The report's warnings page collects these lists, so
a run that silently means nothing is visible on one page.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

Kind = Literal["empty", "degraded"]


def warn(warnings: list[dict[str, Any]], kind: Kind, message: str, logger: logging.Logger | None = None) -> None:
    """Log ``message`` as a warning and append it to ``warnings``."""
    (logger or logging.getLogger("spanaug")).warning(message)
    warnings.append({"kind": kind, "message": message})
