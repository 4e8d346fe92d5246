"""A pipeline file, opened once: everything a command, the demo or a script needs from it.

``Pipeline.open(path)`` reads and validates the file. The catalog and the plan (which needs the
source) are made on first use and kept; a state store or a Spark session is made on each call.
The runs are here too, so each door (``tidemark ingest``/``schedule``/``run``/``status``/...,
the demo) wires them the same way: a command parses its arguments, opens the pipeline, calls it
and prints what it returns (``tidemark.app.output``).

Stages are imported inside the methods: ``tidemark validate`` must not pay for pyspark, pyarrow
or the binlog library.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from tidemark.config import PaimonSink, PipelineConfig, load_pipeline
from tidemark.config.model import reveal
from tidemark.contracts.instance import Instance, LeaseHolders
from tidemark.errors import ConfigError, TerminalError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

    from ingest.bootstrap.display import BootstrapDisplay
    from ingest.changelog.catalogs import SinkCatalog
    from ingest.changelog.error_table import ErrorRow, ErrorTables
    from ingest.changelog.status import TableStatus
    from ingest.lease import LeaseTiming
    from ingest.stream.runner import RunSummary, StopWhen
    from ingest.verify import MirrorReader, TableVerdict
    from scheduler.gate import WindowRun
    from scheduler.service import PipelineRun
    from scheduler.state import StateSettings, StateStore
    from scheduler.status import TaskStatus
    from spark_jobs.arguments import SparkTarget
    from spark_jobs.session import SparkSession
    from spark_jobs.window_jobs import WindowJobs
    from tidemark.config.model import ReportsSettings
    from tidemark.config.plan import Plan
    from tidemark.freshness import FreshnessSample

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateLocation:
    """Where the scheduler keeps its state: by default in the catalog's PostgreSQL database."""

    #: libpq connection string of another database; None: the catalog's
    dsn: str | None = None
    #: None: the scheduler's own (``scheduler.state.DEFAULT_SCHEMA``)
    schema: str | None = None


@dataclass(frozen=True)
class PipelineStatus:
    """What ``tidemark status`` shows: per sink table its changelog's progress, then per mirror
    and job its windows (``windows`` None: no scheduler has run for the pipeline yet)."""

    tables: Sequence[TableStatus]
    #: whether the pipeline publishes commit reports, and so has windows at all
    scheduled: bool
    windows: Sequence[TaskStatus] | None
    #: the active ingest process and its standbys
    ingest: LeaseHolders | None = None
    #: the active scheduler and its standbys; None when no scheduler has run
    scheduler: LeaseHolders | None = None
    #: what could not be read because a service is down, as ``the changelog tables: the
    #: catalog (...)``; what could be read is shown all the same
    unreadable: Sequence[str] = ()

    def waiting(self) -> list[str]:
        """What the pipeline's active processes wait for, a service that is down, as
        ``ingest: waiting for the catalog since ...``; empty when none waits."""
        found = []
        for role, holders in (("ingest", self.ingest), ("scheduler", self.scheduler)):
            active = None if holders is None else holders.active
            if isinstance(active, Instance) and active.waiting_for is not None:
                found.append(f"{role}: {active.waiting_for}")
        return found


#: the error rows a status page shows, newest first
PAGE_ERROR_ROWS = 20


@dataclass(frozen=True)
class PipelinePage:
    """What the status page shows of a pipeline (``tidemark ui``)."""

    name: str
    status: PipelineStatus
    #: the charts and the error rows start here
    since: datetime
    #: per sink table, the watermark it reached, a sample a minute: the changelog's commits and
    #: the scheduler's reports together
    freshness: Mapping[str, tuple[FreshnessSample, ...]]
    #: the newest windows of each task, oldest first
    runs: Sequence[WindowRun]
    #: the newest error rows since ``since``, newest first
    errors: Sequence[ErrorRow]
    #: why the source could not say who runs the pipeline, when it could not
    ingest_unknown: str | None = None


@dataclass(frozen=True)
class ResetTargets:
    """What ``tidemark reset`` drops to start a pipeline over."""

    #: the pipeline's lake tables that exist: changelogs, mirrors, error tables
    tables: tuple[str, ...]
    #: the changelogs whose reports and windows the scheduler's state forgets
    changelogs: tuple[str, ...]
    #: the commit report topic and the scheduler's consumer group; None without reports
    topic: str | None
    group: str | None


