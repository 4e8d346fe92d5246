"""``tidemark maintain`` on a Paimon pipeline: Paimon's own pass on each sink table, in its own
process as users run it."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pymysql

from ingest.changelog.paimon_table import open_paimon_changelog
from tests.ingest.pipelines import write_pipeline
from tidemark.contracts.changelog import MetadataColumn
from tidemark.contracts.progress import TableProgress
from tidemark.lake.paimon import open_paimon_catalog
from tidemark.source import BinlogPosition
from tidemark.stack.endpoints import StackEndpoints

DATA = pa.schema([("id", pa.int64()), ("qty", pa.int64())])
COMMITS = 6


def test_maintain_compacts_a_paimon_pipelines_tables_and_keeps_their_rows(
    endpoints: StackEndpoints,
    admin_connection: pymysql.connections.Connection[pymysql.cursors.Cursor],
    namespace: str,
    source_database: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, qty BIGINT)")
    warehouse = str(tmp_path / "warehouse")
    path = write_pipeline(
        tmp_path / "pipeline.yaml",
        endpoints.mariadb,
        endpoints.catalog,
        database=source_database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
        paimon_warehouse=warehouse,
    )
    paimon = open_paimon_catalog({"warehouse": warehouse})
    paimon.create_namespace_if_not_exists(namespace)
    table = open_paimon_changelog(paimon, f"{namespace}.orders", DATA, ["id"], [], {})
    for index in range(1, COMMITS + 1):  # each commit updates every key: six files
        rows = [
            {
                "id": key,
                "qty": index,
                MetadataColumn.OPERATION: "u",
                MetadataColumn.EVENT_TIME: datetime.now(UTC),
                MetadataColumn.POSITION: f"binlog.000001:{index}",
                MetadataColumn.SOURCE_DATABASE: source_database,
                MetadataColumn.SOURCE_TABLE: "orders",
                MetadataColumn.ORDER_KEY: index * 10 + key,
                MetadataColumn.SCHEMA_VERSION: 1,
            }
            for key in range(5)
        ]
        progress = TableProgress(BinlogPosition("binlog.000001", index), index, index * 10, "s")
        table.commit(pa.Table.from_pylist(rows, schema=table.schema), progress)

    done = subprocess.run(
        [sys.executable, "-m", "tidemark.app.cli", "maintain", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr
    assert f"{namespace}.orders: {COMMITS} files of 1 buckets compacted into 1" in done.stdout
    stored = paimon.load_table(f"{namespace}.orders")
    assert stored is not None
    assert sorted(stored.read(["id", "qty"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": key, "qty": COMMITS} for key in range(5)
    ]
    newest = next(stored.snapshots())
    assert newest.kind == "COMPACT" and newest.watermark == COMMITS
    assert open_paimon_changelog(
        paimon, f"{namespace}.orders", DATA, ["id"], [], {}
    ).progress() == TableProgress(BinlogPosition("binlog.000001", COMMITS), COMMITS, 60, "s")
