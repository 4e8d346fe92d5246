"""What a subcommand module declares, and the arguments several of them share."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")


def add_state_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the scheduler's state lives: read back as ``StateLocation(args.state_dsn,
    args.state_schema)``."""
    parser.add_argument(
        "--state-dsn",
        help="libpq connection string of the state database "
        "(default: the catalog's PostgreSQL database, from the first file's sink)",
    )
    parser.add_argument(
        "--state-schema", help="schema of the scheduler's tables (default: tidemark_scheduler)"
    )


def add_window_arguments(parser: argparse.ArgumentParser) -> None:
    """How many windows and merges run at once (``SchedulerOptions``)."""
    parser.add_argument("--max-workers", type=int, default=4, help="windows running at once")
    parser.add_argument(
        "--merge-processes",
        type=_not_negative,
        help="worker processes for the mirror merges that need no Spark (default: one per "
        "usable core, at most --max-workers; 0: in the scheduler's own process)",
    )


def _not_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got: {value}")
    return value


def stop_on_signals(stop: threading.Event) -> None:
    """SIGINT and SIGTERM set ``stop``: the run ends at its next safe point."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)
