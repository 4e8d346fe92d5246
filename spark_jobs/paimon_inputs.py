"""A window job's Paimon inputs, pinned: each input table read as of the first snapshot whose
watermark reaches the window's end, for the whole job, and the window's changes.

::

    pinned = pin_inputs(spark, catalog_options, ["shop.orders", "shop.customers"], end)
    pinned.snapshots()            -> {"shop.orders": 12, "shop.customers": 7}
    spark.sql(pinned.resolve("SELECT ... FROM shop.orders JOIN shop.customers ..."))
    changes = WindowChanges(spark, catalog_options, pinned, start, since={})
    statement = "SELECT ... FROM shop.`orders$changes`"
    changes.make(pinned.changes_read(statement))  # the views of the changes it reads
    spark.sql(pinned.resolve(statement))
    window_changes(spark, catalog_options, "shop.orders", start, end) -> DataFrame

Each input is a temporary view over ``tidemark_paimon`` with its snapshot id fixed, so every
query of the job, and every partition of each, reads the same snapshot. How ``db.t`` reaches
the view: for an Iceberg mirror ``db.t`` resolves because the job runs with the pipeline's
catalog as ``spark.sql.defaultCatalog``. Nothing equivalent exists for a Python data source:

- Spark's temporary views have one-part names only (``db.t`` never matches a view);
- a table of the session catalog ``USING tidemark_paimon`` is created, but Spark 4.1 hands
  the Python source none of its OPTIONS, and such a table would be shared by every session of
  the Spark context (parallel windows pin different snapshots); measured here;
- a Spark catalog is a JVM class, which Python cannot provide.

So each view has a one-part name (``view_name``), and ``PinnedInputs.resolve`` points each
``db.t`` of a statement at its view, outside string literals and comments; ``cat.db.t``
(another catalog, named) is left alone. Where ``paimon-spark`` is on the classpath the views
read through Paimon's own catalog instead of ``tidemark_paimon`` (``spark_jobs.paimon_spark``:
``VERSION AS OF`` and ``paimon_incremental_query``); the names reach them the same way.

A window's changes to an input are read by the name ``db.`t$changes` ``, after the fashion of
Paimon's system tables (``t$audit_log``): every change committed after the state the window
before read up to the state this one reads, one row per change of each commit, with
``_tm_row_kind`` and Tidemark's ``_tm_*`` columns. Consecutive windows' changes neither overlap
nor leave a gap, so a job can fold a window's changes into a running aggregate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from spark_jobs import paimon_datasource, paimon_spark
from spark_jobs.user_sql import protected_spans
from tidemark.errors import ConfigError
from tidemark.lake import paimon as paimon_source

#: what follows an input's name to read the window's changes to it: ``db.`t$changes` ``
CHANGES_SUFFIX = "$changes"


@dataclass(frozen=True)
class PinnedInput:
    table: str  # db.t
    view: str
    snapshot_id: int


@dataclass(frozen=True)
class PinnedInputs:
    """The inputs of one job for one window, each at the snapshot it was pinned to."""

    inputs: tuple[PinnedInput, ...]

    def snapshots(self) -> dict[str, int]:
        """Each table's pinned snapshot id, by ``db.t``."""
        return {pinned.table: pinned.snapshot_id for pinned in self.inputs}

    def resolve(
        self, statement: str, catalog: str | None = None, unpinned: Sequence[str] = ()
    ) -> str:
        """``statement`` with every ``db.t`` (or `` `db`.`t` ``) of a pinned table reading its
        view and every ``db.`t$changes` `` its changes view (``WindowChanges``), with
        ``catalog.`` before them too where ``catalog`` is the pipeline's own catalog name (a
        job written for the Iceberg sink of the same pipeline names its tables so); string
        literals, comments and names qualified by another catalog are left alone.

        A statement naming one of ``unpinned`` (the pipeline's other Paimon tables) is refused:
        read unpinned, the name would reach the Iceberg catalog, which may hold a stale table of
        that name, and the job would read it without a word."""
        for table in unpinned:
            if _named(statement, table, catalog):
                raise UnpinnedInputError(
                    f"the statement reads {table}, a Paimon table of this pipeline that is not "
                    "among the job's inputs, so no snapshot of it is pinned for the window: "
                    f"add {table} to the job's inputs"
                )
        for pinned in self.inputs:
            # the longer name first: ``db.t`` is a prefix of ``db.`t$changes` ``
            changes = _reference(pinned.table, catalog, CHANGES_SUFFIX)
            statement = _substitute(statement, changes, changes_view_name(pinned.table))
            statement = _substitute(statement, _reference(pinned.table, catalog), pinned.view)
        return statement

    def changes_read(self, statement: str, catalog: str | None = None) -> list[str]:
        """The pinned tables whose changes (``db.`t$changes` ``) ``statement`` reads."""
        return [
            pinned.table
            for pinned in self.inputs
            if _named_by(statement, _reference(pinned.table, catalog, CHANGES_SUFFIX))
        ]

    def release(self, spark: SparkSession) -> None:
        """Drops the views: the job is done with these snapshots."""
        for pinned in self.inputs:
            spark.catalog.dropTempView(pinned.view)


