"""``tidemark reset FILE``: start a pipeline over.

Drops what the pipeline made, so that its next run bootstraps every table again: its changelog,
mirror and error tables (Iceberg), or its primary-key and error tables (Paimon), the scheduler's
windows and reports of them, its consumer group and its commit report topic (kept when another
pipeline's scheduler reads it too). The tables that its jobs write are the users' own and stay.
Refused while an ingest or scheduler of the pipeline runs; asks for the pipeline's name first
unless ``--yes``.
"""

from __future__ import annotations

import argparse
import sys

from tidemark.app.commands.command import Command, add_file_argument, add_state_arguments


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument(
        "--yes", action="store_true", help="do not ask for the pipeline's name first"
    )
    add_state_arguments(parser)
    parser.set_defaults(handler=_reset)


def _reset(args: argparse.Namespace) -> int:
    from tidemark.app.pipeline import Pipeline, StateLocation
    from tidemark.errors import TidemarkError

    pipeline = Pipeline.open(args.file)
    location = StateLocation(args.state_dsn, args.state_schema)
    targets = pipeline.reset_targets(location)
    what = [f"  table {table}" for table in targets.tables]
    if targets.topic is not None:  # a pipeline without reports has no scheduler
        count = len(targets.changelogs)
        what.append(f"  the scheduler's windows and reports of {count} changelog(s)")
        what.append(f"  consumer group {targets.group} and topic {targets.topic}")
    sys.stdout.write(f"Resetting pipeline {pipeline.name!r} drops:\n" + "\n".join(what) + "\n")
    if not args.yes:
        if not sys.stdin.isatty():
            raise TidemarkError("not resetting: no terminal to confirm on; pass --yes to reset")
        sys.stdout.write(f"Type the pipeline's name ({pipeline.name}) to go on: ")
        sys.stdout.flush()
        if sys.stdin.readline().strip() != pipeline.name:
            raise TidemarkError("not resetting: the name typed is not the pipeline's")
    done = pipeline.reset(targets, location)
    sys.stdout.write(
        f"Reset pipeline {pipeline.name!r}: dropped {len(done.dropped)} table(s); its next run "
        "bootstraps every table again\n"
    )
    if done.topic_kept_for:
        sys.stdout.write(
            f"Kept topic {targets.topic}: consumer groups {', '.join(done.topic_kept_for)} "
            "read it too\n"
        )
    return 0


COMMAND = Command(
    "reset", "start a pipeline over: drop its lake tables, windows and reports", _configure
)
