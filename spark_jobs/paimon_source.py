"""Reading a Paimon table with pypaimon: the snapshot a watermark pins, the splits planned at
it, and those splits read as Arrow with full merge-on-read.

The only module of ``spark_jobs`` that imports pypaimon (``pypaimon==2.1.0``); what it does is
shared Paimon code that belongs with ``tidemark/lake/paimon.py`` once that exists. The Spark
side is ``spark_jobs.paimon_datasource``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory
from pypaimon.schema.data_types import PyarrowFieldParser

from tidemark.errors import ConfigError, TerminalError

#: Paimon's ``rowkind.field`` in Tidemark's tables (docs/paimon.md, the table contract)
ROW_KIND_COLUMN = "_tm_row_kind"

#: a split of a plan: a pypaimon ``DataSplit``, which pickles
Split = Any
#: a pypaimon ``FileStoreTable``
Table = Any


class WatermarkNotReachedError(TerminalError):
    """No snapshot of the table has a watermark at or past the one asked for."""


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


def earliest_snapshot(table: Table) -> int | None:
    """The id of the table's oldest retained snapshot; None for a table never committed to."""
    snapshot = table.snapshot_manager().try_get_earliest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def require_snapshot(table: Table, name: str, snapshot_id: int) -> None:
    """Raises ``SnapshotNotFoundError`` unless the table still has snapshot ``snapshot_id``."""
    _snapshot(table, name, snapshot_id)


def _snapshot(table: Table, name: str, snapshot_id: int) -> Any:
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
    _snapshot(table, name, snapshot_id)
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
    times = [_snapshot(table, name, snapshot_id).time_millis for snapshot_id in (after, through)]
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
