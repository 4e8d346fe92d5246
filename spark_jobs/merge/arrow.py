"""The window merge without Spark: a mirror's latest changes as position deletes and a data
file, committed by PyIceberg.

A Spark ``MERGE INTO`` costs about 1.3 s of CPU whatever it holds (planning, six Spark jobs,
the commit), so a scheduler on two cores merges about 130 mirrors a minute, where a thousand
mirrors with five-minute windows need a thousand in the minute after each window's end (issue
25). Most merges are a few changes to a small mirror whose structure has not moved. For those
this does in Arrow what the ``MERGE`` does (``spark_jobs.merge.spark``), and commits what Spark's
merge-on-read ``MERGE`` commits:

1. the changelog rows with ``_tm_order`` in ``(low, high]``, read by PyIceberg (min/max
   statistics on ``_tm_order`` skip the other files), and the latest change of each key;
2. where the mirror holds those keys now: the key columns of the mirror's data files that may
   hold them (statistics again), less the rows earlier deletes removed, give file and position;
3. one commit (``tidemark.lake.snapshots.PositionDeleteOverwrite``): a position delete file
   per partition for those rows, a data file with the keys' new images (deletes left out, or
   flagged with ``mirror.deletes: keep``), and the window's stamps in the snapshot summary.

So a merge costs tens of milliseconds and grows with the changes and with the key columns of
the files that may hold them, as the ``MERGE``'s own join does. Position deletes, not
equality deletes: PyIceberg (``tidemark verify``) and other readers that cannot apply equality
deletes read the mirror as before; maintenance rewrites them away as it does Spark's.

``merge_without_spark`` answers None, having written nothing, for what only Spark does
(the caller then runs ``spark_jobs.merge.spark``): a transform, a truncate marker in the range, rows
that need a renamed column's earlier values or an added column's default, a mirror whose
columns are not the changelog's (its structure is followed by Spark), a range or a mirror too
large to hold here (``MOST_ROWS`` changes, ``MOST_MIRROR_ROWS`` rows in the files that may hold
their keys: Spark scales out), equality deletes in the mirror, or a table in another format
version.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError
from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    GreaterThan,
    GreaterThanOrEqual,
    LessThanOrEqual,
    LiteralPredicate,
    Reference,
)
from pyiceberg.expressions.literals import literal
from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow
from pyiceberg.manifest import DataFile
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

from spark_jobs.merge.columns import FILLED_PROPERTY, MirrorColumns
from spark_jobs.merge.order_range import files_in_range
from spark_jobs.merge.parquet_files import read_same_structure
from tidemark.contracts.changelog import METADATA_NAMES, MetadataColumn
from tidemark.contracts.changelog import Operation as Change
from tidemark.contracts.mirror import MIRROR_DELETED_COLUMN
from tidemark.errors import TransientError
from tidemark.lake.data_files import (
    read_position_deletes,
    write_position_deletes,
    write_with_pyiceberg,
)
from tidemark.lake.snapshots import PositionDeleteOverwrite, SnapshotPlan

logger = logging.getLogger(__name__)

#: a range of more changelog rows than this is merged by Spark: it is held in memory here
MOST_ROWS = 200_000
#: nor when the mirror's files that may hold the range's keys hold more rows than this: their
#: key columns are read into memory here (a Spark cluster scales out)
MOST_MIRROR_ROWS = 5_000_000

_ORDER = MetadataColumn.ORDER_KEY.value
_OP = MetadataColumn.OPERATION.value
_POSITION = "__tm_position"


@dataclass(frozen=True)
class ArrowMergeCounts:
    changes: int  # changelog rows in the range
    keys: int  # distinct keys merged
    deleted: int  # mirror rows the commit deletes (the old images of changed keys)
    added: int  # rows the commit adds
    snapshot_id: int  # the stamped mirror commit


def merge_without_spark(
    changelog: Table,
    mirror: Table,
    key: Sequence[str],
    *,
    low: int,
    high: int,
    stamps: Mapping[str, str],
    evolution: MirrorColumns,
    keep_deletes: bool,
) -> ArrowMergeCounts | None:
    """Merge the changelog rows with ``low < _tm_order <= high`` into ``mirror``, stamped;
    None, with nothing written, when Spark must (the module's description says when)."""
    if high - low > MOST_ROWS:
        _spark_needed(mirror, f"the range holds up to {high - low:,} rows")
        return None
    if mirror.metadata.format_version != 2 or changelog.metadata.format_version != 2:
        _spark_needed(mirror, "a table is not in format version 2")
        return None
    columns = _mirror_columns(changelog, mirror, evolution, keep_deletes)
    if columns is None:
        _spark_needed(mirror, "its columns are not its changelog's")
        return None
    if not set(key) <= set(columns):
        # Spark matches names whatever their case; Arrow and PyIceberg here do not
        _spark_needed(mirror, f"the key {', '.join(key)} is not named as its columns are")
        return None
    changes = _read_range(changelog, low, high)
    why = _needs_spark(changes, evolution)
    if why is not None:
        _spark_needed(mirror, why)
        return None
    latest = _latest(changes, key)
    images = _images(latest, columns, mirror, keep_deletes)
    try:
        located = _locate(mirror, latest.select(list(key)), key)
    except _SparkNeeded as why:
        _spark_needed(mirror, str(why))
        return None
    except ValueError as error:
        if "equality deletes" not in str(error):
            raise
        # written by another engine (Flink's upsert sink, say): Spark's MERGE applies them
        _spark_needed(mirror, "it has equality deletes, which PyIceberg does not read")
        return None
    snapshot_id = _commit(mirror, images, located, stamps)
    return ArrowMergeCounts(
        changes=changes.num_rows,
        keys=latest.num_rows,
        deleted=sum(len(found.positions) for found in located),
        added=images.num_rows,
        snapshot_id=snapshot_id,
    )


#: Iceberg types a mirror created by Spark from a changelog column keeps as they are (Spark
#: reads a uuid as a string and a fixed as a binary, so such a mirror differs)
_KEPT_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
    BinaryType,
    DecimalType,
)


