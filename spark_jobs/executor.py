"""The scheduler's window executor on Spark: one Spark application, the pipelines' windows.

``scheduler.executor.WindowExecutor`` names a sink table or a job without its pipeline; this
executor finds the pipeline that owns it. Pipelines scheduled together must therefore not share
sink-table or job names, and they share one Spark application, so one catalog name.

The scheduler runs several windows at once from a thread pool. A window's commit stamps are
session settings (``spark.sql.iceberg.snapshot-property.*``), so each thread gets a session of
its own (``SparkSession.newSession``: same application and catalog, separate SQL settings).
With ``merge_processes``, the part of each mirror merge that needs no Spark runs in that many
worker processes (``spark_jobs.merge.processes``); ``close`` stops them.

A Paimon pipeline has jobs only (no mirrors), which read its Paimon tables at the snapshots the
scheduler pinned and write to its ``tidemark.iceberg-catalog``: that is the catalog checked,
shared and probed here. Its tables are maintained by Paimon's own pass
(``spark_jobs.paimon_maintenance``), keeping the snapshots the scheduler says windows still read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial

from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.maintenance import TableMaintainer, TableResult
from spark_jobs.merge.processes import CatalogAddress, MergeProcesses
from spark_jobs.paimon_maintenance import PaimonMaintenanceResult, maintain_paimon_table
from spark_jobs.session import forget_dead_jvm, jvm_died
from spark_jobs.window_jobs import JobOutcome, LakeMerges, MergeOutcome, WindowJobs
from tidemark.catalog import load_catalog
from tidemark.config.model import PaimonSink, PipelineConfig, reveal
from tidemark.config.plan import Plan, SinkTable, plan_from_source
from tidemark.errors import ConfigError, TransientError
from tidemark.lake.outages import lake_outage, probe_catalog, probe_storage
from tidemark.outages import Outage
from tidemark.windows import Window

logger = logging.getLogger(__name__)


class SparkWindowExecutor:
    def __init__(
        self,
        configs: Sequence[PipelineConfig],
        session: SparkSession,
        merge_processes: int = 0,
        rebuild: Callable[[], SparkSession] | None = None,
    ) -> None:
        """``rebuild`` makes the session again after its JVM died (``spark_jobs.session``);
        without it, such a death fails every window from then on."""
        catalogs = {config.tidemark.catalog_name for config in configs}
        if len(catalogs) > 1:
            raise ConfigError(
                f"the pipelines use different catalog names ({', '.join(sorted(catalogs))}) and "
                "share one Spark application here: schedule them in separate processes"
            )
        described = {
            frozenset(reveal(c.iceberg_catalog or {}).items())
            for c in configs
            if c.iceberg_catalog is not None
        }
        if len(described) > 1:
            (name,) = catalogs
            files = ", ".join(str(config.path) for config in configs)
            raise ConfigError(
                f"the pipelines describe different catalogs under one name ({name}: {files}), "
                "and one Spark session holds one catalog per name: schedule them in separate "
                "processes"
            )
        self._session = session
        self._rebuild = rebuild
        self._reviving = threading.Lock()
        #: per pipeline, the PyIceberg catalog ``outage`` asks
        self._probed: dict[int, Catalog] = {}
        self._configs = tuple(configs)
        self._planning = threading.Lock()
        self._local = threading.local()
        self._plan()  # before the processes: a source that cannot be planned leaves none
        self._processes = MergeProcesses(merge_processes) if merge_processes else None

    def close(self) -> None:
        """Stop the merge processes, once the merges they run are done."""
        if self._processes is not None:
            self._processes.close()

    def _plan(self) -> None:
        """Plan every pipeline against its source; a new generation of per-thread jobs."""
        plans: list[tuple[PipelineConfig, Plan]] = []
        mirrors: dict[str, int] = {}
        jobs: dict[str, int] = {}
        sinks: dict[str, SinkTable] = {}
        for index, config in enumerate(self._configs):
            plan = plan_from_source(config)
            plans.append((config, plan))
            for sink in plan.sinks:
                sinks[sink.name] = sink
                if sink.mirror is not None:
                    _claim(mirrors, sink.name, index, "sink table")
            for job in config.tidemark.jobs:
                _claim(jobs, job.name, index, "job")
        self._plans, self._mirrors, self._jobs, self._sinks = plans, mirrors, jobs, sinks
        self._generation = getattr(self, "_generation", 0) + 1

    def merge_mirror(
        self, sink_table: str, window: Window, up_to_order: int | None
    ) -> MergeOutcome:
        self._know(sink_table)
        # the scheduler never runs two windows that touch one mirror at once (docs/scheduler.md)
        with self._reviving_a_dead_jvm():
            return self._window_jobs()[self._mirrors[sink_table]].merge_mirror(
                sink_table, window, up_to_order
            )

    @contextmanager
    def _reviving_a_dead_jvm(self) -> Iterator[None]:
        """A call that failed because the driver's JVM died starts a new one, and fails with
        a ``TransientError`` that says so: the window is retried as any failed one."""
        try:
            yield
        except Exception as error:
            if self._rebuild is None or not jvm_died(self._session):
                raise
            self._revive()
            raise TransientError(
                "the Spark driver's JVM died during the window; a new one is up and the "
                "window runs again"
            ) from error

    def _revive(self) -> None:
        with self._reviving:
            if not jvm_died(self._session):
                return  # another window's thread revived it
            assert self._rebuild is not None
            logger.error("The Spark driver's JVM died: starting a new one")
            forget_dead_jvm()
            self._session = self._rebuild()
            self._generation += 1  # every thread's session and jobs are made again

    def _know(self, sink_table: str) -> None:
        """Plan again for a sink table ingest onboarded while running, which the scheduler
        has adopted since this executor planned."""
        if sink_table not in self._sinks:
            with self._planning:
                if sink_table not in self._sinks:
                    self._plan()

    def run_job(
        self,
        job_name: str,
        window: Window,
        snapshots: Mapping[str, int] | None = None,
        since: Mapping[str, int] | None = None,
    ) -> JobOutcome:
        with self._reviving_a_dead_jvm():
            jobs = self._window_jobs()[self._jobs[job_name]]
            return jobs.run_job(job_name, window, snapshots, since)

    def maintain(
        self, sink_table: str, keep_from: int | None = None
    ) -> list[TableResult] | PaimonMaintenanceResult:
        catalog = self._plans[0][0].tidemark.catalog_name  # one catalog name, checked above
        self._know(sink_table)
        owner = next(config for config, plan in self._plans if sink_table in _names(plan))
        if isinstance(owner.sink, PaimonSink):
            with self._reviving_a_dead_jvm():
                return maintain_paimon_table(
                    self._thread_session(),
                    reveal(owner.sink.catalog_properties),
                    sink_table,
                    keep_from=keep_from,
                )
        with self._reviving_a_dead_jvm():
            maintainer = TableMaintainer(self._thread_session(), catalog)
            results = maintainer.maintain(self._sinks[sink_table])
        failed = [result for result in results if result.error is not None]
        if failed:
            raise TransientError(
                "maintenance failed for "
                + "; ".join(f"{result.table}: {result.error}" for result in failed)
            )
        return results

    def outage(self) -> Outage | None:
        """A pipeline's catalog or storage that does not answer now (asked after a window
        failed: a Spark job's errors are Java's, so the lake is asked rather than the error)."""
        for index, config in enumerate(self._configs):
            iceberg = config.iceberg_catalog
            if iceberg is None:
                continue  # a Paimon pipeline without jobs: no window reads or writes
            try:
                catalog = self._probed.get(index)
                if catalog is None:  # kept once opened: each opening is a connection pool
                    catalog = self._probed[index] = load_catalog(
                        config.tidemark.catalog_name, reveal(iceberg)
                    )
                probe_catalog(catalog)
                probe_storage(catalog)
            except Exception as error:
                outage = lake_outage(error)
                if outage is None:
                    raise
                return outage
        return None

    def _window_jobs(self) -> list[WindowJobs]:
        """This thread's ``WindowJobs``, one per pipeline, on this thread's session."""
        jobs: list[WindowJobs] | None = getattr(self._local, "jobs", None)
        if jobs is None or getattr(self._local, "generation", None) != self._generation:
            session = self._thread_session()
            jobs = [
                WindowJobs(config, plan, session, lake_merges=self._lake_merges(config))
                for config, plan in self._plans
            ]
            self._local.jobs = jobs
            self._local.generation = self._generation
        return jobs

    def _lake_merges(self, config: PipelineConfig) -> LakeMerges | None:
        if self._processes is None or isinstance(config.sink, PaimonSink):
            return None  # in the window's thread; a Paimon pipeline merges nothing
        catalog = CatalogAddress.of(
            config.tidemark.catalog_name, reveal(config.sink.catalog_properties)
        )
        return partial(self._processes.merge, catalog)

    def _thread_session(self) -> SparkSession:
        session: SparkSession | None = getattr(self._local, "session", None)
        if session is None or session.sparkContext is not self._session.sparkContext:
            session = self._session.newSession()
            self._local.session = session
        return session


def _names(plan: Plan) -> set[str]:
    return {sink.name for sink in plan.sinks}


def _claim(owners: dict[str, int], name: str, pipeline: int, kind: str) -> None:
    if name in owners:
        raise ConfigError(
            f"two of the scheduled pipelines have the {kind} {name}: schedule them in separate "
            "processes, or rename one"
        )
    owners[name] = pipeline
