"""A job's SQL runs unchanged per window, over mirrors merged to the window's end."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.window_jobs import WindowJobs
from tests.spark_jobs.sources import (
    changelog_watermark,
    create_shards,
    execute,
    ingest_to_end,
    orders_pipeline,
    tick_past_now,
)
from tidemark.config.plan import plan_from_source
from tidemark.stack.endpoints import StackEndpoints
from tidemark.windows import Window

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection

GMV_SQL = Path(__file__).resolve().parents[2] / "configs" / "sql" / "gmv_per_hour.sql"
GMV_ON_MARIADB = (
    "SELECT status, count(*), sum(amount) FROM orders_0 "
    "WHERE created_at >= %s AND created_at < %s GROUP BY status ORDER BY status"
)


def test_a_t_plus_1_report_runs_per_window_and_matches_the_source_at_the_window_end(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    spark: SparkSession,
    tmp_path: Path,
    server_id: int,
) -> None:
    create_shards(admin_connection, 1)
    config = orders_pipeline(
        tmp_path / "p.yaml",
        endpoints,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
        tidemark_block=(
            "  jobs:\n    gmv:\n"
            f"      inputs: [{namespace}.orders]\n      window: 1 h\n"
            f"      sql: [{GMV_SQL}]\n"
            f"      variables: {{db: {namespace}, report_db: {namespace}}}\n"
        ),
    )
    jobs = WindowJobs(config, plan_from_source(config), spark)
    ingest_to_end(config, catalog, endpoints, server_id)
    execute(
        admin_connection,
        "INSERT INTO orders_0 VALUES (1, 1, 'paid', 10.50, NOW()), (2, 2, 'paid', 4.50, NOW()),"
        " (3, 3, 'new', 7.00, NOW()), (4, 4, 'new', 1.00, NOW() - INTERVAL 2 DAY)",
        "UPDATE orders_0 SET status = 'paid' WHERE id = 3",
        "DELETE FROM orders_0 WHERE id = 2",
    )
    # the report's bounds are whole seconds: the window ends on one, after the rows' second
    tick_past_now(admin_connection, seconds=2)
    ingest_to_end(config, catalog, endpoints, server_id)
    watermark = changelog_watermark(catalog, f"{namespace}.orders_changelog")
    window = Window.ending_at(watermark.replace(microsecond=0), timedelta(hours=1))
    bounds = (window.start.replace(tzinfo=None), window.end.replace(tzinfo=None))
    with admin_connection.cursor() as cursor:
        cursor.execute(GMV_ON_MARIADB, bounds)
        expected = [tuple(row) for row in cursor.fetchall()]
    # changes after the window's end must not show in its report
    execute(admin_connection, "INSERT INTO orders_0 VALUES (5, 5, 'paid', 100.00, NOW())")
    tick_past_now(admin_connection)
    ingest_to_end(config, catalog, endpoints, server_id)

    outcome = jobs.run_job("gmv", window)
    jobs.run_job("gmv", window)  # a retried window replaces its partition

    report = spark.sql(
        f"SELECT status, orders, gmv FROM tidemark.{namespace}.gmv_per_hour "
        f"WHERE dt = '{window.variables('gmv')['dt']}' "
        f"AND hour = '{window.variables('gmv')['hour']}' ORDER BY status"
    ).collect()
    assert [tuple(row) for row in report] == [("paid", 2, Decimal("17.50"))]
    assert [tuple(row) for row in report] == expected
    assert outcome.statements == 2
    assert [m.changes for m in outcome.mirrors] == [6]
