"""``tidemark maintain FILE``: compact changelog and mirror tables, expire unneeded snapshots."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tidemark.app.commands.command import Command, add_file_argument
from tidemark.config import PaimonSink
from tidemark.errors import ConfigError, TerminalError, TransientError, first_line

if TYPE_CHECKING:
    from tidemark.app.pipeline import Pipeline
    from tidemark.config.plan import SinkTable


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
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
    from spark_jobs.maintenance import maintain_tables, tables_of
    from tidemark.app.output.maintenance_progress import MaintenanceProgress
    from tidemark.app.pipeline import Pipeline

    pipeline = Pipeline.open(args.file)
    if isinstance(pipeline.config.sink, PaimonSink):
        return _maintain_paimon(pipeline, args)
    sinks = _selected(pipeline.plan.sinks, args.table)
    jars = _spark_jars()
    # each table's result as it is done; on a terminal above a bar of tables done
    tables = [table for sink in sinks for table, _ in tables_of(sink, args.table)]
    progress = MaintenanceProgress(tables, sys.stdout)
    try:
        results = maintain_tables(
            sinks,
            pipeline.config.tidemark.catalog_name,
            pipeline.catalog_properties,
            jars,
            dry_run=args.dry_run,
            only=args.table,
            on_result=progress.finished,
        )
    finally:
        progress.close()
    failed = [result for result in results if result.error is not None]
    if failed:
        names = ", ".join(result.table for result in failed)
        raise TransientError(
            f"maintenance failed for {names} (see above); nothing was lost: run "
            "tidemark maintain again, at a quieter moment if a commit conflict was the cause"
        )
    return 0


def _maintain_paimon(pipeline: Pipeline, args: argparse.Namespace) -> int:
    """Paimon's own pass (``spark_jobs.paimon_maintenance``) on each sink table, keeping the
    snapshots the scheduler's pending windows read (when it keeps state)."""
    from spark_jobs.paimon_maintenance import maintain_paimon_table
    from spark_jobs.session import SparkSettings, build_session

    if args.dry_run:
        raise ConfigError(
            "--dry-run is for Iceberg tables: a Paimon table's pass plans and commits in one "
            "step (Paimon's own compaction); run it without --dry-run"
        )
    sinks = _selected(pipeline.plan.sinks, args.table)
    keep = pipeline.paimon_snapshots_needed()
    settings = SparkSettings(app_name="tidemark-maintain", jars=_spark_jars())
    spark = build_session(settings, pipeline.config.tidemark.catalog_name, None)
    failed = []
    for sink in sinks:
        if pipeline.sink_catalog.load_changelog(sink.changelog) is None:
            print(f"{sink.name}: not created yet (ingest creates it): nothing to do")  # noqa: T201
            continue
        try:
            result = maintain_paimon_table(
                spark, pipeline.catalog_properties, sink.name, keep_from=keep.get(sink.name)
            )
        except Exception as error:  # noqa: BLE001 - said per table; the others go on
            failed.append(sink.name)
            print(f"{sink.name}: failed: {first_line(error)}")  # noqa: T201
            continue
        print(  # noqa: T201 - the command's output
            f"{result.table}: {result.files_compacted} files of {result.buckets} buckets "
            f"compacted into {result.files_written}, {result.snapshots_expired} snapshots "
            f"expired (kept from {result.earliest_kept}), in {result.seconds:.1f} s"
        )
    if failed:
        raise TransientError(
            f"maintenance failed for {', '.join(failed)} (see above); nothing was lost: run "
            "tidemark maintain again"
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


COMMAND = Command(
    "maintain",
    "compact changelog and mirror tables, expire snapshots no window or ingest needs",
    _configure,
)
