"""``tidemark status FILE``: per changelog table, its watermark, lag and last commit."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from tidemark.commands import Command


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")
    parser.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from ingest.status import table_status
    from tidemark.catalog import load_catalog
    from tidemark.config import load_pipeline
    from tidemark.config.inventory import read_tables
    from tidemark.config.model import reveal
    from tidemark.config.plan import build_plan

    config = load_pipeline(args.file)
    catalog = load_catalog(config.tidemark.catalog_name, reveal(config.sink.catalog_properties))
    source = config.source.connection()
    plan = build_plan(config, read_tables(source, config.source.captures))
    now = datetime.now(UTC)
    lines = [
        f"{'sink table':<32} {'watermark':<29} {'lag':>9} {'rows':>10} {'errors':>7}  position"
    ]
    for sink in plan.sinks:
        status = table_status(catalog, sink.name, sink.changelog)
        if status.progress is None:
            state = "no changelog table yet" if not status.exists else "no commits yet"
            lines.append(f"{sink.name:<32} {state}")
            continue
        waiting = status.state()
        if waiting is not None:
            lines.append(f"{sink.name:<32} {waiting}")
            continue
        lag = status.watermark_lag_seconds(now)
        watermark = datetime.fromtimestamp(status.progress.watermark_ms / 1000, UTC)
        lines.append(
            f"{sink.name:<32} {watermark.isoformat(timespec='milliseconds'):<29} "
            f"{_seconds(lag):>9} {status.total_rows or 0:>10} {status.errors:>7}  "
            f"{status.progress.position}"
        )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


COMMAND = Command("status", "watermark, lag and last commit of each changelog table", _configure)
