"""Merges without Spark (``spark_jobs.merge.arrow``) against the real stack: a mirror merged by
PyIceberg holds what a Spark ``MERGE`` of the same ranges gives, window after window, and both
Spark and PyIceberg read it so."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.merge import arrow as arrow_merge
from spark_jobs.merge.arrow import merge_without_spark
from spark_jobs.merge.request import mirror_evolution
from spark_jobs.merge.spark import merge_range
from spark_jobs.merge.stamps import SPARK_APP_ID
from spark_jobs.window_jobs import MergeOutcome
from tests.spark_jobs.orders_windows import (
    BOTH_SHARDS,
    OrdersWindows,
    StartOrders,
    mirror_rows,
    newest_stamp,
)
from tests.spark_jobs.sources import source_rows
from tidemark.config.plan import plan_from_source
from tidemark.contracts.mirror import MirrorKey
from tidemark.errors import TransientError

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection

SHARDS = 2


@dataclass
class ShopWorkload:
    """Random changes to the orders shards: inserts, updates, deletes, key changes and orders
    moving between shards, each statement valid against what the source holds."""

    seed: int
    #: order_no -> (shard, id)
    orders: dict[int, tuple[int, int]] = field(default_factory=dict)
    next_number: int = 100

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def _new_number(self) -> int:
        self.next_number += 1
        return self.next_number

    def insert(self, shard: int | None = None) -> list[str]:
        shard = self._random.randrange(SHARDS) if shard is None else shard
        number = self._new_number()
        self.orders[number] = (shard, number)
        amount = self._random.randrange(100, 10_000) / 100
        return [f"INSERT INTO orders_{shard} VALUES ({number}, {number}, 'new', {amount}, NOW())"]

    def step(self) -> list[str]:
        if len(self.orders) < 3:
            return self.insert()
        number = self._random.choice(sorted(self.orders))
        shard, order_id = self.orders[number]
        kind = self._random.choice(["insert", "update", "update", "delete", "rekey", "move"])
        if kind == "insert":
            return self.insert()
        if kind == "update":
            status = self._random.choice(["paid", "shipped", "refunded", None])
            value = "NULL" if status is None else f"'{status}'"
            return [f"UPDATE orders_{shard} SET status = {value} WHERE order_no = {number}"]
        del self.orders[number]
        if kind == "delete":
            return [f"DELETE FROM orders_{shard} WHERE order_no = {number}"]
        if kind == "rekey":
            renumbered = self._new_number()
            self.orders[renumbered] = (shard, order_id)
            return [f"UPDATE orders_{shard} SET order_no = {renumbered} WHERE order_no = {number}"]
        other, moved_id = (shard + 1) % SHARDS, self._new_number()
        self.orders[number] = (other, moved_id)
        return [
            "BEGIN",
            f"DELETE FROM orders_{shard} WHERE order_no = {number}",
            f"INSERT INTO orders_{other} VALUES ({moved_id}, {number}, 'moved', 1.00, NOW())",
            "COMMIT",
        ]

    def statements(self, count: int) -> list[str]:
        return [statement for _ in range(count) for statement in self.step()]


def all_rows(spark: SparkSession, table: str) -> list[tuple[object, ...]]:
    """Every column of every row, in key order, as Spark reads them."""
    frame = spark.table(table)
    return [tuple(row) for row in frame.orderBy("order_no", "id").collect()]


def rows_read_by_pyiceberg(catalog: Catalog, table: str) -> list[tuple[object, ...]]:
    rows = catalog.load_table(table).scan().to_arrow().to_pylist()
    return sorted((tuple(row.values()) for row in rows), key=lambda row: (row[1], row[0]))


def mirror_properties(spark: SparkSession, table: str) -> dict[str, str]:
    """The table properties a mirror is created with, as Spark lists them."""
    listed = spark.sql(f"SHOW TBLPROPERTIES {table}").collect()
    return {row.key: row.value for row in listed if row.key.startswith(("write.", "format"))}


@dataclass(frozen=True)
class Twin:
    """A second mirror of the same changelog, merged by Spark's ``MERGE`` alone."""

    orders: OrdersWindows
    spark: SparkSession

    @property
    def name(self) -> str:
        return f"{self.orders.mirror}_twin"

    def follow(self, outcome: MergeOutcome) -> None:
        """Merges the range ``outcome`` merged into the mirror, with Spark."""
        (sink,) = plan_from_source(self.orders.config).sinks
        spec = replace(self.orders.jobs.mirror_spec(sink), mirror=self.name)
        stamps: dict[str, str] = {MirrorKey.WINDOW_END: str(outcome.window.end_ms)}
        merge_range(self.spark, spec, outcome.previous_order, outcome.merged_order, stamps)


