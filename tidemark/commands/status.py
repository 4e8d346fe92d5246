"""``tidemark status FILE``: per changelog table, its watermark, lag and last commit."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from tidemark.commands.command import Command, add_file_argument


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from tidemark.output.console import write
    from tidemark.output.status import status_view
    from tidemark.pipeline import Pipeline

    now = datetime.now(UTC)
    write(sys.stdout, status_view(Pipeline.open(args.file).status(now), now))
    return 0


COMMAND = Command("status", "watermark, lag and last commit of each changelog table", _configure)
