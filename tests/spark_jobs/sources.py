"""Helpers for window tests: a sharded orders pipeline, ingest runs, source-clock ticks."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from ingest.changelog.table import ChangelogTable
from tests.ingest.pipelines import run_to_end
from tests.runners import runner_factory
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.stack.endpoints import LakeEndpoint, StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.windows import from_epoch_ms

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

ORDERS_COLUMNS = (
    "id INT PRIMARY KEY, order_no INT NOT NULL UNIQUE, status VARCHAR(20), "
    "amount DECIMAL(10, 2), created_at DATETIME"
)


def orders_pipeline(
    path: Path,
    endpoints: StackEndpoints,
    *,
    database: str,
    namespace: str,
    server_id: int,
    tidemark_block: str = "",
    top_level: str = "",
    table_options: str = "",
    unique_key: str = "order_no",
    lake: LakeEndpoint | None = None,
) -> PipelineConfig:
    """Every ``orders_<n>`` shard of ``database`` into ``namespace.orders``, keyed by
    ``unique_key``;
    ``tidemark_block`` adds to the ``tidemark:`` block (indented two spaces), ``top_level``
    adds blocks such as ``transform:``, ``table_options`` adds to the orders table's options
    (indented six spaces); ``lake`` is the catalog, the stack's JDBC one unless given."""
    text = local_pipeline(
        endpoints.mariadb,
        lake or endpoints.catalog,
        database=database,
        tables="orders_[0-9]+",
        namespace=namespace,
        server_id=server_id,
        extra=(
            f"\n{top_level}\ntidemark:\n  tables:\n"
            f"    {namespace}.orders:\n      unique-key: {unique_key}\n"
            + table_options
            + tidemark_block
        ),
    )
    text = text.replace(
        f"  - source-table: {database}.\\.*\n    sink-table: {namespace}.<>\n"
        "    replace-symbol: <>\n",
        f"  - source-table: {database}.orders_[0-9]+\n    sink-table: {namespace}.orders\n",
    )
    path.write_text(text)
    return load_pipeline(path)


def create_shards(connection: Connection, shards: int) -> None:
    with connection.cursor() as cursor:
        for shard in range(shards):
            cursor.execute(f"CREATE TABLE orders_{shard} ({ORDERS_COLUMNS})")
        # outside the pipeline: its commits only move the source's clock forward
        cursor.execute("CREATE TABLE ticks (id INT AUTO_INCREMENT PRIMARY KEY)")


def execute(connection: Connection, *statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def tick_past_now(connection: Connection, seconds: int = 1, deadline_seconds: float = 10) -> None:
    """Commit a transaction ``seconds`` seconds after every one before it, so that the
    watermark ingest reads after it is past all of them (binlog times are whole seconds)."""
    with connection.cursor() as cursor:

        def source_time() -> int:
            cursor.execute("SELECT UNIX_TIMESTAMP()")
            (now,) = cursor.fetchone() or (0,)
            return int(now)

        start = source_time()
        wait_until(
            "the source's clock moving on",
            lambda: source_time() >= start + seconds,
            deadline_seconds,
            interval=0.05,
        )
        cursor.execute("INSERT INTO ticks VALUES ()")


def ingest_to_end(
    config: PipelineConfig, catalog: Catalog, endpoints: StackEndpoints, server_id: int
) -> None:
    runner = runner_factory(catalog)(config)
    run_to_end(runner, endpoints.mariadb, server_id, max_seconds=120)


def changelog_watermark(catalog: Catalog, identifier: str) -> datetime:
    """The watermark the changelog's newest commit records."""
    progress = ChangelogTable(catalog.load_table(identifier)).progress()
    assert progress is not None
    return from_epoch_ms(progress.watermark_ms)


def source_rows(connection: Connection, query: str) -> list[tuple[object, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(query)
        return [tuple(row) for row in cursor.fetchall()]
