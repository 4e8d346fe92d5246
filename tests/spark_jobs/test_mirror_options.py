"""The YAML's transform and mirror options shape the mirror."""

from __future__ import annotations

from datetime import timedelta
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


def test_projection_filter_partitioning_and_kept_deletes(
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
        top_level=(
            "transform:\n"
            f"  - source-table: {source_database}.orders_[0-9]+\n"
            "    projection: order_no, upper(status) AS status, amount * 100 AS cents\n"
            "    filter: amount > 0\n"
            "    partition-keys: status\n"
        ),
        table_options=(
            "      mirror:\n        deletes: keep\n"
            "        table-properties: {write.target-file-size-bytes: '1048576'}\n"
        ),
    )
    jobs = WindowJobs(config, plan_from_source(config), spark)
    ingest_to_end(config, catalog, endpoints, server_id)
    execute(
        admin_connection,
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 1.00, NOW()), (2, 102, 'new', 2.00, NOW()),"
        " (3, 103, 'new', 3.00, NOW()), (4, 104, 'free', 0.00, NOW())",
        "DELETE FROM orders_0 WHERE order_no = 102",
        # no longer passes the filter: leaves the mirror
        "UPDATE orders_0 SET amount = 0 WHERE order_no = 103",
    )
    tick_past_now(admin_connection)
    ingest_to_end(config, catalog, endpoints, server_id)
    end = changelog_watermark(catalog, f"{namespace}.orders_changelog")

    jobs.merge_mirror(f"{namespace}.orders", Window.ending_at(end, timedelta(minutes=5)))

    mirror = f"tidemark.{namespace}.orders"
    rows = spark.sql(f"SELECT * FROM {mirror} ORDER BY order_no").collect()
    assert [tuple(row) for row in rows] == [(101, "NEW", 100, False), (102, "NEW", 200, True)]
    assert spark.table(mirror).columns == ["order_no", "status", "cents", "_tm_deleted"]
    assert [row.partition.status for row in spark.table(f"{mirror}.partitions").collect()] == [
        "NEW"
    ]
    properties = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {mirror}").collect()}
    assert properties["write.target-file-size-bytes"] == "1048576"
    # like every table Tidemark creates, the mirror keeps only its last metadata files
    assert properties["write.metadata.delete-after-commit.enabled"] == "true"
    assert properties["write.metadata.previous-versions-max"] == "10"
