"""``tidemark run FILE``: ingest and the scheduler together, the usual way on one machine.

Ingest runs as a child process (``tidemark ingest FILE``), so a crash of either side leaves the
other's state intact: both resume exactly where their commits say. The scheduler runs here, on
one Spark session. The run supervises its child (``tidemark.app.ingest_child``): a child that
dies is started again. The run stops when told to (SIGTERM, Ctrl-C), waiting for the windows
running, or when its scheduler fails; on an ingest error that would repeat, it ends at once
(``_abandon``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time

from spark_jobs.arguments import SparkTarget, add_spark_arguments
from tidemark.app.commands.command import (
    Command,
    add_file_argument,
    add_window_arguments,
    stop_on_signals,
)
from tidemark.app.commands.ui import add_page_arguments
from tidemark.app.exit_codes import ExitCode, describe
from tidemark.app.ingest_child import ChildCommand, IngestChild


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
    stop = threading.Event()
    stop_on_signals(stop)
    ingest = IngestChild(_ingest_command(args), stop, on_terminal=_abandon)
    ingest.start()
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
        ingest.stop()
    return ExitCode.CRASH if ingest.failed else ExitCode.OK


def _ingest_command(args: argparse.Namespace) -> ChildCommand:
    """The command of each ingest child: the time left of ``--max-seconds``, if given."""
    deadline = None if args.max_seconds is None else time.monotonic() + args.max_seconds

    def command() -> list[str] | None:
        line = [sys.executable, "-m", "tidemark.app.cli", "ingest", str(args.file)]
        line += ["--parent-pid", str(os.getpid())]
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            line += ["--max-seconds", f"{remaining:.3f}"]
        if args.metrics_port is not None:  # ingest is a process of its own, with its own metrics
            line += ["--metrics-port", str(args.metrics_port + 1)]
        return line

    return command


def _abandon(code: int) -> None:
    """Ingest stopped on an error that would stop the next one too: end the run now, as a kill
    would. The scheduler's lease goes with the process (PostgreSQL frees an advisory lock with
    its session), so a standby takes over at once. The windows running are abandoned, not
    awaited: the Spark JVM ends with its parent, the merge processes watch it. They stay
    recorded as running, and the next active scheduler runs them again, once in effect: the
    window jobs are idempotent per window (docs/architecture.md#exactly-once-and-restarts).
    Awaiting them would hold the lease meanwhile; letting the lease go first would leave a
    window's thread to record its end over the next scheduler's run of the same window."""
    sys.stderr.write(
        f"tidemark run: error: ingest stopped on an error that would repeat ({describe(code)}, "
        "its message above): stopping now, with the windows running left for the next "
        "scheduler to run again\n"
    )
    logging.shutdown()  # flushes the log handlers: the exit below skips every cleanup
    os._exit(code if code in (ExitCode.FAILURE, ExitCode.CONFIG) else ExitCode.FAILURE)


COMMAND = Command("run", "ingest and schedule one pipeline together", _configure)
