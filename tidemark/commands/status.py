"""``tidemark status FILE``: per changelog table, its watermark, lag and last commit."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tidemark.commands import Command

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

    from tidemark.config.model import PipelineConfig
    from tidemark.config.plan import SinkTable


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")
    parser.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from tidemark.catalog import load_catalog
    from tidemark.config import load_pipeline
    from tidemark.config.inventory import read_tables
    from tidemark.config.model import reveal
    from tidemark.config.plan import build_plan

    config = load_pipeline(args.file)
    catalog = load_catalog(config.tidemark.catalog_name, reveal(config.sink.catalog_properties))
    plan = build_plan(config, read_tables(config.source.connection(), config.source.captures))
    lines = status_lines(config, plan.sinks, catalog, datetime.now(UTC))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def status_lines(
    config: PipelineConfig, sinks: Sequence[SinkTable], catalog: Catalog, now: datetime
) -> list[str]:
    """Per sink table its watermark, lag, rows, late changes and errors; then, when the
    pipeline publishes reports, per mirror and job its windows (also the demo's live view)."""
    from ingest.changelog.status import table_status

    lines = [
        f"{'sink table':<32} {'watermark':<29} {'lag':>9} {'rows':>10} {'late':>6} {'errors':>7}  "
        "position"
    ]
    for sink in sinks:
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
            f"{_seconds(lag):>9} {status.total_rows or 0:>10} {status.progress.late_rows:>6} "
            f"{status.errors:>7}  "
            f"{status.progress.position}"
        )
    if config.tidemark.reports is not None:
        lines += ["", *_windows(config, sinks, now)]
    return lines


def _windows(config: PipelineConfig, sinks: Sequence[SinkTable], now: datetime) -> list[str]:
    """Per mirror and job: the last window done, the next one, and why it waits."""
    from scheduler.state import StateMissingError
    from scheduler.status import describe_pipeline

    try:
        rows = describe_pipeline(config, sinks, now)
    except StateMissingError:
        return ["windows: no scheduler has run for this pipeline yet (tidemark schedule FILE)"]
    lines = [f"{'task':<40} {'last window done':<22} {'next window':<22} state"]
    for row in rows:
        done = row.last_succeeded.end.strftime("%Y-%m-%d %H:%M") if row.last_succeeded else "-"
        upcoming = row.next_window.end.strftime("%Y-%m-%d %H:%M") if row.next_window else "-"
        lines.append(f"{str(row.task):<40} {done:<22} {upcoming:<22} {row.condition}: {row.reason}")
    return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


COMMAND = Command("status", "watermark, lag and last commit of each changelog table", _configure)
