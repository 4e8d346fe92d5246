"""``tidemark backfill FILE --job NAME --from T1 --to T2``: run a past range's windows in order.

Also ``--mirror DB.TABLE`` for a mirror alone. Safe to repeat (``spark_jobs.backfill``). On a
terminal the progress is a bar; otherwise a log line at most every few seconds.
"""

from __future__ import annotations

import argparse
import sys

from spark_jobs.arguments import SparkTarget, add_spark_arguments, parse_instant
from tidemark.app.commands.command import Command, add_file_argument
from tidemark.errors import ConfigError
from tidemark.windows import TaskKind, WindowTask


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--job", metavar="NAME", help="a job under tidemark.jobs")
    target.add_argument("--mirror", metavar="DB.TABLE", help="a sink table's mirror")
    parser.add_argument(
        "--from", dest="start", type=parse_instant, required=True, metavar="T1", help="UTC"
    )
    parser.add_argument(
        "--to", dest="end", type=parse_instant, required=True, metavar="T2", help="UTC"
    )
    add_spark_arguments(parser)
    parser.set_defaults(handler=_backfill)


def _backfill(args: argparse.Namespace) -> int:
    # Imported here: `tidemark validate` must not pay for pyspark.
    from spark_jobs.backfill import backfill, windows_in
    from tidemark.app.output.backfill_progress import BackfillProgress
    from tidemark.app.pipeline import Pipeline

    if args.end <= args.start:
        raise ConfigError(f"--to ({args.end}) must be after --from ({args.start})")
    pipeline = Pipeline.open(args.file)
    task = (
        WindowTask(TaskKind.JOB, args.job) if args.job else WindowTask(TaskKind.MIRROR, args.mirror)
    )
    windows = list(windows_in(args.start, args.end, pipeline.config.window_of(task)))
    target = SparkTarget.parse(args.master, args.jars)
    session = pipeline.spark_session(target, f"tidemark backfill {task}")
    jobs = pipeline.window_jobs(session)
    progress = BackfillProgress(len(windows), str(task), sys.stdout)
    try:
        backfill(jobs, task, windows, lambda done, window, _: progress.update(done, window))
    finally:
        progress.close()
    sys.stdout.write(f"backfill of {task}: {len(windows)} windows done\n")
    return 0


COMMAND = Command("backfill", "run the windows of a past range in order", _configure)
