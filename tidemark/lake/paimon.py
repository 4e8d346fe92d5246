"""Paimon through pypaimon: the one module that imports it, pinned.

Ingest writes Paimon primary-key tables with pypaimon (docs/paimon.md) and needs more of it
than its public API gives:

- a real ``watermark`` in every snapshot: pypaimon only copies the previous one's, so each
  commit publishes its snapshot through ``_Stamping``, a ``SnapshotCommit`` (pypaimon's interface
  for publishing a snapshot atomically) around the catalog's own, which sets the watermark and
  asks the writer's ``fence`` just before the snapshot becomes visible;
- one publisher at a time: ingest and the maintenance pass (Paimon's Java code, in the Spark
  driver) both publish snapshot N by a check and a rename, so both hold ``publishing``'s lock;
- a commit user of its own per writer and increasing commit identifiers, so that pypaimon's
  retry recognises its own landed commit and never another process's; empty commits (an idle
  table's progress), which pypaimon skips unless told not to;
- ``columnar_writes``: two of pypaimon's write steps ran row by row in Python and took 90% of a
  commit (the fold of a buffer by primary key, the bucket hash of one-bucket tables; ingest ran
  at 0.16-0.45x Iceberg's rows/s): replaced, for deduplicate tables and one bucket, by the same
  result computed on columns. It also records how many of a data file's rows are deletes,
  which pypaimon's primary-key writer leaves at 0: a bucket whose only file held a delete was
  read without merging, and the deleted row came back.

It also reads a table at a snapshot, split by split, for the Spark data source
(``spark_jobs.paimon_datasource``: the driver plans, executors read).

The stamping and the writes reach into pypaimon's commit (``TableCommit.file_store_commit``) and
writer classes, so the version they were written against is pinned and another is refused at
import (``check_pypaimon``).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import itertools
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory, Schema
from pypaimon.catalog.catalog import Catalog
from pypaimon.catalog.catalog_exception import (
    DatabaseNotExistException,
    TableAlreadyExistException,
    TableNotExistException,
)
from pypaimon.common.file_io import FileIO
from pypaimon.common.options import Options
from pypaimon.read.reader.deduplicate_merge_function import DeduplicateMergeFunction
from pypaimon.schema.data_types import PyarrowFieldParser
from pypaimon.schema.schema_change import SchemaChange
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.snapshot.snapshot_commit import PartitionStatistics, SnapshotCommit
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor
from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

from tidemark.errors import ConfigError, TerminalError, TransientError

#: the pypaimon release whose commit internals ``_Stamping`` is written and tested against
SUPPORTED_PYPAIMON = "2.1.0"


class PypaimonVersionError(TerminalError):
    """The installed pypaimon is not the one this module is written against."""


def check_pypaimon(installed: str | None = None) -> None:
    """Raise ``PypaimonVersionError`` unless ``installed`` (by default the installed
    pypaimon's version) is ``SUPPORTED_PYPAIMON``."""
    found = installed if installed is not None else importlib.metadata.version("pypaimon")
    if found == SUPPORTED_PYPAIMON:
        return
    raise PypaimonVersionError(
        f"pypaimon {found} is installed, but Tidemark stamps each Paimon snapshot's watermark "
        f"through pypaimon's commit as it is in {SUPPORTED_PYPAIMON} (tidemark/lake/paimon.py): "
        f"install pypaimon=={SUPPORTED_PYPAIMON} (pin it), or port that module to {found} and "
        "change SUPPORTED_PYPAIMON"
    )


check_pypaimon()


def _fold_last_per_key(data: pa.Table, key_arity: int) -> pa.Table:
    """The last row of each run of equal keys (the first ``key_arity`` columns) of ``data``,
    sorted by key then sequence: what pypaimon's deduplicate merge keeps of each run."""
    rows = data.num_rows
    if rows < 2:
        return data
    ends: pa.Array | pa.ChunkedArray | None = None
    for index in range(key_arity):
        column = data.column(index)
        differs = pc.not_equal(column.slice(0, rows - 1), column.slice(1))
        ends = differs if ends is None else pc.or_(ends, differs)
    assert ends is not None
    last = pa.chunked_array([*pa.chunked_array(ends).chunks, pa.array([True])])
    # one chunk, as pypaimon's fold returns: its writer takes a file's key range from the first
    # record batch alone
    return data.filter(last).combine_chunks()


def columnar_writes() -> None:
    """Replace pypaimon's per-row key fold (deduplicate tables) and bucket hash (one-bucket
    tables) by column-at-a-time equivalents; other tables keep pypaimon's."""
    fold = KeyValueDataWriter._merge_pending_by_pk
    buckets = FixedBucketRowKeyExtractor._extract_buckets_batch

    def merge_pending_by_pk(writer: Any, data: pa.Table) -> pa.Table:
        if type(writer._merge_function) is not DeduplicateMergeFunction:
            return fold(writer, data)
        return _fold_last_per_key(data, len(writer.trimmed_primary_keys))

    def extract_buckets_batch(extractor: Any, data: pa.RecordBatch) -> list[int]:
        if extractor.num_buckets != 1:
            return buckets(extractor, data)
        return [0] * data.num_rows

    write_file = KeyValueDataWriter._write_data_to_file
    file_meta = KeyValueDataWriter._create_data_file_meta

    def write_data_to_file(writer: Any, data: pa.Table) -> None:
        kinds = data.column("_VALUE_KIND")
        writer._tidemark_deletes = pc.sum(pc.is_in(kinds, _RETRACTIONS)).as_py() or 0
        try:
            write_file(writer, data)
        finally:
            writer._tidemark_deletes = None

    def create_data_file_meta(writer: Any, *args: Any, **kwargs: Any) -> Any:
        meta = file_meta(writer, *args, **kwargs)
        deletes = getattr(writer, "_tidemark_deletes", None)
        if deletes is not None:
            meta.delete_row_count = deletes
        return meta

    KeyValueDataWriter._merge_pending_by_pk = merge_pending_by_pk
    FixedBucketRowKeyExtractor._extract_buckets_batch = extract_buckets_batch
    KeyValueDataWriter._write_data_to_file = write_data_to_file
    KeyValueDataWriter._create_data_file_meta = create_data_file_meta


#: the row kinds (``_VALUE_KIND``: -U, -D) a reader must merge away, never show
_RETRACTIONS = pa.array([1, 3], pa.int8())


columnar_writes()


@dataclass(frozen=True)
class PaimonSnapshot:
    """What Tidemark reads of one Paimon snapshot."""

    snapshot_id: int
    committed_at_ms: int
    #: APPEND, COMPACT, OVERWRITE
    kind: str
    #: the snapshot's properties (Tidemark's progress keys, on Tidemark's commits)
    properties: Mapping[str, str]
    #: Paimon's own watermark field: None until some commit set one
    watermark: int | None
    total_rows: int | None
    delta_rows: int | None


def _snapshot(snapshot: Snapshot) -> PaimonSnapshot:
    return PaimonSnapshot(
        snapshot_id=snapshot.id,
        committed_at_ms=snapshot.time_millis,
        kind=str(snapshot.commit_kind),
        properties=dict(snapshot.properties or {}),
        watermark=snapshot.watermark,
        total_rows=snapshot.total_record_count,
        delta_rows=snapshot.delta_record_count,
    )


#: ``fence(snapshot id the new one follows)``: raises to stop a commit about to be published
Fence = Callable[[int | None], None]

#: beside a table's own folders: held while a Tidemark process publishes a snapshot of it
PUBLISH_LOCK = ".tidemark-publish.lock"


def local_folder(location: str) -> Path | None:
    """The folder a table location names on this machine's file system; None on an object
    store (``s3://...``)."""
    parts = urlsplit(location)
    if parts.scheme in ("", "file"):
        return Path(unquote(parts.path))
    return None


@contextmanager
def publishing(table_location: str) -> Iterator[None]:
    """Held while publishing a snapshot of the table at ``table_location``: ingest (pypaimon)
    and the maintenance pass (Paimon's Java code) both publish snapshot N by checking that its
    file does not exist, then renaming onto it, and a rename replaces a file another process
    put there in between: without one lock across processes, one of two snapshots of the same
    id would vanish. An object store has no rename to guard: use a metastore that commits
    atomically there (docs/paimon.md)."""
    folder = local_folder(table_location)
    if folder is None:
        yield
        return
    with (folder / PUBLISH_LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class _Fenced(BaseException):
    """The fence's error on its way out of pypaimon's commit, which retries every
    ``Exception`` (ten times, for about ten seconds) as a possibly lost race."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Stamping(SnapshotCommit):
    """Publishes pypaimon's snapshot through ``inner`` with ``watermark`` set (never below the
    previous snapshot's: Paimon watermarks only rise), after ``fence`` allowed it."""

    def __init__(
        self, inner: SnapshotCommit, watermark: int | None, fence: Fence, location: str
    ) -> None:
        self._inner = inner
        self._watermark = watermark
        self._fence = fence
        self._location = location

    def __enter__(self) -> _Stamping:
        self._inner.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._inner.__exit__(kind, error, traceback)

    def commit(
        self,
        base_snapshot_uuid: str | None,
        snapshot: Snapshot,
        statistics: list[PartitionStatistics],
    ) -> bool:
        try:
            self._fence(snapshot.id - 1 if snapshot.id > 1 else None)
        except Exception as error:
            raise _Fenced(error) from error
        if self._watermark is not None:
            inherited = snapshot.watermark
            snapshot.watermark = (
                self._watermark if inherited is None else max(inherited, self._watermark)
            )
        with publishing(self._location):
            return bool(self._inner.commit(base_snapshot_uuid, snapshot, statistics))

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


class PaimonCommitError(RuntimeError):
    """pypaimon gave up on a commit; ``__cause__`` is what stopped it."""


class PaimonTable:
    """One Paimon table, as Tidemark writes and reads it."""

    def __init__(
        self, table: FileStoreTable, identifier: str, commit_user_prefix: str | None = None
    ) -> None:
        self.identifier = identifier
        writing = {
            # pypaimon skips a commit without rows unless told: an idle table's progress is one
            "snapshot.ignore-empty-commit": "false",
            # pypaimon names this writer's commits ``<prefix>_<uuid>``: who wrote a snapshot
            **({"commit.user-prefix": commit_user_prefix} if commit_user_prefix else {}),
        }
        self._table = table.copy(writing)
        self._builder = self._table.new_stream_write_builder()
        self._identifiers = itertools.count(time.time_ns())

    @property
    def options(self) -> dict[str, str]:
        return dict(self._table.table_schema.options)

    @property
    def primary_keys(self) -> tuple[str, ...]:
        return tuple(self._table.primary_keys)

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return tuple(self._table.partition_keys)

    def arrow_schema(self) -> pa.Schema:
        return PyarrowFieldParser.from_paimon_schema(self._table.fields)

    def commit(
        self,
        rows: pa.Table,
        properties: Mapping[str, str],
        watermark: int | None,
        fence: Fence,
    ) -> PaimonSnapshot:
        """Write ``rows`` (possibly none) and publish them in one snapshot carrying
        ``properties`` and ``watermark``; ``fence`` is asked right before it is published
        (and again at each retry) with the id of the snapshot it would follow."""
        write = self._builder.new_write()
        commit = self._builder.new_commit()
        try:
            if rows.num_rows:
                columns = self.arrow_schema()
                write.write_arrow(rows.select(columns.names).cast(columns))
            identifier = next(self._identifiers)
            messages = write.prepare_commit(identifier)
            published = commit.file_store_commit
            published.snapshot_commit = _Stamping(
                published.snapshot_commit, watermark, fence, self._table.table_path
            )
            try:
                commit.commit(messages, identifier, snapshot_properties=dict(properties))
            except _Fenced as fenced:
                raise fenced.error from None
            except RuntimeError as failed:
                raise PaimonCommitError(f"{self.identifier}: {failed}") from failed
        finally:
            write.close()
            commit.close()
        latest = self._table.snapshot_manager().get_latest_snapshot()
        snapshot = self._own(latest, identifier)
        return _snapshot(snapshot)

    def _own(self, latest: Snapshot | None, identifier: int) -> Snapshot:
        """This writer's snapshot of ``identifier``: the latest, or one shortly before it if
        maintenance committed right after."""
        manager = self._table.snapshot_manager()
        snapshot = latest
        while snapshot is not None:
            if (
                snapshot.commit_identifier == identifier
                and snapshot.commit_user == self._builder.commit_user
            ):
                return snapshot
            snapshot = manager.get_snapshot_by_id(snapshot.id - 1) if snapshot.id > 1 else None
        raise PaimonCommitError(f"{self.identifier}: the snapshot just committed is not there")

    def snapshots(self) -> Iterator[PaimonSnapshot]:
        """The table's retained snapshots, newest first, read one by one as asked."""
        manager = self._table.snapshot_manager()
        snapshot = manager.get_latest_snapshot()
        while snapshot is not None:
            yield _snapshot(snapshot)
            snapshot = manager.get_snapshot_by_id(snapshot.id - 1) if snapshot.id > 1 else None

    def check_writable(self) -> None:
        """Write an empty file where the table's data files go, and delete it; raises the
        file system's ``OSError`` when it refuses."""
        path = f"{self._table.table_path.rstrip('/')}/.tidemark-write-check-{uuid.uuid4().hex}"
        self._table.file_io.write_file(path, "", overwrite=True)
        self._table.file_io.delete(path)

    def has_snapshots(self) -> bool:
        return self._table.snapshot_manager().get_latest_snapshot() is not None

    def read(
        self,
        columns: Sequence[str] | None = None,
        at_watermark: int | None = None,
        at_snapshot: int | None = None,
        one_of: tuple[str, Sequence[Any]] | None = None,
    ) -> pa.Table:
        """The table's rows (merged: one row per key) at its latest snapshot, at the first
        snapshot whose watermark is ``at_watermark`` or more, or at snapshot ``at_snapshot``;
        ``one_of`` (a column and values) spares the files that hold none of those values
        (rows of other values may still come back)."""
        table = self._table
        if at_watermark is not None:
            table = table.copy({"scan.watermark": str(at_watermark)})
        if at_snapshot is not None:
            table = table.copy({"scan.snapshot-id": str(at_snapshot)})
        builder = table.new_read_builder()
        if columns is not None:
            builder = builder.with_projection(list(columns))
        if one_of is not None:
            column, values = one_of
            builder = builder.with_filter(
                builder.new_predicate_builder().is_in(column, list(values))
            )
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())


class PaimonCatalog:
    """A Paimon catalog (``catalog.properties.*`` of a ``type: paimon`` sink)."""

    def __init__(
        self, properties: Mapping[str, str], commit_user_prefix: str | None = None
    ) -> None:
        self._catalog: Catalog = CatalogFactory.create(dict(properties))
        self._commit_user_prefix = commit_user_prefix
        self._properties = dict(properties)
        #: as the properties name it: a path, or a URI
        self.warehouse = properties.get("warehouse", "")

    def list_namespaces(self) -> list[str]:
        return list(self._catalog.list_databases())

    def write_check(self, size: int) -> None:
        """Write ``size`` bytes at the top of the warehouse and delete them: raises the file
        system's own ``OSError`` while it is down or full."""
        file_io = FileIO.get(self.warehouse, Options(self._properties))
        path = f"{self.warehouse.rstrip('/')}/.tidemark-write-check-{uuid.uuid4().hex}"
        try:
            with file_io.new_output_stream(path) as stream:
                stream.write(bytes(size))
        finally:
            with contextlib.suppress(OSError):
                file_io.delete(path)

    def create_namespace_if_not_exists(self, namespace: str) -> None:
        self._catalog.create_database(namespace, True)

    def drop_namespace(self, namespace: str) -> list[str]:
        """Drop ``namespace`` with its tables and their files; the tables dropped."""
        tables = self.list_tables(namespace)
        if tables is None:
            return []
        self._catalog.drop_database(namespace, ignore_if_not_exists=True, cascade=True)
        return tables

    def drop_table(self, identifier: str) -> None:
        """Drop ``identifier`` with its files (its folder); one that does not exist is left
        alone."""
        self._catalog.drop_table(identifier, ignore_if_not_exists=True)

    def list_tables(self, namespace: str) -> list[str] | None:
        """The identifiers (``namespace.name``) of ``namespace``'s tables; None when it does
        not exist."""
        try:
            return [f"{namespace}.{name}" for name in self._catalog.list_tables(namespace)]
        except DatabaseNotExistException:
            return None

    def load_table(self, identifier: str) -> PaimonTable | None:
        try:
            table = self._catalog.get_table(identifier)
            return PaimonTable(table, identifier, self._commit_user_prefix)
        except TableNotExistException:
            return None

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema,
        primary_keys: Sequence[str],
        partition_keys: Sequence[str],
        options: Mapping[str, str],
    ) -> PaimonTable:
        """Create ``identifier`` (a primary-key table when ``primary_keys`` are given, else an
        append table); a table created meanwhile by another process is opened as it is."""
        paimon_schema = Schema.from_pyarrow_schema(
            schema,
            partition_keys=list(partition_keys) or None,
            primary_keys=list(primary_keys) or None,
            options=dict(options),
        )
        try:
            self._catalog.create_table(identifier, paimon_schema, False)
        except TableAlreadyExistException:
            pass
        table = self.load_table(identifier)
        assert table is not None
        return table

    def alter_table(
        self,
        identifier: str,
        add: Sequence[pa.Field],
        widen: Sequence[pa.Field],
        options: Mapping[str, str],
        rename: Mapping[str, str] | None = None,
        drop: Sequence[str] = (),
    ) -> PaimonTable:
        """Drop columns, rename columns (old -> new: the column keeps its field id, so the
        files written before read under the new name), add columns (at the end), widen types
        and set options, in that order, in one schema change."""
        changes: list[Any] = [SchemaChange.drop_column(name) for name in drop]
        changes += [SchemaChange.rename_column(old, new) for old, new in (rename or {}).items()]
        changes += [SchemaChange.add_column(field.name, _paimon_type(field)) for field in add]
        changes += [
            SchemaChange.update_column_type(field.name, _paimon_type(field), True)
            for field in widen
        ]
        changes += [SchemaChange.set_option(key, value) for key, value in options.items()]
        if changes:
            self._catalog.alter_table(identifier, changes, False)
        table = self.load_table(identifier)
        assert table is not None
        return table


