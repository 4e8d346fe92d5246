"""``tidemark window FILE --task mirror:DB.TABLE|job:NAME --end T``: run one window now.

The same as ``spark-submit spark_jobs/run_window.py``, in a local Spark session.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from tidemark.commands import Command
from tidemark.windows import TaskKind, WindowTask


def _configure(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser)
    parser.set_defaults(handler=_window)


def _window(args: argparse.Namespace) -> int:
    # Imported here: `tidemark validate` must not pay for pyspark.
    from spark_jobs.run_window import run

    return run(args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")
    parser.add_argument(
        "--task",
        type=parse_task,
        required=True,
        metavar="mirror:DB.TABLE|job:NAME",
        help="a sink table's mirror merge, or a declared job",
    )
    parser.add_argument(
        "--end", type=parse_instant, required=True, metavar="TIME", help="the window's end (UTC)"
    )
    parser.add_argument(
        "--start",
        type=parse_instant,
        metavar="TIME",
        help="the window's start (default: its end minus the task's window length)",
    )
    parser.add_argument(
        "--up-to-order",
        type=int,
        metavar="N",
        help="merge changelog rows up to this _tm_order (a commit report's last_order) instead "
        "of finding it from the changelog's watermarks",
    )
    add_session_arguments(parser)


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--master",
        help="Spark master URL (default: spark-submit's, else local[*])",
    )
    parser.add_argument(
        "--jars",
        help="comma-separated jars for a local session (default: the local stack's Spark jars)",
    )


def parse_task(text: str) -> WindowTask:
    kind, _, name = text.partition(":")
    kinds = [k.value for k in TaskKind]
    if kind not in kinds or not name:
        raise argparse.ArgumentTypeError(
            f"must be mirror:DB.TABLE or job:NAME, got: {text!r} (kinds: {', '.join(kinds)})"
        )
    return WindowTask(TaskKind(kind), name)


def parse_instant(text: str) -> datetime:
    """ISO 8601 (``2026-03-01T13:05``, ``...Z``, ``...+02:00``; no zone means UTC) or epoch ms."""
    if text.isdigit():
        return datetime.fromtimestamp(int(text) / 1000, UTC)
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"must be a time like 2026-03-01T13:05Z (UTC unless it names a zone) or epoch ms, "
            f"got: {text!r}"
        ) from error
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


COMMAND = Command(
    "window", "merge one window into a mirror, or run one window of a job", _configure
)
