"""A model's parameter count, read from its weight files' headers without loading the weights.

A safetensors file starts with an 8-byte little-endian length and a JSON header giving each
tensor's shape; a GGUF file lists each tensor's dimensions before its data. Either gives the count
in milliseconds, so the report can say how big the paraphraser is. A folder counts its top-level
``*.safetensors`` files (the shards of a sharded checkpoint among them); a hub name counts the
files already in the local Hugging Face cache (nothing is downloaded). PyTorch ``.bin`` weights say
nothing without unpickling them: the count is then unknown (None).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import BinaryIO

#: A safetensors header larger than this is no header (the format caps it at 100 MB).
MAX_HEADER = 100_000_000

_GGUF_MAGIC = b"GGUF"
#: Sizes of GGUF's fixed-width metadata value types (type id -> bytes); 8 is a string, 9 an array.
_GGUF_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def safetensors_parameters(path: Path | str) -> int:
    """The number of values in a safetensors file's tensors, from its header."""
    with open(path, "rb") as handle:
        (size,) = struct.unpack("<Q", _read(handle, 8))
        if size > MAX_HEADER:
            raise ValueError(f"{path}: a header of {size} bytes is no safetensors header")
        header = json.loads(_read(handle, size))
    return sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")


def gguf_parameters(path: Path | str) -> int:
    """The number of values in a GGUF file's tensors, from its tensor infos (metadata skipped)."""
    with open(path, "rb") as handle:
        if _read(handle, 4) != _GGUF_MAGIC:
            raise ValueError(f"{path}: not a GGUF file")
        _version, n_tensors, n_meta = struct.unpack("<IQQ", _read(handle, 20))
        for _ in range(n_meta):
            _string(handle)
            _skip_value(handle, _u32(handle))
        total = 0
        for _ in range(n_tensors):
            _string(handle)
            n_dims = _u32(handle)
            total += math.prod(struct.unpack(f"<{n_dims}Q", _read(handle, 8 * n_dims)))
            _read(handle, 12)  # the type (u32) and the data offset (u64)
        return total


def parameter_count(model: Path | str) -> int | None:
    """The parameters of a model folder, a safetensors or GGUF file, or a hub name in the local cache;
    None when its weights cannot be counted from headers (``.bin`` weights, nothing cached, a damaged
    header: the count is for the report, never a reason to fail)."""
    files = weight_files(model)
    if not files:
        return None
    try:
        return sum(gguf_parameters(f) if f.suffix == ".gguf" else safetensors_parameters(f) for f in files)
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None


def weight_files(model: Path | str) -> list[Path]:
    """The safetensors or GGUF files that hold ``model``'s weights (see :func:`parameter_count`)."""
    path = Path(model).expanduser()
    if path.is_file():
        return [path] if path.suffix in (".safetensors", ".gguf") else []
    if path.is_dir():
        return sorted(path.glob("*.safetensors"))
    return _cached(str(model))


def _cached(name: str) -> list[Path]:
    """A hub model's safetensors files in the local cache (its shards by the cached index)."""
    if name.count("/") != 1:
        return []
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return []
    index = try_to_load_from_cache(name, "model.safetensors.index.json")
    if isinstance(index, str):
        try:
            shards = sorted(set(json.loads(Path(index).read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError):
            return []
        found = [try_to_load_from_cache(name, shard) for shard in shards]
        return [Path(f) for f in found] if all(isinstance(f, str) for f in found) else []
    single = try_to_load_from_cache(name, "model.safetensors")
    return [Path(single)] if isinstance(single, str) else []


def describe_count(n: int) -> str:
    """A parameter count as people write it: 270M, 1.5B, 14.2K."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= size:
            value = n / size
            return f"{value:.3g}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(n)


def _u32(handle: BinaryIO) -> int:
    return struct.unpack("<I", _read(handle, 4))[0]


def _string(handle: BinaryIO) -> bytes:
    (n,) = struct.unpack("<Q", _read(handle, 8))
    return _read(handle, n)


def _skip_value(handle: BinaryIO, kind: int) -> None:
    """Past one metadata value of GGUF type ``kind`` (an array's items in one read when fixed-width)."""
    if kind == 8:
        _string(handle)
    elif kind == 9:
        item = _u32(handle)
        (n,) = struct.unpack("<Q", _read(handle, 8))
        if item in _GGUF_SIZES:
            handle.seek(n * _GGUF_SIZES[item], 1)
        else:
            for _ in range(n):
                _skip_value(handle, item)
    elif kind in _GGUF_SIZES:
        _read(handle, _GGUF_SIZES[kind])
    else:
        raise ValueError(f"unknown GGUF metadata type {kind}")


def _read(handle: BinaryIO, n: int) -> bytes:
    data = handle.read(n)
    if len(data) != n:
        raise ValueError(f"{getattr(handle, 'name', 'a weights file')}: cut short")
    return data
