"""Fixtures of the window tests."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.merge.processes import CatalogAddress, MergeProcesses
from spark_jobs.window_jobs import WindowJobs
from tests.spark_jobs.orders_windows import OrdersWindows, StartOrders
from tests.spark_jobs.sources import create_shards, orders_pipeline
from tidemark.config.model import reveal
from tidemark.config.plan import plan_from_source
from tidemark.stack.endpoints import LakeEndpoint, StackEndpoints

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection


@pytest.fixture
def merge_processes() -> Iterator[MergeProcesses]:
    """Two worker processes for the merges without Spark, as ``tidemark schedule`` starts."""
    processes = MergeProcesses(2)
    yield processes
    processes.close()


@pytest.fixture
def orders_windows(
    request: pytest.FixtureRequest,
    endpoints: StackEndpoints,
    lake: LakeEndpoint,
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
    false; merged in the worker processes of ``merge_processes`` with ``in_processes``."""

    def start(
        shards: int = 1,
        *,
        top_level: str = "",
        table_options: str = "",
        unique_key: str = "order_no",
        ingest: bool = True,
        in_processes: bool = False,
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
            lake=lake,
        )
        lake_merges = None
        if in_processes:
            processes: MergeProcesses = request.getfixturevalue("merge_processes")
            catalog_address = CatalogAddress.of(
                config.tidemark.catalog_name, reveal(config.sink.catalog_properties)
            )
            lake_merges = partial(processes.merge, catalog_address)
        jobs = WindowJobs(config, plan_from_source(config), spark, lake_merges=lake_merges)
        orders = OrdersWindows(
            config, catalog, endpoints, admin_connection, jobs, namespace, server_id
        )
        if ingest:
            orders.ingest()
        return orders

    return start
