"""Run one window of a pipeline file: the entry point for ``spark-submit`` and ``tidemark window``.

On a cluster (the master comes from ``spark-submit --master``, the jars from ``--jars``)::

    spark-submit --master spark://host:7077 --jars iceberg-spark-runtime.jar,postgresql.jar \\
        spark_jobs/run_window.py pipeline.yaml --task mirror:shop.orders --end 2026-03-01T13:05Z

Locally: ``python -m spark_jobs.run_window ...`` (``local[*]`` and the local stack's jars unless
``--master``/``--jars`` say otherwise). Prints the outcome as one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from spark_jobs.arguments import SparkTarget, WindowRequest, add_window_arguments
from spark_jobs.session import pipeline_session
from spark_jobs.window_jobs import JobOutcome, MergeOutcome, WindowJobs
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.config.plan import plan_from_source
from tidemark.errors import ConfigError, TidemarkError
from tidemark.windows import TaskKind, Window, WindowTask


def run_task(
    jobs: WindowJobs, task: WindowTask, window: Window, up_to_order: int | None = None
) -> MergeOutcome | JobOutcome:
    if task.kind == TaskKind.MIRROR:
        return jobs.merge_mirror(task.name, window, up_to_order)
    if up_to_order is not None:
        raise ConfigError("--up-to-order applies to a mirror task, not to a job")
    return jobs.run_job(task.name, window)


def outcome_json(outcome: MergeOutcome | JobOutcome) -> dict[str, Any]:
    def plain(value: Any) -> Any:
        if isinstance(value, Window):
            return {"start": value.start.isoformat(), "end": value.end.isoformat()}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple | list):
            return [plain(item) for item in value]
        return value

    return {"version": 1, "kind": type(outcome).__name__, **plain(outcome)}


def run_window(
    config: PipelineConfig, request: WindowRequest, target: SparkTarget
) -> MergeOutcome | JobOutcome:
    """Run the window ``request`` names, on a Spark session ``target`` says where to run."""
    task = request.task
    window = Window(request.start or request.end - config.window_of(task), request.end)
    session = pipeline_session(config, target, app_name=f"tidemark {task} {window}")
    jobs = WindowJobs(config, plan_from_source(config), session)
    return run_task(jobs, task, window, request.up_to_order)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_window", description=__doc__.splitlines()[0])
    add_window_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = load_pipeline(args.file)
        request = WindowRequest(args.task, args.end, args.start, args.up_to_order)
        outcome = run_window(config, request, SparkTarget.parse(args.master, args.jars))
        sys.stdout.write(json.dumps(outcome_json(outcome)) + "\n")
        return 0
    except TidemarkError as error:
        sys.stderr.write(f"run_window: error: {error}\n")
        return 2 if isinstance(error, ConfigError) else 1


if __name__ == "__main__":
    sys.exit(main())