def _paimon_type(field: pa.Field) -> Any:
    return PyarrowFieldParser.to_paimon_type(field.type, field.nullable)


def open_paimon_catalog(
    properties: Mapping[str, str], commit_user_prefix: str | None = None
) -> PaimonCatalog:
    """The Paimon catalog of ``properties``; its tables commit as ``<commit_user_prefix>_<a
    UUID>`` (pypaimon's own naming)."""
    return PaimonCatalog(properties, commit_user_prefix)


# --- reads of a table at a snapshot, split by split (the Spark data source's) ---------------
#
# Handles of pypaimon's own objects, opened again on each executor from the catalog options:
# a split (a pypaimon ``DataSplit``) pickles; a table does not travel.

#: Paimon's ``rowkind.field`` in Tidemark's tables (docs/paimon.md, the table contract)
ROW_KIND_COLUMN = "_tm_row_kind"

#: a split of a plan: a pypaimon ``DataSplit``, which pickles
Split = Any
#: a pypaimon ``FileStoreTable``
Table = Any


class WatermarkNotReachedError(TransientError):
    """No snapshot of the table has a watermark at or past the one asked for: not yet (as an
    Iceberg mirror's ``WindowNotCompleteError``)."""


class SnapshotNotFoundError(TerminalError):
    """The snapshot asked for is not (or no longer) in the table."""