@dataclass(frozen=True)
class ResetDone:
    dropped: tuple[str, ...]
    #: other consumer groups that read the report topic, which was kept for them
    topic_kept_for: tuple[str, ...] = ()


@dataclass(frozen=True)
class MirrorVerification:
    """One mirror compared with its source: a verdict, or why there is none."""

    sink: str
    mirror: str
    verdict: TableVerdict | None = None
    #: why the mirror could not be verified (it does not exist yet)
    unavailable: str | None = None

    @property
    def failed(self) -> bool:
        return self.verdict is None or self.verdict.mismatches > 0


class Pipeline:
    """One pipeline file, opened."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config

    @classmethod
    def open(cls, path: Path) -> Pipeline:
        return cls(load_pipeline(path))

    @property
    def name(self) -> str:
        return self.config.pipeline.name

    @property
    def path(self) -> Path:
        return self.config.path

    @cached_property
    def catalog_properties(self) -> dict[str, str]:
        """The sink's catalog properties, secrets revealed: for the clients, never for logs."""
        return dict(reveal(self.config.sink.catalog_properties))

    @cached_property
    def sink_catalog(self) -> SinkCatalog:
        """The lake of the sink's format (``sink.type``), as ingest and the status use it."""
        from ingest.changelog.catalogs import open_sink_catalog

        sink = self.config.sink
        prefix = sink.commit_user_prefix if isinstance(sink, PaimonSink) else None
        return open_sink_catalog(
            sink.type, self.config.tidemark.catalog_name, self.catalog_properties, prefix
        )

    @cached_property
    def output_catalog(self) -> Catalog:
        """The Iceberg catalog the jobs write to: an Iceberg sink's own, or a Paimon
        pipeline's ``tidemark.iceberg-catalog``."""
        from ingest.changelog.catalogs import IcebergSinkCatalog
        from tidemark.catalog import load_catalog

        if isinstance(self.sink_catalog, IcebergSinkCatalog):
            return self.sink_catalog.iceberg
        iceberg = self.config.iceberg_catalog
        if iceberg is None:
            raise ConfigError(
                f"{self.path}: this Paimon pipeline has no jobs, so no Iceberg catalog for "
                "their outputs: add tidemark.iceberg-catalog"
            )
        return load_catalog(self.config.tidemark.catalog_name, dict(reveal(iceberg)))

    @cached_property
    def plan(self) -> Plan:
        """Which source tables go where, as the source has them now (``tidemark plan``)."""
        return self.current_plan()

    def current_plan(self) -> Plan:
        """The plan read afresh from the source: tables created since join it."""
        from tidemark.config.plan import plan_from_source

        return plan_from_source(self.config)

    # --- ingest -------------------------------------------------------------------------------

    @property
    def ingest_lease(self) -> str:
        """The name of the lease on the source that the active ingest holds."""
        from ingest.lease import ingest_lease

        return ingest_lease(self.config)

    def ingest(
        self,
        stop: StopWhen,
        timing: LeaseTiming | None = None,
        display: BootstrapDisplay | None = None,
    ) -> RunSummary:
        """Stream the binlog into the changelog tables until ``stop`` says (``tidemark
        ingest``), as a standby while another ingest of the pipeline is active
        (``ingest.service``); the bootstrap reports to ``display``."""
        from ingest import service
        from ingest.lease import LeaseTiming

        # opened when first needed, and again until it opens: a catalog down at start is waited for
        return service.run(
            self.config, lambda: self.sink_catalog, stop, timing or LeaseTiming(), display
        )

    # --- scheduler ----------------------------------------------------------------------------

    def require_reports(self) -> ReportsSettings:
        """The file's ``tidemark.reports``, which a scheduler needs: refused when missing."""
        reports = self.config.tidemark.reports
        if reports is None:
            raise ConfigError(
                f"{self.path}: tidemark.reports is missing; the scheduler learns watermarks "
                "from the commit reports ingest publishes there (add tidemark.reports with "
                "kafka.bootstrap.servers)"
            )
        return reports

    def schedule(self) -> PipelineRun:
        """What the scheduler runs for this file: its tasks, planned from the source, and where
        its commit reports come from. Refuses a file without ``tidemark.reports``."""
        from scheduler.reports_consumer import ConsumerSettings
        from scheduler.service import PipelineRun
        from scheduler.spec import PipelineSchedule

        reports_block = self.require_reports()

        def planned() -> PipelineSchedule:
            return PipelineSchedule.from_config(self.config, self.current_plan().sinks)

        schedule = PipelineSchedule.from_config(self.config, self.plan.sinks)
        reports = ConsumerSettings.from_reports(reports_block, schedule.pipeline)
        return PipelineRun(schedule, reports, replan=planned)

    def state_settings(self, location: StateLocation = StateLocation()) -> StateSettings:  # noqa: B008 - frozen
        from scheduler.state import DEFAULT_SCHEMA, StateSettings

        schema = location.schema or DEFAULT_SCHEMA
        if location.dsn:
            return StateSettings.from_dsn(location.dsn, schema)
        if self.config.tidemark.state_dsn is not None:
            return StateSettings.from_dsn(self.config.tidemark.state_dsn.get_secret_value(), schema)
        iceberg = self.config.iceberg_catalog
        if iceberg is None:
            raise ConfigError(
                f"{self.path}: the scheduler keeps its state in a PostgreSQL database, and this "
                "Paimon pipeline names none: add tidemark.state-dsn (a libpq connection "
                "string), or give --state-dsn"
            )
        return StateSettings.from_catalog(reveal(iceberg), schema)

    def state_store(self, location: StateLocation = StateLocation()) -> StateStore:  # noqa: B008 - frozen
        from scheduler.state import StateStore

        return StateStore(self.state_settings(location))

    def paimon_snapshots_needed(self) -> dict[str, int]:
        """Per Paimon table a job reads, the oldest snapshot a pending window may still read
        (``scheduler.retention``); none for a pipeline whose scheduler keeps no state."""
        from contextlib import closing

        from scheduler.retention import snapshots_needed
        from scheduler.spec import PipelineSchedule

        if self.config.tidemark.reports is None or not self.config.tidemark.jobs:
            return {}
        schedule = PipelineSchedule.from_config(self.config, self.plan.sinks)
        with closing(self.state_store()) as store:
            return snapshots_needed(schedule, store)

    # --- Spark --------------------------------------------------------------------------------

    def spark_session(self, target: SparkTarget, app_name: str) -> SparkSession:
        """A Spark session on this pipeline's catalog, where ``target`` says."""
        from spark_jobs.session import pipeline_session

        return pipeline_session(self.config, target, app_name)

    def window_jobs(self, session: SparkSession) -> WindowJobs:
        """The mirror merges and jobs of this file, on ``session``."""
        from spark_jobs.window_jobs import WindowJobs

        return WindowJobs(self.config, self.plan, session)

    # --- reading what the pipeline reached ----------------------------------------------------

    def status(self, now: datetime) -> PipelineStatus:
        return self._status(self.plan, now)

    def page(
        self,
        now: datetime,
        since: datetime,
        plan: Plan,
        location: StateLocation | None = None,
        runs_per_task: int = 24,
    ) -> PipelinePage:
        """What the status page shows (``tidemark ui``) for the sink tables of ``plan``:
        freshness from ``since`` on, the newest ``runs_per_task`` windows of each task, the
        error rows since ``since``. A source that cannot be asked who runs the pipeline
        leaves that unknown, not the page."""
        from ingest.changelog.error_table import ErrorTables, latest_errors
        from ingest.lease import lease_holders
        from tidemark.freshness import per_minute

        error_tables = ErrorTables(self.sink_catalog, [sink.name for sink in plan.sinks])
        status = self._status(
            plan, now, history_since=since, location=location, error_tables=error_tables
        )
        unknown = None
        try:
            status = replace(
                status, ingest=lease_holders(self.config.source.connection, self.ingest_lease)
            )
        except Exception as error:  # the source is down or refuses: the rest still shows
            unknown = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"
            logger.warning(
                "The status page could not ask %s's source who runs it: %s", self.name, unknown
            )
        sampled: dict[str, list[FreshnessSample]] = {}
        runs: list[WindowRun] = []
        if status.windows is not None:  # the scheduler samples what its reports reach
            with closing(self.state_store(location or StateLocation())) as store:
                sampled = store.freshness([sink.changelog for sink in plan.sinks], since)
                tasks = [task.task for task in status.windows]
                runs = store.recent_runs(self.name, tasks, runs_per_task)
        freshness = {
            table.sink: per_minute([*table.history, *sampled.get(table.changelog, [])])
            for table in status.tables
        }
        errors = [
            row
            for table in status.tables
            if table.errors
            for row in latest_errors(error_tables, table.sink, since, PAGE_ERROR_ROWS)
        ]
        errors.sort(key=lambda row: row.event_time, reverse=True)
        return PipelinePage(
            self.name,
            status,
            since,
            freshness,
            tuple(runs),
            tuple(errors[:PAGE_ERROR_ROWS]),
            ingest_unknown=unknown,
        )

    def _status(
        self,
        plan: Plan,
        now: datetime,
        history_since: datetime | None = None,
        location: StateLocation | None = None,
        error_tables: ErrorTables | None = None,
    ) -> PipelineStatus:
        from ingest.changelog.status import table_status
        from ingest.lease import lease_holders
        from scheduler.state import StateUnavailableError
        from tidemark.lake.outages import lake_outage

        sinks = plan.sinks
        unreadable = []
        try:
            tables = [
                table_status(
                    self.sink_catalog, sink.name, sink.changelog, history_since, error_tables
                )
                for sink in sinks
            ]
        except Exception as error:
            outage = lake_outage(error)
            if outage is None:
                raise
            # who runs the pipeline, and whether it waits, matters most now
            tables, unreadable = [], [f"the changelog tables: {outage.describe()}"]
        scheduled = self.config.tidemark.reports is not None
        windows, schedulers = None, None
        try:
            windows = self._windows(plan, now, location) if scheduled else None
            if windows is not None:  # a scheduler has run: it knows the watermark reports
                from scheduler.status import recorded_watermarks

                settings = self.state_settings(location or StateLocation())
                recorded = recorded_watermarks(sinks, settings)
                tables = [
                    replace(table, recorded_watermark_ms=recorded.get(table.sink))
                    for table in tables
                ]
                with closing(self.state_store(location or StateLocation())) as store:
                    schedulers = store.holders(self.name)
        except StateUnavailableError as error:
            windows, schedulers = None, None
            unreadable.append(
                f"the windows and the scheduler: the scheduler state database ({error.reason})"
            )
        ingest = None
        if error_tables is None:  # not for the page, which asks on its own (``page``)
            ingest = lease_holders(self.config.source.connection, self.ingest_lease)
        return PipelineStatus(tables, scheduled, windows, ingest, schedulers, unreadable)

    # --- starting over ------------------------------------------------------------------------

    def reset_targets(self, location: StateLocation = StateLocation()) -> ResetTargets:  # noqa: B008 - frozen
        """What a reset would drop; refused while an ingest or scheduler of the pipeline runs
        (a standby would take over and write into what is being dropped)."""
        from ingest.changelog.error_table import error_table_name
        from ingest.lease import lease_holders
        from scheduler.reports_consumer import ConsumerSettings

        running = [("ingest", lease_holders(self.config.source.connection, self.ingest_lease))]
        if self.config.tidemark.reports is not None:
            running.append(("scheduler", self._scheduler_holders(location)))
        for role, holders in running:
            alive = [holders.active, *holders.standbys] if holders.active else holders.standbys
            if alive:
                who = ", ".join(i if isinstance(i, str) else i.describe() for i in alive)
                raise TerminalError(
                    f"the {role} of pipeline {self.name!r} is running ({who}): stop every "
                    "instance of it, then reset"
                )
        sinks = self.plan.sinks
        names = [
            name
            for sink in sinks
            for name in (sink.changelog, sink.mirror, error_table_name(sink.name))
            if name is not None
        ]
        reports = self.config.tidemark.reports
        consumer = ConsumerSettings.from_reports(reports, self.name) if reports else None
        return ResetTargets(
            tables=tuple(name for name in names if self.sink_catalog.table_exists(name)),
            changelogs=tuple(sink.changelog for sink in sinks),
            topic=consumer.topic if consumer else None,
            group=consumer.group_id if consumer else None,
        )

    def reset(
        self,
        targets: ResetTargets,
        location: StateLocation = StateLocation(),  # noqa: B008 - frozen
    ) -> ResetDone:
        """Drops ``targets``: the lake tables, the scheduler's windows and reports of them, the
        consumer group and the report topic (kept when other groups read it). Holds the
        pipeline's ingest lease and scheduler lock meanwhile: one started after
        ``reset_targets`` waits as a standby until the reset is done, then starts over."""
        from scheduler.reports_consumer import ConsumerSettings, forget_reports

        with self._holding_ingest_lease(), self._holding_scheduler_lock(location) as store:
            dropped = []
            for table in targets.tables:
                self.sink_catalog.purge_table(table)
                dropped.append(table)
            kept_for: tuple[str, ...] = ()
            reports = self.config.tidemark.reports
            if store is not None and reports is not None:
                store.forget(self.name, targets.changelogs)
                kept_for = forget_reports(ConsumerSettings.from_reports(reports, self.name))
        return ResetDone(tuple(dropped), kept_for)

    @contextmanager
    def _holding_scheduler_lock(self, location: StateLocation) -> Iterator[StateStore | None]:
        """The scheduler state, its pipeline lock held for the block: asked for once. None for
        a pipeline without ``tidemark.reports``, which no scheduler runs (a Paimon pipeline
        without one may name no state database at all)."""
        from scheduler.state import PipelineLock

        if self.config.tidemark.reports is None:
            yield None
            return
        with closing(self.state_store(location)) as store:
            lock = PipelineLock(store, self.name)
            lock.acquire()  # a scheduler that started meanwhile refuses the reset
            try:
                yield store
            finally:
                lock.release()

    @contextmanager
    def _holding_ingest_lease(self) -> Iterator[None]:
        """The pipeline's ingest lease, held for the block: asked for once."""
        from ingest.lease import SourceLease

        lease = SourceLease(self.config.source.connection, self.ingest_lease, self.name)
        with lease.held(threading.Event(), deadline=time.monotonic()) as held:
            if not held:
                raise TerminalError(
                    f"an ingest of pipeline {self.name!r} started since the check: stop it, "
                    "then reset"
                )
            yield

    def _scheduler_holders(self, location: StateLocation) -> LeaseHolders:
        with closing(self.state_store(location)) as store:
            return store.holders(self.name)

    def windows(self, now: datetime) -> Sequence[TaskStatus] | None:
        """Per mirror and job its windows; None when no scheduler has run for the pipeline."""
        return self._windows(self.plan, now)

    def _windows(
        self, plan: Plan, now: datetime, location: StateLocation | None = None
    ) -> Sequence[TaskStatus] | None:
        from scheduler.state import StateMissingError
        from scheduler.status import describe_pipeline

        settings = self.state_settings(location or StateLocation())
        try:
            return describe_pipeline(self.config, plan.sinks, now, settings)
        except StateMissingError:
            return None

    def verify(
        self, table: str | None = None, page_rows: int = 10_000
    ) -> Iterator[MirrorVerification]:
        """Compare every mirror (or only ``table``'s) with its source, page by page; each
        verdict as soon as it is known. A Paimon sink table is its own mirror."""
        from ingest.schema.source_tables import read_source_tables
        from ingest.verify import verify_mirror

        source = self.config.source.connection
        for sink in self.plan.sinks:
            mirror_name = (
                sink.changelog if isinstance(self.config.sink, PaimonSink) else sink.mirror
            )
            if mirror_name is None or (table and table != sink.name):
                continue
            mirror = self._mirror_reader(sink.changelog, mirror_name)
            if isinstance(mirror, str):
                yield MirrorVerification(sink.name, mirror_name, unavailable=mirror)
                continue
            names = [_database_and_table(name) for name in sink.sources]
            with source.connect() as conn:
                members = read_source_tables(conn, names)
            verdict = verify_mirror(
                source,
                mirror,
                sink.key,
                list(members.values()),
                page_rows=page_rows,
                server_time_zone=self.config.source.server_time_zone,
                tinyint1_as_boolean=self.config.source.treat_tinyint1_as_boolean,
            )
            yield MirrorVerification(sink.name, mirror_name, verdict)

    def _mirror_reader(self, changelog: str, mirror: str) -> MirrorReader | str:
        """What verify reads of a sink table's mirror; why not, when it cannot be read."""
        from ingest.changelog.catalogs import IcebergSinkCatalog

        lake = self.sink_catalog
        if isinstance(lake, IcebergSinkCatalog):
            from pyiceberg.exceptions import NoSuchTableError

            from ingest.verify import IcebergMirror

            try:
                return IcebergMirror(
                    lake.iceberg.load_table(mirror), lake.iceberg.load_table(changelog)
                )
            except NoSuchTableError as error:
                return str(error)
        from ingest.changelog.paimon_catalog import PaimonSinkCatalog
        from ingest.verify_paimon import PaimonMirror

        assert isinstance(lake, PaimonSinkCatalog)
        found = lake.paimon.load_table(mirror)
        return f"Table {mirror} does not exist" if found is None else PaimonMirror(found)


