"""Small Paimon primary-key tables written as ingest writes them (docs/paimon.md, the table
contract), for the tests of the readers.

pypaimon 2.1 cannot set a snapshot's own ``watermark`` field, so each commit here wraps the
commit's ``SnapshotCommit`` and stamps it just before the snapshot is published, as ingest does.
The lead's ``tidemark/lake/paimon.py`` holds the real one; this helper will use it once it lands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.snapshot.snapshot_commit import PartitionStatistics, SnapshotCommit

from tidemark.contracts.changelog import METADATA_FIELDS, MetadataColumn, SummaryKey

ROW_KIND = "_tm_row_kind"
_KINDS = {"r": "+I", "c": "+I", "u": "+U", "d": "-D"}


class _StampWatermark(SnapshotCommit):
    """The catalog's own ``SnapshotCommit``, publishing each snapshot with ``watermark`` set
    (never below the previous snapshot's: Paimon watermarks are monotonic)."""

    def __init__(self, inner: SnapshotCommit, watermark: int) -> None:
        self._inner = inner
        self._watermark = watermark

    def commit(
        self,
        base_snapshot_uuid: str | None,
        snapshot: Snapshot,
        statistics: list[PartitionStatistics],
    ) -> bool:
        snapshot.watermark = max(self._watermark, snapshot.watermark or self._watermark)
        return bool(self._inner.commit(base_snapshot_uuid, snapshot, statistics))

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> _StampWatermark:
        self._inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._inner.__exit__(exc_type, exc, traceback)


@dataclass(frozen=True)
class Change:
    """One source change of a key: ``op`` is ``c``, ``u`` or ``d`` (``_tm_op``)."""

    op: str
    row: Mapping[str, Any]


@dataclass(frozen=True)
class PaimonTables:
    """A filesystem warehouse of Paimon tables, as ``catalog.properties`` describe it."""

    warehouse: str

    def options(self) -> dict[str, str]:
        return {"metastore": "filesystem", "warehouse": self.warehouse}

    def create(
        self,
        name: str,
        columns: Sequence[pa.Field],
        key: Sequence[str],
        bucket: int = 1,
    ) -> None:
        """Primary-key table ``name`` (``db.t``): ``columns``, then the contract's metadata
        columns and ``_tm_row_kind``, with the options ingest sets."""
        database, _ = name.split(".", 1)
        catalog = CatalogFactory.create(self.options())
        catalog.create_database(database, ignore_if_exists=True)
        fields = [field.with_nullable(False) if field.name in key else field for field in columns]
        schema = pa.schema([*fields, *METADATA_FIELDS, pa.field(ROW_KIND, pa.string(), False)])
        options = {
            "bucket": str(bucket),
            "rowkind.field": ROW_KIND,
            "sequence.field": MetadataColumn.ORDER_KEY,
            "write-only": "true",
            "file.format": "parquet",
        }
        paimon_schema = Schema.from_pyarrow_schema(schema, primary_keys=list(key), options=options)
        catalog.create_table(name, paimon_schema, ignore_if_exists=False)

    def commit(self, name: str, changes: Sequence[Change], watermark: int, order: int) -> int:
        """Commits ``changes`` (``_tm_order`` from ``order`` on) as one snapshot whose
        watermark is ``watermark``; its id."""
        table = CatalogFactory.create(self.options()).get_table(name)
        schema = pa.schema(
            [pa.field(f.name, f.type, True) for f in _arrow_schema(table)]
        )  # the written batch may hold NULLs in the metadata columns' place: none here
        rows = [
            {
                **change.row,
                MetadataColumn.OPERATION: change.op,
                MetadataColumn.EVENT_TIME: datetime.fromtimestamp(watermark / 1000, UTC),
                MetadataColumn.POSITION: f"binlog.000001:{order + index}",
                MetadataColumn.SOURCE_DATABASE: name.split(".")[0],
                MetadataColumn.SOURCE_TABLE: name.split(".")[1],
                MetadataColumn.ORDER_KEY: order + index,
                MetadataColumn.SCHEMA_VERSION: 1,
                ROW_KIND: _KINDS[change.op],
            }
            for index, change in enumerate(changes)
        ]
        batch = pa.Table.from_pylist(rows, schema=schema).cast(_arrow_schema(table))
        builder = table.new_batch_write_builder()
        write = builder.new_write()
        commit = builder.new_commit()
        store = commit.file_store_commit
        store.snapshot_commit = _StampWatermark(store.snapshot_commit, watermark)
        try:
            write.write_arrow(batch)
            commit.commit(
                write.prepare_commit(),
                snapshot_properties={
                    SummaryKey.WATERMARK: str(watermark),
                    SummaryKey.POSITION: f"binlog.000001:{order + len(changes)}",
                    SummaryKey.SOURCE: "test",
                },
            )
        finally:
            write.close()
            commit.close()
        latest = table.snapshot_manager().get_latest_snapshot()
        assert latest is not None
        return int(latest.id)


def _arrow_schema(table: Any) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.fields)


def state_after(
    commits: Sequence[Sequence[Change]], key: str, columns: Sequence[str]
) -> list[dict[str, Any]]:
    """What the table holds after ``commits``: each key's last change, deletes gone; each
    row with ``columns`` (None for a column its change did not give), sorted by ``key``."""
    rows: dict[Any, dict[str, Any]] = {}
    for changes in commits:
        for change in changes:
            if change.op == "d":
                rows.pop(change.row[key], None)
            else:
                rows[change.row[key]] = {column: change.row.get(column) for column in columns}
    return [rows[k] for k in sorted(rows)]
