"""``tidemark status FILE``: per changelog table, its watermark, lag and last commit."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from tidemark.app.commands.command import Command, add_file_argument


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document for scripts (docs/operations.md#status-as-json)",
    )
    parser.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from tidemark.app.output.console import write
    from tidemark.app.output.status import status_view
    from tidemark.app.output.status_json import status_json
    from tidemark.app.pipeline import Pipeline

    now = datetime.now(UTC)
    status = Pipeline.open(args.file).status(now)
    if args.json:
        sys.stdout.write(status_json(status, now) + "\n")
    else:
        write(sys.stdout, status_view(status, now))
    # a monitor's check: a process that waits for a service is not healthy, though it runs
    return 1 if status.waiting() or status.unreadable else 0


COMMAND = Command("status", "watermark, lag and last commit of each changelog table", _configure)
