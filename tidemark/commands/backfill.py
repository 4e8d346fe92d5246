"""``tidemark backfill FILE --job NAME --from T1 --to T2``: run a past range's windows in order.

Also ``--mirror DB.TABLE`` for a mirror alone. Safe to repeat (``spark_jobs.backfill``). On a
terminal the progress is one updating line; otherwise a log line at most every few seconds.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from tidemark.commands import Command
from tidemark.commands.window import add_session_arguments, parse_instant
from tidemark.errors import ConfigError
from tidemark.windows import TaskKind, Window, WindowTask

logger = logging.getLogger(__name__)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--job", metavar="NAME", help="a job under tidemark.jobs")
    target.add_argument("--mirror", metavar="DB.TABLE", help="a sink table's mirror")
    parser.add_argument(
        "--from", dest="start", type=parse_instant, required=True, metavar="T1", help="UTC"
    )
    parser.add_argument(
        "--to", dest="end", type=parse_instant, required=True, metavar="T2", help="UTC"
    )
    add_session_arguments(parser)
    parser.set_defaults(handler=_backfill)


def _backfill(args: argparse.Namespace) -> int:
    # Imported here: `tidemark validate` must not pay for pyspark.
    from spark_jobs.backfill import backfill, windows_in
    from spark_jobs.run_window import session_for, task_window
    from spark_jobs.window_jobs import WindowJobs, plan_from_source
    from tidemark.config import load_pipeline

    if args.end <= args.start:
        raise ConfigError(f"--to ({args.end}) must be after --from ({args.start})")
    config = load_pipeline(args.file)
    task = (
        WindowTask(TaskKind.JOB, args.job) if args.job else WindowTask(TaskKind.MIRROR, args.mirror)
    )
    windows = list(windows_in(args.start, args.end, task_window(config, task)))
    session = session_for(config, args, app_name=f"tidemark backfill {task}")
    jobs = WindowJobs(config, plan_from_source(config), session)
    progress = Progress(len(windows), str(task), sys.stdout)
    try:
        backfill(jobs, task, windows, lambda done, window, _: progress.update(done, window))
    finally:
        progress.close()
    sys.stdout.write(f"backfill of {task}: {len(windows)} windows done\n")
    return 0


class Progress:
    """``[done/total] task window, elapsed`` as one updating line on a terminal, else as log
    lines at most every ``interval`` seconds (and for the last window)."""

    def __init__(
        self,
        total: int,
        label: str,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 10.0,
    ) -> None:
        self._total, self._label, self._stream = total, label, stream
        self._clock, self._interval = clock, interval
        self._started = self._last_log = clock()
        self._tty = stream.isatty()
        self._drawn = False

    def update(self, done: int, window: Window) -> None:
        now = self._clock()
        line = (
            f"[{done}/{self._total}] {self._label} {window} done, "
            f"{now - self._started:.0f} s elapsed"
        )
        if self._tty:
            self._stream.write("\r" + line + "\x1b[K")
            self._stream.flush()
            self._drawn = True
        elif done == self._total or now - self._last_log >= self._interval:
            logger.info("Backfill %s", line)
            self._last_log = now

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._drawn = False


COMMAND = Command("backfill", "run the windows of a past range in order", _configure)
