"""``tidemark schedule FILE...``: fire each pipeline's windows as their inputs complete."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from tidemark.commands import Command
from tidemark.commands.state_options import add_state_arguments, state_settings
from tidemark.commands.window import add_session_arguments

if TYPE_CHECKING:
    from scheduler.executor import WindowExecutor
    from scheduler.service import PipelineRun
    from tidemark.config.model import PipelineConfig


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="pipeline YAML files")
    parser.add_argument(
        "--executor",
        choices=sorted(EXECUTORS),
        default="spark",
        help="what runs the windows (default: spark, the window jobs of spark_jobs)",
    )
    add_state_arguments(parser)
    parser.add_argument("--max-workers", type=int, default=4, help="windows running at once")
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
    add_session_arguments(parser)
    parser.set_defaults(handler=_schedule)


def _schedule(args: argparse.Namespace) -> int:
    from scheduler.engine import EngineSettings
    from scheduler.service import ServiceSettings, run
    from scheduler.state import StateStore
    from tidemark.config import load_pipeline
    from tidemark.errors import ConfigError

    configs = [load_pipeline(path) for path in args.files]
    names = [config.pipeline.name for config in configs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(
            f"pipeline.name {', '.join(duplicates)} is used by more than one file; the scheduler "
            "keeps each pipeline's windows under its name: give each file its own pipeline.name"
        )
    pipelines = [pipeline_run(config) for config in configs]
    executor = EXECUTORS[args.executor](configs, args)
    state = state_settings(args, configs[0])
    # APScheduler logs two INFO lines per job run: every tick, every second
    logging.getLogger("apscheduler.executors").setLevel(logging.WARNING)
    stop = threading.Event()
    stop_on_signals(stop)
    run(
        pipelines,
        StateStore(state),
        executor,
        settings=ServiceSettings(max_workers=args.max_workers),
        engine_settings=EngineSettings(stall_after=timedelta(minutes=args.stall_minutes)),
        stop=stop,
        max_seconds=args.max_seconds,
        metrics_port=args.metrics_port,
    )
    return 0


def pipeline_run(config: PipelineConfig) -> PipelineRun:
    """The schedule of one file: its tables from the source (as ``tidemark plan`` finds them)."""
    from scheduler.reports_consumer import ConsumerSettings
    from scheduler.service import PipelineRun
    from scheduler.spec import PipelineSchedule
    from tidemark.config.inventory import read_tables
    from tidemark.config.plan import build_plan
    from tidemark.errors import ConfigError

    if config.tidemark.reports is None:
        raise ConfigError(
            f"{config.path}: tidemark.reports is missing; the scheduler learns watermarks from "
            "the commit reports ingest publishes there (add tidemark.reports with "
            "kafka.bootstrap.servers)"
        )

    def planned() -> PipelineSchedule:
        source = config.source
        plan = build_plan(config, read_tables(source.connection(), source.captures))
        return PipelineSchedule.from_config(config, plan.sinks)

    schedule = planned()
    reports = ConsumerSettings.from_reports(config.tidemark.reports, schedule.pipeline)
    return PipelineRun(schedule, reports, replan=planned)


def _spark_executor(configs: Sequence[PipelineConfig], args: argparse.Namespace) -> WindowExecutor:
    """One Spark session (local, or the cluster ``--master`` names) for every window."""
    from spark_jobs.executor import SparkWindowExecutor
    from spark_jobs.run_window import session_for

    return SparkWindowExecutor(configs, session_for(configs[0], args, "tidemark-scheduler"))


#: executor name -> factory; the CLI lists the names
EXECUTORS: dict[str, Callable[[Sequence[PipelineConfig], argparse.Namespace], WindowExecutor]] = {
    "spark": _spark_executor
}


def stop_on_signals(stop: threading.Event) -> None:
    def handle(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


COMMAND = Command("schedule", "fire each window's mirror merges and jobs once complete", _configure)
