"""From a pipeline file to a ready ingest run: onboarded tables, changelog tables, start point."""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from ingest.binlog import process
from ingest.bootstrap.background import BackgroundBootstrap
from ingest.bootstrap.bootstrapper import Bootstrapper, BootstrapSettings, SinkBootstrap
from ingest.bootstrap.chunk_reads import EvenDistribution
from ingest.bootstrap.display import BootstrapDisplay, LogDisplay, MetricsDisplay
from ingest.changelog.catalogs import SinkCatalog
from ingest.changelog.error_table import ErrorTables, errors_sink, sink_of
from ingest.changelog.listing import CatalogListing, namespace_of
from ingest.errors import SchemaChangeStopError
from ingest.schema.evolution import promotes
from ingest.schema.source_tables import read_source_tables
from ingest.schema.structure_changes import Truncation
from ingest.schema.tracker import STARTED, SchemaTracker, StructureFollower, TrackerOptions
from ingest.schema.types import arrow_schema
from ingest.settings import IngestSettings
from ingest.startup.checks import run_startup_checks
from ingest.startup.start_points import start_position
from ingest.stream.assembler import Binding, ChangeAssembler
from ingest.stream.runner import Clock, IngestRunner, ReportSink
from tidemark.config.inventory import read_tables
from tidemark.config.model import PaimonSink, PipelineConfig, StartupMode, reveal
from tidemark.config.plan import Plan, SinkTable, build_plan
from tidemark.contracts.progress import TableProgress
from tidemark.contracts.schema_history import SchemaVersion, versions_property
from tidemark.contracts.source_tables import SourceTable
from tidemark.errors import ConfigError
from tidemark.metrics import IngestMetrics
from tidemark.sinks.protocols import ChangelogWriter, SinkTableSpec
from tidemark.source import current_position, server_clock

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Onboarding:
    """The physical tables a pipeline reads and the changelog table each one feeds."""

    plan: Plan
    sources: dict[tuple[str, str], SourceTable]
    tables: dict[str, ChangelogWriter]
    bindings: dict[tuple[str, str], Binding]
    #: per physical source table
    trackers: dict[str, SchemaTracker]
    #: per sink table: its members share one (a lookup, not a scan of every binding per sink)
    sink_trackers: dict[str, SchemaTracker] = dataclasses.field(default_factory=dict)

    def route(self, database: str, table: str) -> Binding | None:
        return self.bindings.get((database, table))


def onboard(config: PipelineConfig, catalog: SinkCatalog, threads: int = 1) -> Onboarding:
    """Resolve the file against the server and open (or create) every changelog table, up to
    ``threads`` at once: on a REST catalog each is a few round trips, and a thousand of them
    one after the other took 16 s (``bench/scale_bench.py``, issue 44)."""
    source = config.source.connection
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
    onboarding = Onboarding(plan, sources, {}, {}, {})
    namespaces = {namespace_of(sink.changelog) for sink in plan.sinks}
    listing = CatalogListing(catalog, namespaces)
    for namespace in sorted(namespaces):  # first, one by one: two creating one would clash
        if not listing.has_namespace(namespace):
            catalog.create_namespace_if_not_exists(namespace)
            listing.add_namespace(namespace)

    def open_table(sink: SinkTable) -> tuple[str, ChangelogWriter]:
        members = [sources[_split(name)] for name in sink.sources]
        return sink.name, _open_table(config, catalog, sink, members, listing)

    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="onboard") as pool:
        onboarding.tables.update(pool.map(open_table, plan.sinks))
    for sink in plan.sinks:
        members = [sources[_split(name)] for name in sink.sources]
        _onboard_sink(onboarding, config, catalog, sink, members, listing)
    return onboarding


def _tracker_options(config: PipelineConfig) -> TrackerOptions:
    return TrackerOptions(
        behavior=config.pipeline.schema_change_behavior,
        allowed=config.sink.schema_changes,
        server_time_zone=config.source.server_time_zone,
        tinyint1_as_boolean=config.source.treat_tinyint1_as_boolean,
    )


