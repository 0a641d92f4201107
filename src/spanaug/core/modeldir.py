"""Trained model directories, one convention for every model of the project.

A model's trained head is an ``nn.Module`` with ``huggingface_hub.PyTorchModelHubMixin``: its config
dataclass goes to ``config.json`` and its weights to ``model.safetensors``; a tuned encoder, when there
is one, is saved beside them with ``save_pretrained`` (in ``encoder/``, :data:`ENCODER_DIR`). The
directory is written into a temporary folder that replaces it once complete, so a killed job never
leaves half a model.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spanaug.core.errors import ConfigError, InputError, SpanaugError
from spanaug.core.files import apply_umask, temporary_beside

#: The file a head's config is saved to (huggingface_hub's name).
CONFIG_FILE = "config.json"
#: Where a model with a tuned encoder saves it (with its tokenizer), inside the model directory.
ENCODER_DIR = "encoder"


@contextlib.contextmanager
def atomic_dir(path: Path | str) -> Iterator[Path]:
    """A temporary folder (see :func:`spanaug.core.files.temporary_beside`) that replaces ``path``
    when the block succeeds."""
    path = Path(path)
    with temporary_beside(path, directory=True) as tmp:
        yield tmp
        apply_umask(tmp, directory=True)
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)


def load_head(cls: Any, path: Path | str, device: Any, what: str) -> Any:
    """``cls.from_pretrained`` on a local directory: every weight required, on ``device``."""
    if not (Path(path) / CONFIG_FILE).is_file():
        raise ConfigError(f"{path}: not a trained {what} (no {CONFIG_FILE})")
    # The mixin prints where it loads from on standard output, where commands write their results.
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return cls.from_pretrained(str(path), map_location=str(device), strict=True)
    except SpanaugError as exc:  # a config.json whose settings are out of bounds
        raise InputError(Path(path) / CONFIG_FILE, None, str(exc)) from exc
    except Exception as exc:  # a damaged config.json or weights file, in whatever library reads it
        raise InputError(path, None, f"not a loadable {what} ({type(exc).__name__}: {exc})") from exc