class WindowChanges:
    """The views of the window's changes to pinned inputs (``db.`t$changes` ``), made for the
    tables a statement reads them of (``PinnedInputs.changes_read``): a job that never reads
    changes costs no lookup."""

    def __init__(
        self,
        spark: SparkSession,
        catalog_options: Mapping[str, str],
        pinned: PinnedInputs,
        start: int,
        since: Mapping[str, int],
    ) -> None:
        """The changes after ``since``'s snapshot of each table (the scheduler's: what the
        job's previous window read), else after the first snapshot whose watermark reaches
        ``start`` (epoch ms), up to the table's pinned snapshot."""
        self._spark = spark
        self._options = dict(catalog_options)
        self._pinned = {pinned.table: pinned.snapshot_id for pinned in pinned.inputs}
        self._start = start
        self._since = dict(since)
        #: per table whose changes view was made, the snapshot its changes start after
        self.made: dict[str, int] = {}

    def make(self, tables: Sequence[str]) -> None:
        """The changes views of ``tables``, made unless they are."""
        for table in tables:
            if table in self.made:
                continue
            after = self._since.get(table)
            if after is None:
                paimon = paimon_source.open_table(self._options, table)
                after = paimon_source.changes_start(paimon, table, self._start)
            frame = _changes(self._spark, self._options, table, after, self._pinned[table])
            frame.createOrReplaceTempView(changes_view_name(table))
            self.made[table] = after

    def release(self) -> None:
        """Drops the views made."""
        for table in self.made:
            self._spark.catalog.dropTempView(changes_view_name(table))


class UnpinnedInputError(ConfigError):
    """A job's statement reads a Paimon table of the pipeline that is not among its inputs."""


def _named(statement: str, table: str, catalog: str | None) -> bool:
    """Whether ``statement`` names ``table`` or its changes outside its string literals and
    comments."""
    return any(
        _named_by(statement, _reference(table, catalog, suffix)) for suffix in ("", CHANGES_SUFFIX)
    )


def _named_by(statement: str, pattern: re.Pattern[str]) -> bool:
    spans = protected_spans(statement)
    return any(
        not any(start <= match.start() < stop for start, stop in spans)
        for match in pattern.finditer(statement)
    )


def _substitute(statement: str, pattern: re.Pattern[str], name: str) -> str:
    """``statement`` with each match of ``pattern`` outside string literals and comments
    replaced by ``name``."""
    spans = protected_spans(statement)

    def replace(match: re.Match[str]) -> str:
        inside = any(start <= match.start() < stop for start, stop in spans)
        return match.group(0) if inside else name

    return pattern.sub(replace, statement)


def _reference(table: str, catalog: str | None = None, suffix: str = "") -> re.Pattern[str]:
    """``db.t`` (each part quoted or not; ``catalog.`` before it allowed), or with ``suffix``
    on the table's name (``db.`t$changes` ``)."""
    database, name = table.split(".", 1)
    part = r"(?:`{0}`|{0})"
    qualified = "" if catalog is None else rf"(?:{part.format(re.escape(catalog))}\s*\.\s*)?"
    return re.compile(
        rf"(?<![\w.`]){qualified}{part.format(re.escape(database))}\s*\.\s*"
        rf"{part.format(re.escape(name + suffix))}(?![\w`$])",
        re.IGNORECASE,
    )


def view_name(table: str) -> str:
    """The temporary view ``db.t`` is read through: one part, as Spark's views are."""
    database, name = table.split(".", 1)
    return f"paimon__{database}__{name}"


def changes_view_name(table: str) -> str:
    """The temporary view ``db.`t$changes` `` is read through."""
    return f"{view_name(table)}__changes"


