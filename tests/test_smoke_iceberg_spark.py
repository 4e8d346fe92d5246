"""The catalog is shared for real: PyIceberg writes, Spark reads the same table and its summary."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from tidemark.contracts.changelog import SummaryKey

pytestmark = pytest.mark.every_storage

ROWS = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "name": pa.array(["ada", "grace", "edsger"], pa.string()),
    }
)


def test_spark_reads_rows_and_summary_that_pyiceberg_committed(
    catalog: Catalog, spark: SparkSession, namespace: str
) -> None:
    table = catalog.create_table(f"{namespace}.people", schema=ROWS.schema)
    table.append(
        ROWS,
        snapshot_properties={SummaryKey.WATERMARK: "1767225600000", SummaryKey.POSITION: "b.1:4"},
    )
    snapshot_id = table.current_snapshot().snapshot_id  # type: ignore[union-attr]

    rows = spark.sql(f"SELECT id, name FROM tidemark.{namespace}.people ORDER BY id").collect()
    summary = (
        spark.sql(f"SELECT snapshot_id, summary FROM tidemark.{namespace}.people.snapshots")
        .collect()[0]
        .asDict()
    )

    assert [(row.id, row.name) for row in rows] == [(1, "ada"), (2, "grace"), (3, "edsger")]
    assert summary["snapshot_id"] == snapshot_id
    assert summary["summary"][SummaryKey.WATERMARK] == "1767225600000"
    assert summary["summary"][SummaryKey.POSITION] == "b.1:4"


def test_pyiceberg_sees_a_table_spark_created(
    catalog: Catalog, spark: SparkSession, namespace: str
) -> None:
    spark.sql(f"CREATE TABLE tidemark.{namespace}.made_by_spark (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO tidemark.{namespace}.made_by_spark VALUES (7), (8)")

    table = catalog.load_table(f"{namespace}.made_by_spark")

    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [7, 8]


def test_spark_merges_into_a_format_v2_table(spark: SparkSession, namespace: str) -> None:
    mirror = f"tidemark.{namespace}.mirror"
    spark.sql(
        f"CREATE TABLE {mirror} (id BIGINT, name STRING) USING iceberg TBLPROPERTIES ("
        "'format-version'='2', 'write.merge.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {mirror} VALUES (1, 'old'), (2, 'doomed')")
    spark.createDataFrame(
        [(1, "new", "u"), (2, None, "d"), (3, "added", "c")], "id BIGINT, name STRING, op STRING"
    ).createOrReplaceTempView("changes")

    spark.sql(
        f"MERGE INTO {mirror} t USING changes s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'd' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.name = s.name "
        "WHEN NOT MATCHED AND s.op != 'd' THEN INSERT (id, name) VALUES (s.id, s.name)"
    )

    rows = spark.sql(f"SELECT id, name FROM {mirror} ORDER BY id").collect()
    assert [(row.id, row.name) for row in rows] == [(1, "new"), (3, "added")]
    format_version = spark.sql(f"SHOW TBLPROPERTIES {mirror} ('format-version')").collect()
    assert format_version[0].value == "2"
    merge_commit = spark.sql(
        f"SELECT operation, summary FROM {mirror}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0]
    assert merge_commit.operation == "overwrite"
    # merge-on-read: the merge wrote delete files instead of rewriting the data files
    assert int(merge_commit.summary["added-delete-files"]) >= 1
