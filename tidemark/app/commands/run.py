"""``tidemark run FILE``: ingest and the scheduler together, the usual way on one machine.

Ingest runs as a child process (``tidemark ingest FILE``), so a crash of either side leaves the
other's state intact: both resume exactly where their commits say. The scheduler runs here, on
one Spark session. When either stops, the other is stopped too, and the exit code says which
failed.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import threading

from spark_jobs.arguments import SparkTarget, add_spark_arguments
from tidemark.app.commands.command import (
    Command,
    add_file_argument,
    add_window_arguments,
    stop_on_signals,
)
from tidemark.app.commands.ui import add_page_arguments

logger = logging.getLogger(__name__)


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    add_window_arguments(parser)
    parser.add_argument(
        "--max-seconds", type=float, help="stop after this many seconds (for scripts and tests)"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve the scheduler's Prometheus metrics at http://127.0.0.1:PORT/metrics and "
        "ingest's at PORT+1 (docs/operations.md#metrics)",
    )
    parser.add_argument(
        "--ui-port",
        type=int,
        metavar="PORT",
        help="serve the status page at http://127.0.0.1:PORT/ (docs/operations.md#the-status-page)",
    )
    add_page_arguments(parser)
    add_spark_arguments(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from tidemark.app.commands.ui import serve_page
    from tidemark.app.pipeline import Pipeline, SchedulerOptions, run_scheduler

    pipeline = Pipeline.open(args.file)
    pipeline.require_reports()  # a file without them is refused before ingest starts
    command = [sys.executable, "-m", "tidemark.app.cli", "ingest", str(args.file)]
    command += ["--parent-pid", str(os.getpid())]
    if args.max_seconds is not None:
        command += ["--max-seconds", str(args.max_seconds)]
    if args.metrics_port is not None:  # ingest is a process of its own, with its own metrics
        command += ["--metrics-port", str(args.metrics_port + 1)]
    ingest = subprocess.Popen(command)
    stop = threading.Event()
    stop_on_signals(stop)
    watcher = threading.Thread(target=_stop_when_done, args=(ingest, stop), daemon=True)
    watcher.start()
    page = None
    try:
        if args.ui_port is not None:
            page = serve_page(
                [Pipeline.open(args.file)], args.ui_port, args.ui_hours, args.ui_refresh
            )
        options = SchedulerOptions(
            max_workers=args.max_workers,
            merge_processes=args.merge_processes,
            max_seconds=args.max_seconds,
            app_name="tidemark-run",
            metrics_port=args.metrics_port,
        )
        run_scheduler([pipeline], SparkTarget.parse(args.master, args.jars), stop, options)
    finally:
        if page is not None:
            page.close()
        if ingest.poll() is None:
            ingest.terminate()
        code = ingest.wait()
    if code not in (0, -15):
        sys.stderr.write(f"tidemark run: ingest stopped with exit code {code}\n")
        return 1
    return 0


def _stop_when_done(ingest: subprocess.Popen[bytes], stop: threading.Event) -> None:
    code = ingest.wait()
    if not stop.is_set():
        logger.error("Ingest stopped (exit code %d): stopping the scheduler", code)
        stop.set()


COMMAND = Command("run", "ingest and schedule one pipeline together", _configure)
