"""Spark reads a Paimon table as of a snapshot or a watermark through ``tidemark_paimon``, and
a job's inputs are pinned to the first snapshot whose watermark reaches the window's end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from spark_jobs import paimon_spark
from spark_jobs.paimon_datasource import register
from spark_jobs.paimon_inputs import pin_inputs, view_name, window_changes
from tests.paimon_tables import Change, PaimonTables, state_after
from tidemark.lake.paimon import WatermarkNotReachedError

ORDERS = "shop.orders"
CUSTOMERS = "shop.customers"
ORDER_COLUMNS = [
    pa.field("id", pa.int64()),
    pa.field("customer_id", pa.int64()),
    pa.field("amount", pa.float64()),
]
ORDER_NAMES = [column.name for column in ORDER_COLUMNS]


def order(op: str, id: int, customer_id: int = 0, amount: float = 0.0) -> Change:
    return Change(op, {"id": id, "customer_id": customer_id, "amount": amount})


#: three commits of upserts and deletes, at watermarks 1000, 2000, 3000
ORDER_COMMITS = [
    [order("c", i, customer_id=i % 3, amount=10.0 * i) for i in range(1, 9)],
    [order("u", 1, 1, 11.0), order("d", 2), order("c", 9, 2, 90.0), order("u", 3, 1, 33.0)],
    [order("d", 1), order("u", 9, 0, 99.0), order("c", 10, 1, 100.0), order("d", 5)],
]
WATERMARKS = [1000, 2000, 3000]


@pytest.fixture
def paimon(tmp_path: Any) -> PaimonTables:
    return PaimonTables(str(tmp_path / "warehouse"))


def write_orders(paimon: PaimonTables, bucket: int = 1) -> list[int]:
    paimon.create(ORDERS, ORDER_COLUMNS, ["id"], bucket=bucket)
    return [
        paimon.commit(ORDERS, changes, watermark, order=100 * index)
        for index, (changes, watermark) in enumerate(zip(ORDER_COMMITS, WATERMARKS, strict=True))
    ]


def rows(frame: DataFrame, columns: Sequence[str] = ORDER_NAMES) -> list[dict[str, Any]]:
    return sorted(
        (row.asDict() for row in frame.select(*columns).collect()), key=lambda r: r[columns[0]]
    )


def reader(spark: SparkSession, paimon: PaimonTables, **options: str) -> DataFrameReader:
    register(spark)
    return spark.read.format("tidemark_paimon").options(**paimon.options()).options(**options)


def read(spark: SparkSession, paimon: PaimonTables, **options: str) -> DataFrame:
    return reader(spark, paimon, **options).load(ORDERS)


@pytest.mark.parametrize("bucket", [1, 2])
def test_a_read_at_snapshot_k_is_the_state_after_commit_k(
    spark: SparkSession, paimon: PaimonTables, bucket: int
) -> None:
    snapshots = write_orders(paimon, bucket)

    for k, snapshot in enumerate(snapshots, start=1):
        frame = read(spark, paimon, **{"snapshot-id": str(snapshot)})
        assert rows(frame) == state_after(ORDER_COMMITS[:k], "id", ORDER_NAMES), f"snapshot {k}"


def test_a_read_at_a_watermark_is_the_first_snapshot_that_reaches_it(
    spark: SparkSession, paimon: PaimonTables
) -> None:
    write_orders(paimon, bucket=2)

    for watermark, commits in [(1, 1), (1000, 1), (1001, 2), (2000, 2), (2999, 3), (3000, 3)]:
        frame = read(spark, paimon, watermark=str(watermark))
        assert rows(frame) == state_after(ORDER_COMMITS[:commits], "id", ORDER_NAMES), watermark


def test_a_state_read_shows_no_row_kind_and_a_given_schema_reads_its_columns_only(
    spark: SparkSession, paimon: PaimonTables
) -> None:
    write_orders(paimon)

    whole = read(spark, paimon)
    narrow = reader(spark, paimon).schema("amount DOUBLE, id BIGINT").load(ORDERS)

    assert "_tm_row_kind" not in whole.columns
    assert {"_tm_op", "_tm_order"} <= set(whole.columns)
    assert narrow.columns == ["amount", "id"]
    assert sorted(tuple(row) for row in narrow.collect()) == sorted(
        (row["amount"], row["id"]) for row in state_after(ORDER_COMMITS, "id", ORDER_NAMES)
    )


def write_customers(paimon: PaimonTables) -> None:
    columns = [pa.field("id", pa.int64()), pa.field("region", pa.string())]
    paimon.create(CUSTOMERS, columns, ["id"], bucket=1)
    customers = [Change("c", {"id": i, "region": region}) for i, region in enumerate("abc")]
    paimon.commit(CUSTOMERS, customers, 1500, order=1)
    paimon.commit(CUSTOMERS, [Change("u", {"id": 2, "region": "a"})], 2500, order=10)


def expected_revenue(commits: int, regions: dict[int, str]) -> dict[str, float]:
    revenue: dict[str, float] = {}
    for row in state_after(ORDER_COMMITS[:commits], "id", ORDER_NAMES):
        region = regions[row["customer_id"]]
        revenue[region] = revenue.get(region, 0.0) + row["amount"]
    return revenue


JOB_SQL = """
    SELECT c.region, SUM(o.amount) AS revenue  -- shop.orders in a comment stays
    FROM shop.orders o JOIN `shop`.`customers` c ON o.customer_id = c.id
    WHERE c.region != 'shop.orders'
    GROUP BY c.region
