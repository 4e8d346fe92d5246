"""The command-line arguments of the window entry points, declared once.

``spark-submit spark_jobs/run_window.py`` owns its parser, and ``tidemark window``, ``backfill``,
``schedule`` and ``run`` take the same arguments: both build them here. Imports no pyspark, so
``tidemark validate`` does not pay for it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tidemark.windows import TaskKind, WindowTask


@dataclass(frozen=True)
class SparkTarget:
    """Where the window jobs' Spark session runs, as ``--master`` and ``--jars`` say.

    ``master`` None: ``spark-submit``'s master when it started this process, else ``local[*]``.
    ``jars`` empty: ``spark-submit``'s, else the local stack's Iceberg runtime and JDBC driver.
    """

    master: str | None = None
    jars: tuple[Path, ...] = ()

    @classmethod
    def parse(cls, master: str | None, jars: str | None) -> SparkTarget:
        """From ``--master`` and ``--jars`` (comma-separated)."""
        return cls(master, tuple(Path(jar) for jar in (jars or "").split(",") if jar))


@dataclass(frozen=True)
class WindowRequest:
    """One window of one task, as ``--task``, ``--end``, ``--start`` and ``--up-to-order`` say."""

    task: WindowTask
    end: datetime
    #: None: the window's end minus the task's window length
    start: datetime | None = None
    #: merge changelog rows up to this ``_tm_order`` instead of finding it from watermarks
    up_to_order: int | None = None


def add_window_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE and one window of one task, then where Spark runs."""
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
    add_spark_arguments(parser)


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """``--master`` and ``--jars``: read back with ``SparkTarget.parse``."""
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
