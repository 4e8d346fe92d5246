"""Window merges against the real stack: MariaDB changes -> ingest -> changelog -> mirror.

Each test starts sharded orders tables (``orders_0``, ``orders_1``, ...) and a pipeline that
merges them into the mirror ``orders`` (``orders_windows``), then changes the source, ingests
and merges windows a step at a time.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from ingest.changelog.table import ChangelogTable
from spark_jobs.merge.bound import WindowNotCompleteError
from spark_jobs.merge.request import KnownState
from spark_jobs.merge.spark import merge_range
from spark_jobs.merge.stamps import SPARK_APP_ID, spark_columns
from tests.spark_jobs.orders_windows import (
    BOTH_SHARDS,
    FIVE_MINUTES,
    StartOrders,
    mirror_rows,
    newest_stamp,
)
from tests.spark_jobs.sources import (
    source_rows,
)
from tidemark.config.plan import plan_from_source
from tidemark.contracts.mirror import MirrorKey
from tidemark.errors import TerminalError
from tidemark.windows import Window

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection


@pytest.mark.every_storage
def test_each_window_leaves_the_mirror_equal_to_the_source_and_a_rerun_changes_nothing(
    orders_windows: StartOrders, admin_connection: Connection, spark: SparkSession
) -> None:
    orders = orders_windows(shards=2)  # ingested once: creates the changelog
    orders.change(
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 10.00, NOW()), (2, 102, 'new', 20.00, NOW()),"
        " (3, 103, 'new', 30.00, NOW())",
        # several changes of one key inside the window
        "UPDATE orders_0 SET status = 'paid' WHERE order_no = 101",
        "UPDATE orders_0 SET status = 'shipped', amount = 11.00 WHERE order_no = 101",
        # deleted, then inserted again with other values
        "DELETE FROM orders_0 WHERE order_no = 102",
        "INSERT INTO orders_0 VALUES (4, 102, 'again', 22.00, NOW())",
        # an update that changes the key
        "UPDATE orders_0 SET order_no = 104 WHERE order_no = 103",
        # an order moving to the other shard, in one transaction
        "BEGIN",
        "DELETE FROM orders_0 WHERE order_no = 101",
        "INSERT INTO orders_1 VALUES (1, 101, 'moved', 11.00, NOW())",
        "COMMIT",
    )
    first = orders.window_ending_at_watermark()

    outcome = orders.merge(first)

    mirror = orders.mirror
    assert mirror_rows(spark, mirror) == [
        (101, "moved", Decimal("11.00")),
        (102, "again", Decimal("22.00")),
        (104, "new", Decimal("30.00")),
    ]
    assert mirror_rows(spark, mirror) == source_rows(admin_connection, BOTH_SHARDS)
    stamp = newest_stamp(spark, mirror)
    assert stamp[MirrorKey.WINDOW_START] == str(first.start_ms)
    assert stamp[MirrorKey.WINDOW_END] == str(first.end_ms)
    assert stamp[MirrorKey.MERGED_ORDER] == str(outcome.merged_order)
    assert int(stamp[MirrorKey.SOURCE_WATERMARK]) >= first.end_ms
    assert stamp[MirrorKey.CHANGELOG_SNAPSHOT] == str(outcome.changelog_snapshot)
    assert stamp["snapshot_id"] == str(outcome.mirror_snapshot)
    assert (outcome.changes, outcome.keys) == (11, 4)  # 103 is deleted by its key change

    rerun = orders.merge(first)

    assert rerun.skipped
    assert newest_stamp(spark, mirror)["snapshot_id"] == stamp["snapshot_id"]

    orders.write(
        "UPDATE orders_0 SET amount = 31.00 WHERE order_no = 104",
        "DELETE FROM orders_1 WHERE order_no = 101",
        "INSERT INTO orders_1 VALUES (5, 105, 'new', 50.00, NOW())",
    )
    with pytest.raises(WindowNotCompleteError):
        # not ingested yet: the changelog has not reached the next window's end
        orders.merge(Window(first.end, first.end + timedelta(days=1)))
    orders.ingest()
    second = orders.window_after(first)

    outcome = orders.merge(second)

    assert mirror_rows(spark, mirror) == [
        (102, "again", Decimal("22.00")),
        (104, "new", Decimal("31.00")),
        (105, "new", Decimal("50.00")),
    ]
    assert mirror_rows(spark, mirror) == source_rows(admin_connection, BOTH_SHARDS)
    assert (outcome.previous_order, outcome.changes) == (rerun.merged_order, 3)


def test_a_window_without_changes_still_stamps_the_mirror(
    orders_windows: StartOrders, spark: SparkSession
) -> None:
    orders = orders_windows(ingest=False)
    orders.change()  # no statements: the source's clock moves on
    orders.change()

    outcome = orders.merge(orders.window_ending_at_watermark())

    mirror = orders.mirror
    assert mirror_rows(spark, mirror) == []
    assert (outcome.changes, outcome.keys) == (0, 0)
    assert newest_stamp(spark, mirror)[MirrorKey.WINDOW_END] == str(outcome.window.end_ms)
    properties = {row.key: row.value for row in spark.sql(f"SHOW TBLPROPERTIES {mirror}").collect()}
    assert properties["format-version"] == "2"
    assert properties["write.merge.mode"] == "merge-on-read"


def test_a_window_that_brings_an_existing_mirror_no_change_is_stamped_without_a_spark_job(
    orders_windows: StartOrders, admin_connection: Connection, spark: SparkSession
) -> None:
    orders = orders_windows(shards=2)
    busy = orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 10.00, NOW())")
    orders.change()  # no statements: the source's clock moves on

    quiet = orders.merge(orders.window_after(busy.window))

    assert not quiet.skipped
    assert (quiet.changes, quiet.keys) == (0, 0)
    assert quiet.previous_order == quiet.merged_order == busy.merged_order
    stamp = newest_stamp(spark, orders.mirror)
    assert stamp[MirrorKey.WINDOW_END] == str(quiet.window.end_ms)
    assert stamp[MirrorKey.CHANGELOG_SNAPSHOT] == str(quiet.changelog_snapshot)
    assert stamp["snapshot_id"] == str(quiet.mirror_snapshot)
    # Iceberg's Spark writes name their application in each commit (test_arrow_merge shows
    # it); this one has none
    assert not quiet.by_spark
    assert SPARK_APP_ID not in stamp
    assert mirror_rows(spark, orders.mirror) == source_rows(admin_connection, BOTH_SHARDS)


def test_a_window_with_no_row_change_still_brings_a_column_the_source_added(
    orders_windows: StartOrders, spark: SparkSession
) -> None:
    orders = orders_windows()
    busy = orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 10.00, NOW())")
    orders.change("ALTER TABLE orders_0 ADD COLUMN note TEXT")  # no row changes with it

    quiet = orders.merge(orders.window_after(busy.window))

    assert (quiet.changes, quiet.keys) == (0, 0)
    assert "note" in spark.table(orders.mirror).columns
    # a merge of no rows commits the window's stamps all the same
    stamp = newest_stamp(spark, orders.mirror)
    assert stamp[MirrorKey.WINDOW_END] == str(quiet.window.end_ms)
    assert stamp["snapshot_id"] == str(quiet.mirror_snapshot) != str(busy.mirror_snapshot)


def test_a_mirror_whose_stamps_were_expired_is_refused_rather_than_rewound(
    orders_windows: StartOrders, namespace: str, spark: SparkSession
) -> None:
    orders = orders_windows(ingest=False)
    orders.change()  # no statements: the source's clock moves on
    end = orders.watermark()
    orders.merge(Window.ending_at(end, FIVE_MINUTES))
    mirror = orders.mirror
    # a commit without stamps (a compaction, say), then expiry of everything older
    spark.sql(f"INSERT INTO {mirror} SELECT * FROM {mirror} WHERE false")
    spark.sql(
        f"CALL tidemark.system.expire_snapshots(table => '{namespace}.orders', "
        "older_than => TIMESTAMP '9999-01-01 00:00:00', retain_last => 1)"
    )

    with pytest.raises(TerminalError, match="drop the mirror to rebuild it"):
        orders.merge(Window(end - timedelta(hours=1), end))


def test_the_mirror_follows_columns_the_source_added_and_widened(
    orders_windows: StartOrders, spark: SparkSession
) -> None:
    orders = orders_windows()  # streams from here
    first = orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 9.99, NULL)")

    second = orders.change_and_merge(
        "ALTER TABLE orders_0 ADD COLUMN note TEXT, MODIFY id BIGINT",
        "INSERT INTO orders_0 VALUES (5000000000, 102, 'new', 1.00, NULL, 'after')",
    )

    assert second.window.end > first.window.end and not second.skipped
    mirror = orders.mirror
    rows = spark.sql(f"SELECT id, order_no, note FROM {mirror} ORDER BY order_no").collect()
    assert [tuple(row) for row in rows] == [(1, 101, None), (5_000_000_000, 102, "after")]
    types = {f.name: f.dataType.simpleString() for f in spark.table(mirror).schema.fields}
    assert (types["id"], types["note"]) == ("bigint", "string")


@pytest.mark.parametrize("keep_deletes", [False, True], ids=["deletes-applied", "deletes-kept"])
def test_a_truncated_shard_leaves_the_mirror_and_the_other_shard_stays(
    orders_windows: StartOrders,
    admin_connection: Connection,
    spark: SparkSession,
    keep_deletes: bool,
) -> None:
    orders = orders_windows(
        shards=2,
        top_level="  schema.change.behavior: try_evolve",  # lenient leaves truncate.table out
        table_options="      mirror:\n        deletes: keep\n" if keep_deletes else "",
    )
    orders.change(
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 10.00, NOW()), (2, 102, 'new', 20.00, NOW())",
        "INSERT INTO orders_1 VALUES (1, 201, 'new', 30.00, NOW())",
    )
    first = orders.window_ending_at_watermark()
    orders.merge(first)
    orders.change(
        "UPDATE orders_0 SET status = 'paid' WHERE order_no = 102",
        "TRUNCATE TABLE orders_0",
        "INSERT INTO orders_0 VALUES (3, 103, 'after', 40.00, NOW())",
        "UPDATE orders_1 SET status = 'paid' WHERE order_no = 201",
    )
    second = orders.window_after(first)

    outcome = orders.merge(second)

    mirror = orders.mirror
    live = "WHERE NOT _tm_deleted" if keep_deletes else ""
    rows = spark.sql(
        f"SELECT order_no, status, amount FROM {mirror} {live} ORDER BY order_no"
    ).collect()
    assert [tuple(row) for row in rows] == source_rows(admin_connection, BOTH_SHARDS)
    assert [row[0] for row in rows] == [103, 201]
    if keep_deletes:
        gone = spark.sql(f"SELECT order_no, status FROM {mirror} WHERE _tm_deleted ORDER BY 1")
        assert [tuple(row) for row in gone.collect()] == [(101, "new"), (102, "paid")]
    # three rows and the truncate marker; the keys of the whole changelog, merged from its start
    assert (outcome.changes, outcome.keys) == (4, 4)
    stamp = newest_stamp(spark, mirror)
    assert stamp[MirrorKey.MERGED_ORDER] == str(outcome.merged_order)
    assert stamp["snapshot_id"] == str(outcome.mirror_snapshot)


@pytest.mark.parametrize("keep_deletes", [False, True], ids=["deletes-applied", "deletes-kept"])
def test_a_truncate_of_another_shard_in_a_later_window_leaves_the_earlier_one_truncated(
    orders_windows: StartOrders,
    admin_connection: Connection,
    spark: SparkSession,
    keep_deletes: bool,
) -> None:
    orders = orders_windows(
        shards=2,
        top_level="  schema.change.behavior: try_evolve",
        table_options="      mirror:\n        deletes: keep\n" if keep_deletes else "",
    )
    first = orders.change_and_merge(
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 10.00, NOW()), (2, 102, 'new', 20.00, NOW())",
        "INSERT INTO orders_1 VALUES (1, 201, 'new', 30.00, NOW())",
    )
    orders.change("TRUNCATE TABLE orders_0")
    second = orders.merge(orders.window_after(first.window))
    mirror = orders.mirror
    live = "WHERE NOT _tm_deleted" if keep_deletes else ""
    query = f"SELECT order_no, status, amount FROM {mirror} {live} ORDER BY order_no"
    assert [tuple(row) for row in spark.sql(query).collect()] == [(201, "new", Decimal("30.00"))]
    orders.change(
        "UPDATE orders_1 SET status = 'paid' WHERE order_no = 201",
        "TRUNCATE TABLE orders_1",
        "INSERT INTO orders_1 VALUES (2, 202, 'after', 40.00, NOW())",
    )

    # merged from the start again: orders_0's marker of the window before still applies
    third = orders.merge(orders.window_after(second.window))

    rows = [tuple(row) for row in spark.sql(query).collect()]
    assert rows == source_rows(admin_connection, BOTH_SHARDS)
    assert rows == [(202, "after", Decimal("40.00"))]
    if keep_deletes:
        gone = spark.sql(f"SELECT order_no, status FROM {mirror} WHERE _tm_deleted ORDER BY 1")
        assert [tuple(row) for row in gone.collect()] == [
            (101, "new"),
            (102, "new"),
            (201, "paid"),
        ]
    # the window's two rows and its marker; the keys of the whole changelog
    assert (third.changes, third.keys) == (3, 4)


@pytest.mark.parametrize(
    ("behavior", "columns", "rows"),
    [
        (
            "evolve",
            ["id", "order_no", "state", "amount"],
            [(1, 101, "new", Decimal("9.99")), (2, 102, "paid", Decimal("5.00"))],
        ),
        (  # the changelog's way: the old columns stay, NULL for rows written since
            "lenient",
            ["id", "order_no", "status", "amount", "created_at", "state"],
            [
                (1, 101, "new", Decimal("9.99"), None, None),
                (2, 102, None, Decimal("5.00"), None, "paid"),
            ],
        ),
    ],
)
def test_under_evolve_the_mirror_drops_and_renames_columns_as_the_source_did(
    orders_windows: StartOrders,
    admin_connection: Connection,
    spark: SparkSession,
    behavior: str,
    columns: list[str],
    rows: list[tuple[object, ...]],
) -> None:
    orders = orders_windows(top_level=f"  schema.change.behavior: {behavior}")
    orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 9.99, NULL)")

    orders.change_and_merge(
        "ALTER TABLE orders_0 RENAME COLUMN status TO state, DROP COLUMN created_at, "
        "COMMENT = 'orders, since the rename'",
        "INSERT INTO orders_0 VALUES (2, 102, 'paid', 5.00)",
    )

    mirror = orders.mirror
    assert spark.table(mirror).columns == columns
    found = spark.sql(f"SELECT {', '.join(columns)} FROM {mirror} ORDER BY order_no").collect()
    assert [tuple(row) for row in found] == rows
    # alter.table.comment
    assert spark.catalog.getTable(mirror).description == "orders, since the rename"
    if behavior == "evolve":  # the source as it is now
        assert [tuple(row) for row in found] == source_rows(
            admin_connection, "SELECT id, order_no, state, amount FROM orders_0 ORDER BY order_no"
        )


def test_under_evolve_a_column_the_projection_computes_stays_when_the_source_drops_its_namesake(
    orders_windows: StartOrders, source_database: str, spark: SparkSession
) -> None:
    orders = orders_windows(
        top_level=(
            "  schema.change.behavior: evolve\n"
            "transform:\n"
            f"  - source-table: {source_database}.orders_[0-9]+\n"
            "    projection: id, order_no, status, amount, amount * 2 AS created_at\n"
        )
    )
    orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 1.50, NOW())")

    orders.change_and_merge(
        "ALTER TABLE orders_0 DROP COLUMN created_at",
        "INSERT INTO orders_0 VALUES (2, 102, 'paid', 2.50)",
    )

    mirror = orders.mirror
    assert spark.table(mirror).columns == ["id", "order_no", "status", "amount", "created_at"]
    found = spark.sql(f"SELECT order_no, created_at FROM {mirror} ORDER BY order_no").collect()
    assert [tuple(row) for row in found] == [(101, Decimal("3.00")), (102, Decimal("5.00"))]


def test_rows_from_before_a_column_was_added_hold_its_default_as_at_the_source(
    orders_windows: StartOrders, admin_connection: Connection, spark: SparkSession
) -> None:
    orders = orders_windows()
    orders.change_and_merge(
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 9.99, NULL), (2, 102, 'new', 1.00, NULL)"
    )

    orders.change_and_merge(
        # changed before the ALTER, in the window the ALTER falls in
        "INSERT INTO orders_0 VALUES (3, 103, 'new', 3.00, NULL)",
        "ALTER TABLE orders_0 ADD COLUMN priority INT NOT NULL DEFAULT 3, "
        "ADD COLUMN tag VARCHAR(10) DEFAULT 'it''s', ADD COLUMN note TEXT",
        "INSERT INTO orders_0 VALUES (4, 104, 'new', 4.00, NULL, 9, NULL, 'n')",
        "UPDATE orders_0 SET status = 'paid' WHERE order_no = 102",
    )

    query = "SELECT order_no, status, priority, tag, note FROM {} ORDER BY order_no"
    found = [tuple(row) for row in spark.sql(query.format(orders.mirror)).collect()]
    assert found == source_rows(admin_connection, query.format("orders_0"))
    assert found[0] == (101, "new", 3, "it's", None)
    assert found[3] == (104, "new", 9, None, "n")


def test_merges_of_an_unchanged_structure_leave_the_mirror_alone_until_the_structure_changes(
    orders_windows: StartOrders, admin_connection: Connection, spark: SparkSession
) -> None:
    orders = orders_windows()
    orders.change_and_merge(
        "ALTER TABLE orders_0 COMMENT = 'orders'",
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 9.99, NULL)",
    )
    mirror = orders.mirror
    assert spark.catalog.getTable(mirror).description == "orders"
    # a change by hand that a merge looking at the mirror's structure would undo
    spark.sql(f"COMMENT ON TABLE {mirror} IS 'by hand'")

    orders.change_and_merge(
        "UPDATE orders_0 SET status = 'paid' WHERE order_no = 101",
        "INSERT INTO orders_0 VALUES (2, 102, 'new', 1.00, NULL)",
    )
    orders.change_and_merge("DELETE FROM orders_0 WHERE order_no = 101")

    # the changelog's structure stayed as the first merge left the mirror: not looked at again
    assert spark.catalog.getTable(mirror).description == "by hand"
    assert mirror_rows(spark, mirror) == source_rows(
        admin_connection, "SELECT order_no, status, amount FROM orders_0 ORDER BY order_no"
    )

    orders.change_and_merge(
        "ALTER TABLE orders_0 ADD COLUMN note TEXT, MODIFY id BIGINT",
        "INSERT INTO orders_0 VALUES (5000000000, 103, 'new', 2.00, NULL, 'after')",
    )

    # a changed structure reaches the mirror, and the whole of it is followed again
    assert spark.catalog.getTable(mirror).description == "orders"
    rows = spark.sql(f"SELECT id, order_no, note FROM {mirror} ORDER BY order_no").collect()
    assert [tuple(row) for row in rows] == [(2, 102, None), (5_000_000_000, 103, "after")]
    types = {f.name: f.dataType.simpleString() for f in spark.table(mirror).schema.fields}
    assert (types["id"], types["note"]) == ("bigint", "string")


def test_a_merge_follows_a_structure_that_changed_after_the_caller_found_it_unchanged(
    orders_windows: StartOrders, catalog: Catalog, namespace: str, spark: SparkSession
) -> None:
    orders = orders_windows()
    first = orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 9.99, NULL)")
    # what merge_mirror loads before it merges, when ingest commits a new structure just after
    changelog = catalog.load_table(f"{namespace}.orders_changelog")
    current = catalog.load_table(f"{namespace}.orders").current_snapshot()
    assert current is not None
    known = KnownState(
        changelog_properties=dict(changelog.properties),
        changelog_columns=spark_columns(changelog.schema()),
        mirror_snapshot=current.snapshot_id,
        structure_unchanged=True,
    )
    orders.change(
        "ALTER TABLE orders_0 ADD COLUMN note TEXT",
        "INSERT INTO orders_0 VALUES (2, 102, 'new', 1.00, NULL, 'after')",
    )
    progress = ChangelogTable(catalog.load_table(f"{namespace}.orders_changelog")).progress()
    assert progress is not None
    (sink,) = plan_from_source(orders.config).sinks
    spec = orders.jobs.mirror_spec(sink)

    merge_range(spark, spec, first.merged_order, progress.last_order, {}, known)

    rows = spark.sql(f"SELECT order_no, note FROM {orders.mirror} ORDER BY order_no").collect()
    assert [tuple(row) for row in rows] == [(101, None), (102, "after")]