def create_mirror(
    catalog: Catalog,
    identifier: str,
    changelog: Table,
    *,
    evolution: MirrorColumns,
    keep_deletes: bool,
    properties: Mapping[str, str],
) -> Table | None:
    """The mirror ``identifier`` created as Spark's first merge creates an unpartitioned one
    (``spark_jobs.merge.spark._ensure_mirror``): the changelog's columns less the metadata and the
    dropped ones, ``_tm_deleted`` with ``mirror.deletes: keep``, ``properties``, the
    changelog's comment, the added defaults marked filled. None, with nothing created, when a
    column's type is one Spark would change."""
    fields = [
        field
        for field in changelog.schema().fields
        if field.name not in METADATA_NAMES and field.name.lower() not in evolution.dropped
    ]
    if not all(isinstance(field.field_type, _KEPT_TYPES) for field in fields):
        _spark_needed(changelog, "a column's type is one Spark changes in the mirror")
        return None
    columns = [
        NestedField(number, field.name, field.field_type, required=False)
        for number, field in enumerate(fields, start=1)
    ]
    if keep_deletes:
        columns.append(NestedField(len(columns) + 1, MIRROR_DELETED_COLUMN, BooleanType()))
    described = dict(properties)
    if "comment" in changelog.properties:
        described["comment"] = changelog.properties["comment"]
    for default in evolution.defaults:
        described[f"{FILLED_PROPERTY}{default.column}"] = "true"
    namespace = identifier.rsplit(".", 1)[0]
    catalog.create_namespace_if_not_exists(namespace)
    logger.info("Creating mirror %s from %s", identifier, ".".join(changelog.name()))
    try:
        return catalog.create_table(identifier, Schema(*columns), properties=described)
    except TableAlreadyExistsError:
        return catalog.load_table(identifier)


class _SparkNeeded(Exception):
    """Found on the way: this merge is Spark's."""


def _spark_needed(mirror: Table, why: str) -> None:
    logger.debug("Mirror %s is merged by Spark: %s", ".".join(mirror.name()), why)


