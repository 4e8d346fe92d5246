"""Changelog tables in Iceberg: append-only tables holding every change of one sink table.

Each row is a source row image (the after image; the before image for a delete) plus the
metadata columns of docs/architecture.md#changelog-rows. Tables are created on first use,
format v2, partitioned by day of event time. Ingest only ever appends
(docs/architecture.md#append-only-changelogs-spark-does-the-merge).

``ChangelogTable`` is the Iceberg implementation of ``tidemark.sinks.protocols.ChangelogWriter``
(opened through ``ingest.changelog.catalogs.IcebergSinkCatalog``): its commits are snapshots,
read as ``Commit`` records by ``tidemark.sinks.iceberg``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.conversions import from_bytes
from pyiceberg.exceptions import NoSuchTableError, TableAlreadyExistsError
from pyiceberg.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    Reference,
)
from pyiceberg.expressions.literals import literal
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.transforms import DayTransform
from pyiceberg.types import LongType

from ingest.changelog.fencing import newest_progress_snapshot, writer_fence
from ingest.changelog.listing import Listing, namespace_of
from tidemark.catalog import METADATA_RETENTION
from tidemark.contracts.bootstrap_state import BootstrapState
from tidemark.contracts.changelog import (
    METADATA_FIELDS,
    METADATA_NAMES,
    MetadataColumn,
    Operation,
)
from tidemark.contracts.instance import WRITER_KEY, writer_id
from tidemark.contracts.progress import TableProgress
from tidemark.lake.appends import Appender
from tidemark.lake.transactions import AskingTransaction, create_table_transaction
from tidemark.sinks.commits import Commit
from tidemark.sinks.iceberg import commit_of, iceberg_commits

logger = logging.getLogger(__name__)

DEFAULT_PROPERTIES = {
    "format-version": "2",
    "write.parquet.compression-codec": "zstd",
    **METADATA_RETENTION,
}


def _bound(bounds: Mapping[int, bytes] | None, field_id: int, unknown: int) -> int:
    """A data file's bound of a long column, from its manifest; ``unknown`` for a file
    without one, so that it is read, never skipped."""
    raw = (bounds or {}).get(field_id)
    return unknown if raw is None else int(from_bytes(LongType(), raw))


_LONGEST, _SHORTEST = 2**63 - 1, -(2**63)


def changelog_schema(data: pa.Schema) -> pa.Schema:
    """Data columns (all nullable: a delete or a narrow shard may lack values) then metadata."""
    clash = METADATA_NAMES.intersection(data.names)
    if clash:
        raise ValueError(f"source columns {sorted(clash)} clash with Tidemark's metadata columns")
    fields = [field.with_nullable(True) for field in data]
    return pa.schema([*fields, *METADATA_FIELDS])


class ChangelogTable:
    """One changelog table; ``commit`` appends rows and progress in one Iceberg commit
    (``tidemark.sinks.protocols.ChangelogWriter``)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self.schema = table.schema().as_arrow()
        self._appender = Appender(table, fallback=self._append_with_pyiceberg)
        #: held by every commit to this table: ingest commits in background threads
        #: (``ingest.stream.background_commits``) while the schema tracker may evolve the table
        #: on the reading thread; a commit converts its rows to ``schema`` under it too
        self.writing = threading.RLock()

    @property
    def identifier(self) -> str:
        return ".".join(self._table.name())

    @property
    def properties(self) -> dict[str, str]:
        return dict(self._table.properties)

    def data_schema(self) -> pa.Schema:
        """The source columns, without Tidemark's metadata columns."""
        return pa.schema([field for field in self.schema if field.name not in METADATA_NAMES])

    def evolve(
        self,
        add: Sequence[pa.Field],
        widen: Sequence[pa.Field],
        properties: Mapping[str, str],
        renamed: Mapping[str, str] | None = None,
        dropped: Sequence[str] = (),
    ) -> None:
        """Add columns, widen types and set properties, in one commit
        (``ingest.schema.evolution``). A changelog keeps its history: a renamed column is
        added under its new name and the old one stays, as a dropped one does (the merge
        follows both into the mirror from the schema history the properties carry)."""
        with self.writing:
            with _transaction(self._table) as transaction:
                if add or widen:
                    with transaction.update_schema() as update:
                        update.union_by_name(pa.schema([*add, *widen]))
                transaction.set_properties(dict(properties))
            self.schema = self._table.schema().as_arrow()

    def has_commits(self) -> bool:
        return self._table.current_snapshot() is not None

    def commits(self) -> Iterator[Commit]:
        """The snapshots of the table's history, newest first, as commits."""
        return iceberg_commits(self._table.metadata)

    def progress(self) -> TableProgress | None:
        """The progress recorded by the newest Tidemark commit (compactions are skipped)."""
        summary = self._newest_tidemark_summary()
        return None if summary is None else TableProgress.from_summary(summary)

    def bootstrap(self) -> BootstrapState | None:
        """The bootstrap's state if the newest Tidemark commit is one of the bootstrap's."""
        summary = self._newest_tidemark_summary()
        return None if summary is None else BootstrapState.from_summary(summary)

    def newest_rows(self, since: datetime, columns: Sequence[str], limit: int) -> pa.Table:
        """``columns`` of the ``limit`` newest rows (by order) whose change happened since
        ``since``, newest first. Only the data files that can hold them are read, chosen by
        their bounds of the order column: a table of millions of rows costs a few files."""
        order = MetadataColumn.ORDER_KEY.value
        recent = GreaterThanOrEqual(
            term=Reference(MetadataColumn.EVENT_TIME.value), value=literal(since.isoformat())
        )
        field_id = self._table.schema().find_field(order).field_id
        files = [task.file for task in self._table.scan(row_filter=recent).plan_files()]
        files.sort(key=lambda file: _bound(file.upper_bounds, field_id, _LONGEST), reverse=True)
        floor, rows_in = None, 0
        for file in files:
            lower = _bound(file.lower_bounds, field_id, _SHORTEST)
            floor = lower if floor is None else min(floor, lower)
            rows_in += file.record_count
            if rows_in >= limit:
                break
        selected = (*columns, order)
        if floor is None:
            return self.schema.empty_table().select(list(columns))
        read = self._table.scan(
            row_filter=And(recent, GreaterThanOrEqual(term=Reference(order), value=literal(floor))),
            selected_fields=selected,
        ).to_arrow()
        if read.num_rows < limit and rows_in < sum(file.record_count for file in files):
            # some rows of the chosen files were older than ``since``: read them all
            read = self._table.scan(row_filter=recent, selected_fields=selected).to_arrow()
        newest = read.sort_by([(order, "descending")]).slice(0, limit)
        return newest.select(list(columns))

    def commit(
        self, rows: pa.Table, progress: TableProgress, bootstrap: BootstrapState | None = None
    ) -> Commit:
        """Append ``rows`` (possibly none) with ``progress``, and the bootstrap's state when the
        rows are a snapshot's, in one commit; returns the commit, from the new snapshot."""
        properties = {**progress.summary(), WRITER_KEY: writer_id()}
        if bootstrap is not None:
            properties.update(bootstrap.summary())
        with self.writing:
            return commit_of(self._appender.append(rows, properties, writer_fence(self._table)))

    def _append_with_pyiceberg(
        self, rows: pa.Table, properties: dict[str, str], before_retry: Callable[[], None] | None
    ) -> None:
        fence = before_retry if before_retry is not None else writer_fence(self._table)
        with AskingTransaction(self._table, fence) as transaction:
            transaction.append(rows, snapshot_properties=properties)

    def delete_snapshot_rows_after(self, order: int, progress: TableProgress) -> None:
        """Delete the rows a bootstrap read whose order is after ``order``, in a commit that
        keeps ``progress`` (the one delete ingest makes: in an error table)."""
        self._delete(
            And(
                EqualTo(
                    term=Reference(MetadataColumn.OPERATION.value),
                    value=literal(Operation.SNAPSHOT_READ.value),
                ),
                GreaterThan(term=Reference(MetadataColumn.ORDER_KEY.value), value=literal(order)),
            ),
            progress,
        )

    def _delete(self, rows: BooleanExpression, progress: TableProgress) -> None:
        with self.writing, _transaction(self._table) as transaction:
            properties = {**progress.summary(), WRITER_KEY: writer_id()}
            transaction.delete(delete_filter=rows, snapshot_properties=properties)

    def last_commit_id(self) -> int | None:
        """The snapshot id of the newest Tidemark commit (compactions are skipped)."""
        snapshot = self._newest_tidemark_snapshot()
        return None if snapshot is None else snapshot.snapshot_id

    def _newest_tidemark_summary(self) -> dict[str, str] | None:
        snapshot = self._newest_tidemark_snapshot()
        if snapshot is None or snapshot.summary is None:
            return None
        return dict(snapshot.summary.additional_properties)

    def _newest_tidemark_snapshot(self) -> Snapshot | None:
        return newest_progress_snapshot(self._table.metadata)


