"""How a job's ``db.t`` reaches a pinned Paimon view, and how splits become partitions: no
service needed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from spark_jobs import paimon_spark
from spark_jobs.paimon_datasource import PaimonRead, _balanced
from spark_jobs.paimon_inputs import PinnedInput, PinnedInputs, UnpinnedInputError
from tidemark.errors import ConfigError

PINNED = PinnedInputs(
    (
        PinnedInput("shop.orders", "paimon__shop__orders", 12),
        PinnedInput("shop.customers", "paimon__shop__customers", 7),
    )
)


def test_each_pinned_table_of_a_statement_reads_its_view() -> None:
    statement = (
        "INSERT INTO shop.report SELECT c.region, SUM(o.amount) FROM Shop.Orders o "
        "JOIN `shop`.`customers` c ON o.customer_id = c.id "
        "WHERE o.id IN (SELECT id FROM shop . orders)"
    )

    assert PINNED.resolve(statement) == (
        "INSERT INTO shop.report SELECT c.region, SUM(o.amount) FROM paimon__shop__orders o "
        "JOIN paimon__shop__customers c ON o.customer_id = c.id "
        "WHERE o.id IN (SELECT id FROM paimon__shop__orders)"
    )


def test_literals_comments_other_catalogs_and_longer_names_are_left_alone() -> None:
    statement = (
        "SELECT 'shop.orders', \"shop.orders\" -- shop.orders\n"
        "/* shop.orders */ FROM lake.shop.orders, shop.orders_2024, myshop.orders, "
        "shop.orders.id"
    )

    assert PINNED.resolve(statement) == (
        "SELECT 'shop.orders', \"shop.orders\" -- shop.orders\n"
        "/* shop.orders */ FROM lake.shop.orders, shop.orders_2024, myshop.orders, "
        "paimon__shop__orders.id"
    )
    assert PINNED.snapshots() == {"shop.orders": 12, "shop.customers": 7}


def test_a_name_in_the_pipelines_own_catalog_reads_the_view_and_other_catalogs_do_not() -> None:
    statement = (
        "INSERT INTO tidemark.report.gmv SELECT * FROM tidemark.shop.orders "
        "JOIN `tidemark`.`shop`.`customers` USING (id) JOIN lake.shop.orders USING (id)"
    )

    assert PINNED.resolve(statement, "tidemark") == (
        "INSERT INTO tidemark.report.gmv SELECT * FROM paimon__shop__orders "
        "JOIN paimon__shop__customers USING (id) JOIN lake.shop.orders USING (id)"
    )


@dataclass
class FakeSplit:
    """Only the size matters to the balancing: a stand-in, not a mock of pypaimon."""

    file_size: int


def test_splits_are_balanced_by_bytes_into_at_most_the_partitions_asked() -> None:
    splits = [FakeSplit(size) for size in (100, 90, 10, 10, 5)]

    groups = _balanced(splits, 2)

    assert sorted(sum(s.file_size for s in group) for group in groups) == [105, 110]
    assert len(_balanced(splits, None)) == 5
    assert _balanced([], 4) == [[]]


def test_options_say_what_to_read_and_the_rest_goes_to_the_catalog() -> None:
    read = PaimonRead.of(
        {"path": "shop.orders", "Warehouse": "/lake", "watermark": "5", "metadata-columns": "false"}
    )

    assert read.table == "shop.orders"
    assert read.catalog_options == {"warehouse": "/lake"}
    assert (read.watermark, read.snapshot_id, read.metadata_columns) == (5, None, False)
    with pytest.raises(ConfigError, match="either snapshot-id or watermark"):
        PaimonRead.of({"table": "shop.orders", "snapshot-id": "1", "watermark": "5"})
    with pytest.raises(ConfigError, match="option watermark must be an integer, got 'soon'"):
        PaimonRead.of({"table": "shop.orders", "watermark": "soon"})


def test_a_statement_reading_a_paimon_table_the_job_did_not_pin_is_refused_with_the_fix() -> None:
    statement = "SELECT * FROM shop.orders JOIN tidemark.shop.refunds USING (id)"

    with pytest.raises(UnpinnedInputError, match="reads shop.refunds.*add shop.refunds"):
        PINNED.resolve(statement, "tidemark", unpinned=["shop.refunds"])
    # named only in a literal or a comment, it is not read
    quiet = "SELECT 'shop.refunds' FROM shop.orders -- not shop.refunds"
    assert PINNED.resolve(quiet, "tidemark", unpinned=["shop.refunds"]) == (
        "SELECT 'shop.refunds' FROM paimon__shop__orders -- not shop.refunds"
    )


def test_a_pinned_tables_window_changes_are_read_by_its_dollar_changes_name() -> None:
    statement = (
        "SELECT o._tm_op FROM shop.`orders$changes` o JOIN `shop`.`orders$changes` p "
        "JOIN tidemark.shop.orders$changes q JOIN shop.orders r "
        "WHERE o.note = 'shop.`customers$changes`' -- shop.`customers$changes`"
    )

    assert PINNED.changes_read(statement, "tidemark") == ["shop.orders"]
    assert PINNED.resolve(statement, "tidemark") == (
        "SELECT o._tm_op FROM paimon__shop__orders__changes o "
        "JOIN paimon__shop__orders__changes p "
        "JOIN paimon__shop__orders__changes q JOIN paimon__shop__orders r "
        "WHERE o.note = 'shop.`customers$changes`' -- shop.`customers$changes`"
    )


def test_the_changes_of_a_paimon_table_the_job_did_not_pin_are_refused_with_the_fix() -> None:
    statement = "SELECT * FROM shop.`refunds$changes`"

    with pytest.raises(UnpinnedInputError, match="reads shop.refunds.*add shop.refunds"):
        PINNED.resolve(statement, "tidemark", unpinned=["shop.refunds"])


def test_with_paimon_spark_an_input_is_read_at_its_snapshot_through_paimons_own_catalog() -> None:
    assert paimon_spark.catalog_conf({"metastore": "filesystem", "warehouse": "s3://lake/wh"}) == {
        "spark.sql.catalog.tidemark_paimon": "org.apache.paimon.spark.SparkCatalog",
        "spark.sql.catalog.tidemark_paimon.metastore": "filesystem",
        "spark.sql.catalog.tidemark_paimon.warehouse": "s3://lake/wh",
    }
    assert paimon_spark.snapshot_query("shop.orders", 12, ["id", "odd`name"]) == (
        "SELECT `id`, `odd``name` FROM `tidemark_paimon`.`shop`.`orders` VERSION AS OF 12"
    )
    # Paimon's incremental-between: after the first snapshot, up to and with the second
    assert paimon_spark.changes_query("shop.orders", 11, 12, ["id", "_tm_row_kind"]) == (
        "SELECT `id`, `_tm_row_kind` FROM "
        "paimon_incremental_query('tidemark_paimon.shop.orders', '11', '12')"
    )
