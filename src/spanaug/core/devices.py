"""Device and dtype, chosen once per model; a job that was given a GPU never runs on the CPU."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

import torch

from spanaug.core.errors import ConfigError

log = logging.getLogger(__name__)

#: What a scheduler or the user sets when a job was given GPUs: SLURM's GPU lists and count (set under
#: --gres=gpu:N or --gpus), and CUDA_VISIBLE_DEVICES (set by SLURM, by hand, or by a container runtime).
SLURM_GPU_VARIABLES = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE")
#: Values that hide every GPU or name none (what a CPU job's CUDA_VISIBLE_DEVICES holds; SLURM's
#: "(null)"), not an allocation.
NO_GPU_VALUES = ("", "-1", "NoDevFiles", "(null)")

#: (device, dtype) pairs this process has logged already: each is named once per job.
_announced: set[tuple[str, str]] = set()


def gpu_allocation(environ: Mapping[str, str] | None = None) -> str | None:
    """What says this job was given a GPU (``SLURM_JOB_GPUS=0``, ``CUDA_VISIBLE_DEVICES=1``), or None."""
    env = os.environ if environ is None else environ
    for name in SLURM_GPU_VARIABLES:
        value = env.get(name, "").strip()
        if name == "SLURM_GPUS_ON_NODE":
            if value.isdigit() and int(value) > 0:
                return f"{name}={value}"
        elif value and value not in NO_GPU_VALUES:
            return f"{name}={value}"
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() not in NO_GPU_VALUES:
        return f"CUDA_VISIBLE_DEVICES={visible}"
    return None


def torch_build() -> str:
    """torch's version and what it was built for (``2.11.0 (CUDA 13.0)``, ``2.11.0+cpu (CPU-only build)``)."""
    cuda = torch.version.cuda
    return f"{torch.__version__} ({f'CUDA {cuda}' if cuda else 'CPU-only build'})"


def _no_cuda(device: str, reason: str) -> ConfigError:
    """The one line of a job that must run on CUDA and cannot: where, which torch, which GPUs it sees."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return ConfigError(
        f"device: {device}: {reason}, but torch cannot use CUDA on host {socket.gethostname()} "
        f"(torch {torch_build()}, CUDA_VISIBLE_DEVICES={'unset' if visible is None else repr(visible)}); "
        "not running on the CPU: install a CUDA build of torch, or set device: cpu"
    )


def choose_device(device: str | None = "auto") -> torch.device:
    """The device to run on: CUDA when present, unless the config names one. A job that was given a
    GPU (:func:`gpu_allocation`) or that names ``cuda`` stops when torch cannot use CUDA, rather than
    run on the CPU, hours slower and with the GPU idle. A named device this machine lacks is a config
    error, before any model is loaded onto it (the loader would blame the model's files)."""
    if device in (None, "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        allocation = gpu_allocation()
        if allocation:
            raise _no_cuda("auto", f"this job was given a GPU ({allocation})")
        return torch.device("cpu")
    chosen = torch.device(device)
    if chosen.type == "cuda":
        if not torch.cuda.is_available():
            raise _no_cuda(str(device), "the config names CUDA")
        count = torch.cuda.device_count()
        if (chosen.index or 0) >= count:
            raise ConfigError(
                f"device: {device!r}, but {socket.gethostname()} has {count} CUDA device(s) (torch {torch_build()})"
            )
    if chosen.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"device: {device!r}, but MPS is not available on this machine")
    return chosen


def choose_dtype(device: torch.device, dtype: str | None = "auto") -> torch.dtype:
    """bf16 on GPUs that support it (fp16 otherwise), fp32 on CPU, unless the config names one; the
    choice is logged (:func:`log_device`)."""
    if dtype not in (None, "auto"):
        chosen = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    elif device.type == "cuda":
        chosen = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    else:
        chosen = torch.float32
    log_device(device, chosen)
    return chosen


def device_name(device: torch.device) -> str:
    """The device's hardware name: the GPU's (``NVIDIA H100 80GB HBM3``), else the kind and threads."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "cpu":
        return cpu_name(torch.get_num_threads())
    return device.type.upper()


def cpu_name(threads: int) -> str:
    """A CPU device by the threads it decodes with: ``CPU, 1 thread``, ``CPU, 8 threads``."""
    return f"CPU, {threads} thread{'s' if threads != 1 else ''}"


def log_device(device: torch.device, dtype: torch.dtype | str) -> None:
    """One INFO line naming the device a job's model runs on, its hardware and the dtype (once per
    pair per process), so every job log says where it ran."""
    key = (str(device), str(dtype))
    if key in _announced:
        return
    _announced.add(key)
    dtype_name = str(dtype).removeprefix("torch.")  # a torch dtype, or CTranslate2's compute type
    log.info("device: %s (%s), dtype: %s, torch %s", device, device_name(device), dtype_name, torch_build())