def _onboard_sink(
    onboarding: Onboarding,
    config: PipelineConfig,
    catalog: SinkCatalog,
    sink: SinkTable,
    members: list[SourceTable],
    listing: CatalogListing | None = None,
) -> None:
    """Open (or create) ``sink``'s changelog table and route ``members`` to it; ``listing``
    says which tables exist (without it, the catalog is asked)."""
    table = onboarding.tables.get(sink.name)
    if table is None:
        table = onboarding.tables[sink.name] = _open_table(config, catalog, sink, members, listing)
    tracker = onboarding.sink_trackers.get(sink.name)
    if tracker is None:
        tracker = SchemaTracker(config.source.connection, table, _tracker_options(config))
        onboarding.sink_trackers[sink.name] = tracker
    for member in members:
        tracker.start(member, since=STARTED)
        onboarding.trackers[member.table_id] = tracker
        onboarding.sources[(member.database, member.name)] = member
        onboarding.bindings[(member.database, member.name)] = Binding(
            sink=sink.name,
            key_columns=sink.key,
            conversion=tracker.conversion(member.table_id),
            observe=tracker.observer(member.table_id),
        )


def _open_table(
    config: PipelineConfig,
    catalog: SinkCatalog,
    sink: SinkTable,
    members: list[SourceTable],
    listing: CatalogListing | None,
) -> ChangelogWriter:
    """``sink``'s changelog table, created if it does not exist."""
    booleans = config.source.treat_tinyint1_as_boolean
    schema = _widest_schema(sink.name, members, booleans)
    # a new table is created with its members' first schema versions, which the trackers
    # would otherwise commit one by one right after
    first_versions = {
        key: value
        for member in members
        for key, value in versions_property(
            member.table_id, [SchemaVersion(1, STARTED, member)]
        ).items()
    }
    spec = SinkTableSpec(
        identifier=sink.changelog,
        data=schema,
        keys=sink.key,
        partition_keys=_partition_keys(config, sink),
        properties={**reveal(config.sink.table_properties), **first_versions},
        keep_deletes=config.tidemark.table(sink.name).mirror.deletes == "keep",
    )
    return catalog.open_changelog(spec, listing)


class LiveOnboarding:
    """The assembler's ``StructureChanges``: follows ALTER and DROP through the schema
    trackers, and onboards a table created while ingest runs (it has no rows to bootstrap)."""

    def __init__(
        self,
        onboarding: Onboarding,
        config: PipelineConfig,
        catalog: SinkCatalog,
        locate: Callable[[], str],
    ) -> None:
        self._onboarding = onboarding
        self._config = config
        self._catalog = catalog
        self._locate = locate
        self._follower = StructureFollower(
            onboarding.trackers, config.pipeline.schema_change_behavior, config.sink.schema_changes
        )

    def altered(self, database: str, table: str, statement: str) -> None:
        self._follower.altered(database, table, statement)

    def dropped(self, database: str, table: str) -> bool:
        return self._follower.dropped(database, table)

    def truncated(self, database: str, table: str) -> Truncation:
        return self._follower.truncated(database, table)

    def created(self, database: str, table: str) -> bool:
        source = self._config.source.connection
        found = read_tables(source, lambda db, name: (db, name) == (database, table))
        if not found:
            return False  # dropped or renamed since: a restart sorts it out
        plan = build_plan(self._config, found)
        if not plan.ok:
            problems = "; ".join(r.reason for r in plan.refused) or "; ".join(plan.blockers)
            raise SchemaChangeStopError(
                f"new table {database}.{table} cannot be onboarded: {problems}"
            )
        with source.connect() as conn:
            members = list(read_source_tables(conn, [(database, table)]).values())
        for sink in plan.sinks:
            _onboard_sink(self._onboarding, self._config, self._catalog, sink, members)
        for tracker in self._onboarding.trackers.values():
            tracker.locate = self._locate
        logger.warning(
            "New table %s.%s onboarded into %s from %s",
            database,
            table,
            ", ".join(sink.name for sink in plan.sinks),
            self._locate(),
        )
        return True