def pin_inputs(
    spark: SparkSession,
    catalog_options: Mapping[str, str],
    tables: Sequence[str],
    end: int,
    *,
    metadata_columns: bool = False,
) -> PinnedInputs:
    """Registers each of ``tables`` as a temporary view of ``spark`` read as of the first
    snapshot whose watermark is at least ``end`` (epoch ms).

    Every table is resolved before any view is made: a table that has not reached ``end``
    raises ``WatermarkNotReachedError`` (naming it, its newest watermark and ``end``) and
    leaves the session as it was. The views show the columns an Iceberg mirror has (the
    source's, and ``_tm_deleted``), so a job's SQL reads either sink the same way; with
    ``metadata_columns`` they show Tidemark's ``_tm_*`` changelog columns too.
    """
    snapshots = {
        table: paimon_source.snapshot_at_watermark(
            paimon_source.open_table(catalog_options, table), table, end
        )
        for table in tables
    }
    return pin_snapshots(spark, catalog_options, snapshots, metadata_columns=metadata_columns)


def pin_snapshots(
    spark: SparkSession,
    catalog_options: Mapping[str, str],
    snapshots: Mapping[str, int],
    *,
    metadata_columns: bool = False,
) -> PinnedInputs:
    """Registers each table of ``snapshots`` as a temporary view of ``spark`` read at its
    snapshot id there (a scheduler's pin, ``pin_inputs``'s resolution), as ``pin_inputs``
    does. Every snapshot is looked up first: one the table no longer has (expired) raises
    ``SnapshotNotFoundError`` naming it and leaves the session as it was."""
    for table, snapshot_id in snapshots.items():
        paimon_source.require_snapshot(
            paimon_source.open_table(catalog_options, table), table, snapshot_id
        )
    inputs = []
    for table, snapshot_id in snapshots.items():
        frame = _read(spark, catalog_options, table, snapshot_id, metadata_columns=metadata_columns)
        view = view_name(table)
        frame.createOrReplaceTempView(view)
        inputs.append(PinnedInput(table, view, snapshot_id))
    return PinnedInputs(tuple(inputs))


def window_changes(
    spark: SparkSession,
    catalog_options: Mapping[str, str],
    table: str,
    start: int,
    end: int,
) -> DataFrame:
    """The changes to ``table`` between the snapshots watermarks ``start`` and ``end`` pin
    (the state a window ending at ``start`` reads, and the one a window ending at ``end``
    reads): one row per change each commit in between wrote (the newest of a key's changes
    within one commit), not merged across commits. A delete is a row whose ``_tm_op`` is
    ``d`` and ``_tm_row_kind`` is ``-D``; ``_tm_order`` orders a key's changes."""
    paimon = paimon_source.open_table(catalog_options, table)
    after = paimon_source.changes_start(paimon, table, start)
    through = paimon_source.snapshot_at_watermark(paimon, table, end)
    return _changes(spark, catalog_options, table, after, through)


def _changes(
    spark: SparkSession, catalog_options: Mapping[str, str], table: str, after: int, through: int
) -> DataFrame:
    return _read(spark, catalog_options, table, through, after=after, metadata_columns=True)


def _read(
    spark: SparkSession,
    catalog_options: Mapping[str, str],
    table: str,
    snapshot_id: int,
    *,
    after: int | None = None,
    metadata_columns: bool,
) -> DataFrame:
    """``table`` at ``snapshot_id``, or its changes after snapshot ``after`` up to it: through
    Paimon's own Spark runtime where it is on the classpath, else through ``tidemark_paimon``."""
    if paimon_spark.available(spark):
        paimon = paimon_source.open_table(catalog_options, table)
        shown = paimon_datasource.visible_columns(
            paimon, changes=after is not None, metadata_columns=metadata_columns
        ).names
        paimon_spark.register_catalog(spark, catalog_options)
        if after is None:
            return spark.sql(paimon_spark.snapshot_query(table, snapshot_id, shown))
        return spark.sql(paimon_spark.changes_query(table, after, snapshot_id, shown))
    paimon_datasource.register(spark)
    reader = spark.read.format(paimon_datasource.NAME).options(**catalog_options)
    reader = reader.option("table", table).option("snapshot-id", str(snapshot_id))
    if after is not None:
        reader = reader.option("changes-after-snapshot", str(after))
    return reader.option("metadata-columns", "true" if metadata_columns else "false").load()
