"""Commands and their options, generated from settings dataclasses with transformers' ``HfArgumentParser``.

A command is a function whose parameters are annotated with dataclasses: each dataclass's fields
become the command's options (``--beam-size``), with the field's default and help. Settings come
from :mod:`spanaug.core.config` (so the workflow and the CLI share their defaults); a command's
file paths come from a small dataclass of its own.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn

from spanaug.core.config import Runtime
from spanaug.core.errors import ConfigError
from spanaug.core.settings import BOUNDS, NAMES, Settings, check


def _nullable(kind: type) -> Callable[[str], Any]:
    """An option type that also reads ``null`` (how the workflow passes a setting that is off)."""

    def parse(text: str) -> Any:
        return None if text.lower() in ("null", "none") else kind(text)

    parse.__name__ = kind.__name__
    return parse


def nullable_bool(text: str) -> bool | None:
    """A ``bool | None`` option's value: true/false (yes/no, 1/0) or ``null``, as the workflow passes it."""
    lowered = text.lower()
    if lowered in ("null", "none"):
        return None
    if lowered in ("true", "yes", "y", "t", "1"):
        return True
    if lowered in ("false", "no", "n", "f", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true, false or null")


def json_value(text: str) -> Any:
    """An option holding JSON: inline text, or the path of a JSON file."""
    if text.lower() in ("null", "none"):
        return None
    inline = text.lstrip().startswith(("{", "["))
    if not inline and not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is neither JSON nor a JSON file")
    from spanaug.core.errors import SpanaugError
    from spanaug.core.files import parse_json, read_text

    try:  # strict JSON, and a file's errors name its line
        return parse_json(text, "the option's JSON") if inline else parse_json(read_text(text), text)
    except SpanaugError as exc:  # argparse turns this into its own one-line usage error
        raise argparse.ArgumentTypeError(str(exc)) from None


def _option_field(field: dataclasses.Field) -> dataclasses.Field:
    """The field as HfArgumentParser should see it: schema bounds and preflight marks left out of argparse, ``X | None``
    read with ``null``, lists of choices as lists of strings with choices, mappings as JSON."""
    field = copy.copy(field)
    metadata = {k: v for k, v in field.metadata.items() if k not in (BOUNDS, NAMES)}  # argparse's kwargs
    if isinstance(metadata.get("help"), str):  # argparse %-formats help: a literal "95%" would break --help
        metadata["help"] = metadata["help"].replace("%", "%%")
    tp = field.type
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and bool not in args:
        inner = next(a for a in args if a is not type(None))
        if inner is dict or typing.get_origin(inner) is dict or dataclasses.is_dataclass(inner):
            field.type = json_value
        elif typing.get_origin(inner) is None:
            field.type = _nullable(inner)
    elif origin in (typing.Union, types.UnionType):  # bool | None: argparse's bool reads no null
        field.type = nullable_bool
    elif origin is dict:
        field.type = json_value
    elif origin is list and typing.get_origin(args[0]) is Literal:
        field.type = list[str]
        metadata["choices"] = typing.get_args(args[0])
    elif dataclasses.is_dataclass(tp):
        raise TypeError(f"{field.name}: a nested section is no command-line option; give the command its dataclass")
    field.metadata = types.MappingProxyType(metadata)
    return field


def _parser_class() -> type:
    # Imported on first use: transformers' package import is not free, and --help needs it anyway.
    from transformers import HfArgumentParser

    class SettingsParser(HfArgumentParser):
        """``HfArgumentParser`` for settings dataclasses (see :func:`_option_field`)."""

        @staticmethod
        def _parse_dataclass_field(parser: argparse.ArgumentParser, field: dataclasses.Field) -> None:
            HfArgumentParser._parse_dataclass_field(parser, _option_field(field))

    return SettingsParser


@dataclasses.dataclass
class Command:
    """A ``spanaug`` command: its path of names, help, and the function that runs it."""

    path: tuple[str, ...]
    run: Callable[..., Any]
    help: str

    @property
    def settings(self) -> dict[str, type]:
        """Parameter name -> the dataclass whose fields are its options."""
        hints = typing.get_type_hints(self.run)
        return {name: hints[name] for name in inspect.signature(self.run).parameters}

    def invoke(self, namespace: argparse.Namespace) -> Any:
        kwargs = {name: settings_from(namespace, cls) for name, cls in self.settings.items()}
        for value in kwargs.values():
            if isinstance(value, Runtime):
                # The device first, before the command opens or creates any output: a job that was given
                # a GPU torch cannot use stops here with nothing written (core.devices).
                from spanaug.core.devices import choose_device

                choose_device(value.device)
        return self.run(**kwargs)


def settings_from(namespace: argparse.Namespace, cls: type) -> Any:
    """The settings dataclass ``cls`` made (and checked) from the parsed options of its fields."""
    value = cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls) if f.init})
    if not isinstance(value, Settings):
        # A command's own options (paths, a point's --fraction) are a plain @settings dataclass, which
        # checks nothing when made: their bounds, and finite numbers, are checked here alike.
        check(value)
    return value


