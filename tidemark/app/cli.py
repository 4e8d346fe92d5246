"""The ``tidemark`` command: the one place where errors become messages and exit codes."""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Sequence

from tidemark import __version__
from tidemark.app.commands import (
    backfill,
    demo,
    export_flink_cdc,
    ingest,
    maintain,
    plan,
    release,
    reset,
    run,
    schedule,
    stack,
    status,
    ui,
    validate,
    verify,
    window,
)
from tidemark.app.commands.command import Command
from tidemark.app.exit_codes import ExitCode
from tidemark.errors import ConfigError, TidemarkError, TransientError, first_line

#: in the order of ``--help``
COMMANDS: list[Command] = [
    stack.COMMAND,
    demo.COMMAND,
    validate.COMMAND,
    plan.COMMAND,
    ingest.COMMAND,
    schedule.COMMAND,
    run.COMMAND,
    status.COMMAND,
    ui.COMMAND,
    release.COMMAND,
    window.COMMAND,
    backfill.COMMAND,
    maintain.COMMAND,
    verify.COMMAND,
    reset.COMMAND,
    export_flink_cdc.COMMAND,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidemark",
        description="MySQL change data capture into Iceberg, merged every five minutes by Spark.",
    )
    parser.add_argument("--version", action="version", version=f"tidemark {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug logs, and tracebacks on errors"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.configure(subparsers.add_parser(command.name, help=command.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.handler(args))
    except TidemarkError as error:
        if args.verbose:
            traceback.print_exc(file=sys.stderr)
        # One line per problem: a configuration error may carry many.
        for line in str(error).splitlines() or [""]:
            sys.stderr.write(f"tidemark {args.command}: error: {line}\n")
        return _exit_code(error)
    except KeyboardInterrupt:
        sys.stderr.write(f"tidemark {args.command}: interrupted\n")
        return ExitCode.INTERRUPTED
    except Exception as error:  # a bug, or an error not classified yet: its traceback, always
        traceback.print_exc(file=sys.stderr)
        sys.stderr.write(f"tidemark {args.command}: unexpected error: {first_line(error)}\n")
        return ExitCode.CRASH


def _exit_code(error: TidemarkError) -> ExitCode:
    if isinstance(error, TransientError):
        return ExitCode.TRANSIENT
    return ExitCode.CONFIG if isinstance(error, ConfigError) else ExitCode.FAILURE


if __name__ == "__main__":
    sys.exit(main())
