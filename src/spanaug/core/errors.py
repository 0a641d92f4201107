"""Errors that name the input at fault, so users can find and fix the offending record."""

from __future__ import annotations

from pathlib import Path


class SpanaugError(Exception):
    """Base class: a problem the user can fix (bad input, bad config), shown without traceback."""


class InputError(SpanaugError):
    """Malformed input, located by file and line/row/record."""

    def __init__(self, path: Path | str, where: str | int | None, message: str):
        self.path = str(path)
        self.where = where
        loc = self.path if where is None else f"{self.path}, {_where(where)}"
        super().__init__(f"{loc}: {message}")


class ArtifactError(SpanaugError):
    """A Parquet artifact that is missing or does not match its schema."""


class ConfigError(SpanaugError):
    """A configuration value that is missing, unknown or out of range."""


def _where(where: str | int) -> str:
    return f"line {where}" if isinstance(where, int) else str(where)
