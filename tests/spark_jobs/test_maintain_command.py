"""``tidemark maintain`` on a pipeline file, in its own process as users run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pymysql
import pytest
from pyiceberg.catalog import Catalog

from bench.workloads.changelog_commits import DATA, commit
from ingest.changelog.table import open_changelog
from tests.ingest.pipelines import write_pipeline
from tidemark.app.cli import main
from tidemark.stack.endpoints import StackEndpoints

COMMITS = 8


def tidemark(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidemark.app.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def pipeline(
    endpoints: StackEndpoints,
    admin_connection: pymysql.connections.Connection[pymysql.cursors.Cursor],
    namespace: str,
    source_database: str,
    tmp_path: Path,
    server_id: int,
) -> Path:
    """A pipeline of one MariaDB table, orders, into ``namespace``: sink table orders, changelog
    orders_changelog, mirror orders."""
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, item TEXT, qty BIGINT)")
    return write_pipeline(
        tmp_path / "pipeline.yaml",
        endpoints.mariadb,
        endpoints.catalog,
        database=source_database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
    )


def test_maintain_compacts_the_pipelines_tables_and_a_dry_run_only_reports(
    pipeline: Path, catalog: Catalog, namespace: str
) -> None:
    changelog = open_changelog(catalog, f"{namespace}.orders_changelog", DATA, {})
    for index in range(COMMITS):
        commit(changelog, index)

    dry = tidemark("maintain", str(pipeline), "--dry-run")
    files = catalog.load_table(f"{namespace}.orders_changelog").inspect.files()
    real = tidemark("maintain", str(pipeline), "--table", f"{namespace}.orders_changelog")

    assert dry.returncode == 0, dry.stderr[-3000:]
    assert (
        f"{namespace}.orders_changelog (changelog): {COMMITS} data + 0 delete files;" in dry.stdout
    )
    assert f"{COMMITS} snapshots, would expire 0" in dry.stdout
    assert "every snapshot (the mirror has no merged window yet" in dry.stdout
    assert f"{namespace}.orders (mirror): no such table yet" in dry.stdout
    assert files.num_rows == COMMITS
    assert real.returncode == 0, real.stderr[-3000:]
    assert f"{COMMITS} data + 0 delete files -> 1 + 0;" in real.stdout
    assert "(mirror)" not in real.stdout  # --table chose the changelog alone
    assert catalog.load_table(f"{namespace}.orders_changelog").inspect.files().num_rows == 1


def test_an_unknown_table_is_refused_with_the_pipelines_tables(
    pipeline: Path, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["maintain", str(pipeline), "--table", "shop.nope", "--dry-run"]) == 2
    error = capsys.readouterr().err
    assert "--table shop.nope is not a table of this pipeline" in error
    assert f"{namespace}.orders_changelog, {namespace}.orders" in error
