"""Device and dtype, chosen once per model."""

from __future__ import annotations

import torch


def choose_device(device: str | None = "auto") -> torch.device:
    """The device to run on: CUDA when present, unless the config names one."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def choose_dtype(device: torch.device, dtype: str | None = "auto") -> torch.dtype:
    """bf16 on GPUs that support it (fp16 otherwise), fp32 on CPU, unless the config names one."""
    if dtype not in (None, "auto"):
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32