def _transaction(table: Table) -> AskingTransaction:
    """A changelog's transaction, whose commit PyIceberg applies again after a concurrent
    commit only if that was not another writer's (``ingest.changelog.fencing``)."""
    return AskingTransaction(table, writer_fence(table))


def open_changelog(
    catalog: Catalog,
    identifier: str,
    data: pa.Schema,
    properties: Mapping[str, str],
    listing: Listing | None = None,
) -> ChangelogTable:
    """The changelog table ``identifier`` (``namespace.name``), created if it does not exist;
    ``listing`` tells whether it and its namespace exist without asking the catalog."""
    if listing is None or listing.has_table(identifier):
        try:
            # its columns against the source's: ingest.schema.tracker, at start-up
            return ChangelogTable(with_retention(catalog.load_table(identifier)))
        except NoSuchTableError:
            pass
    namespace = namespace_of(identifier)
    if listing is None or not listing.has_namespace(namespace):
        catalog.create_namespace_if_not_exists(namespace)
    logger.info("Creating changelog table %s", identifier)
    transaction = create_table_transaction(
        catalog, identifier, changelog_schema(data), {**DEFAULT_PROPERTIES, **properties}
    )
    with transaction.update_spec() as spec:
        spec.add_field(MetadataColumn.EVENT_TIME, DayTransform(), "event_day")
    try:
        created = transaction.commit_transaction()
    except TableAlreadyExistsError:
        if listing is None:
            raise
        # created since the listing (another process): open it as it is
        return ChangelogTable(with_retention(catalog.load_table(identifier)))
    if listing is not None:
        listing.add(identifier)
    # the created table as the catalog now has it, without reading it back (one table of many)
    return ChangelogTable(
        Table(
            created.name(),
            metadata=created.metadata,
            metadata_location=created.metadata_location,
            io=created.io,
            catalog=catalog,
        )
    )


def with_retention(table: Table) -> Table:
    """``table``, given the metadata retention of ``METADATA_RETENTION`` where it has none (a
    table created by an earlier version): one commit, once. A value the user set is kept."""
    missing = {
        key: value for key, value in METADATA_RETENTION.items() if key not in table.properties
    }
    if not missing:
        return table
    with table.transaction() as transaction:
        transaction.set_properties(missing)
    return table
