"""``tidemark schedule FILE...``: fire each pipeline's windows as their inputs complete."""

from __future__ import annotations

import argparse
import threading
from datetime import timedelta
from pathlib import Path

from spark_jobs.arguments import SparkTarget, add_spark_arguments
from tidemark.app.commands.command import (
    Command,
    add_state_arguments,
    add_window_arguments,
    stop_on_signals,
)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="pipeline YAML files")
    parser.add_argument(
        "--executor",
        choices=["spark"],
        default="spark",
        help="what runs the windows (default: spark, the window jobs of spark_jobs)",
    )
    add_state_arguments(parser)
    add_window_arguments(parser)
    parser.add_argument(
        "--stall-minutes",
        type=float,
        default=10.0,
        help="log an ERROR when a table's watermark has not moved for this long",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics at http://127.0.0.1:PORT/metrics",
    )
    parser.add_argument(
        "--max-seconds", type=float, help="stop after this many seconds (for scripts and tests)"
    )
    add_spark_arguments(parser)
    parser.set_defaults(handler=_schedule)


def _schedule(args: argparse.Namespace) -> int:
    from tidemark.app.pipeline import SchedulerOptions, StateLocation, open_pipelines, run_scheduler

    pipelines = open_pipelines(args.files)
    options = SchedulerOptions(
        max_workers=args.max_workers,
        merge_processes=args.merge_processes,
        stall_after=timedelta(minutes=args.stall_minutes),
        metrics_port=args.metrics_port,
        max_seconds=args.max_seconds,
    )
    stop = threading.Event()
    run_scheduler(
        pipelines,
        SparkTarget.parse(args.master, args.jars),
        stop,
        options,
        StateLocation(args.state_dsn, args.state_schema),
        started=lambda: stop_on_signals(stop),
    )
    return 0


COMMAND = Command("schedule", "fire each window's mirror merges and jobs once complete", _configure)
