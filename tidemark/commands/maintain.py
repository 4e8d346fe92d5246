"""``tidemark maintain FILE``: compact changelog and mirror tables, expire unneeded snapshots."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tidemark.commands import Command
from tidemark.errors import ConfigError, TerminalError, TransientError

if TYPE_CHECKING:
    from spark_jobs.maintenance import TableResult
    from tidemark.config.plan import SinkTable


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")
    parser.add_argument(
        "--table",
        metavar="T",
        help="only this sink table (its changelog and mirror), or one changelog or mirror table",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="change nothing: show the files and the snapshots a run would expire",
    )
    parser.set_defaults(handler=_maintain)


def _maintain(args: argparse.Namespace) -> int:
    from tidemark.config import load_pipeline
    from tidemark.config.inventory import read_tables
    from tidemark.config.plan import build_plan

    config = load_pipeline(args.file)
    plan = build_plan(config, read_tables(config.source.connection(), config.source.captures))
    sinks = _selected(plan.sinks, args.table)
    from spark_jobs.maintenance import maintain_tables
    from tidemark.config.model import reveal

    results = maintain_tables(
        sinks,
        config.tidemark.catalog_name,
        reveal(config.sink.catalog_properties),
        _spark_jars(),
        dry_run=args.dry_run,
        only=args.table,
    )
    sys.stdout.write("".join(render(result) for result in results))
    failed = [result for result in results if result.error is not None]
    if failed:
        names = ", ".join(result.table for result in failed)
        raise TransientError(
            f"maintenance failed for {names} (see above); nothing was lost: run "
            "tidemark maintain again, at a quieter moment if a commit conflict was the cause"
        )
    return 0


def _selected(sinks: Sequence[SinkTable], table: str | None) -> list[SinkTable]:
    if table is None:
        return list(sinks)
    chosen = [s for s in sinks if table in (s.name, s.changelog, s.mirror)]
    if not chosen:
        known = ", ".join(
            name for s in sinks for name in (s.changelog, s.mirror) if name is not None
        )
        raise ConfigError(
            f"--table {table} is not a table of this pipeline; its tables are: {known or 'none'}"
        )
    return chosen


def _spark_jars() -> list[Path]:
    """The Iceberg runtime and JDBC driver jars that ``tidemark stack up`` resolved."""
    from tidemark.stack.settings import StackSettings
    from tidemark.stack.spark_runtime import SparkRuntime

    runtime = SparkRuntime(StackSettings.from_env())
    if not runtime.is_healthy():
        raise TerminalError(
            f"no Iceberg Spark runtime jars in {runtime.directory}: run `tidemark stack up` "
            "(or point TIDEMARK_HOME at the stack that has them)"
        )
    return runtime.jars()


def render(result: TableResult) -> str:
    """Two lines per table: what changed, and what history stays and why."""
    head = f"{result.table} ({result.kind})"
    if not result.exists:
        return f"{head}: no such table yet\n"
    before, after = result.files_before, result.files_after
    files = f"{before.data_files} data + {before.delete_files} delete files" if before else ""
    if result.error is not None:
        return f"{head}: {files}; FAILED: {result.error}\n"
    if after is not None and not result.dry_run:
        files += f" -> {after.data_files} + {after.delete_files}"
    verb = "would expire" if result.dry_run else "expired"
    line = (
        f"{head}: {files}; {result.snapshots_before} snapshots, {verb} {result.snapshots_expired}"
    )
    if not result.dry_run:
        line += f"; {result.compact_seconds + result.expire_seconds:.1f} s"
    return f"{line}\n    keeps: {_kept(result)}\n"


def _kept(result: TableResult) -> str:
    from tidemark.windows import from_epoch_ms

    retention = result.retention
    if retention is None:
        return "-"
    if retention.expire_before_ms is None:
        return f"every snapshot ({retention.reason})"
    since = from_epoch_ms(retention.expire_before_ms).isoformat(timespec="milliseconds")
    return f"snapshots from {since} on ({retention.reason})"


COMMAND = Command(
    "maintain",
    "compact changelog and mirror tables, expire snapshots no window or ingest needs",
    _configure,
)
