"""``tidemark release FILE --job NAME | --mirror TABLE``: run a held window again.

A window that failed more often than its job's ``retries`` is held: the scheduler alerts and
runs no later window of that task until a person has looked. Once the cause is fixed (the SQL,
a full disk), this lets the running scheduler try the window again at its next tick, with its
retries counted afresh.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from tidemark.app.commands.command import Command, add_file_argument, add_state_arguments


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    task = parser.add_mutually_exclusive_group(required=True)
    task.add_argument("--job", metavar="NAME", help="a job of the file's tidemark.jobs")
    task.add_argument("--mirror", metavar="TABLE", help="a sink table, whose mirror merge is held")
    add_state_arguments(parser)
    parser.set_defaults(handler=_release)


def _release(args: argparse.Namespace) -> int:
    from scheduler.gate import job_task, mirror_task
    from tidemark.app.pipeline import Pipeline, StateLocation
    from tidemark.errors import ConfigError, TidemarkError

    opened = Pipeline.open(args.file)
    config = opened.config
    pipeline = opened.name
    jobs = sorted(job.name for job in config.tidemark.jobs)
    if args.job is not None and args.job not in jobs:
        raise ConfigError(
            f"--job {args.job} is not a job of {args.file}; its jobs are: "
            f"{', '.join(jobs) or 'none'}"
        )
    task = job_task(args.job) if args.job is not None else mirror_task(args.mirror)
    store = opened.state_store(StateLocation(args.state_dsn, args.state_schema))
    released = store.release(pipeline, task, datetime.now(UTC))
    if released is None:
        held = sorted(str(run.task) for run in store.runs(pipeline) if run.held)
        raise TidemarkError(
            f"{task} of pipeline {pipeline!r} has no held window, so nothing was released; "
            f"held now: {', '.join(held) or 'none'} (tidemark status FILE shows every task)"
        )
    sys.stdout.write(
        f"Released {task}'s window [{released.start:%Y-%m-%d %H:%M}, "
        f"{released.end:%Y-%m-%d %H:%M}) of pipeline {pipeline!r}: the scheduler runs it at its "
        "next tick, with its retries counted afresh\n"
    )
    return 0


COMMAND = Command("release", "run a held window (failed past its retries) again", _configure)
