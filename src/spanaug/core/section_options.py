"""Config settings as the options of the command that takes them (``spanaug config options``).

A recipe stated in a config file is then run outside Snakemake from that file, not from a copy of it:
``make aligner-production`` trains ``aligner.train`` of config/config.yaml this way. A section gives
only the settings it changes from their defaults, which are the command's own defaults (the command's
options are made from the same dataclass), so the command line is short and means the same.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from spanaug.core.errors import ConfigError

#: The folder a config's data paths start with (``data/edinburgh-train.gold.json``).
DATA = "data/"


def lookup(config: Any, key: str) -> Any:
    """The setting or section at a dotted ``key`` of a settings dataclass (``aligner.train``)."""
    value = config
    for depth, name in enumerate(key.split(".")):
        if not dataclasses.is_dataclass(value) or name not in {f.name for f in dataclasses.fields(value)}:
            where = ".".join(key.split(".")[:depth]) or "the config"
            raise ConfigError(f"{key}: {where} has no setting {name!r}")
        value = getattr(value, name)
    return value


def _field_default(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def changes(section: Any) -> dict[str, Any]:
    """A section's settings that differ from their defaults; a nested section, its own changes."""
    out = {}
    for field in dataclasses.fields(section):
        value, default = getattr(section, field.name), _field_default(field)
        if dataclasses.is_dataclass(value) and dataclasses.is_dataclass(default):
            if nested := changes(value):
                out[field.name] = nested
        elif value != default:
            out[field.name] = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
    return out


def with_data_dir(value: Any, data_dir: str) -> Any:
    """``value`` with every path under ``data/`` read from ``data_dir`` instead (lists and mappings too)."""
    if isinstance(value, str) and value.startswith(DATA):
        return f"{data_dir.rstrip('/')}/{value[len(DATA) :]}"
    if isinstance(value, list):
        return [with_data_dir(v, data_dir) for v in value]
    if isinstance(value, dict):
        return {k: with_data_dir(v, data_dir) for k, v in value.items()}
    return value


def option(name: str, value: Any) -> list[str]:
    """One setting as command-line words, as the commands' parser reads them back."""
    flag = f"--{name.replace('_', '-')}"
    if value is None:
        return [flag, "null"]
    if isinstance(value, bool):
        return [flag] if value else [flag, "false"]
    if isinstance(value, list):
        if not value:  # no command line says "an empty list"; a default that is not empty stays
            raise ConfigError(f"{name}: an empty list cannot be given as an option")
        return [flag, *map(str, value)]
    if isinstance(value, dict):
        return [flag, json.dumps(value)]
    return [flag, str(value)]


def section_options(
    config: Any, keys: Iterable[str], skip: Iterable[str] = (), data_dir: str | None = None
) -> list[str]:
    """The options for ``keys`` of ``config`` (a filled run config): a setting named itself is always
    given; a section gives its changed settings, but those named in ``skip``."""
    skip = set(skip)
    words: list[str] = []
    for key in keys:
        value = lookup(config, key)
        settings = changes(value) if dataclasses.is_dataclass(value) else {key.rsplit(".", 1)[-1]: value}
        for name, setting in settings.items():
            if name in skip:
                continue
            words += option(name, with_data_dir(setting, data_dir) if data_dir else setting)
    return words