@pytest.mark.parametrize(
    ("unique_key", "keep_deletes", "in_processes", "storage"),
    [
        pytest.param("order_no", False, False, "local", id="key"),
        pytest.param("order_no, id", True, False, "local", id="composite key, deletes kept"),
        pytest.param("order_no", False, True, "local", id="key, in worker processes"),
        pytest.param("order_no", False, True, "s3", id="key, in worker processes, on S3"),
    ],
    indirect=["storage"],
)
def test_merges_without_spark_leave_the_mirror_as_spark_merges_of_the_same_ranges_do(
    orders_windows: StartOrders,
    admin_connection: Connection,
    catalog: Catalog,
    spark: SparkSession,
    unique_key: str,
    keep_deletes: bool,
    in_processes: bool,
) -> None:
    orders = orders_windows(
        shards=SHARDS,
        unique_key=unique_key,
        table_options="      mirror:\n        deletes: keep\n" if keep_deletes else "",
        in_processes=in_processes,
    )
    twin = Twin(orders, spark)
    workload = ShopWorkload(seed=25)
    created = orders.change_and_merge(*workload.insert(0), *workload.insert(1))
    twin.follow(created)  # the twin is created by Spark
    previous = created.window

    assert not created.by_spark
    assert spark.table(orders.mirror).schema == spark.table(twin.name).schema
    assert mirror_properties(spark, orders.mirror) == mirror_properties(spark, twin.name)

    for _ in range(3):
        orders.change(*workload.statements(25))
        outcome = orders.merge(orders.window_after(previous))
        twin.follow(outcome)
        previous = outcome.window

        assert not outcome.by_spark
        assert outcome.changes > 0
        assert SPARK_APP_ID not in newest_stamp(spark, orders.mirror)
        assert SPARK_APP_ID in newest_stamp(spark, twin.name)
        assert all_rows(spark, orders.mirror) == all_rows(spark, twin.name)
        assert rows_read_by_pyiceberg(catalog, f"{orders.namespace}.orders") == all_rows(
            spark, orders.mirror
        )
        if not keep_deletes:
            assert mirror_rows(spark, orders.mirror) == source_rows(admin_connection, BOTH_SHARDS)


@pytest.mark.parametrize("in_processes", [False, True], ids=["in its thread", "in a worker"])
def test_a_range_holding_a_truncate_marker_is_merged_by_spark(
    orders_windows: StartOrders,
    admin_connection: Connection,
    spark: SparkSession,
    in_processes: bool,
) -> None:
    orders = orders_windows(
        shards=SHARDS,
        top_level="  schema.change.behavior: try_evolve",  # lenient leaves truncate.table out
        in_processes=in_processes,
    )
    workload = ShopWorkload(seed=7)
    first = orders.change_and_merge(*workload.insert(0), *workload.insert(1), *workload.insert(1))
    orders.change(*workload.insert(0), "TRUNCATE TABLE orders_1")

    truncated = orders.merge(orders.window_after(first.window))

    assert truncated.by_spark
    assert mirror_rows(spark, orders.mirror) == source_rows(admin_connection, BOTH_SHARDS)
    assert len(mirror_rows(spark, orders.mirror)) == 2


