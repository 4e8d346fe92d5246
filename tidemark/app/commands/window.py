"""``tidemark window FILE --task mirror:DB.TABLE|job:NAME --end T``: run one window now.

The same as ``spark-submit spark_jobs/run_window.py``, in a local Spark session.
"""

from __future__ import annotations

import argparse
import json
import sys

from spark_jobs.arguments import SparkTarget, WindowRequest, add_window_arguments
from tidemark.app.commands.command import Command


def _configure(parser: argparse.ArgumentParser) -> None:
    add_window_arguments(parser)
    parser.set_defaults(handler=_window)


def _window(args: argparse.Namespace) -> int:
    # Imported here: `tidemark validate` must not pay for pyspark.
    from spark_jobs.run_window import outcome_json, run_window
    from tidemark.config import load_pipeline

    request = WindowRequest(args.task, args.end, args.start, args.up_to_order)
    outcome = run_window(
        load_pipeline(args.file), request, SparkTarget.parse(args.master, args.jars)
    )
    sys.stdout.write(json.dumps(outcome_json(outcome)) + "\n")
    return 0


COMMAND = Command(
    "window", "merge one window into a mirror, or run one window of a job", _configure
)
