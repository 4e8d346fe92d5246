"""``tidemark demo``: the live shop pipeline, from an empty stack to a verified lake."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

from tidemark.app.commands.command import Command, stop_on_signals
from tidemark.errors import ConfigError
from tidemark.stack.endpoints import Storage


def _configure(parser: argparse.ArgumentParser) -> None:
    from tidemark.app.demo.runner import DEMO_PIPELINES

    parser.add_argument(
        "--duration",
        type=_minutes,
        default=timedelta(minutes=5),
        metavar="MINUTES",
        help="how long the shoppers write before the last windows run and verify (default: 5)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=20.0,
        metavar="TPS",
        help="shop transactions per second (default: 20)",
    )
    parser.add_argument(
        "--storage",
        choices=sorted(DEMO_PIPELINES),
        default="local",
        help="the lake: a JDBC catalog on local disk (configs/demo.yaml), or the REST catalog "
        "on the stack's S3 store (configs/demo_s3.yaml); default: local",
    )
    parser.add_argument(
        "--sink",
        choices=["iceberg", "paimon"],
        default="iceberg",
        help="the sink tables' format: Iceberg changelogs merged into mirrors, or Paimon "
        "primary-key tables (configs/demo_paimon.yaml, on local disk); default: iceberg",
    )
    parser.add_argument(
        "--file",
        type=Path,
        help="the pipeline YAML file (default: the one --storage names)",
    )
    parser.add_argument("--master", help="Spark master URL (default: a local session)")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from tidemark.app.demo.runner import (
        DEMO_PAIMON_PIPELINE,
        DEMO_PIPELINES,
        DemoSettings,
        run_demo,
    )
    from tidemark.app.demo.workload import WorkloadSettings

    workload = WorkloadSettings(
        transactions_per_second=args.rate,
        # the ALTER TABLE lands in the middle, so windows on both sides of it are seen
        alter_after_seconds=args.duration.total_seconds() / 2,
    )
    settings = DemoSettings(
        pipeline_file=args.file or demo_pipeline_file(args, DEMO_PIPELINES, DEMO_PAIMON_PIPELINE),
        duration=args.duration,
        workload=workload,
        spark_master=args.master,
    )
    interrupted = threading.Event()
    stop_on_signals(interrupted)
    return run_demo(settings, sys.stdout, sys.stdout.isatty(), interrupted)


def demo_pipeline_file(
    args: argparse.Namespace, by_storage: Mapping[Storage, Path], paimon: Path
) -> Path:
    if args.sink == "iceberg":
        return by_storage[args.storage]
    if args.storage != "local":
        raise ConfigError(
            "the Paimon demo runs on local disk only: leave out --storage, or use --sink iceberg"
        )
    return paimon


def _minutes(text: str) -> timedelta:
    try:
        minutes = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of minutes, got: {text!r}") from None
    if minutes <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 minutes, got: {text}")
    return timedelta(minutes=minutes)


COMMAND = Command(
    "demo", "run the live shop pipeline on the local stack, then verify it", _configure
)
