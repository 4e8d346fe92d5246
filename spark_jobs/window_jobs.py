"""Window jobs: merge a window of changes into a mirror, or run a job's SQL for a window.

The API the scheduler and the CLI use; one long-lived Spark session serves many windows::

    jobs = WindowJobs(config, plan, session)
    jobs.merge_mirror("shop.orders", window, up_to_order=None) -> MergeOutcome
    jobs.run_job("revenue_per_hour", window) -> JobOutcome

``merge_mirror`` applies the changelog rows with ``_tm_order`` in ``(M, B]``: M is the mirror's
``tidemark.merged-order`` stamp (0 for a new mirror) and B the ``tidemark.order`` of the earliest
complete changelog snapshot whose watermark reaches the window's end
(``spark_jobs.merge.bound``), or ``up_to_order`` when the caller knows it (a commit report's
``last_order``). A window whose end the mirror has already reached is a no-op, so a retried
window is never applied twice. It raises ``WindowNotCompleteError`` (a ``TransientError``) while
the changelog has not reached the window's end.

``run_job`` merges each of the job's inputs up to the window's end, then runs the job's SQL
files in order with the window's variables (``spark_jobs.user_sql``). The SQL itself must be
idempotent per window (``INSERT OVERWRITE`` of the window's partition, or ``MERGE``); see
docs/window-jobs.md.

A Paimon pipeline has no mirrors: ``run_job`` pins each input Paimon table at a snapshot for the
whole job (the scheduler's pin, or the first snapshot whose watermark reaches the window's end,
``spark_jobs.paimon_inputs``), runs each statement with its ``db.t`` names pointed at them (and
``db.`t$changes` `` at the window's changes to them), and drops the pins; the job's outputs go
where its SQL says, in the Iceberg catalog the session has as its default
(``tidemark.iceberg-catalog``).

Not thread-safe: the stamps and a job's ``spark`` settings are session conf, so one
``WindowJobs`` runs one window at a time. To run windows in parallel, give each thread its own
``WindowJobs`` over ``session.newSession()`` (same SparkContext, separate conf), and never run two
windows of the same mirror at once (their commits would conflict).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from pyiceberg.catalog import Catalog
from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import SparkSession

from spark_jobs.merge.lake import MergeOutcome, MergeRequest, SparkMerge, merge_in_lake
from spark_jobs.merge.request import MirrorSpec
from spark_jobs.merge.spark import merge_range
from spark_jobs.paimon_inputs import PinnedInputs, WindowChanges, pin_inputs, pin_snapshots
from spark_jobs.user_sql import read_statements
from tidemark.catalog import load_catalog
from tidemark.config.model import (
    JobConfig,
    PaimonSink,
    PartitionField,
    PipelineConfig,
    SchemaChangeBehavior,
    SchemaChangeType,
    TransformRule,
    reveal,
)
from tidemark.config.plan import Plan, SinkTable
from tidemark.errors import ConfigError, TerminalError
from tidemark.lake.paimon import SnapshotNotFoundError, earliest_snapshot, open_table
from tidemark.windows import Window

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
#: runs a merge's part without Spark (``spark_jobs.merge.lake``)
LakeMerges = Callable[[MergeRequest], MergeOutcome | SparkMerge]


@dataclass(frozen=True)
class JobOutcome:
    job: str
    window: Window
    mirrors: tuple[MergeOutcome, ...]
    statements: int
    seconds: float
    #: a Paimon pipeline's job: the snapshot id each input was read at, by sink table
    snapshots: Mapping[str, int] = field(default_factory=dict)


def _follows(config: PipelineConfig, change: SchemaChangeType) -> bool:
    """Whether mirrors apply ``change`` (a column drop or rename) rather than keep the old
    column, as the changelog does: Flink CDC's evolve and try_evolve apply what the sink takes."""
    evolving = config.pipeline.schema_change_behavior in (
        SchemaChangeBehavior.EVOLVE,
        SchemaChangeBehavior.TRY_EVOLVE,
    )
    return evolving and change in config.sink.schema_changes


