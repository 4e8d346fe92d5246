"""Sink tables in Paimon: primary-key tables that are the mirror themselves (docs/paimon.md).

Ingest hands every writer the same rows: changelog rows, a source row image plus the metadata
columns of ``tidemark.contracts.changelog``. An Iceberg changelog appends them; a Paimon table
is keyed, so each row becomes an upsert of its key (``+I``/``+U`` in ``_tm_row_kind``, Paimon's
``rowkind.field``) or a delete (``-D``), and Paimon's merge keeps per key the change with the
highest ``_tm_order`` (``sequence.field``). A truncate marker becomes a delete of every key
whose newest change came from the truncated source table.

``PaimonChangelog`` implements ``tidemark.sinks.protocols.ChangelogWriter``: its commits are
Paimon snapshots carrying Tidemark's progress in their properties and the watermark in
Paimon's own field; one writer per table is enforced by a fence asked right before each
snapshot is published.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from ingest.changelog.fencing import ConcurrentWriterError
from ingest.changelog.table import changelog_schema
from ingest.errors import SchemaChangeStopError
from ingest.schema.evolution import holds, promotes
from tidemark.contracts.bootstrap_state import BootstrapState
from tidemark.contracts.changelog import METADATA_NAMES, MetadataColumn, Operation
from tidemark.contracts.instance import WRITER_KEY, writer_id
from tidemark.contracts.mirror import MIRROR_DELETED_COLUMN
from tidemark.contracts.progress import TableProgress
from tidemark.errors import ConfigError
from tidemark.lake.paimon import PaimonCatalog, PaimonSnapshot, PaimonTable
from tidemark.sinks.commits import Commit
from tidemark.sinks.paimon import commit_of, newest_progress

logger = logging.getLogger(__name__)

#: Paimon's ``rowkind.field``: what each row does to its key
ROW_KIND_COLUMN = "_tm_row_kind"
_UPSERT, _UPDATE, _DELETE = "+I", "+U", "-D"

#: options every Tidemark Paimon table has; a user's ``table.properties`` cannot change them
CONTRACT_OPTIONS = {
    "rowkind.field": ROW_KIND_COLUMN,
    "sequence.field": MetadataColumn.ORDER_KEY.value,
    "write-only": "true",
}
#: defaults a user's ``table.properties`` may change
DEFAULT_OPTIONS = {"file.format": "parquet", "bucket": "1"}
#: set on a table whose rows are all kept as written (an error table): none upserts or
#: deletes another, whatever its operation
EVERY_ROW_OPTION = "tidemark.every-row"
#: set on a table created with ``mirror.deletes: keep``: a delete keeps the row (its before
#: image), marked deleted in ``MIRROR_DELETED_COLUMN``
KEEP_DELETES_OPTION = "tidemark.keep-deletes"
#: what ingest's rows do not carry: Paimon's row kind and the mark of a kept delete
_WRITER_COLUMNS = frozenset({ROW_KIND_COLUMN, MIRROR_DELETED_COLUMN})
#: the columns renamed in place, old name -> the name it has now (JSON): rows of a structure
#: from before a rename (buffered at the rename, or read again after a restart) carry the old
#: name, and their values go to the column under its new name
RENAMED_OPTION = "tidemark.renamed-columns"

_OP = MetadataColumn.OPERATION.value
_ORDER = MetadataColumn.ORDER_KEY.value
_SOURCE_DB = MetadataColumn.SOURCE_DATABASE.value
_SOURCE_TABLE = MetadataColumn.SOURCE_TABLE.value


def paimon_schema(data: pa.Schema, keys: Sequence[str], keep_deletes: bool = False) -> pa.Schema:
    """The table's columns: the changelog's (keys NOT NULL, as Paimon requires), the row
    kind, and with ``keep_deletes`` the deleted mark."""
    changelog = changelog_schema(data)
    fields = [f.with_nullable(False) if f.name in keys else f for f in changelog]
    fields.append(pa.field(ROW_KIND_COLUMN, pa.string(), nullable=False))
    if keep_deletes:
        fields.append(pa.field(MIRROR_DELETED_COLUMN, pa.bool_(), nullable=False))
    return pa.schema(fields)


class PaimonChangelog:
    """One sink table in Paimon, as ingest writes it (``ChangelogWriter``)."""

    def __init__(self, catalog: PaimonCatalog, table: PaimonTable) -> None:
        self._catalog = catalog
        self._table = table
        self.writing = threading.RLock()
        self._read_schema()
        self._every_row = table.options.get(EVERY_ROW_OPTION) == "true"
        self._keep_deletes = table.options.get(KEEP_DELETES_OPTION) == "true"
        #: the newest snapshot with Tidemark's progress, as this writer last saw or made it
        self._newest: PaimonSnapshot | None = newest_progress(table.snapshots())

    @property
    def identifier(self) -> str:
        return self._table.identifier

    @property
    def properties(self) -> dict[str, str]:
        return self._table.options

    def _read_schema(self) -> None:
        """The table's columns as ingest's rows have them (without the row kind), and the old
        names of its columns renamed in place, which rows of older structures still carry:
        ``schema`` has those too, so that such rows keep their values (``_renamed``)."""
        columns = self._table.arrow_schema()
        data = [f for f in columns if f.name not in METADATA_NAMES | _WRITER_COLUMNS]
        self._stored = changelog_schema(pa.schema(data))
        present = set(columns.names)
        renamed = json.loads(self._table.options.get(RENAMED_OPTION, "{}"))
        #: old name -> current name, for old names that are no column now
        self._old_names = {
            old: new for old, new in renamed.items() if old not in present and new in present
        }
        old_columns = [
            pa.field(old, columns.field(new).type) for old, new in self._old_names.items()
        ]
        self.schema = pa.schema([*self._stored, *old_columns])

    def data_schema(self) -> pa.Schema:
        return pa.schema([field for field in self._stored if field.name not in METADATA_NAMES])

    def evolve(
        self,
        add: Sequence[pa.Field],
        widen: Sequence[pa.Field],
        properties: Mapping[str, str],
        renamed: Mapping[str, str] | None = None,
        dropped: Sequence[str] = (),
    ) -> None:
        """As ``ChangelogWriter.evolve``; ``renamed`` columns are renamed in place, keeping
        their values, where the new type is the old one or a widening of it (else the new
        name is added, as in an Iceberg changelog, with a WARNING; so is a key or partition
        column's); ``dropped`` columns are dropped, except key and partition columns."""
        with self.writing:
            columns = self._table.arrow_schema()
            self._refuse_old_names(add)
            rename, widen = {}, list(widen)
            kept = {*self._table.primary_keys, *self._table.partition_keys}
            drop = [name for name in dropped if name in columns.names and name not in kept]
            for old, new in (renamed or {}).items():
                target = next((f for f in add if f.name == new), None)
                if target is None and new in columns.names:
                    target = columns.field(new)  # added before the rename was known
                if old not in columns.names or target is None:
                    continue
                if old in kept:
                    logger.warning(
                        "%s: %s, a key or partition column, was renamed to %s: Paimon keeps a "
                        "key column's name, so %s is a new column",
                        self.identifier,
                        old,
                        new,
                        new,
                    )
                    continue
                before = columns.field(old).type
                if not (holds(before, target.type) or promotes(before, target.type)):
                    logger.warning(
                        "%s: %s renamed to %s changed its type from %s to %s, which the column "
                        "cannot hold: %s is a new column and %s keeps its values",
                        self.identifier,
                        old,
                        new,
                        before,
                        target.type,
                        new,
                        old,
                    )
                    continue
                rename[old] = new
                if new in columns.names:
                    drop.append(new)  # no row has a value there yet: its rows come after
                if not holds(before, target.type):
                    widen.append(pa.field(new, target.type))
            if rename:
                properties = {**properties, RENAMED_OPTION: self._renames_after(rename)}
            add = [field for field in add if field.name not in rename.values()]
            self._table = self._catalog.alter_table(
                self.identifier, add, widen, properties, rename, drop
            )
            self._read_schema()
            for old, new in rename.items():
                logger.info("%s: column %s renamed to %s in place", self.identifier, old, new)
            for name in dropped:
                if name in drop:
                    logger.info("%s: column %s dropped, as at the source", self.identifier, name)

    def _refuse_old_names(self, add: Sequence[pa.Field]) -> None:
        """A new column may not take the old name of a column renamed in place: rows from
        before that rename, waiting or read again after a restart, carry the name too, and
        nothing would tell their values from the new column's."""
        renamed = json.loads(self._table.options.get(RENAMED_OPTION, "{}"))
        for field in add:
            if field.name in renamed:
                raise SchemaChangeStopError(
                    f"{self.identifier}: a column {field.name} is added, and {field.name} is "
                    f"the old name of {renamed[field.name]}, renamed in place: rows from before "
                    "that rename carry the name too, and their values would land in the new "
                    "column. Ingest stopped with everything before committed: re-bootstrap the "
                    "table (drop it and start with scan.startup.mode: initial), or run it with "
                    "pipeline.schema.change.behavior: lenient (renames become new columns)"
                )

    def _renames_after(self, rename: Mapping[str, str]) -> str:
        """The table's old names after ``rename``: a chain (a -> b, then b -> c) ends at the
        name each has now."""
        known = json.loads(self._table.options.get(RENAMED_OPTION, "{}"))
        known = {old: rename.get(new, new) for old, new in known.items()}
        known.update(rename)
        return json.dumps(known, sort_keys=True)

    def has_commits(self) -> bool:
        return self._table.has_snapshots()

    def commits(self) -> Iterator[Commit]:
        return (commit_of(snapshot, self._every_row) for snapshot in self._table.snapshots())

    def progress(self) -> TableProgress | None:
        newest = self._newest
        return None if newest is None else TableProgress.from_summary(newest.properties)

    def bootstrap(self) -> BootstrapState | None:
        newest = self._newest
        return None if newest is None else BootstrapState.from_summary(newest.properties)

    def last_commit_id(self) -> int | None:
        return None if self._newest is None else self._newest.snapshot_id

    def commit(
        self, rows: pa.Table, progress: TableProgress, bootstrap: BootstrapState | None = None
    ) -> Commit:
        with self.writing:
            return self._commit_keyed(self._keyed_rows(self._renamed(rows)), progress, bootstrap)

    def _renamed(self, rows: pa.Table) -> pa.Table:
        """``rows`` with each old name's values in the column under its name now: a row of an
        older structure has only the old name, one of a newer only the new one."""
        for old, new in self._old_names.items():
            if old not in rows.column_names:
                continue
            if new in rows.column_names:
                index = rows.schema.get_field_index(new)
                merged = pc.coalesce(rows[new], rows[old].cast(rows.schema.field(new).type))
                rows = rows.set_column(index, rows.schema.field(new), merged)
            rows = rows.drop_columns([old])
        return rows

    def _commit_keyed(
        self, keyed: pa.Table, progress: TableProgress, bootstrap: BootstrapState | None
    ) -> Commit:
        properties = {**progress.summary(), WRITER_KEY: writer_id()}
        if bootstrap is not None:
            properties.update(bootstrap.summary())
        # readers find "the first snapshot whose watermark passed W": one a bootstrap holds
        # back must not look complete
        watermark = progress.watermark_ms if progress.hold_until is None else None
        # no check before writing: the fence, asked as the snapshot is published, is the one
        # that holds (a second writer's files are then left unreferenced, as after a crash)
        snapshot = self._table.commit(keyed, properties, watermark, self._fence)
        self._newest = snapshot
        return commit_of(snapshot, self._every_row)

    def _fence(self, follows: int | None) -> None:
        """Right before the snapshot after ``follows`` is published: no other writer's
        progress since this writer's last commit."""
        if follows is None:
            self._check_no_other_writer(iter(()))
            return
        self._check_no_other_writer(self._table.snapshots())

    def _check_no_other_writer(self, newest_first: Iterator[PaimonSnapshot]) -> None:
        newest = newest_progress(newest_first)
        seen = self._newest
        if (newest.snapshot_id if newest else None) == (seen.snapshot_id if seen else None):
            return
        assert newest is not None  # a table's progress never disappears while it is written
        writer = newest.properties.get(WRITER_KEY, "another Tidemark")
        raise ConcurrentWriterError(
            f"another writer ({writer}) committed to {self.identifier} since this process "
            f"last did (Paimon snapshot {newest.snapshot_id}). Nothing of this batch was "
            "committed: this process reads the table's progress again when it is next active. "
            "If this repeats, two pipelines write the same tables: give them different sink "
            "tables, or one pipeline.name and one catalog, so that one waits for the other."
        )

    def _keyed_rows(self, rows: pa.Table) -> pa.Table:
        """``rows`` as upserts and deletes of their keys, truncate markers as deletes."""
        self._check_keys(rows)
        if self._every_row:
            return rows.append_column(ROW_KIND_COLUMN, pa.array([_UPSERT] * rows.num_rows))
        truncates = pc.equal(rows[_OP], Operation.TRUNCATE.value)
        markers = rows.filter(truncates)
        changes = rows.filter(pc.invert(truncates)) if markers.num_rows else rows
        kinds = pc.if_else(
            pc.equal(changes[_OP], Operation.DELETE.value),
            _DELETE,
            pc.if_else(pc.equal(changes[_OP], Operation.UPDATE.value), _UPDATE, _UPSERT),
        )
        keyed = changes.append_column(ROW_KIND_COLUMN, kinds.cast(pa.string()))
        if markers.num_rows:
            deletes = self._truncated(markers, changes)
            keyed = pa.concat_tables([keyed, *(rows.cast(keyed.schema) for rows in deletes)])
        return self._kept_deletes(keyed) if self._keep_deletes else keyed

    def _check_keys(self, rows: pa.Table) -> None:
        """A primary key column cannot hold NULL in Paimon: a change whose key has one (a
        ``unique-key`` over a nullable column) stops ingest here, with nothing committed."""
        changes = rows.filter(pc.not_equal(rows[_OP], Operation.TRUNCATE.value))
        for column in self._table.primary_keys:
            if column in changes.column_names and changes[column].null_count:
                raise ConfigError(
                    f"{self.identifier}: a change has NULL in key column {column!r}, which a "
                    "Paimon primary key cannot hold; nothing of this batch was committed. Give "
                    "the table a key of NOT NULL columns (tidemark.tables.<table>.unique-key, "
                    "or a primary key at the source)"
                )

    @staticmethod
    def _kept_deletes(keyed: pa.Table) -> pa.Table:
        """Deletes as updates to the deleted image, marked deleted (``mirror.deletes: keep``)."""
        deleted = pc.equal(keyed[ROW_KIND_COLUMN], _DELETE)
        kinds = pc.if_else(deleted, _UPDATE, keyed[ROW_KIND_COLUMN])
        index = keyed.schema.get_field_index(ROW_KIND_COLUMN)
        keyed = keyed.set_column(index, ROW_KIND_COLUMN, kinds)
        return keyed.append_column(MIRROR_DELETED_COLUMN, deleted)

    def _truncated(self, markers: pa.Table, changes: pa.Table) -> list[pa.Table]:
        """A delete of every key whose newest change before each marker came from the
        marker's source table (the table's rows and the batch's own earlier rows)."""
        keys = list(self._table.primary_keys)
        needed = [*keys, _OP, _ORDER, _SOURCE_DB, _SOURCE_TABLE]
        stored = self._table.read(needed).select(needed)
        known = pa.concat_tables([stored, changes.select(needed).cast(stored.schema)])
        deletes = []
        for marker in markers.to_pylist():
            before = known.filter(pc.less(known[_ORDER], marker[_ORDER]))
            newest = (
                before.sort_by([(_ORDER, "descending")])
                .group_by(keys, use_threads=False)
                .aggregate([(column, "first") for column in (_OP, _SOURCE_DB, _SOURCE_TABLE)])
            )
            gone = newest.filter(
                pc.and_(
                    pc.and_(
                        pc.equal(newest[f"{_SOURCE_DB}_first"], marker[_SOURCE_DB]),
                        pc.equal(newest[f"{_SOURCE_TABLE}_first"], marker[_SOURCE_TABLE]),
                    ),
                    pc.not_equal(newest[f"{_OP}_first"], Operation.DELETE.value),
                )
            )
            deletes.append(self._deletes(gone.select(keys), marker))
        return deletes

    def _deletes(self, keys: pa.Table, marker: Mapping[str, object]) -> pa.Table:
        """Delete rows of ``keys``, carrying ``marker``'s metadata."""
        columns = {}
        for field in self._stored:
            if field.name in keys.column_names:
                columns[field.name] = keys[field.name].cast(field.type)
            elif field.name in METADATA_NAMES:
                value = Operation.DELETE.value if field.name == _OP else marker[field.name]
                columns[field.name] = pa.array([value] * keys.num_rows, field.type)
            else:
                columns[field.name] = pa.nulls(keys.num_rows, field.type)
        columns[ROW_KIND_COLUMN] = pa.array([_DELETE] * keys.num_rows, pa.string())
        return pa.table(columns)

    def delete_snapshot_rows_after(self, order: int, progress: TableProgress) -> None:
        """Delete the rows a bootstrap read whose order is after ``order``: each by a delete
        of its key carrying its own order (a lower one would lose to it in Paimon's merge)."""
        with self.writing:
            stored = self._table.read()
            read = stored.filter(
                pc.and_(
                    pc.equal(stored[_OP], Operation.SNAPSHOT_READ.value),
                    pc.greater(stored[_ORDER], order),
                )
            )
            deletes = read.select(self._stored.names).cast(self._stored)
            deletes = deletes.set_column(
                deletes.schema.get_field_index(_OP),
                _OP,
                pa.array([Operation.DELETE.value] * read.num_rows, pa.string()),
            ).append_column(ROW_KIND_COLUMN, pa.array([_DELETE] * read.num_rows, pa.string()))
            if self._keep_deletes:
                deletes = self._kept_deletes(deletes)
            self._commit_keyed(deletes, progress, None)

    def newest_rows(self, since: datetime, columns: Sequence[str], limit: int) -> pa.Table:
        rows = self._table.read()
        recent = rows.filter(pc.greater_equal(rows[MetadataColumn.EVENT_TIME.value], since))
        newest = recent.sort_by([(_ORDER, "descending")]).slice(0, limit)
        return newest.select(list(columns))


def open_paimon_changelog(
    catalog: PaimonCatalog,
    identifier: str,
    data: pa.Schema,
    keys: Sequence[str],
    partition_keys: Sequence[str],
    properties: Mapping[str, str],
    keep_deletes: bool = False,
) -> PaimonChangelog:
    """The Paimon table ``identifier``, created (keyed by ``keys``; keeping deleted rows,
    marked, with ``keep_deletes``) if it does not exist."""
    table = catalog.load_table(identifier)
    if table is None:
        logger.info("Creating Paimon table %s", identifier)
        kept = {KEEP_DELETES_OPTION: "true"} if keep_deletes else {}
        options = {**DEFAULT_OPTIONS, **properties, **CONTRACT_OPTIONS, **kept}
        schema = paimon_schema(data, keys, keep_deletes)
        table = catalog.create_table(identifier, schema, keys, partition_keys, options)
    return PaimonChangelog(catalog, table)
