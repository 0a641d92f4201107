"""Device and dtype, chosen once per model."""

from __future__ import annotations

import torch

from spanaug.core.errors import ConfigError


def choose_device(device: str | None = "auto") -> torch.device:
    """The device to run on: CUDA when present, unless the config names one. A named device this
    machine lacks is a config error, before any model is loaded onto it (the loader would blame the
    model's files)."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    chosen = torch.device(device)
    if chosen.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (chosen.index or 0) >= count:
            raise ConfigError(
                f"device: {device!r}, but this machine has {count} CUDA device(s) (torch {torch.__version__})"
            )
    if chosen.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"device: {device!r}, but MPS is not available on this machine")
    return chosen


def choose_dtype(device: torch.device, dtype: str | None = "auto") -> torch.dtype:
    """bf16 on GPUs that support it (fp16 otherwise), fp32 on CPU, unless the config names one."""
    if dtype not in (None, "auto"):
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32