class WindowJobs:
    """Runs windows for one pipeline file on one Spark session."""

    def __init__(
        self,
        config: PipelineConfig,
        plan: Plan,
        session: SparkSession,
        clock: Clock = time.monotonic,
        lake_merges: LakeMerges | None = None,
    ) -> None:
        self._config = config
        self._plan = plan
        self._spark = session
        self._clock = clock
        self._catalog = config.tidemark.catalog_name
        #: PyIceberg's client of the same catalog, for the merges done here
        self._lake: Catalog | None = None
        #: the part of each merge that needs no Spark: here, or in worker processes
        #: (``spark_jobs.merge.processes``)
        self._lake_merges: LakeMerges = lake_merges or self._merge_in_lake

    # --- mirrors -------------------------------------------------------------------------

    def merge_mirror(
        self, sink_table: str, window: Window, up_to_order: int | None = None
    ) -> MergeOutcome:
        started = self._clock()
        sink = self._sink(sink_table)
        spec = self.mirror_spec(sink)
        assert sink.mirror is not None  # mirror_spec refuses a sink without one
        request = MergeRequest(sink.name, spec, sink.changelog, sink.mirror, window, up_to_order)
        done = self._lake_merges(request)
        if isinstance(done, SparkMerge):
            counts = merge_range(self._spark, spec, done.low, done.high, done.stamps, done.known)
            done = done.outcome(counts)
        outcome = replace(done, seconds=self._clock() - started)
        if outcome.skipped:
            logger.info(
                "Mirror %s already holds %s (merged to order %d): nothing to do",
                spec.mirror,
                window,
                outcome.merged_order,
            )
            return outcome
        logger.info(
            "Merged %s into %s for %s: orders (%d, %d], %d changes, %d keys, %.2f s%s",
            spec.changelog,
            spec.mirror,
            window,
            outcome.previous_order,
            outcome.merged_order,
            outcome.changes,
            outcome.keys,
            outcome.seconds,
            " (Spark)" if outcome.by_spark else "",
        )
        return outcome

    def _merge_in_lake(self, request: MergeRequest) -> MergeOutcome | SparkMerge:
        if self._lake is None:
            self._lake = load_catalog(self._catalog, reveal(self._config.sink.catalog_properties))
        return merge_in_lake(self._lake, request)

    def mirror_spec(self, sink: SinkTable) -> MirrorSpec:
        """How ``sink``'s changelog becomes its mirror: names, key, transform, partitioning."""
        if sink.mirror is None:
            raise ConfigError(
                f"{sink.name} has its mirror turned off: turn it on under "
                f'tidemark.tables."{sink.name}".mirror'
            )
        options = self._config.tidemark.table(sink.name).mirror
        transform = self._transform(sink)
        iceberg = self._config.iceberg_sink("a Paimon sink table is its own mirror")
        partitioning = iceberg.partitioning_for(sink.name)
        if partitioning is not None:
            partition = tuple(spark_partition(field) for field in partitioning.fields)
        else:
            partition = tuple(f"`{c}`" for c in (transform.partition_keys if transform else ()))
        properties = {
            **reveal(self._config.sink.table_properties),
            **reveal(options.table_properties),
        }
        return MirrorSpec(
            mirror=f"{self._catalog}.{sink.mirror}",
            changelog=f"{self._catalog}.{sink.changelog}",
            key=sink.key,
            projection=transform.projection if transform else None,
            filter=transform.filter if transform else None,
            partitioning=partition,
            keep_deletes=options.deletes == "keep",
            table_properties=properties,
            follow_drops=_follows(self._config, SchemaChangeType.DROP_COLUMN),
            follow_renames=_follows(self._config, SchemaChangeType.RENAME_COLUMN),
        )

    def _transform(self, sink: SinkTable) -> TransformRule | None:
        rules: list[TransformRule] = []
        for source in sink.sources:
            rule = self._config.transform_for(*source.split(".", 1))
            if rule is not None and rule not in rules:
                rules.append(rule)
        if len(rules) > 1:
            raise ConfigError(
                f"the tables routed to {sink.name} match different transforms: give them one "
                "transform whose source-table matches them all"
            )
        return rules[0] if rules else None

    def _sink(self, name: str) -> SinkTable:
        for sink in self._plan.sinks:
            if sink.name == name:
                return sink
        known = ", ".join(sink.name for sink in self._plan.sinks) or "none"
        raise ConfigError(
            f"{name} is not a sink table of {self._config.path} (its sink tables: {known})"
        )

    # --- jobs ----------------------------------------------------------------------------

    def run_job(
        self,
        job_name: str,
        window: Window,
        snapshots: Mapping[str, int] | None = None,
        since: Mapping[str, int] | None = None,
    ) -> JobOutcome:
        """Run ``job_name``'s SQL for ``window``. A Paimon pipeline's job reads each input at
        its snapshot in ``snapshots`` (the scheduler's pin) while the table still has it,
        else at the first snapshot whose watermark reaches the window's end; and its changes
        (``db.`t$changes` ``) after its snapshot in ``since`` (the one the job's previous
        window read), else after the first snapshot whose watermark reaches the start."""
        started = self._clock()
        job = self.job(job_name)
        if isinstance(self._config.sink, PaimonSink):
            pinned = self._pin(job, window, snapshots or {})
            changes = WindowChanges(
                self._spark,
                reveal(self._config.sink.catalog_properties),
                pinned,
                window.start_ms,
                since or {},
            )
            others = [s.name for s in self._plan.sinks if s.name not in job.inputs]

            def resolve(statement: str) -> str:
                resolved = pinned.resolve(statement, self._catalog, others)
                read = pinned.changes_read(statement, self._catalog)
                if read and job.rerun_late_windows:
                    raise ConfigError(
                        f"job {job.name} reads {read[0].split('.')[0]}.`"
                        f"{read[0].split('.', 1)[1]}$changes` and has rerun-late-windows: a "
                        "window run again for late changes reads a later window's snapshots, "
                        "where its own changes are not told apart: drop one of the two"
                    )
                changes.make(read)
                return resolved

            try:
                count = self._run_sql(job, window, resolve)
            finally:
                changes.release()
                pinned.release(self._spark)
            read = pinned.snapshots()
            outcome = JobOutcome(job.name, window, (), count, self._clock() - started, read)
        else:
            mirrors = tuple(self.merge_mirror(table, window) for table in job.inputs)
            count = self._run_sql(job, window, lambda statement: statement)
            outcome = JobOutcome(job.name, window, mirrors, count, self._clock() - started)
        logger.info(
            "Job %s ran %d statements for %s in %.1f s%s",
            job.name,
            count,
            window,
            outcome.seconds,
            "".join(f", read {t} at snapshot {s}" for t, s in outcome.snapshots.items()),
        )
        return outcome

    def _run_sql(self, job: JobConfig, window: Window, resolve: Callable[[str], str]) -> int:
        variables = {**window.variables(job.name), **reveal(job.variables)}
        count = 0
        with self._job_conf(job):
            for file in job.sql:
                for statement in read_statements(file, variables):
                    self._run_statement(file, resolve(statement))
                    count += 1
        return count

    def _pin(self, job: JobConfig, window: Window, snapshots: Mapping[str, int]) -> PinnedInputs:
        """The job's Paimon inputs, pinned for the window: at ``snapshots`` when it names
        every input, else each at the first snapshot whose watermark reaches the end."""
        options = reveal(self._config.sink.catalog_properties)
        if not all(table in snapshots for table in job.inputs):
            return pin_inputs(self._spark, options, job.inputs, window.end_ms)
        wanted = {table: snapshots[table] for table in job.inputs}
        try:
            return pin_snapshots(self._spark, options, wanted)
        except SnapshotNotFoundError as error:
            # expired since the window was first run: the closest later state still kept
            retained = {
                table: max(snapshot, earliest_snapshot(open_table(options, table)) or snapshot)
                for table, snapshot in wanted.items()
            }
            logger.warning(
                "Job %s window %s: %s. Reading the oldest snapshots kept instead (%s): the "
                "window's results may hold changes from after its end",
                job.name,
                window,
                error,
                ", ".join(f"{t} at {s}" for t, s in retained.items()),
            )
            return pin_snapshots(self._spark, options, retained)

    def job(self, name: str) -> JobConfig:
        for job in self._config.tidemark.jobs:
            if job.name == name:
                return job
        known = ", ".join(job.name for job in self._config.tidemark.jobs) or "none"
        raise ConfigError(
            f"{self._config.path} has no job {name!r} under tidemark.jobs (its jobs: {known})"
        )

    def _run_statement(self, file: Path, statement: str) -> None:
        logger.debug("Running %s: %s", file, statement)
        try:
            self._spark.sql(statement)
        except (AnalysisException, ParseException) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            raise TerminalError(
                f"{file}: a statement failed: {first}. Fix the SQL file; the statement was: "
                f"{statement[:200]}"
            ) from error

    @contextmanager
    def _job_conf(self, job: JobConfig) -> Iterator[None]:
        """The job's ``spark`` settings, and our catalog as the default one, for its SQL only."""
        wanted: Mapping[str, str] = {
            "spark.sql.defaultCatalog": self._catalog,
            **reveal(job.spark),
        }
        conf = self._spark.conf
        saved: dict[str, str | None] = {}
        for key, value in wanted.items():
            if not conf.isModifiable(key) and key != "spark.sql.defaultCatalog":
                logger.warning(
                    "Job %s sets %s, which a running Spark session cannot change: pass it to "
                    "spark-submit (--conf) instead; ignored here",
                    job.name,
                    key,
                )
                continue
            saved[key] = conf.get(key, None)
            conf.set(key, value)
        try:
            yield
        finally:
            for key, previous in saved.items():
                if previous is None:
                    conf.unset(key)
                else:
                    conf.set(key, previous)


_SPARK_TRANSFORMS = {"year": "years", "month": "months", "day": "days", "hour": "hours"}


def spark_partition(field: PartitionField) -> str:
    """A ``sink.partition.key`` field as a Spark partition transform."""
    column = f"`{field.column}`"
    if field.transform == "identity":
        return column
    if field.transform in _SPARK_TRANSFORMS:
        return f"{_SPARK_TRANSFORMS[field.transform]}({column})"
    return f"{field.transform}({field.width}, {column})"
