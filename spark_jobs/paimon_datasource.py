"""``tidemark_paimon``: a Spark Python Data Source that reads a Paimon table through pypaimon,
where Paimon's own Spark runtime (``paimon-spark-4.1_2.13``) is not on the classpath.

::

    register(spark)
    spark.read.format("tidemark_paimon")
        .option("warehouse", "/lake/paimon").option("table", "shop.orders")
        .option("watermark", "1767225600000")  # or "snapshot-id"
        .load()

Options:

- ``table`` (or the ``load`` path): ``db.t``.
- ``snapshot-id``, or ``watermark`` (epoch ms: the first snapshot whose Paimon watermark is at
  least it); neither reads the newest snapshot. The reader resolves the snapshot once, on the
  driver, and plans every partition's splits at it: all partitions read the same state.
- ``changes-after-snapshot``: instead of a state, the changes committed after that snapshot up
  to the pinned one (``tidemark.lake.paimon.plan_changes``), ``_tm_row_kind`` included.
- ``metadata-columns``: ``true`` (the default) shows Tidemark's ``_tm_*`` changelog columns,
  ``false`` only the source's columns (and ``_tm_deleted``), as an Iceberg mirror has them.
- ``partitions``: at most this many Spark partitions (default: one per split).
- Anything else is a Paimon catalog option (``warehouse``, ``metastore``, ...). Spark lowers
  option names.

A state read never shows ``_tm_row_kind``: after merge-on-read it is ``+I`` or ``+U`` on every
row (deletes are gone), which ``_tm_op`` already says, and an Iceberg mirror has no such column.

Projection: PySpark 4.1 hands a Python data source no pruned columns (only filters, behind
``spark.sql.python.filterPushdown.enabled``), so a query over the source reads every column.
A schema given to the reader (``spark.read.schema("id BIGINT, amount DOUBLE")``) is read
alone: the only columns pypaimon reads are the schema's. Filters are not pushed: implementing
``pushFilters`` would make every session that has not turned that setting on fail.

Workers unpickle this module's classes by name, so ``spark_jobs`` must be importable by
Spark's Python workers (``PYTHONPATH``, or ``--py-files`` with ``spark-submit``), in a
Python that has pypaimon (``PYSPARK_PYTHON``; ``spark_jobs.session`` sets the driver's own for
a local Spark).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from tidemark.contracts.changelog import METADATA_NAMES
from tidemark.errors import ConfigError
from tidemark.lake import paimon as paimon_source

NAME = "tidemark_paimon"

_TABLE, _PATH, _SNAPSHOT, _WATERMARK = "table", "path", "snapshot-id", "watermark"
_CHANGES_AFTER, _METADATA, _PARTITIONS = "changes-after-snapshot", "metadata-columns", "partitions"
_READER_OPTIONS = frozenset(
    {_TABLE, _PATH, _SNAPSHOT, _WATERMARK, _CHANGES_AFTER, _METADATA, _PARTITIONS}
)


@dataclass(frozen=True)
class PaimonRead:
    """What to read, parsed from the data source's options."""

    catalog_options: Mapping[str, str]
    table: str
    snapshot_id: int | None = None
    watermark: int | None = None
    changes_after: int | None = None
    metadata_columns: bool = True
    partitions: int | None = None

    @classmethod
    def of(cls, options: Mapping[str, str]) -> PaimonRead:
        lowered = {key.lower(): value for key, value in options.items()}
        table = lowered.get(_TABLE) or lowered.get(_PATH)
        if not table:
            raise ConfigError(f"{NAME}: say which table to read: .option('table', 'db.t')")
        read = cls(
            catalog_options={k: v for k, v in lowered.items() if k not in _READER_OPTIONS},
            table=table,
            snapshot_id=_integer(lowered, _SNAPSHOT),
            watermark=_integer(lowered, _WATERMARK),
            changes_after=_integer(lowered, _CHANGES_AFTER),
            metadata_columns=_boolean(lowered, _METADATA, default=True),
            partitions=_integer(lowered, _PARTITIONS),
        )
        if read.snapshot_id is not None and read.watermark is not None:
            raise ConfigError(f"{NAME} {table}: give either snapshot-id or watermark, not both")
        if read.changes_after is not None and read.snapshot_id is None and read.watermark is None:
            raise ConfigError(
                f"{NAME} {table}: changes-after-snapshot needs the snapshot the changes end "
                "at: give snapshot-id or watermark too"
            )
        return read

    def columns(self, table: paimon_source.Table) -> pa.Schema:
        """The columns Spark sees."""
        return visible_columns(
            table, changes=self.changes_after is not None, metadata_columns=self.metadata_columns
        )


