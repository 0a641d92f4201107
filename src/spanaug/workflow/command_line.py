"""The config files named on Snakemake's command line, read before Snakemake reads them.

Snakemake loads every ``--configfile`` while it turns its command line into settings, before any
workflow code runs (``ConfigSettings.__post_init__`` in ``snakemake/settings/types.py``, through
``load_configfile`` in ``snakemake/common/configfile.py``). There, a file that is not UTF-8 ends in a
``UnicodeDecodeError`` traceback, and malformed YAML in a message that names no file. Snakemake parses
the workflow profile (``workflow/profiles/default/config.yaml``) earlier, as a YTE template, whenever
it runs ``workflow/Snakefile``: that profile calls :func:`check_configfiles`, which reads each file as
``spanaug config check`` does and stops with one line naming the file and line, and exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from spanaug.core.errors import SpanaugError
from spanaug.core.overrides import read_config_file


def _is_snakemake_program(argv0: str) -> bool:
    """The process is the ``snakemake`` command (or ``python -m snakemake``), so ``sys.argv`` is its
    command line (not a program that calls Snakemake's API with its own arguments)."""
    path = Path(argv0)
    return path.name == "snakemake" or (path.name == "__main__.py" and path.parent.name == "snakemake")


def configfiles(argv: Sequence[str]) -> list[Path]:
    """The ``--configfile`` files of a Snakemake command line, parsed by Snakemake's own parser."""
    from snakemake.cli import get_argument_parser

    args, _ = get_argument_parser().parse_known_args(list(argv))
    return list(args.configfile or [])


def check_configfiles(argv: Sequence[str] | None = None) -> None:
    """Stop (one line, exit 2) at the first ``--configfile`` that is not a readable config file."""
    if argv is None:
        if not _is_snakemake_program(sys.argv[0]):
            return
        argv = sys.argv[1:]
    stop_at_unreadable(configfiles(argv))


def stop_at_unreadable(paths: Sequence[Path | str]) -> None:
    """Stop (one line, exit 2) at the first of ``paths`` that is not a readable config file. The
    Snakefile calls it on ``config/config.yaml`` before its ``configfile:`` directive reads it."""
    for path in paths:
        try:
            read_config_file(path)
        except SpanaugError as exc:
            print(f"spanaug: error: config: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
