"""Config files read, and combined with ``--config`` overrides as Snakemake combines them, with their types.

Beside core.config (which would pass the 700-line limit with them): merging several ``--configfile``
and typing the nested ``--config`` values that Snakemake leaves strings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spanaug.core.config import RunConfig, config_schema, load_run_config
from spanaug.core.errors import ConfigError, InputError
from spanaug.core.files import read_yaml


def merge_configs(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` merged into a copy of ``base``, nested mappings key by key (as Snakemake merges
    several ``--configfile``)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_configs(out[key], value)
        else:
            out[key] = value
    return out


def coerce_overrides(values: dict[str, Any], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """``--config`` overrides with their types restored where the schema says what they are.

    Snakemake reads a nested ``--config paraphraser='{beam_size: 4}'`` with YAML's BaseLoader, so every
    nested value arrives as a string (and ``null`` as the string "null"). A string where the schema
    allows no string is read again as YAML and kept when the result fits the schema; anything else
    is left for validation to report.
    """
    schema = config_schema() if schema is None else schema
    return {key: _coerce(value, _property(schema, key)) for key, value in values.items()}


def _property(schema: dict[str, Any], key: str) -> dict[str, Any]:
    for option in [schema, *schema.get("oneOf", [])]:
        if key in option.get("properties", {}):
            return option["properties"][key]
        if isinstance(option.get("additionalProperties"), dict):
            return option["additionalProperties"]
    return {}


def _coerce(value: Any, schema: dict[str, Any]) -> Any:
    import jsonschema
    import yaml

    if isinstance(value, dict):
        return {k: _coerce(v, _property(schema, k)) for k, v in value.items()}
    if isinstance(value, list):
        items = next((o["items"] for o in [schema, *schema.get("oneOf", [])] if "items" in o), {})
        return [_coerce(v, items) for v in value]
    if not isinstance(value, str) or not schema:
        return value
    validator = jsonschema.Draft202012Validator(schema)
    if value in ("null", "Null", "NULL", "~") and validator.is_valid(None):
        return None  # YAML's null, which BaseLoader leaves a string
    if validator.is_valid(value):
        return value
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    if isinstance(parsed, (dict, list)):
        parsed = _coerce(parsed, schema)
    # A value of the right type but out of bounds (beam_size: 0) is kept typed, so validation says
    # what a config file would hear ("0 is less than the minimum of 1"), not "'0' is not of type".
    right_type = all(error.validator != "type" for error in validator.iter_errors(parsed))
    return parsed if right_type else value


def read_config_file(path: Path | str) -> dict[str, Any]:
    """One config file as `config check`, the workflow and its profile read it: UTF-8 YAML (or JSON),
    no key given twice, a mapping of sections at the top. Errors name the file and line."""
    loaded = read_yaml(path) or {}
    if not isinstance(loaded, dict):
        raise InputError(path, None, f"a config file is a mapping of sections, not {type(loaded).__name__}")
    return loaded


def read_run_config(*paths: Path | str) -> RunConfig:
    """Config files merged in order (as Snakemake merges several ``--configfile``) and checked: the
    run's settings with every default filled in. A setting's error names the files and the key as
    the config spells it (``device``), not as a command's option (``--device``)."""
    raw: dict[str, Any] = {}
    for path in paths:
        raw = merge_configs(raw, read_config_file(path))
    try:
        return load_run_config(raw)
    except ConfigError as exc:
        raise ConfigError(f"{', '.join(map(str, paths))}: {exc}") from exc