COMMANDS: list[Command] = []


def command(*path: str, help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a function as ``spanaug <path>``; its annotated dataclass parameters give the options."""

    def register(run: Callable[..., Any]) -> Callable[..., Any]:
        COMMANDS.append(Command(tuple(path), run, help))
        return run

    return register


GROUP_HELP: dict[str, str] = {}


def group(name: str, help: str) -> None:
    """Help text of a group of commands (``spanaug align ...``)."""
    GROUP_HELP[name] = help


def build_parser(commands: list[Command], description: str) -> argparse.ArgumentParser:
    """The ``spanaug`` parser: one subparser per group and command."""
    parser_class = _parser_class()
    root = argparse.ArgumentParser(prog="spanaug", description=description)
    root.add_argument("-v", "--verbose", action="store_true", help="debug logging, and tracebacks with errors")
    subparsers: dict[tuple[str, ...], Any] = {
        (): root.add_subparsers(dest="command", required=True, parser_class=parser_class)
    }
    for cmd in commands:
        for depth in range(1, len(cmd.path)):
            prefix = cmd.path[:depth]
            if prefix not in subparsers:
                group_parser = subparsers[prefix[:-1]].add_parser(prefix[-1], help=GROUP_HELP.get(prefix[-1]))
                subparsers[prefix] = group_parser.add_subparsers(
                    dest=f"sub{depth}", required=True, parser_class=parser_class
                )
        p = subparsers[cmd.path[:-1]].add_parser(
            cmd.path[-1], help=cmd.help, description=cmd.help, dataclass_types=list(cmd.settings.values())
        )
        p.set_defaults(_command=cmd)
    return root


def parse_settings(text: str, classes: Sequence[type], option: str) -> tuple[Any, ...]:
    """Settings given to a command as another command's options, in one string: ``spanaug iterate
    --paraphrase="--beam-size 20 --mode beam"`` reads ``spanaug paraphrase``'s settings with their
    own names, defaults and checks. A bad one is an error that names ``option``."""
    import shlex

    class StrictParser(_parser_class()):  # type: ignore[misc]
        def error(self, message: str) -> NoReturn:  # argparse's own would exit with its usage
            raise ConfigError(f"{option}: {message}")

    parser = StrictParser(list(classes), prog=option)
    try:
        words = shlex.split(text)
        namespace, unknown = parser.parse_known_args(words)
    except ValueError as exc:  # shlex: an unclosed quote
        raise ConfigError(f"{option}: {exc}") from None
    if unknown:
        raise ConfigError(f"{option}: unknown option(s): {' '.join(unknown)}")
    try:
        return tuple(settings_from(namespace, cls) for cls in classes)
    except ConfigError as exc:
        raise ConfigError(f"{option}: {settings_error(exc)}") from None


def emit(obj: Any, path: str | None) -> None:
    """A command's JSON result: written to ``path`` (atomically), or printed when no path is given."""
    if path:
        from spanaug.core.files import write_json

        write_json(obj, path)
    else:
        print(json.dumps(obj, indent=2))


def settings_error(exc: ConfigError) -> str:
    """A ConfigError raised while a command's settings were made names the option (``--beam-size``)."""
    name, sep, rest = str(exc).partition(": ")
    return f"--{name.replace('_', '-')}: {rest}" if sep and name.isidentifier() else str(exc)
