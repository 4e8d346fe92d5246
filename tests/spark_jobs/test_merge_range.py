"""``merge_range`` on changelogs written as ingest writes them, without a binlog."""

from __future__ import annotations

import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from bench.workloads.changelog_commits import DATA, commit
from ingest.changelog.table import open_changelog
from spark_jobs.merge import spark as merge
from spark_jobs.merge.request import MirrorSpec
from spark_jobs.merge.spark import merge_range


def test_a_range_read_in_one_partition_or_as_spark_splits_it_merges_alike(
    spark: SparkSession, catalog: Catalog, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = open_changelog(catalog, f"{namespace}.orders_changelog", DATA, {})
    for index in range(1, 31):
        commit(table, index)  # key index % 7: several changes of each key
    found = {}
    for name, most_rows in (("one", merge.ONE_PARTITION_ROWS), ("split", 0)):
        monkeypatch.setattr(merge, "ONE_PARTITION_ROWS", most_rows)
        spec = MirrorSpec(
            mirror=f"tidemark.{namespace}.orders_{name}",
            changelog=f"tidemark.{namespace}.orders_changelog",
            key=("id",),
        )
        first = merge_range(spark, spec, 0, 12, {})
        second = merge_range(spark, spec, 12, 30, {})
        rows = spark.sql(f"SELECT id, item, qty FROM {spec.mirror} ORDER BY id").collect()
        found[name] = (first.changes, first.keys, second.changes, second.keys, rows)

    assert found["one"] == found["split"]
    assert found["one"][:4] == (12, 7, 18, 7)
    latest = sorted((index % 7, f"item-{index}", index) for index in range(24, 31))
    assert [tuple(row) for row in found["one"][4]] == latest
