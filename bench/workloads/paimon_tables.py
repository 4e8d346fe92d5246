"""Paimon tables as ingest writes them (docs/paimon.md, "The table contract"), for the
maintenance tests and benchmark (so it lives in ``bench``, which the tests may import, and not
the other way round): a primary-key table with ``rowkind.field``, ``sequence.field`` and
``write-only``, written by ingest's own writer (``tidemark.lake.paimon``: one APPEND snapshot
per commit, Tidemark's progress in its properties, the watermark in Paimon's own field). What
the tests look at beneath the table (its data files per bucket, its manifests, a snapshot's
fields) is read here with pypaimon itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.table.file_store_table import FileStoreTable

from tidemark.contracts.changelog import METADATA_FIELDS, MetadataColumn, SummaryKey
from tidemark.lake.paimon import open_paimon_catalog

ROW_KIND = "_tm_row_kind"
CONTRACT_OPTIONS = {
    "rowkind.field": ROW_KIND,
    "sequence.field": MetadataColumn.ORDER_KEY.value,
    "write-only": "true",
    "file.format": "parquet",
}
KEY = "id"
#: ``id % SHARDS``: what a partitioned table is partitioned by (and keyed by, with ``id``, as
#: Paimon requires of a fixed-bucket table)
SHARD, SHARDS = "shard", 3
SCHEMA = pa.schema(
    [
        pa.field(KEY, pa.int64(), nullable=False),
        pa.field(SHARD, pa.int32(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("amount", pa.float64()),
        *METADATA_FIELDS,
        pa.field(ROW_KIND, pa.string(), nullable=False),
    ]
)
_DATA = (KEY, "name", "amount")
_KIND_OF = {"+I": "c", "+U": "u", "-D": "d"}


@dataclass(frozen=True)
class Change:
    """One source change of a row: ``kind`` is ``+I``, ``+U`` or ``-D``; the newest ``order``
    of a key wins."""

    key: int
    name: str
    order: int
    kind: str = "+I"


def upserts(keys: Iterable[int], name: str, first_order: int, kind: str = "+I") -> list[Change]:
    return [Change(key, name, first_order + i, kind) for i, key in enumerate(keys)]


@dataclass(frozen=True)
class SnapshotFacts:
    snapshot_id: int
    kind: str
    watermark: int | None
    properties: Mapping[str, str]
    commit_user: str


class ContractTable:
    """One table of a filesystem warehouse, written and read with pypaimon."""

    def __init__(
        self,
        warehouse: Path,
        identifier: str,
        *,
        buckets: int = 1,
        partitioned: bool = False,
        options: Mapping[str, str] | None = None,
    ) -> None:
        self.identifier = identifier
        self.catalog_options = {"warehouse": str(warehouse)}
        catalog = CatalogFactory.create(self.catalog_options)
        catalog.create_database(identifier.split(".")[0], True)
        schema = Schema.from_pyarrow_schema(
            SCHEMA,
            partition_keys=[SHARD] if partitioned else None,
            primary_keys=[KEY, SHARD] if partitioned else [KEY],
            options={**CONTRACT_OPTIONS, "bucket": str(buckets), **(options or {})},
        )
        catalog.create_table(identifier, schema, False)
        self._catalog = catalog
        self._commits = 0

    def _table(self) -> FileStoreTable:
        table: FileStoreTable = self._catalog.get_table(self.identifier)
        return table

    def commit(self, changes: Sequence[Change], watermark: int) -> int:
        """Write ``changes`` in one APPEND snapshot carrying Tidemark's progress and
        ``watermark``, as ingest commits (``tidemark.lake.paimon``); its id."""
        table = open_paimon_catalog(self.catalog_options).load_table(self.identifier)
        assert table is not None
        self._commits += 1
        properties = {
            SummaryKey.WATERMARK.value: str(watermark),
            SummaryKey.POSITION.value: f"mariadb-bin.000001:{self._commits}",
        }
        rows = _rows(changes, watermark)
        return table.commit(rows, properties, watermark, lambda _: None).snapshot_id

    def rows(self, snapshot_id: int | None = None) -> list[tuple[Any, ...]]:
        """The table's rows (merged: one per key), ``(id, name, amount)`` sorted, at the latest
        snapshot or at ``snapshot_id``."""
        table = self._table()
        if snapshot_id is not None:
            table = table.copy({"scan.snapshot-id": str(snapshot_id)})
        builder = table.new_read_builder().with_projection(list(_DATA))
        arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        return sorted(zip(*(arrow.column(name).to_pylist() for name in _DATA), strict=True))

    def data_files(self) -> dict[int, int]:
        """How many data files each bucket's latest state reads (in all partitions)."""
        files: dict[int, int] = {}
        for bucket, count in self.files_per_split():
            files[bucket] = files.get(bucket, 0) + count
        return files

    def files_per_split(self) -> list[tuple[int, int]]:
        """(bucket, data files) of each (partition, bucket) of the latest state."""
        builder = self._table().new_read_builder()
        return [(split.bucket, len(split.files)) for split in builder.new_scan().plan().splits()]

    def manifests(self) -> int:
        """How many manifest files the latest snapshot's state is listed in (its base and
        delta manifest lists)."""
        table = self._table()
        latest = table.snapshot_manager().get_latest_snapshot()
        return 0 if latest is None else len(ManifestListManager(table).read_all(latest))

    def snapshot(self, snapshot_id: int | None = None) -> SnapshotFacts:
        """The latest snapshot, or ``snapshot_id``."""
        manager = self._table().snapshot_manager()
        found = (
            manager.get_latest_snapshot()
            if snapshot_id is None
            else manager.get_snapshot_by_id(snapshot_id)
        )
        assert found is not None, f"{self.identifier} has no snapshot {snapshot_id}"
        return _facts(found)

    def snapshot_ids(self) -> list[int]:
        """The ids of the snapshots still in the table, oldest first."""
        manager = self._table().snapshot_manager()
        latest = manager.get_latest_snapshot()
        if latest is None:
            return []
        return [i for i in range(1, latest.id + 1) if manager.get_snapshot_by_id(i) is not None]


def _facts(snapshot: Snapshot) -> SnapshotFacts:
    return SnapshotFacts(
        snapshot_id=snapshot.id,
        kind=str(snapshot.commit_kind),
        watermark=snapshot.watermark,
        properties=dict(snapshot.properties or {}),
        commit_user=snapshot.commit_user,
    )


def _rows(changes: Sequence[Change], watermark: int) -> pa.Table:
    event_time = datetime.fromtimestamp(watermark / 1000, UTC)
    columns: dict[str, list[Any]] = {
        KEY: [c.key for c in changes],
        SHARD: [c.key % SHARDS for c in changes],
        "name": [c.name for c in changes],
        "amount": [float(c.key) for c in changes],
        MetadataColumn.OPERATION: [_KIND_OF[c.kind] for c in changes],
        MetadataColumn.EVENT_TIME: [event_time] * len(changes),
        MetadataColumn.POSITION: [f"mariadb-bin.000001:{c.order}" for c in changes],
        MetadataColumn.SOURCE_DATABASE: ["shop"] * len(changes),
        MetadataColumn.SOURCE_TABLE: ["orders"] * len(changes),
        MetadataColumn.ORDER_KEY: [c.order for c in changes],
        MetadataColumn.SCHEMA_VERSION: [1] * len(changes),
        ROW_KIND: [c.kind for c in changes],
    }
    return pa.table(columns, schema=SCHEMA)