def build_runner(
    config: PipelineConfig,
    catalog: SinkCatalog,
    reports: ReportSink | None,
    settings: IngestSettings,
    display: BootstrapDisplay | None = None,
    clock: Clock = time.monotonic,
) -> IngestRunner:
    """Onboard, bootstrap what needs it (``scan.startup.mode`` initial or snapshot), and return
    a runner that streams from where every table is complete. Tables that bootstrap while
    others already stream are bootstrapped by the runner, in a thread, as it streams. The
    bootstrap reports to ``display``; without one, to log lines (``LogDisplay``)."""
    if settings.decode_in_process:
        process.warm()  # the reading process starts while the tables are onboarded
    metrics = IngestMetrics(config.pipeline.name)
    onboarding = onboard(config, catalog, settings.commit_threads)
    catalog.check_writable(next(iter(onboarding.tables.values())).identifier)
    source = config.source.connection
    source_id = f"{source.host}:{source.port}"
    databases = sorted({database for database, _ in onboarding.bindings})
    progress = {sink: table.progress() for sink, table in onboarding.tables.items()}
    to_bootstrap = _to_bootstrap(config, onboarding, progress)
    error_tables = ErrorTables(catalog, onboarding.tables)
    bootstrapping = {job.sink for job in to_bootstrap}
    # tables added to a running pipeline (or whose bootstrap a crash cut short) bootstrap in
    # a thread while the tables already streaming go on (ingest.bootstrap.background)
    in_background = (
        bool(to_bootstrap)
        and config.source.startup.mode is not StartupMode.SNAPSHOT
        and any(p is not None for sink, p in progress.items() if sink not in bootstrapping)
    )
    background = None
    deferred: set[tuple[str, str]] = set()
    if to_bootstrap:
        known = [p for p in progress.values() if p is not None]
        resume = min(p.position for p in known) if known else current_position(source)
        server_uuid = run_startup_checks(
            source,
            databases=databases,
            resume=resume,
            resume_server_uuid=_server_of(known),
            bootstrap=True,
            incremental_snapshot=config.source.incremental_snapshot,
            resource_group=settings.snapshot_resource_group,
        ).server_uuid
        bootstrapper = Bootstrapper(
            source,
            source_id,
            _bootstrap_settings(config, settings),
            MetricsDisplay(display or LogDisplay(), metrics),
            open_errors=error_tables.open,
            find_errors=error_tables.find,
        )
        if in_background:
            deferred.update(
                (member.database, member.name) for job in to_bootstrap for member in job.members
            )
            background = BackgroundBootstrap(
                bootstrapper,
                to_bootstrap,
                deferred,
                functools.partial(_error_table_progress, error_tables),
            )
        else:
            progress.update(bootstrapper.run(to_bootstrap))
    # an error table that lags its changelog table (a crash between their commits) is re-read
    # (theirs join at the hand-over when they bootstrap in the background)
    streaming = [
        sink for sink in onboarding.tables if not (in_background and sink in bootstrapping)
    ]
    earlier_errors = error_tables.existing(streaming)
    if in_background:
        progress = {sink: p for sink, p in progress.items() if sink not in bootstrapping}
    progress.update({errors: table.progress() for errors, table in earlier_errors.items()})
    if to_bootstrap:
        start = min(p.position for p in progress.values() if p is not None)
    else:
        start = start_position(source, config.source.startup, progress)
        known = [p for p in progress.values() if p is not None]
        server_uuid = run_startup_checks(
            source, databases=databases, resume=start, resume_server_uuid=_server_of(known)
        ).server_uuid
    for sink, table in onboarding.tables.items():
        if sink not in progress:
            continue  # bootstrapping in the background
        if progress[sink] is None:
            # Make the starting point durable before reading: a crash before the first real
            # commit must resume here, not at a new "latest" position.
            initial = TableProgress(
                start, watermark_ms=0, last_order=0, source=source_id, server_uuid=server_uuid
            )
            table.commit(table.schema.empty_table(), initial)
            progress[sink] = initial
    for sink, table_progress in progress.items():
        if table_progress is not None:
            metrics.starts_from(sink, table_progress.late_rows)
    live = LiveOnboarding(onboarding, config, catalog, lambda: str(assembler.last_seen))
    assembler = ChangeAssembler(
        router=functools.partial(_route_unless_deferred, onboarding, deferred),
        captures=functools.partial(_captured_unless_deferred, config.source.captures, deferred),
        progress={sink: p for sink, p in progress.items() if p is not None},
        start=start,
        source=source_id,
        server_uuid=server_uuid,
        initial_watermark_ms=0,
        max_transaction_rows=settings.max_transaction_rows,
        structure=live,
        follow_online_schema_changes=config.source.parse_online_schema_changes,
    )
    for tracker in onboarding.trackers.values():
        tracker.locate = lambda: str(assembler.last_seen)
    return IngestRunner(
        source=source,
        databases=databases,
        tables={**onboarding.tables, **earlier_errors},
        open_table=lambda sink: onboarding.tables.get(sink) or error_tables.open(sink_of(sink)),
        assembler=assembler,
        reports=reports,
        settings=settings,
        server_clock=functools.partial(server_clock, source),
        clock=clock,
        background=background,
        metrics=metrics,
    )