def open_table(catalog_options: Mapping[str, str], name: str) -> Table:
    """Table ``name`` (``db.t``) of the Paimon catalog ``catalog_options`` describe."""
    if name.count(".") != 1:
        raise ConfigError(f"Paimon table {name!r}: name it as database.table (e.g. shop.orders)")
    if "warehouse" not in catalog_options:
        raise ConfigError(
            f"Paimon table {name}: the catalog options have no 'warehouse': pass the sink's "
            "catalog.properties.warehouse"
        )
    catalog = CatalogFactory.create(dict(catalog_options))
    try:
        return catalog.get_table(name)
    except Exception as error:  # pypaimon raises its own TableNotExistException and OSErrors
        raise ConfigError(
            f"cannot open Paimon table {name} in warehouse {catalog_options['warehouse']}: "
            f"{error}. Check the table name and the catalog options"
        ) from error


def arrow_schema(table: Table, *, row_kind: bool = False) -> pa.Schema:
    """The table's columns as Arrow; ``_tm_row_kind`` only if ``row_kind``."""
    schema = PyarrowFieldParser.from_paimon_schema(table.fields)
    if row_kind or ROW_KIND_COLUMN not in schema.names:
        return schema
    return schema.remove(schema.get_field_index(ROW_KIND_COLUMN))


