"""``tidemark verify``: a mirror equal to its source passes; a row changed behind the
pipeline's back is found; a change the next window will apply is in flight, not a mismatch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog

from tests.ingest.changelog_checks import changelog, merged
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.lakes import each_source_and_s3
from tests.runners import MakeRunner
from tidemark.app.cli import main
from tidemark.config import load_pipeline
from tidemark.contracts.mirror import MirrorKey
from tidemark.stack.endpoints import LakeEndpoint, SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


def _mirror_from_changelog(catalog: Catalog, namespace: str) -> None:
    """What a window merge makes: the changelog applied, stamped with its last order."""
    source = catalog.load_table(f"{namespace}.orders_changelog")
    rows = changelog(catalog, namespace)
    schema = pa.schema([f for f in source.schema().as_arrow() if not f.name.startswith("_tm_")])
    mirror = catalog.create_table(f"{namespace}.orders", schema=schema)
    state = sorted(merged(rows).values(), key=lambda row: row["id"])
    last_order = max(row["_tm_order"] for row in rows)
    mirror.append(
        pa.Table.from_pylist(state, schema=schema),
        snapshot_properties={MirrorKey.MERGED_ORDER: str(last_order)},
    )


@each_source_and_s3
def test_verify_passes_an_equal_mirror_and_finds_a_row_changed_behind_the_pipelines_back(
    source: SourceEndpoint,
    lake: LakeEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(40), qty INT)")
    path = write_pipeline(
        tmp_path / "p.yaml",
        source,
        lake,
        database=source_database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
    )
    runner = make_runner(load_pipeline(path))
    with admin_connection.cursor() as cursor:  # streamed: a bootstrap reads MariaDB only
        cursor.executemany(
            "INSERT INTO orders VALUES (%s, %s, %s)",
            [(key, f"item-{key}", key) for key in range(1, 251)],
        )
    run_to_end(runner, source, server_id, max_seconds=60)
    _mirror_from_changelog(catalog, namespace)

    assert main(["verify", str(path), "--page-rows", "100"]) == 0
    assert f"{namespace}.orders: OK, 250 source rows" in capsys.readouterr().out

    with admin_connection.cursor() as cursor:
        cursor.execute("UPDATE orders SET qty = 1000 WHERE id = 7")  # in the binlog
        cursor.execute("SET SESSION sql_log_bin = 0")  # behind the pipeline's back:
        cursor.execute("UPDATE orders SET item = 'changed' WHERE id = 42")
        cursor.execute("DELETE FROM orders WHERE id = 43")
        cursor.execute("SET SESSION sql_log_bin = 1")
    runner = make_runner(load_pipeline(path))
    run_to_end(runner, source, server_id, max_seconds=60)

    assert main(["verify", str(path), "--page-rows", "100"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH, 249 source rows, 0 missing, 1 extra, 1 different, 1 in flight" in out
    assert "  different: 42\n" in out
    assert "  extra: 43\n" in out
