"""Fixtures of the window tests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.window_jobs import WindowJobs
from tests.spark_jobs.orders_windows import OrdersWindows, StartOrders
from tests.spark_jobs.sources import create_shards, orders_pipeline
from tidemark.config.plan import plan_from_source
from tidemark.stack.endpoints import StackEndpoints

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection


@pytest.fixture
def orders_windows(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    spark: SparkSession,
    tmp_path: Path,
    server_id: int,
) -> StartOrders:
    """``orders_windows(shards, ...)``: ``shards`` orders tables and the test's pipeline over
    them (``top_level`` and ``table_options`` as ``orders_pipeline`` takes them), ingested once,
    which fixes where ingest streams from and creates the changelog, unless ``ingest`` is
    false."""

    def start(
        shards: int = 1,
        *,
        top_level: str = "",
        table_options: str = "",
        unique_key: str = "order_no",
        ingest: bool = True,
    ) -> OrdersWindows:
        create_shards(admin_connection, shards)
        config = orders_pipeline(
            tmp_path / "p.yaml",
            endpoints,
            database=source_database,
            namespace=namespace,
            server_id=server_id,
            top_level=top_level,
            table_options=table_options,
            unique_key=unique_key,
        )
        jobs = WindowJobs(config, plan_from_source(config), spark)
        orders = OrdersWindows(
            config, catalog, endpoints, admin_connection, jobs, namespace, server_id
        )
        if ingest:
            orders.ingest()
        return orders

    return start