"""


def test_a_job_reads_its_inputs_pinned_at_the_window_end_for_the_whole_job(
    spark: SparkSession, paimon: PaimonTables
) -> None:
    write_orders(paimon, bucket=2)
    write_customers(paimon)

    pinned = pin_inputs(spark, paimon.options(), [ORDERS, CUSTOMERS], end=2000)
    first = {row.region: row.revenue for row in spark.sql(pinned.resolve(JOB_SQL)).collect()}
    paimon.commit(ORDERS, [order("c", 50, 0, 5000.0)], 4000, order=1000)
    again = {row.region: row.revenue for row in spark.sql(pinned.resolve(JOB_SQL)).collect()}

    # orders: watermark 2000 is commit 2; customers: 2500 is the first to reach 2000
    assert pinned.snapshots() == {ORDERS: 2, CUSTOMERS: 2}
    assert first == pytest.approx(expected_revenue(2, {0: "a", 1: "b", 2: "a"}))
    assert again == first
    pinned.release(spark)
    assert not spark.catalog.tableExists(view_name(ORDERS))


def test_a_table_that_never_reached_the_window_end_is_named_in_the_error(
    spark: SparkSession, paimon: PaimonTables
) -> None:
    write_orders(paimon)
    write_customers(paimon)
    for table in (ORDERS, CUSTOMERS):
        spark.catalog.dropTempView(view_name(table))  # another test's, on the shared session

    with pytest.raises(WatermarkNotReachedError) as raised:
        pin_inputs(spark, paimon.options(), [ORDERS, CUSTOMERS], end=3000)

    assert str(raised.value).startswith(
        "Paimon table shop.customers has not reached watermark 3000: its newest snapshot's "
        "watermark is 2500."
    )
    assert not spark.catalog.tableExists(view_name(ORDERS)), "no view is made on an error"


def test_the_window_changes_are_the_rows_committed_between_two_watermarks(
    spark: SparkSession, paimon: PaimonTables
) -> None:
    write_orders(paimon, bucket=2)

    changes = window_changes(spark, paimon.options(), ORDERS, start=1000, end=3000)

    got = sorted(
        (row.id, row._tm_op, row._tm_row_kind, row.amount)
        for row in changes.select("id", "_tm_op", "_tm_row_kind", "amount").collect()
    )
    kinds = {"c": "+I", "u": "+U", "d": "-D"}
    assert got == sorted(
        (change.row["id"], change.op, kinds[change.op], change.row["amount"])
        for commit in ORDER_COMMITS[1:]
        for change in commit
    )


def test_without_paimon_spark_on_the_classpath_reads_go_through_tidemark_paimon(
    spark: SparkSession,
) -> None:
    """The stack's Spark has paimon-bundle (maintenance), not Paimon's Spark runtime: every
    read of this module went through the data source."""
    assert not paimon_spark.available(spark)
