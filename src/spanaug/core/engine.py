"""What decoded or aligned a shard: the backend, the device, the dtype and the decode path.

A paraphrase or align shard records it in its statistics JSON (flat, beside its counts) and in its
Parquet file's metadata (:data:`spanaug.core.artifacts.ENGINE_KEY`), so a slow or odd shard can be
traced to the card it ran on and to whether its CUDA graphs held. The record is defined here once;
writers build it (its values checked) and readers read it back through :meth:`EngineRecord.read`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spanaug.core.errors import InputError

#: How the steps ran: ``graphs`` (CUDA graphs of whole steps, every capture held), ``eager`` (op by
#: op: the CPU, the hf and ct2 backends, cuda_graphs off, the aligner) and ``fallback`` (graphs, but
#: some captures failed and their batches decoded eagerly).
DECODE_PATHS = ("graphs", "eager", "fallback")


@dataclasses.dataclass(frozen=True)
class EngineRecord:
    """One shard's engine. ``device`` is the hardware's name (``NVIDIA H100 80GB HBM3``, ``CPU, 8
    threads``); ``dtype`` the weights' (``bfloat16``) or CTranslate2's compute type."""

    backend: str
    device: str
    dtype: str
    decode_path: str = "eager"
    cuda_graph_captures: int = 0
    cuda_graph_fallbacks: int = 0

    def __post_init__(self) -> None:
        problem = _problem(dataclasses.asdict(self))
        if problem:
            raise ValueError(f"engine record: {problem}")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def read(cls, data: Mapping[str, Any], source: Path | str) -> EngineRecord | None:
        """The record among ``data``'s keys (a statistics JSON, or the Parquet metadata's object);
        None when it has none (written by an older spanaug). A damaged one is an error naming ``source``."""
        if not isinstance(data, Mapping) or "backend" not in data:
            return None
        values = {f.name: data.get(f.name, f.default) for f in dataclasses.fields(cls)}
        problem = _problem(values)
        if problem:
            raise InputError(source, None, f"its engine record is malformed: {problem}")
        return cls(**values)

    def describe(self) -> str:
        """``static on NVIDIA H100 80GB HBM3, bfloat16, graphs (1,234 captures, 0 fallbacks)``."""
        path = self.decode_path
        if path != "eager" or self.cuda_graph_captures or self.cuda_graph_fallbacks:
            path += f" ({self.cuda_graph_captures:,} captures, {self.cuda_graph_fallbacks:,} fallbacks)"
        return f"{self.backend} on {self.device}, {self.dtype}, {path}"


def _problem(values: Mapping[str, Any]) -> str | None:
    """What is wrong with a record's values, or None."""
    for key in ("backend", "device", "dtype"):
        if not isinstance(values.get(key), str) or not values[key]:
            return f"{key} must be a non-empty string, not {values.get(key)!r}"
    if values.get("decode_path") not in DECODE_PATHS:
        return f"decode_path must be one of {', '.join(DECODE_PATHS)}, not {values.get('decode_path')!r}"
    for key in ("cuda_graph_captures", "cuda_graph_fallbacks"):
        value = values.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{key} must be a count (an integer >= 0), not {value!r}"
    if values["decode_path"] == "fallback" and not values["cuda_graph_fallbacks"]:
        return "decode_path is fallback but cuda_graph_fallbacks is 0"
    return None


def dtype_name(dtype: Any) -> str:
    """A torch dtype's name without ``torch.`` (``bfloat16``), or a compute type's as it is."""
    return str(dtype).removeprefix("torch.")
