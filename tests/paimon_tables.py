"""Small Paimon primary-key tables written as ingest writes them (docs/paimon.md, the table
contract), for the tests of the readers: through ``tidemark.lake.paimon``, whose commits stamp
each snapshot's own ``watermark`` as ingest's do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from tidemark.contracts.changelog import METADATA_FIELDS, MetadataColumn, SummaryKey
from tidemark.lake.paimon import PaimonCatalog, open_paimon_catalog

ROW_KIND = "_tm_row_kind"
_KINDS = {"r": "+I", "c": "+I", "u": "+U", "d": "-D"}


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

    def _catalog(self) -> PaimonCatalog:
        return open_paimon_catalog(self.options())

    def create(
        self,
        name: str,
        columns: Sequence[pa.Field],
        key: Sequence[str],
        bucket: int = 1,
    ) -> None:
        """Primary-key table ``name`` (``db.t``): ``columns``, then the contract's metadata
        columns and ``_tm_row_kind``, with the options ingest sets."""
        catalog = self._catalog()
        catalog.create_namespace_if_not_exists(name.split(".", 1)[0])
        fields = [field.with_nullable(False) if field.name in key else field for field in columns]
        schema = pa.schema([*fields, *METADATA_FIELDS, pa.field(ROW_KIND, pa.string(), False)])
        options = {
            "bucket": str(bucket),
            "rowkind.field": ROW_KIND,
            "sequence.field": MetadataColumn.ORDER_KEY,
            "write-only": "true",
            "file.format": "parquet",
        }
        catalog.create_table(name, schema, key, [], options)

    def commit(self, name: str, changes: Sequence[Change], watermark: int, order: int) -> int:
        """Commits ``changes`` (``_tm_order`` from ``order`` on) as one snapshot whose
        watermark is ``watermark``; its id."""
        table = self._catalog().load_table(name)
        assert table is not None
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
        columns = table.arrow_schema()
        loose = pa.schema([field.with_nullable(True) for field in columns])
        batch = pa.Table.from_pylist(rows, schema=loose)
        properties: dict[str, str] = {
            SummaryKey.WATERMARK: str(watermark),
            SummaryKey.POSITION: f"binlog.000001:{order + len(changes)}",
            SummaryKey.SOURCE: "test",
        }
        return table.commit(batch, properties, watermark, lambda _: None).snapshot_id


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
