"""Trained model directories: weights and a JSON config, each written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spanaug.core.files import atomic_path


def save_model_dir(out: Path | str, weights_name: str, state_dict: Mapping[str, Any], config_name: str,
                   config: Mapping[str, Any]) -> Path:
    """A trained model's weights and its JSON config, each written atomically into ``out``."""
    import json

    import torch

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / weights_name) as tmp:
        torch.save(dict(state_dict), tmp)
    with atomic_path(out / config_name) as tmp:
        tmp.write_text(json.dumps(dict(config), indent=2))
    return out


def read_model_config(path: Path | str, config_name: str, what: str) -> dict[str, Any]:
    """The JSON config of a model directory; a clear error when ``path`` is not one."""
    import json

    from spanaug.core.errors import ConfigError

    config = Path(path) / config_name
    if not config.is_file():
        raise ConfigError(f"{path}: not a trained {what} (no {config_name})")
    return json.loads(config.read_text())


def load_weights(path: Path | str, device: Any) -> dict[str, Any]:
    import torch

    return torch.load(path, map_location=device, weights_only=True)
