"""The orders windows harness: sharded orders tables at the source, their pipeline, and the
mirror ``orders`` merged a window at a time (the ``orders_windows`` fixture of conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.window_jobs import MergeOutcome, WindowJobs
from tests.spark_jobs.sources import (
    changelog_watermark,
    execute,
    ingest_to_end,
    tick_past_now,
)
from tidemark.config import PipelineConfig
from tidemark.stack.endpoints import StackEndpoints
from tidemark.windows import Window

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection

BOTH_SHARDS = (
    "SELECT order_no, status, amount FROM orders_0 UNION ALL "
    "SELECT order_no, status, amount FROM orders_1 ORDER BY order_no"
)
FIVE_MINUTES = timedelta(minutes=5)


@dataclass(frozen=True)
class OrdersWindows:
    """An orders pipeline driven a step at a time: source changes, ingest, the mirror's merge."""

    config: PipelineConfig
    catalog: Catalog
    endpoints: StackEndpoints
    admin_connection: Connection
    jobs: WindowJobs
    namespace: str
    server_id: int

    @property
    def mirror(self) -> str:
        """The orders mirror, as Spark names it."""
        return f"tidemark.{self.namespace}.orders"

    def write(self, *statements: str) -> None:
        """Runs ``statements`` at the source, then moves the source's clock past them."""
        execute(self.admin_connection, *statements)
        tick_past_now(self.admin_connection)

    def ingest(self) -> None:
        """Ingests everything the source has written so far."""
        ingest_to_end(self.config, self.catalog, self.endpoints, self.server_id)

    def change(self, *statements: str) -> None:
        """``write`` then ``ingest``: the changelog's watermark is past ``statements``."""
        self.write(*statements)
        self.ingest()

    def watermark(self) -> datetime:
        return changelog_watermark(self.catalog, f"{self.namespace}.orders_changelog")

    def window_ending_at_watermark(self) -> Window:
        """The five-minute window ending at the changelog's watermark."""
        return Window.ending_at(self.watermark(), FIVE_MINUTES)

    def window_after(self, previous: Window) -> Window:
        """The window from ``previous``'s end to the changelog's watermark."""
        return Window(previous.end, self.watermark())

    def merge(self, window: Window) -> MergeOutcome:
        """Merges the orders mirror in ``window``."""
        return self.jobs.merge_mirror(f"{self.namespace}.orders", window)

    def change_and_merge(self, *statements: str) -> MergeOutcome:
        """Runs ``statements`` at the source, ingests them, and merges the orders mirror in the
        five-minute window ending at the changelog's watermark."""
        self.change(*statements)
        return self.merge(self.window_ending_at_watermark())


class StartOrders(Protocol):
    def __call__(
        self,
        shards: int = 1,
        *,
        top_level: str = "",
        table_options: str = "",
        unique_key: str = "order_no",
        ingest: bool = True,
        in_processes: bool = False,
    ) -> OrdersWindows: ...


def mirror_rows(spark: SparkSession, table: str) -> list[tuple[object, ...]]:
    rows = spark.sql(f"SELECT order_no, status, amount FROM {table} ORDER BY order_no").collect()
    return [tuple(row) for row in rows]


def newest_stamp(spark: SparkSession, table: str) -> dict[str, str]:
    row = spark.sql(
        f"SELECT snapshot_id, summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0]
    return {"snapshot_id": str(row.snapshot_id), **row.summary}