def open_pipelines(paths: Sequence[Path]) -> list[Pipeline]:
    """Several files for one scheduler: refused when two share a ``pipeline.name``."""
    pipelines = [Pipeline.open(path) for path in paths]
    names = [pipeline.name for pipeline in pipelines]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(
            f"pipeline.name {', '.join(duplicates)} is used by more than one file; the scheduler "
            "keeps each pipeline's windows under its name: give each file its own pipeline.name"
        )
    return pipelines


@dataclass(frozen=True)
class SchedulerOptions:
    """How a scheduler runs, whoever starts it (``tidemark schedule``, ``run``, the demo).
    None leaves a setting at the scheduler's own default."""

    #: windows running at once, across all pipelines (``ServiceSettings.max_workers``)
    max_workers: int | None = None
    #: worker processes for the mirror merges without Spark (``spark_jobs.merge.processes``):
    #: None for one per usable core, at most ``max_workers``; 0 for none (the merges run in
    #: the windows' threads)
    merge_processes: int | None = None
    #: an ERROR when a table's watermark has not moved for this long
    #: (``EngineSettings.stall_after``)
    stall_after: timedelta | None = None
    #: serve Prometheus metrics at http://127.0.0.1:PORT/metrics
    metrics_port: int | None = None
    #: stop after this many seconds (for scripts and tests); None: until ``stop`` is set
    max_seconds: float | None = None
    #: the Spark application's name
    app_name: str = "tidemark-scheduler"