def _mirror_columns(
    changelog: Table, mirror: Table, evolution: MirrorColumns, keep_deletes: bool
) -> list[str | None] | None:
    """Per column of the mirror, in its order, the changelog column it takes (None for
    ``_tm_deleted``, which may sit anywhere: Spark adds later columns after it); None unless
    the mirror has exactly the changelog's columns, with the same types (as the last Spark
    merge left it)."""
    wanted = {
        field.name.lower(): field
        for field in changelog.schema().fields
        if field.name not in METADATA_NAMES and field.name.lower() not in evolution.dropped
    }
    fields = mirror.schema().fields
    have = [field for field in fields if field.name != MIRROR_DELETED_COLUMN]
    if keep_deletes != (len(have) < len(fields)):
        return None
    if {field.name.lower() for field in have} != set(wanted):
        return None
    if any(wanted[field.name.lower()].field_type != field.field_type for field in have):
        return None
    return [
        None if field.name == MIRROR_DELETED_COLUMN else wanted[field.name.lower()].name
        for field in fields
    ]


def _read_range(changelog: Table, low: int, high: int) -> pa.Table:
    """The changelog rows with ``low < _tm_order <= high``; Arrow reads the files at once
    when they all have the changelog's current columns (``spark_jobs.merge.parquet_files``)."""
    schema = changelog.schema()
    within = (pc.field(_ORDER) > low) & (pc.field(_ORDER) <= high)
    columns = [field.name for field in schema.fields]
    planned = files_in_range(changelog, _ORDER, low, high)
    read = None
    if planned is not None:  # None: delete files, which an append-only table never has
        files = [(file.path, file.file_format) for file in planned]
        read = read_same_structure(changelog.io, schema, files, columns, within)
    if read is None:
        return changelog.scan(
            row_filter=And(
                _compare(GreaterThan, _ORDER, low), _compare(LessThanOrEqual, _ORDER, high)
            )
        ).to_arrow()
    types = schema_to_pyarrow(schema, include_field_ids=False)
    empty = pa.schema([pa.field(name, types.field(name).type) for name in columns])
    return pa.concat_tables(read) if read else empty.empty_table()


def _needs_spark(changes: pa.Table, evolution: MirrorColumns) -> str | None:
    """Why rows of ``changes`` need what only the Spark merge does; None if none do."""
    if pc.any(pc.equal(changes[_OP], Change.TRUNCATE.value)).as_py():
        return "the range holds a truncate marker"
    earlier = [
        (lineage_earlier.table_id, lineage_earlier.below_version)
        for lineage in evolution.lineages
        for lineage_earlier in lineage.earlier
    ]
    earlier += [(default.table_id, default.below_version) for default in evolution.defaults]
    for table_id, below_version in earlier:
        database, table = table_id.split(".", 1)
        written_before = pc.and_(
            pc.and_(
                pc.equal(changes[MetadataColumn.SOURCE_DATABASE.value], database),
                pc.equal(changes[MetadataColumn.SOURCE_TABLE.value], table),
            ),
            pc.less(changes[MetadataColumn.SCHEMA_VERSION.value], below_version),
        )
        if pc.any(written_before).as_py():
            return f"rows of {table_id} predate a renamed or defaulted column"
    return None


def _latest(changes: pa.Table, key: Sequence[str]) -> pa.Table:
    """The latest change of each key (a NULL in a key is a key too, as Spark's ranking has it).
    ``_tm_order`` is unique in a changelog, so the latest orders name the rows."""
    newest = changes.group_by(list(key), use_threads=False).aggregate([(_ORDER, "max")])
    return changes.filter(pc.is_in(changes[_ORDER], value_set=newest[f"{_ORDER}_max"]))


def _images(
    latest: pa.Table, columns: list[str | None], mirror: Table, keep_deletes: bool
) -> pa.Table:
    """The rows the commit adds, in the mirror's Arrow schema (``columns`` as
    ``_mirror_columns`` gives them): the latest image of each key not deleted; with
    ``mirror.deletes: keep`` every key's, deleted ones flagged."""
    deleted = pc.equal(latest[_OP], Change.DELETE.value)
    arrays = [deleted if name is None else latest[name] for name in columns]
    if not keep_deletes:
        arrays = [array.filter(pc.invert(deleted)) for array in arrays]
    target = schema_to_pyarrow(mirror.schema(), include_field_ids=False)
    return pa.Table.from_arrays(arrays, names=target.names).cast(target)


@dataclass(frozen=True)
class _Located:
    """Rows of the live data file ``data_file`` that hold keys the merge changes."""

    data_file: DataFile
    positions: pa.Array  # int64, ascending


