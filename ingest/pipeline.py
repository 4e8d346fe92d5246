"""From a pipeline file to a ready ingest run: onboarded tables, changelog tables, start point."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.catalog import Catalog

from ingest.assembler import Binding, ChangeAssembler
from ingest.bootstrap import Bootstrapper, BootstrapSettings, SinkBootstrap
from ingest.bootstrap_display import BootstrapDisplay, ProgressDisplay
from ingest.changelog import ChangelogTable, open_changelog
from ingest.checks import run_startup_checks
from ingest.error_table import errors_sink, load_error_table, open_error_table, sink_of
from ingest.progress import TableProgress
from ingest.runner import IngestRunner, ReportSink
from ingest.schema import SourceTable, read_source_tables
from ingest.schema_tracker import SchemaTracker, StructureFollower, TrackerOptions
from ingest.settings import IngestSettings
from ingest.start import start_position
from ingest.types import arrow_schema
from tidemark.config.inventory import read_tables
from tidemark.config.model import PipelineConfig, StartupMode, reveal
from tidemark.config.plan import Plan, build_plan
from tidemark.errors import ConfigError
from tidemark.source import current_position, server_clock

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Onboarding:
    """The physical tables a pipeline reads and the changelog table each one feeds."""

    plan: Plan
    sources: dict[tuple[str, str], SourceTable]
    tables: dict[str, ChangelogTable]
    bindings: dict[tuple[str, str], Binding]
    #: per physical source table
    trackers: dict[str, SchemaTracker]

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
    booleans = config.source.treat_tinyint1_as_boolean
    options = TrackerOptions(
        behavior=config.pipeline.schema_change_behavior,
        allowed=config.sink.schema_changes,
        server_time_zone=config.source.server_time_zone,
        tinyint1_as_boolean=booleans,
    )
    tables: dict[str, ChangelogTable] = {}
    bindings: dict[tuple[str, str], Binding] = {}
    trackers: dict[str, SchemaTracker] = {}
    for sink in plan.sinks:
        members = [sources[_split(name)] for name in sink.sources]
        schema = _shared_schema(sink.name, members, booleans)
        table = open_changelog(
            catalog, sink.changelog, schema, reveal(config.sink.table_properties)
        )
        tables[sink.name] = table
        tracker = SchemaTracker(source, table, options)
        for member in members:
            tracker.start(member, since="start-up")
            trackers[member.table_id] = tracker
            bindings[(member.database, member.name)] = Binding(
                sink=sink.name,
                key_columns=sink.key,
                convert=tracker.converter(member.table_id),
                observe=tracker.observer(member.table_id),
            )
    return Onboarding(plan, sources, tables, bindings, trackers)


def build_runner(
    config: PipelineConfig,
    catalog: Catalog,
    reports: ReportSink | None,
    settings: IngestSettings,
    display: BootstrapDisplay | None = None,
) -> IngestRunner:
    """Onboard, bootstrap what needs it (``scan.startup.mode`` initial or snapshot), and return
    a runner that streams from where every table is complete."""
    onboarding = onboard(config, catalog)
    source = config.source.connection()
    source_id = f"{source.host}:{source.port}"
    databases = sorted({database for database, _ in onboarding.bindings})
    error_tables = _existing_error_tables(catalog, onboarding)
    progress = {sink: table.progress() for sink, table in onboarding.tables.items()}
    to_bootstrap = _to_bootstrap(config, onboarding, progress)
    # an error table that lags its changelog table (a crash between their commits) is re-read
    progress.update({errors: table.progress() for errors, table in error_tables.items()})
    if to_bootstrap:
        known = [p.position for p in progress.values() if p is not None]
        resume = min(known) if known else current_position(source)
        run_startup_checks(source, databases=databases, resume=resume)
        bootstrapper = Bootstrapper(
            source,
            source_id,
            _bootstrap_settings(config, settings),
            display or ProgressDisplay(),
            open_errors=lambda sink: open_error_table(catalog, sink),
        )
        progress.update(bootstrapper.run(to_bootstrap))
        start = min(p.position for p in progress.values() if p is not None)
    else:
        start = start_position(source, config.source.startup, progress)
        run_startup_checks(source, databases=databases, resume=start)
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
        structure=StructureFollower(onboarding.trackers, config.pipeline.schema_change_behavior),
    )
    for tracker in onboarding.trackers.values():
        tracker.locate = lambda: str(assembler.last_seen)
    return IngestRunner(
        source=source,
        databases=databases,
        tables={**onboarding.tables, **error_tables},
        open_table=lambda errors: open_error_table(catalog, sink_of(errors)),
        assembler=assembler,
        reports=reports,
        settings=settings,
        server_clock=functools.partial(server_clock, source),
    )


def _existing_error_tables(catalog: Catalog, onboarding: Onboarding) -> dict[str, ChangelogTable]:
    """Error tables from earlier runs: their progress takes part in where reading resumes."""
    found = {}
    for sink in onboarding.tables:
        table = load_error_table(catalog, sink)
        if table is not None:
            found[errors_sink(sink)] = table
    return found


def _to_bootstrap(
    config: PipelineConfig,
    onboarding: Onboarding,
    progress: Mapping[str, TableProgress | None],
) -> list[SinkBootstrap]:
    """The sink tables whose existing rows must be read: all of a new pipeline in a bootstrap
    mode, tables added to a running one with scan.newly-added-table.enabled, and any whose
    bootstrap a crash interrupted."""
    bootstrap_mode = config.source.startup.mode in (StartupMode.INITIAL, StartupMode.SNAPSHOT)
    new_pipeline = all(p is None for p in progress.values())
    chosen = []
    for sink in onboarding.plan.sinks:
        table = onboarding.tables[sink.name]
        state = table.bootstrap()
        if state is not None and state.done:
            continue
        unfinished = state is not None
        fresh = progress[sink.name] is None and bootstrap_mode
        if unfinished or (fresh and (new_pipeline or config.source.scan_newly_added_tables)):
            members = [onboarding.sources[_split(name)] for name in sink.sources]
            versions = {
                m.table_id: onboarding.trackers[m.table_id].latest(m.table_id).version
                for m in members
            }
            chosen.append(SinkBootstrap(sink.name, table, members, versions))
    return chosen


def _bootstrap_settings(config: PipelineConfig, settings: IngestSettings) -> BootstrapSettings:
    return BootstrapSettings(
        chunk_size=config.source.snapshot_chunk_size,
        commit_rows=settings.flush_rows,
        max_rows_per_second=settings.snapshot_max_rows_per_second,
        parallelism=config.pipeline.parallelism,
        server_time_zone=config.source.server_time_zone,
        tinyint1_as_boolean=config.source.treat_tinyint1_as_boolean,
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
