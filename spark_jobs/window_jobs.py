"""Window jobs: merge a window of changes into a mirror, or run a job's SQL for a window.

The API the scheduler and the CLI use; one long-lived Spark session serves many windows::

    jobs = WindowJobs(config, plan, session)
    jobs.merge_mirror("shop.orders", window, up_to_order=None) -> MergeOutcome
    jobs.run_job("revenue_per_hour", window) -> JobOutcome

``merge_mirror`` applies the changelog rows with ``_tm_order`` in ``(M, B]``: M is the mirror's
``tidemark.merged-order`` stamp (0 for a new mirror) and B the ``tidemark.order`` of the earliest
complete changelog snapshot whose watermark reaches the window's end
(``spark_jobs.changelog_range``), or ``up_to_order`` when the caller knows it (a commit report's
``last_order``). A window whose end the mirror has already reached is a no-op, so a retried
window is never applied twice. It raises ``WindowNotCompleteError`` (a ``TransientError``) while
the changelog has not reached the window's end.

``run_job`` merges each of the job's inputs up to the window's end, then runs the job's SQL
files in order with the window's variables (``spark_jobs.user_sql``). The SQL itself must be
idempotent per window (``INSERT OVERWRITE`` of the window's partition, or ``MERGE``); see
docs/window-jobs.md.

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
from dataclasses import dataclass
from pathlib import Path

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table
from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import SparkSession

from spark_jobs.arrow_merge import create_mirror, merge_without_spark
from spark_jobs.changelog_range import ChangelogBound, SnapshotInfo, bound_at_order, find_bound
from spark_jobs.merge import (
    KnownState,
    MergeCounts,
    MirrorSpec,
    merge_range,
    mirror_evolution,
    mirror_properties,
)
from spark_jobs.stamps import (
    newest_stamp,
    snapshot_infos,
    spark_columns,
    stamp_without_changes,
    structure_digest,
)
from spark_jobs.user_sql import read_statements
from tidemark.catalog import load_catalog
from tidemark.config.model import (
    JobConfig,
    PartitionField,
    PipelineConfig,
    SchemaChangeBehavior,
    SchemaChangeType,
    TransformRule,
    reveal,
)
from tidemark.config.plan import Plan, SinkTable
from tidemark.contracts.mirror import MirrorKey
from tidemark.errors import ConfigError, TerminalError
from tidemark.windows import Window

logger = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class MergeOutcome:
    """What one mirror merge did. ``skipped``: the mirror already held the window."""

    sink_table: str
    mirror: str
    window: Window
    skipped: bool
    previous_order: int
    merged_order: int
    changes: int = 0
    keys: int = 0
    source_watermark_ms: int | None = None
    changelog_snapshot: int | None = None
    mirror_snapshot: int | None = None
    seconds: float = 0.0
    #: the merge ran Spark jobs (``spark_jobs.merge``); else PyIceberg alone committed it
    #: (``spark_jobs.arrow_merge``, or a stamp)
    by_spark: bool = False


@dataclass(frozen=True)
class JobOutcome:
    job: str
    window: Window
    mirrors: tuple[MergeOutcome, ...]
    statements: int
    seconds: float


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
    ) -> None:
        self._config = config
        self._plan = plan
        self._spark = session
        self._clock = clock
        self._catalog = config.tidemark.catalog_name
        #: PyIceberg's client of the same catalog: stamps and bounds without a Spark job
        self._lake: Catalog | None = None

    # --- mirrors -------------------------------------------------------------------------

    def merge_mirror(
        self, sink_table: str, window: Window, up_to_order: int | None = None
    ) -> MergeOutcome:
        started = self._clock()
        sink = self._sink(sink_table)
        spec = self.mirror_spec(sink)
        assert sink.mirror is not None  # mirror_spec refuses a sink without one
        mirror = self._lake_table(sink.mirror)
        state = newest_stamp(spec.mirror, snapshot_infos(mirror)) if mirror else None
        merged = state.merged_order if state else 0
        if state is not None and state.window_end_ms >= window.end_ms:
            logger.info(
                "Mirror %s already holds %s (merged to its end %d): nothing to do",
                spec.mirror,
                window,
                state.window_end_ms,
            )
            return MergeOutcome(sink.name, spec.mirror, window, True, merged, merged)
        changelog = self._lake_table(sink.changelog)
        snapshots = snapshot_infos(changelog) if changelog is not None else []
        bound = self._bound(sink.changelog, snapshots, window, up_to_order)
        high = max(bound.order, merged)
        assert changelog is not None  # a bound was found in its snapshots
        structure = structure_digest(changelog, repr(spec))
        stamps: dict[str, str] = {
            MirrorKey.WINDOW_START: str(window.start_ms),
            MirrorKey.WINDOW_END: str(window.end_ms),
            MirrorKey.MERGED_ORDER: str(high),
            MirrorKey.SOURCE_WATERMARK: str(bound.watermark_ms),
            MirrorKey.CHANGELOG_SNAPSHOT: str(bound.snapshot_id),
            MirrorKey.CHANGELOG_STRUCTURE: structure,
        }
        plain = spec.projection is None and spec.filter is None
        unchanged = state is not None and state.structure == structure
        if mirror is None and plain and not spec.partitioning:
            # created as Spark would create it, or left to Spark
            mirror = self._create_mirror(spec, changelog)
            unchanged = mirror is not None
        counts: MergeCounts | None = None
        if mirror is not None and unchanged and high == merged:
            # no row to apply and no structure to follow: the stamp alone, without Spark
            counts = MergeCounts(0, 0, stamp_without_changes(mirror, stamps))
        elif mirror is not None and unchanged and plain:
            # rows to apply to a structure as the last merge left it: without Spark if it can
            counts = self._merge_without_spark(spec, changelog, mirror, merged, high, stamps)
        by_spark = counts is None
        if counts is None:
            current = mirror.current_snapshot() if mirror is not None else None
            known = KnownState(
                changelog_properties=dict(changelog.properties),
                changelog_columns=spark_columns(changelog.schema()),
                mirror_snapshot=current.snapshot_id if current is not None else None,
                structure_unchanged=state is not None and state.structure == structure,
            )
            counts = merge_range(self._spark, spec, merged, high, stamps, known)
        outcome = MergeOutcome(
            sink_table=sink.name,
            mirror=spec.mirror,
            window=window,
            skipped=False,
            previous_order=merged,
            merged_order=high,
            changes=counts.changes,
            keys=counts.keys,
            source_watermark_ms=bound.watermark_ms,
            changelog_snapshot=bound.snapshot_id,
            mirror_snapshot=counts.snapshot_id,
            seconds=self._clock() - started,
            by_spark=by_spark,
        )
        logger.info(
            "Merged %s into %s for %s: orders (%d, %d], %d changes, %d keys, %.2f s%s",
            spec.changelog,
            spec.mirror,
            window,
            merged,
            high,
            counts.changes,
            counts.keys,
            outcome.seconds,
            " (Spark)" if by_spark else "",
        )
        return outcome

    def _create_mirror(self, spec: MirrorSpec, changelog: Table) -> Table | None:
        assert self._lake is not None  # the changelog was loaded through it
        return create_mirror(
            self._lake,
            spec.mirror.split(".", 1)[1],  # without the catalog's name
            changelog,
            evolution=mirror_evolution(spec, changelog.properties),
            keep_deletes=spec.keep_deletes,
            # Iceberg's Java writers set the codec at creation; PyIceberg's default is the same
            properties={"write.parquet.compression-codec": "zstd", **mirror_properties(spec)},
        )

    def _merge_without_spark(
        self,
        spec: MirrorSpec,
        changelog: Table,
        mirror: Table,
        low: int,
        high: int,
        stamps: Mapping[str, str],
    ) -> MergeCounts | None:
        merged = merge_without_spark(
            changelog,
            mirror,
            spec.key,
            low=low,
            high=high,
            stamps=stamps,
            evolution=mirror_evolution(spec, changelog.properties),
            keep_deletes=spec.keep_deletes,
        )
        return (
            None if merged is None else MergeCounts(merged.changes, merged.keys, merged.snapshot_id)
        )

    def mirror_spec(self, sink: SinkTable) -> MirrorSpec:
        """How ``sink``'s changelog becomes its mirror: names, key, transform, partitioning."""
        if sink.mirror is None:
            raise ConfigError(
                f"{sink.name} has its mirror turned off: turn it on under "
                f'tidemark.tables."{sink.name}".mirror'
            )
        options = self._config.tidemark.table(sink.name).mirror
        transform = self._transform(sink)
        partitioning = self._config.sink.partitioning_for(sink.name)
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

    def _lake_table(self, identifier: str) -> Table | None:
        """``identifier`` (``namespace.table``) as PyIceberg loads it, fresh; None if absent."""
        if self._lake is None:
            self._lake = load_catalog(self._catalog, reveal(self._config.sink.catalog_properties))
        try:
            return self._lake.load_table(identifier)
        except NoSuchTableError:
            return None

    def _bound(
        self,
        changelog: str,
        snapshots: list[SnapshotInfo],
        window: Window,
        up_to_order: int | None,
    ) -> ChangelogBound:
        if up_to_order is not None:
            return bound_at_order(changelog, snapshots, up_to_order)
        return find_bound(changelog, snapshots, window.end_ms)

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

    def run_job(self, job_name: str, window: Window) -> JobOutcome:
        started = self._clock()
        job = self.job(job_name)
        mirrors = tuple(self.merge_mirror(table, window) for table in job.inputs)
        variables = {**window.variables(job.name), **reveal(job.variables)}
        count = 0
        with self._job_conf(job):
            for file in job.sql:
                for statement in read_statements(file, variables):
                    self._run_statement(file, statement)
                    count += 1
        outcome = JobOutcome(job.name, window, mirrors, count, self._clock() - started)
        logger.info(
            "Job %s ran %d statements for %s in %.1f s", job.name, count, window, outcome.seconds
        )
        return outcome

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