def _server_of(progress: list[TableProgress]) -> str | None:
    """The server whose binlog the tables' positions are in, as the oldest one recorded it."""
    recorded = [p for p in progress if p.server_uuid is not None]
    return min(recorded, key=lambda p: p.position).server_uuid if recorded else None


def _route_unless_deferred(
    onboarding: Onboarding, deferred: set[tuple[str, str]], database: str, table: str
) -> Binding | None:
    """A table bootstrapping in the background has no rows in the stream until it is handed
    over: it is read again from its own position then."""
    if deferred and (database, table) in deferred:
        return None
    return onboarding.bindings.get((database, table))  # for every row event: no second call


def _captured_unless_deferred(
    captures: Callable[[str, str], bool],
    deferred: set[tuple[str, str]],
    database: str,
    table: str,
) -> bool:
    return not (deferred and (database, table) in deferred) and captures(database, table)


def _error_table_progress(error_tables: ErrorTables, sink: str) -> dict[str, TableProgress]:
    table = error_tables.find(sink)
    progress = None if table is None else table.progress()
    return {} if progress is None else {errors_sink(sink): progress}


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
        max_threads_running=settings.snapshot_max_threads_running,
        parallelism=config.pipeline.parallelism,
        server_time_zone=config.source.server_time_zone,
        tinyint1_as_boolean=config.source.treat_tinyint1_as_boolean,
        incremental=config.source.incremental_snapshot,
        chunk_key_column=config.source.chunk_key_column,
        even_distribution=EvenDistribution(
            config.source.even_distribution_lower, config.source.even_distribution_upper
        ),
        resource_group=settings.snapshot_resource_group,
    )


def _widest_schema(sink: str, members: list[SourceTable], booleans: bool) -> pa.Schema:
    """The columns of every table routed to ``sink``, by name, each in the widest type of its
    tables (Iceberg's promotions); shards with clashing types are refused."""
    fields: dict[str, pa.Field] = {}
    owners: dict[str, str] = {}
    for member in members:
        for field in arrow_schema(member, tinyint1_as_boolean=booleans):
            key = field.name.lower()
            known = fields.get(key)
            if known is None or promotes(known.type, field.type):
                fields[key] = field.with_nullable(True)
                owners.setdefault(key, member.table_id)
            elif not (known.type.equals(field.type) or promotes(field.type, known.type)):
                raise ConfigError(
                    f"the tables routed to {sink} disagree on the type of {field.name}: "
                    f"{owners[key]} has {known.type}, {member.table_id} has {field.type}; give "
                    "the shards the same type, or route them to different sink tables"
                )
    return pa.schema(list(fields.values()))


def _split(table_id: str) -> tuple[str, str]:
    database, table = table_id.split(".", 1)
    return database, table


def _partition_keys(config: PipelineConfig, sink: SinkTable) -> tuple[str, ...]:
    """The partition columns of ``sink`` in a Paimon sink (``partition.key``); an Iceberg
    changelog is partitioned by its own rule (by event day)."""
    if isinstance(config.sink, PaimonSink):
        return config.sink.partition_keys_for(sink.name)
    return ()
