"""The ``spanaug`` entry point: parse a command line, run the command, turn user errors into one line."""

from __future__ import annotations

import logging
import sys

from spanaug import cli
from spanaug.cli import (align, augment, baseline, config, data, evaluation, export, frameid, human, iterations,
                         paraphraser, report)
from spanaug.cli.options import COMMANDS, build_parser, settings_error
from spanaug.core.errors import ConfigError, SpanaugError

log = logging.getLogger("spanaug")

#: The command modules, in the order ``spanaug --help`` lists them.
MODULES = (data, iterations, paraphraser, align, baseline, evaluation, human, augment, frameid, report, export, config)


def main(argv: list[str] | None = None) -> int:
    commands = sorted(COMMANDS, key=lambda c: [m.__name__ for m in MODULES].index(c.run.__module__))
    args = build_parser(commands, cli.__doc__).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        args._command.invoke(args)
    except SpanaugError as exc:
        message = settings_error(exc) if isinstance(exc, ConfigError) else str(exc)
        log.debug("traceback", exc_info=True)
        print(f"spanaug: error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