def files_under(location: str) -> set[Path]:
    folder = Path(location.removeprefix("file://"))
    return {path for path in folder.rglob("*") if path.is_file()}


@pytest.mark.every_storage
def test_a_merge_onto_a_mirror_that_moved_meanwhile_commits_nothing_and_leaves_no_file(
    orders_windows: StartOrders, catalog: Catalog, spark: SparkSession
) -> None:
    orders = orders_windows(shards=SHARDS)
    workload = ShopWorkload(seed=3)
    first = orders.change_and_merge(*workload.insert(0), *workload.insert(0))
    identifier = f"{orders.namespace}.orders"
    stale = catalog.load_table(identifier)  # what a merge loaded before another commit
    orders.change(*workload.statements(5))
    second = orders.merge(orders.window_after(first.window))
    before = files_under(stale.location())
    (sink,) = plan_from_source(orders.config).sinks
    spec = orders.jobs.mirror_spec(sink)
    changelog = catalog.load_table(f"{orders.namespace}.orders_changelog")

    with pytest.raises(TransientError, match="changed while it was merged"):
        merge_without_spark(
            changelog,
            stale,
            spec.key,
            low=first.merged_order,
            high=second.merged_order,
            stamps={MirrorKey.WINDOW_END: "1"},
            evolution=mirror_evolution(spec, changelog.properties),
            keep_deletes=False,
        )

    assert files_under(stale.location()) == before
    current = catalog.load_table(identifier).current_snapshot()
    assert current is not None and current.snapshot_id == second.mirror_snapshot


@pytest.mark.parametrize("limit", ["MOST_ROWS", "MOST_MIRROR_ROWS"])
def test_a_merge_larger_than_the_scheduler_should_hold_is_left_to_spark(
    orders_windows: StartOrders,
    admin_connection: Connection,
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    limit: str,
) -> None:
    orders = orders_windows(shards=SHARDS)
    workload = ShopWorkload(seed=11)  # orders 101, 102 and 103
    first = orders.change_and_merge(*workload.insert(0), *workload.insert(1), *workload.insert(0))
    monkeypatch.setattr(arrow_merge, limit, 1)  # a range of 2 changes, keys in 3 mirror rows
    orders.change(
        "UPDATE orders_0 SET status = 'paid' WHERE order_no = 101",
        "DELETE FROM orders_0 WHERE order_no = 103",
    )

    outcome = orders.merge(orders.window_after(first.window))

    assert outcome.by_spark
    assert mirror_rows(spark, orders.mirror) == source_rows(admin_connection, BOTH_SHARDS)


def test_a_column_added_after_the_deleted_flag_takes_its_own_values(
    orders_windows: StartOrders, spark: SparkSession
) -> None:
    orders = orders_windows(table_options="      mirror:\n        deletes: keep\n")
    orders.change_and_merge(
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 1.00, NULL), (2, 102, 'new', 2.00, NULL)"
    )
    followed = orders.change_and_merge(
        "ALTER TABLE orders_0 ADD COLUMN note TEXT",
        "UPDATE orders_0 SET note = 'first' WHERE order_no = 102",
    )
    assert followed.by_spark  # the structure changed: Spark adds the column, after the flag
    columns = spark.table(orders.mirror).columns
    assert columns.index("_tm_deleted") < columns.index("note")

    outcome = orders.change_and_merge(
        "UPDATE orders_0 SET note = 'later' WHERE order_no = 101",
        "DELETE FROM orders_0 WHERE order_no = 102",
    )

    assert not outcome.by_spark
    rows = spark.sql(f"SELECT order_no, note, _tm_deleted FROM {orders.mirror} ORDER BY 1")
    assert [tuple(row) for row in rows.collect()] == [(101, "later", False), (102, "first", True)]
