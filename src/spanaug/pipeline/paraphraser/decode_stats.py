"""A paraphrase stage's counts, and what decoded them."""

from __future__ import annotations

import dataclasses
from typing import Any

from spanaug.core.engine import EngineRecord


@dataclasses.dataclass
class DecodeStats:
    """A paraphrase stage's counts, and what decoded (set when its decoding ends)."""

    requests: int = 0
    outputs: int = 0
    violations_dropped: int = 0
    duplicates_dropped: int = 0
    requests_without_output: int = 0
    #: Decoder-only models: outputs refused as chatter, echoed prompt text or a copy of the source,
    #: and outputs kept once a leading prompt label ("Rewrite:") was stripped (.prompts.OutputCheck).
    chatter_dropped: int = 0
    labels_stripped: int = 0
    engine: EngineRecord | None = None

    def counts(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "engine"}

    def as_json(self) -> dict[str, Any]:
        """The statistics file's object: the counts and, beside them, the engine's fields
        (:class:`~spanaug.core.engine.EngineRecord`: backend, device, dtype, decode_path,
        cuda_graph_captures, cuda_graph_fallbacks)."""
        return {**self.counts(), **(self.engine.as_dict() if self.engine else {})}