def latest_snapshot(table: Table) -> int | None:
    """The id of the table's newest snapshot; None for a table never committed to."""
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def snapshot_at_watermark(table: Table, name: str, watermark: int) -> int:
    """The id of the first snapshot whose ``watermark`` is at least ``watermark`` (epoch ms).

    Paimon watermarks never go down, so that is the earliest state that holds every change up
    to ``watermark``: the state a window ending there reads.
    """
    manager = table.snapshot_manager()
    snapshot = manager.later_or_equal_watermark(watermark)
    if snapshot is not None:
        return int(snapshot.id)
    latest = manager.get_latest_snapshot()
    newest = "none (no snapshot)" if latest is None else str(latest.watermark)
    raise WatermarkNotReachedError(
        f"Paimon table {name} has not reached watermark {watermark}: its newest snapshot's "
        f"watermark is {newest}. Wait until ingest commits past {watermark} (the scheduler "
        "fires a window only then)"
    )


def changes_start(table: Table, name: str, start: int) -> int:
    """The snapshot a window starting at ``start`` (epoch ms) reads the changes after: the
    state a window ending at ``start`` reads (``snapshot_at_watermark``).

    That it is the first snapshot reaching ``start`` is proven by the snapshot before it
    (whose watermark is lower) or by its being the table's first. When the one before has
    expired, an earlier snapshot may have reached ``start`` too, and the changes would miss
    what it committed: ``SnapshotNotFoundError`` (the scheduler keeps that snapshot for every
    window not run yet, ``scheduler.retention``).
    """
    first = snapshot_at_watermark(table, name, start)
    if first > 1 and table.snapshot_manager().get_snapshot_by_id(first - 1) is None:
        raise SnapshotNotFoundError(
            f"Paimon table {name}: the changes since watermark {start} start after snapshot "
            f"{first} or an earlier one, and snapshot {first - 1}, which would tell, has "
            "expired: read the changes of a later window, or keep snapshots longer "
            "(snapshot.num-retained.min)"
        )
    return first


