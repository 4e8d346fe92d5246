"""From a pipeline file to a ready ingest run: onboarded tables, changelog tables, start point."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.catalog import Catalog

from ingest.assembler import Binding, ChangeAssembler
from ingest.changelog import ChangelogTable, open_changelog
from ingest.checks import run_startup_checks
from ingest.progress import TableProgress
from ingest.runner import IngestRunner, ReportSink
from ingest.schema import SourceTable, read_source_tables
from ingest.settings import IngestSettings
from ingest.start import start_position
from ingest.types import arrow_schema, row_converter
from tidemark.config.inventory import read_tables
from tidemark.config.model import PipelineConfig, reveal
from tidemark.config.plan import Plan, build_plan
from tidemark.errors import ConfigError
from tidemark.source import server_clock

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Onboarding:
    """The physical tables a pipeline reads and the changelog table each one feeds."""

    plan: Plan
    sources: dict[tuple[str, str], SourceTable]
    tables: dict[str, ChangelogTable]
    bindings: dict[tuple[str, str], Binding]

    def route(self, database: str, table: str) -> Binding | None:
        return self.bindings.get((database, table))


def onboard(config: PipelineConfig, catalog: Catalog) -> Onboarding:
    """Resolve the file against the server and open (or create) every changelog table."""
    source = config.source.connection()
    plan = build_plan(config, read_tables(source, config.source.captures))
    if not plan.ok:
        problems = [f"{r.table}: {r.reason}" for r in plan.refused] + list(plan.blockers)
        raise ConfigError(
            "the pipeline cannot start; 'tidemark plan' shows the same:\n" + "\n".join(problems)
        )
    if not plan.onboarded:
        raise ConfigError(
            f"'tables: {config.source.tables}' matches no table on {source.host}:{source.port}"
        )
    names = [_split(o.source) for o in plan.onboarded]
    with source.connect() as conn:
        sources = read_source_tables(conn, names)
    time_zone = config.source.server_time_zone
    booleans = config.source.treat_tinyint1_as_boolean
    tables: dict[str, ChangelogTable] = {}
    bindings: dict[tuple[str, str], Binding] = {}
    for sink in plan.sinks:
        members = [sources[_split(name)] for name in sink.sources]
        schema = _shared_schema(sink.name, members, booleans)
        tables[sink.name] = open_changelog(
            catalog, sink.changelog, schema, reveal(config.sink.table_properties)
        )
        for member in members:
            bindings[(member.database, member.name)] = Binding(
                sink=sink.name,
                key_columns=sink.key,
                convert=row_converter(member, time_zone, tinyint1_as_boolean=booleans),
            )
    return Onboarding(plan, sources, tables, bindings)


def build_runner(
    config: PipelineConfig,
    catalog: Catalog,
    reports: ReportSink | None,
    settings: IngestSettings,
) -> IngestRunner:
    onboarding = onboard(config, catalog)
    source = config.source.connection()
    progress = {sink: table.progress() for sink, table in onboarding.tables.items()}
    start = start_position(source, config.source.startup, progress)
    databases = sorted({database for database, _ in onboarding.bindings})
    run_startup_checks(source, databases=databases, resume=start)
    source_id = f"{source.host}:{source.port}"
    for sink, table in onboarding.tables.items():
        if progress[sink] is None:
            # Make the starting point durable before reading: a crash before the first real
            # commit must resume here, not at a new "latest" position.
            initial = TableProgress(start, watermark_ms=0, last_order=0, source=source_id)
            table.commit(table.schema.empty_table(), initial)
            progress[sink] = initial
    assembler = ChangeAssembler(
        router=onboarding.route,
        captures=config.source.captures,
        progress={sink: p for sink, p in progress.items() if p is not None},
        start=start,
        source=source_id,
        initial_watermark_ms=0,
        max_transaction_rows=settings.max_transaction_rows,
    )
    return IngestRunner(
        source=source,
        databases=databases,
        tables=onboarding.tables,
        assembler=assembler,
        reports=reports,
        settings=settings,
        server_clock=functools.partial(server_clock, source),
    )


def _shared_schema(sink: str, members: list[SourceTable], booleans: bool) -> pa.Schema:
    schemas = [arrow_schema(member, tinyint1_as_boolean=booleans) for member in members]
    for member, schema in zip(members[1:], schemas[1:], strict=True):
        if not schema.equals(schemas[0]):
            raise ConfigError(
                f"the tables routed to {sink} differ in their columns "
                f"({members[0].database}.{members[0].name} and {member.database}.{member.name}); "
                "merging different shapes arrives with schema evolution: for now give the shards "
                "the same columns, or route them to different sink tables"
            )
    return schemas[0]


def _split(table_id: str) -> tuple[str, str]:
    database, table = table_id.split(".", 1)
    return database, table