def run_scheduler(
    pipelines: Sequence[Pipeline],
    spark: SparkTarget,
    stop: threading.Event,
    options: SchedulerOptions = SchedulerOptions(),  # noqa: B008 - frozen
    state: StateLocation = StateLocation(),  # noqa: B008 - frozen
    started: Callable[[], None] | None = None,
) -> None:
    """Fire each pipeline's windows as their inputs complete, on one Spark session, until
    ``stop`` is set. The state lives where ``state`` says, relative to the first pipeline.
    ``started`` is called once the Spark session is up (a command sets its signal handlers
    there, so that Ctrl-C during start-up interrupts at once)."""
    from scheduler.engine import EngineSettings
    from scheduler.service import ServiceSettings, run
    from spark_jobs.executor import SparkWindowExecutor
    from spark_jobs.merge.processes import usable_cores

    runs = [pipeline.schedule() for pipeline in pipelines]  # refused before Spark starts
    store = pipelines[0].state_store(state)
    session = pipelines[0].spark_session(spark, options.app_name)
    service = ServiceSettings()
    workers = options.max_workers or service.max_workers
    processes = options.merge_processes
    executor = SparkWindowExecutor(
        [pipeline.config for pipeline in pipelines],
        session,
        # a window's thread waits for its merge: more processes than threads would idle
        merge_processes=min(usable_cores(), workers) if processes is None else processes,
        rebuild=lambda: pipelines[0].spark_session(spark, options.app_name),
    )
    engine = EngineSettings()
    with closing(executor):
        if started is not None:
            started()
        run(
            runs,
            store,
            executor,
            settings=replace(service, max_workers=workers),
            engine_settings=replace(engine, stall_after=options.stall_after or engine.stall_after),
            stop=stop,
            max_seconds=options.max_seconds,
            metrics_port=options.metrics_port,
        )


def _database_and_table(table_id: str) -> tuple[str, str]:
    database, table = table_id.split(".", 1)
    return database, table
