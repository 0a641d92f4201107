"""The ``spanaug`` entry point: parse a command line, run the command, turn user errors into one line."""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

from spanaug import cli
from spanaug.cli import (
    align,
    argid,
    augment,
    baseline,
    config,
    data,
    export,
    filtering,
    frameid,
    human,
    iterations,
    paraphraser,
    report,
    stats,
)
from spanaug.cli.options import COMMANDS, build_parser, settings_error
from spanaug.core import artifacts
from spanaug.core.errors import ConfigError, ConfigProblems, SpanaugError

log = logging.getLogger("spanaug")

#: The command modules, in the order ``spanaug --help`` lists them.
MODULES = (
    data,
    iterations,
    paraphraser,
    align,
    baseline,
    stats,
    filtering,
    human,
    augment,
    frameid,
    argid,
    report,
    export,
    config,
)


#: The exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except KeyboardInterrupt:
        # Writes are atomic (core.files), so an interrupted command leaves its destination as it
        # was: one line says so, where Python would print a traceback of the innermost loop.
        print("spanaug: interrupted (nothing half-written was left behind)", file=sys.stderr)
        return INTERRUPTED


def console() -> NoReturn:
    """The ``spanaug`` console script (and ``python -m spanaug.cli.main``): :func:`main`, then
    :func:`exit_now`. An exception that escapes ``main`` (argparse's exit, a bug) exits as usual."""
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """Exit with ``code``, without the interpreter's teardown once torch is loaded.

    Python's finalisation collects every object the collector tracks (some 400,000 once torch and
    transformers are imported and a model loaded) and tears their modules down: 0.8 s of
    ``spanaug align``'s 4.5 s on a 2-core CPU, paid by both commands of a GPU job while it holds
    its GPU. By the time ``main`` returns, what the command writes is closed and renamed into place
    (``core.files``), so only the logs and the standard streams are flushed here. Under a profiler,
    a tracer or a monitoring tool (cProfile, coverage, a debugger) the usual exit runs, so that they
    write their results."""
    if "torch" in sys.modules and not _observed():
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _observed() -> bool:
    """Whether a profiler, tracer or ``sys.monitoring`` tool (Python 3.12+) watches this process."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))


def run(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the command; a user error becomes one line and exit 2."""
    commands = sorted(COMMANDS, key=lambda c: [m.__name__ for m in MODULES].index(c.run.__module__))
    args = build_parser(commands, cli.__doc__).parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        with artifacts.writing_stage(" ".join(args._command.path)):  # recorded in what it writes
            args._command.invoke(args)
    except SpanaugError as exc:
        log.debug("traceback", exc_info=True)
        print(f"spanaug: error: {error_text(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        # Readers turn bad input into SpanaugErrors where the file is known; what still arrives here
        # is a file the OS refused, or a fault in a library or in spanaug itself.
        log.debug("traceback", exc_info=True)
        print(f"spanaug: error: {one_line(unexpected(args._command.path, exc))}", file=sys.stderr)
        return 1
    return 0


def unexpected(path: tuple[str, ...], exc: Exception) -> str:
    """One line for an exception no reader converted: the file when the OS names one, else the
    command and the exception, with the hint to rerun with -v."""
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return f"{' '.join(path)}: {type(exc).__name__}: {exc or '(no message)'} (rerun with -v for the traceback)"


def error_text(exc: SpanaugError) -> str:
    """A user error as printed: a list of problems one per line (as Snakemake's preflight prints it),
    anything else on one line."""
    if isinstance(exc, ConfigProblems):
        return str(exc)
    return one_line(settings_error(exc) if isinstance(exc, ConfigError) else str(exc))


def one_line(message: str) -> str:
    """An error message on one line (a library's message may span several)."""
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


if __name__ == "__main__":
    console()