def earliest_snapshot(table: Table) -> int | None:
    """The id of the table's oldest retained snapshot; None for a table never committed to."""
    snapshot = table.snapshot_manager().try_get_earliest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def require_snapshot(table: Table, name: str, snapshot_id: int) -> None:
    """Raises ``SnapshotNotFoundError`` unless the table still has snapshot ``snapshot_id``."""
    _kept_snapshot(table, name, snapshot_id)


def _kept_snapshot(table: Table, name: str, snapshot_id: int) -> Any:
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise SnapshotNotFoundError(
            f"Paimon table {name} has no snapshot {snapshot_id} (never made, or expired): "
            "read a retained snapshot, or keep snapshots longer (snapshot.num-retained.min)"
        )
    return snapshot


def plan_at(table: Table, name: str, snapshot_id: int | None) -> list[Split]:
    """The splits of the table's state at ``snapshot_id`` (the newest if None)."""
    if snapshot_id is None:
        return list(table.new_read_builder().new_scan().plan().splits())
    _kept_snapshot(table, name, snapshot_id)
    pinned = table.copy({"scan.snapshot-id": str(snapshot_id)})
    return list(pinned.new_read_builder().new_scan().plan().splits())


def plan_changes(table: Table, name: str, after: int, through: int) -> list[Split]:
    """The splits of the changes committed after snapshot ``after`` up to ``through``.

    pypaimon 2.1 has no ``incremental-between`` (snapshot ids), only
    ``incremental-between-timestamp`` over the snapshots' commit times: the two snapshots'
    times name the same range as long as each is the latest snapshot of its millisecond,
    which is checked. Its splits are streaming splits: read, they give every change row of
    each commit in the range (deletes as ``-D`` rows), not merged across commits.
    """
    if after >= through:
        return []
    manager = table.snapshot_manager()
    times = [
        _kept_snapshot(table, name, snapshot_id).time_millis for snapshot_id in (after, through)
    ]
    for snapshot_id, millis in zip((after, through), times, strict=True):
        found = manager.earlier_or_equal_time_mills(millis)
        if found is None or int(found.id) != snapshot_id:
            raise TerminalError(
                f"Paimon table {name}: snapshot {snapshot_id} shares its commit time {millis} "
                "with a later snapshot, so pypaimon's incremental read cannot start or end at "
                "it; read the two snapshots whole and compare them instead"
            )
    ranged = table.copy({"incremental-between-timestamp": f"{times[0]},{times[1]}"})
    return list(ranged.new_read_builder().new_scan().plan().splits())


def read_splits(
    table: Table, splits: Sequence[Split], columns: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """``splits`` read with merge-on-read (a streaming split: its change rows), ``columns``
    only, as Arrow batches."""
    if not splits:
        return
    read = table.new_read_builder().with_projection(list(columns)).new_read()
    for batch in read.to_arrow_batch_reader(list(splits)):
        if batch.num_rows:
            yield batch


def split_size(split: Split) -> int:
    """Bytes of files ``split`` reads, to balance partitions."""
    return int(getattr(split, "file_size", 0) or 0)