def _locate(mirror: Table, keys: pa.Table, key: Sequence[str]) -> list[_Located]:
    """Where the mirror holds ``keys`` now: file and position of each live row with one."""
    if keys.num_rows == 0 or mirror.current_snapshot() is None:
        return []
    key_schema = mirror.schema().select(*key)
    arrow = schema_to_pyarrow(key_schema, include_field_ids=False)
    keys = pa.Table.from_arrays(
        [keys[name].cast(arrow.field(name).type) for name in key], names=list(key)
    )
    tasks = list(mirror.scan(row_filter=_key_range(keys, key_schema)).plan_files())
    candidates = sum(task.file.record_count for task in tasks)
    if candidates > MOST_MIRROR_ROWS:
        raise _SparkNeeded(f"the keys may be in {candidates:,} rows of the mirror")
    # read without the tasks' deletes, so that a row's index is its position in its file
    files = [(task.file.file_path, task.file.file_format) for task in tasks]
    read = read_same_structure(mirror.io, mirror.schema(), files, list(key))
    if read is None:
        reader = ArrowScan(mirror.metadata, mirror.io, key_schema, AlwaysTrue())
        read = [reader.to_table([FileScanTask(task.file)]) for task in tasks]
    # a delete file names rows of many data files: each is read once
    deletes: dict[str, dict[str, pa.ChunkedArray]] = {}
    found = []
    for task, rows in zip(tasks, read, strict=True):
        positions = pa.array(range(rows.num_rows), pa.int64())
        removed = []
        for delete_file in task.delete_files:
            if delete_file.file_path not in deletes:
                deletes[delete_file.file_path] = read_position_deletes(mirror.io, delete_file)
            if task.file.file_path in deletes[delete_file.file_path]:
                removed.append(deletes[delete_file.file_path][task.file.file_path])
        live = rows.append_column(_POSITION, positions)
        if removed:
            gone = pa.chunked_array([p for part in removed for p in part.chunks], pa.int64())
            live = live.filter(pc.invert(pc.is_in(live[_POSITION], value_set=gone)))
        hits = live.join(keys, keys=list(key), join_type="left semi")
        if hits.num_rows:
            positions = hits[_POSITION].combine_chunks()
            found.append(_Located(task.file, positions.take(pc.sort_indices(positions))))
    return found


def _key_range(keys: pa.Table, key_schema: Schema) -> BooleanExpression:
    """A filter on the first key column's range that lets the scan skip files by their
    statistics; every row for an integer or string key, whose literals bind safely."""
    first = key_schema.fields[0]
    if not isinstance(first.field_type, IntegerType | LongType | StringType):
        return AlwaysTrue()
    bounds = pc.min_max(keys[first.name])
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None or keys[first.name].null_count:
        return AlwaysTrue()
    return And(
        _compare(GreaterThanOrEqual, first.name, low), _compare(LessThanOrEqual, first.name, high)
    )


def _compare(kind: type[LiteralPredicate], column: str, value: object) -> BooleanExpression:
    return kind(term=Reference(column), literal=literal(value))


def _commit(
    mirror: Table, images: pa.Table, located: list[_Located], stamps: Mapping[str, str]
) -> int:
    """One commit of position deletes for ``located`` and ``images`` as new rows, as a
    merge-on-read ``MERGE`` makes it; the new snapshot's id."""
    metadata, io = mirror.metadata, mirror.io
    plan = SnapshotPlan.of(metadata, laid_out=False)
    try:
        with PositionDeleteOverwrite(mirror, plan, stamps) as overwrite:
            for data_file in write_with_pyiceberg(metadata, io, images, overwrite.commit_uuid):
                overwrite.append_data_file(data_file)
            for group in _by_partition(located):
                deletes = [(found.data_file, found.positions) for found in group]
                overwrite.add_delete_file(
                    write_position_deletes(metadata, io, plan.locations, deletes)
                )
    except CommitFailedException as error:
        raise TransientError(
            f"the mirror {'.'.join(mirror.name())} changed while it was merged "
            f"({error}); the window is merged again"
        ) from error
    return overwrite.snapshot.snapshot_id


def _by_partition(located: list[_Located]) -> list[list[_Located]]:
    """The located rows grouped by their data file's spec and partition: a position delete
    file applies to data files of its own partition only."""
    groups: dict[tuple[int, Record], list[_Located]] = {}
    for found in located:
        groups.setdefault((found.data_file.spec_id, found.data_file.partition), []).append(found)
    return list(groups.values())
