"""Settings dataclasses: fields written once with their help and JSON-schema bounds, and the schema,
checks and construction generated from them (:mod:`spanaug.core.config` holds the run's sections).

Their names say what they are: ``*Settings``, how a command or a part of the run works (a config
section may be one, as ``StatsSettings`` is ``stats``); ``*Section``, a config section that gathers
such settings and nested sections (``AlignerSection``); ``*Config``, a model's architecture, saved
with the trained model as its ``config.json`` (``AlignerConfig``, ``CrossAlignerConfig``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Literal

from spanaug.core.errors import ConfigError

#: Field-metadata key of the JSON-schema keywords that bound a setting (minimum, maxItems, ...).
BOUNDS = "json_schema"

#: What every number setting must not be: NaN, +infinity or -infinity. YAML reads ``.nan`` and ``.inf``,
#: Python's float() reads ``nan`` and ``inf``, and JSON reads ``1e999`` as infinity; each passes every
#: bound (NaN compares false with all), so a learning rate of NaN would train a model of NaN weights.
#: JSON Schema has no "finite" keyword: a non-finite number is the one number that is above the
#: largest float, below the lowest, or (NaN) neither below nor above it, which these comparisons
#: say in any JSON-Schema validator (Snakemake's included), so the schema itself refuses them.
NOT_FINITE: dict[str, Any] = {
    "type": "number",
    "anyOf": [{"exclusiveMinimum": sys.float_info.max}, {"exclusiveMaximum": -sys.float_info.max}],
}


#: Field-metadata key of what a setting names that the preflight must find before any job runs:
#: ``encoder`` (a transformers encoder), ``paraphraser`` (a seq2seq model), ``aligner`` (a trained
#: aligner folder), ``release`` (a FrameNet release folder), ``lexicon`` (a lexicon JSON or a release).
#: ``spanaug config check`` checks every setting so marked (spanaug.workflow.preflight).
NAMES = "names"


def setting(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    factory: Callable[[], Any] | Any = dataclasses.MISSING,
    names: str | None = None,
    **bounds: Any,
) -> Any:
    """A dataclass field with its help text and JSON-schema bounds (``minimum=1``, ``minItems=1``, ...);
    ``names``: the kind of model or folder it names (:data:`NAMES`)."""
    metadata: dict[str, Any] = {"help": help}
    if names:
        metadata[NAMES] = names
    if bounds:
        metadata[BOUNDS] = bounds
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


def inherit(cls: type, name: str, **changes: Any) -> Any:
    """Another section's setting, reused with its default, help and bounds (``changes`` override them)."""
    source = next(f for f in dataclasses.fields(cls) if f.name == name)
    metadata = dict(source.metadata)
    if "help" in changes:
        metadata["help"] = changes.pop("help")
    default = changes.pop("default", source.default)
    factory = source.default_factory if default is dataclasses.MISSING else dataclasses.MISSING
    return dataclasses.field(default=default, default_factory=factory, metadata={**metadata, **changes})


def default_of(cls: type, name: str) -> Any:
    """A setting's default, for a library function whose argument stands for that setting (so the
    value is written once, in the dataclass)."""
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    value = _default(field)
    if value is dataclasses.MISSING:
        raise TypeError(f"{cls.__name__}.{name} has no default")
    return value


class Settings:
    """Base of every settings dataclass: values are checked against the generated schema when made; a
    nested section given as a mapping (an option holding JSON, such as ``--cross``) becomes its dataclass."""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for field in dataclasses.fields(self):
            tp, value = hints[field.name], getattr(self, field.name)
            section = next((a for a in typing.get_args(tp) or [tp] if dataclasses.is_dataclass(a)), None)
            if isinstance(value, dict) and section is not None:
                setattr(self, field.name, build(section, value, _default_instance(field)))
        check(self)


def settings(cls: type) -> type:
    """``@settings``: a keyword-only dataclass (so required settings may follow defaulted ones)."""
    return dataclasses.dataclass(kw_only=True)(cls)