def visible_columns(
    table: paimon_source.Table, *, changes: bool, metadata_columns: bool
) -> pa.Schema:
    """The columns a read of ``table`` shows: Paimon's row kind only in a read of changes,
    Tidemark's ``_tm_*`` columns only with ``metadata_columns``."""
    schema = paimon_source.arrow_schema(table, row_kind=changes)
    if metadata_columns:
        return schema
    hidden = METADATA_NAMES | {paimon_source.ROW_KIND_COLUMN}
    return pa.schema([column for column in schema if column.name not in hidden])


def _integer(options: Mapping[str, str], key: str) -> int | None:
    value = options.get(key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{NAME}: option {key} must be an integer, got {value!r}") from None


def _boolean(options: Mapping[str, str], key: str, *, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise ConfigError(f"{NAME}: option {key} must be true or false, got {value!r}")
    return value.lower() == "true"


class TidemarkPaimon(DataSource):
    """Spark's entry point: the schema on the driver, a reader per query."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        read = PaimonRead.of(self.options)
        table = paimon_source.open_table(read.catalog_options, read.table)
        return from_arrow_schema(read.columns(table), prefer_timestamp_ntz=True)

    def reader(self, schema: StructType) -> DataSourceReader:
        return PaimonReader(PaimonRead.of(self.options), schema)


class SplitGroup(InputPartition):
    """The splits one Spark task reads."""

    def __init__(self, splits: Sequence[paimon_source.Split]) -> None:
        super().__init__(list(splits))
        self.splits = list(splits)


class PaimonReader(DataSourceReader):
    """Made on the driver, where it pins the snapshot and plans; pickled to the executors,
    where it reads the splits of its partitions."""

    def __init__(self, read: PaimonRead, schema: StructType) -> None:
        self._read = read
        self._schema = schema
        self._columns = [column.name for column in schema.fields]
        table = paimon_source.open_table(read.catalog_options, read.table)
        known = set(read.columns(table).names)
        unknown = [name for name in self._columns if name not in known]
        if unknown:
            raise ConfigError(
                f"{NAME} {read.table}: the schema asks for column(s) {', '.join(unknown)}, "
                f"which the table does not show (its columns: {', '.join(sorted(known))})"
            )
        #: the one snapshot every partition reads
        self.snapshot_id = self._pin(table)

    def _pin(self, table: paimon_source.Table) -> int | None:
        read = self._read
        if read.watermark is not None:
            return paimon_source.snapshot_at_watermark(table, read.table, read.watermark)
        if read.snapshot_id is not None:
            return read.snapshot_id
        return paimon_source.latest_snapshot(table)

    def partitions(self) -> Sequence[InputPartition]:
        read = self._read
        table = paimon_source.open_table(read.catalog_options, read.table)
        if self.snapshot_id is None:
            splits: list[paimon_source.Split] = []
        elif read.changes_after is not None:
            splits = paimon_source.plan_changes(
                table, read.table, read.changes_after, self.snapshot_id
            )
        else:
            splits = paimon_source.plan_at(table, read.table, self.snapshot_id)
        return [SplitGroup(group) for group in _balanced(splits, read.partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SplitGroup)
        table = paimon_source.open_table(self._read.catalog_options, self._read.table)
        yield from paimon_source.read_splits(table, partition.splits, self._columns)


def _balanced(
    splits: Sequence[paimon_source.Split], most: int | None
) -> list[list[paimon_source.Split]]:
    """``splits`` in at most ``most`` groups of about equal bytes (one group per split if
    ``most`` is None); one empty group when there is no split, so that Spark has a task."""
    if not splits:
        return [[]]
    count = len(splits) if most is None else max(1, min(most, len(splits)))
    groups: list[list[paimon_source.Split]] = [[] for _ in range(count)]
    sizes = [0] * count
    for split in sorted(splits, key=paimon_source.split_size, reverse=True):
        smallest = sizes.index(min(sizes))
        groups[smallest].append(split)
        sizes[smallest] += paimon_source.split_size(split)
    return groups


def register(spark: SparkSession) -> None:
    """Makes ``tidemark_paimon`` a format of ``spark`` (data sources are per session), once:
    registering again replaces it, with a warning each time."""
    if not spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists(NAME):
        spark.dataSource.register(TidemarkPaimon)
