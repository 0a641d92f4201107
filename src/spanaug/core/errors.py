"""Errors that name the input at fault, so users can find and fix the offending record."""

from __future__ import annotations

from collections.abc import Sequence
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


class ConfigProblems(ConfigError):
    """Several problems found at once (the preflight's): a summary line, then one problem per line,
    which the CLI prints as they are (other errors are joined onto one line)."""

    def __init__(self, summary: str, problems: Sequence[object]):
        self.problems = [str(p) for p in problems]
        super().__init__(problem_lines(summary, self.problems))


def problem_lines(summary: str, problems: Sequence[object]) -> str:
    """``summary:`` and an indented ``- problem`` line each (the CLI's and Snakemake's form)."""
    return f"{summary}:\n" + "\n".join(f"  - {p}" for p in problems)


def _where(where: str | int) -> str:
    return f"line {where}" if isinstance(where, int) else str(where)