def _type_schema(tp: Any) -> dict[str, Any]:
    """The JSON schema of a Python type hint."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"only X | None unions are settings: {tp}")
        schema = _type_schema(inner[0])
        if "enum" in schema:
            return {**schema, "enum": [*schema["enum"], None]}
        if "type" in schema:
            return {**schema, "type": [schema["type"], "null"]}
        return {"oneOf": [schema, {"type": "null"}]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1])}
    if dataclasses.is_dataclass(tp):
        # A copy: the field adds its own description and default, which must not leak into the cached
        # schema of the class (nor into another field of the same class, such as resources.cpu/gpu).
        return dict(schema_of(tp))
    if tp is Any:  # a command's JSON option of any shape (export card --run): its reader checks it
        return {}
    if tp is dict:
        return {"type": "object"}
    if tp is float:
        return {"type": "number", "not": copy.deepcopy(NOT_FINITE)}  # a copy: no YAML anchors in the schema
    names = {bool: "boolean", int: "integer", str: "string"}
    if tp in names:
        return {"type": names[tp]}
    raise TypeError(f"no JSON schema for {tp!r}")


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return dataclasses.MISSING
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


def _default_instance(field: dataclasses.Field) -> Any:
    """A section field's own default section (``resources.gpu``'s GPU defaults), or None when its
    default is not a section (then a section given for it starts from its class defaults)."""
    if field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        value = None if field.default is dataclasses.MISSING else field.default
    return value if dataclasses.is_dataclass(value) and not isinstance(value, type) else None


def _with_defaults(schema: dict[str, Any], values: Any) -> dict[str, Any]:
    """``schema`` of a section whose properties default to ``values`` (a field's own default section,
    as a dict), nested sections included; the schema itself when its defaults already agree."""
    properties = schema.get("properties")
    if not isinstance(values, dict) or not properties:
        return schema
    changed = {}
    for key, value in values.items():
        prop = properties.get(key)
        if prop is None:
            continue
        new = _with_defaults(prop, value)
        if new.get("default", dataclasses.MISSING) != value:
            new = {**new, "default": value}
        if new is not prop:
            changed[key] = new
    return {**schema, "properties": {**properties, **changed}} if changed else schema


@functools.cache
def schema_of(cls: type) -> dict[str, Any]:
    """The JSON schema of a settings dataclass: types, bounds, help as descriptions, defaults."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required = []
    for field in dataclasses.fields(cls):
        # A section field whose default differs from its class's defaults (resources.gpu: 1 GPU) has
        # them as its properties' defaults, so that a config naming one of its keys (Snakemake fills
        # in the rest from the schema) keeps the field's defaults for the others.
        prop = _with_defaults(_type_schema(hints[field.name]), _default(field))
        for key, bound in field.metadata.get(BOUNDS, {}).items():
            # Bounds of a list's items (``items={"maximum": 1}``) add to the items' own schema, so
            # that they stay finite numbers, rather than replace it.
            own = prop.get(key)
            prop[key] = {**own, **bound} if isinstance(own, dict) and isinstance(bound, dict) else bound
        if field.metadata.get("help"):
            prop["description"] = field.metadata["help"]
        default = _default(field)
        if default is dataclasses.MISSING:
            required.append(field.name)
        else:
            prop["default"] = default
        properties[field.name] = prop
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if cls.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    if required:
        schema["required"] = required
    return schema


def check(value: Any) -> None:
    """Check a settings dataclass against its schema; a violation is a ConfigError naming the setting."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema_of(type(value)))
    errors = sorted(validator.iter_errors(_as_json(value)), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(schema_error_message(errors[0], type(value).__name__))


def schema_error_message(error: Any, top: str = "config") -> str:
    """``key.path: message`` of a jsonschema error. A boolean where words are expected gets a hint:
    YAML 1.1 reads unquoted off/on/no/yes as false/true, so ``mode: off`` arrives as False."""
    where = ".".join(map(str, error.absolute_path)) or top
    if isinstance(error.instance, float) and not math.isfinite(error.instance):
        return f"{where}: {error.instance} is not a finite number (NaN and infinity are out of bounds)"
    message = error.message
    if isinstance(error.instance, bool) and error.validator in ("enum", "type"):
        words = {False: "off, no or false", True: "on, yes or true"}[error.instance]
        message += f" (YAML reads an unquoted {words} as {str(error.instance).lower()}: write it in quotes, e.g. 'off')"
    return f"{where}: {message}"


def _as_json(value: Any) -> Any:
    """A settings dataclass as plain JSON values (nested sections included, tuples as lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _as_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    return value


def build(cls: type, values: dict[str, Any], base: Any = None) -> Any:
    """Settings of ``cls`` from schema-valid ``values``, nested sections included. A setting that
    ``values`` leaves out takes its value in ``base`` when given (a field's own default section, as
    ``resources.gpu``'s), else its class default; a nested section given in part starts likewise
    from its field's own default."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            tp, value = hints[field.name], values[field.name]
            inner = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
            section = next((a for a in inner if dataclasses.is_dataclass(a)), None)
            if section and isinstance(value, dict):
                own = getattr(base, field.name) if base is not None else _default_instance(field)
                own = own if dataclasses.is_dataclass(own) else None
                value = build(section, value, own)
            kwargs[field.name] = value
        elif base is not None:
            kwargs[field.name] = getattr(base, field.name)
    return cls(**kwargs)
