"""Window merge benchmark: one window of 20k changes into mirrors of growing size.

For each mirror size N it builds, directly with Spark (not through MariaDB), a changelog-shaped
table holding N snapshot reads (``_tm_op = 'r'``) in one Tidemark-stamped commit, merges them
into a fresh mirror (window 1), appends a second commit of ``--changes`` changes (70% updates of
existing keys, 20% inserts, 10% deletes; keys drawn at random, so a key may change several
times), and then times, in the same run and on the same data:

- **window merge**: the second window as the scheduler runs it (find the bound in the
  changelog's history, read the order range, latest change per key, ``MERGE INTO`` the
  merge-on-read mirror, stamp);
- **full rebuild** (the old way): ``INSERT OVERWRITE`` a copy-on-write table with the latest
  change per key of the whole changelog, deletes dropped.

Prints a markdown table. Figures, not assertions. ``python -m bench.window_bench --sizes
100000,1000000``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from bench.report import Figure, Target, write_figures
from spark_jobs.merge.bound import find_bound
from spark_jobs.merge.request import MirrorSpec
from spark_jobs.merge.spark import merge_range, mirror_state, table_snapshots
from spark_jobs.session import SparkSettings, build_session
from tidemark.contracts.mirror import MirrorKey
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

DATA_COLUMNS = (
    "id BIGINT, customer BIGINT, status STRING, amount DECIMAL(10, 2), created_at TIMESTAMP"
)
METADATA_COLUMNS = (
    "_tm_op STRING, _tm_event_time TIMESTAMP, _tm_position STRING, _tm_source_db STRING, "
    "_tm_source_table STRING, _tm_order BIGINT, _tm_schema_version INT"
)
STAMP = "spark.sql.iceberg.snapshot-property."
BASE_MS = 1_767_225_600_000  # 2026-01-01


@dataclass(frozen=True)
class Result:
    size: int
    changes: int
    load_s: float
    merge_s: float
    rebuild_s: float
    merged_keys: int


def stamped_insert(
    spark: SparkSession, table: str, select: str, watermark_ms: int, order: int
) -> None:
    """Append like ingest does: the rows and a Tidemark progress summary in one commit."""
    position = {"v": 1, "file": "bench-bin.000001", "pos": order, "gtid": None, "partial_rows": 0}
    stamps = {
        "tidemark.watermark": str(watermark_ms),
        "tidemark.position": json.dumps(position, separators=(",", ":")),
        "tidemark.source": "bench",
        "tidemark.order": str(order),
    }
    for key, value in stamps.items():
        spark.conf.set(STAMP + key, value)
    try:
        spark.sql(f"INSERT INTO {table} {select}")
    finally:
        for key in stamps:
            spark.conf.unset(STAMP + key)


def changelog_select(source: str, op: str) -> str:
    return (
        f"SELECT id, customer, status, amount, created_at, {op} AS _tm_op, "
        "created_at AS _tm_event_time, 'bench' AS _tm_position, 'bench' AS _tm_source_db, "
        f"'orders' AS _tm_source_table, _tm_order, 1 AS _tm_schema_version FROM {source}"
    )


def build_changelog(spark: SparkSession, table: str, size: int, changes: int) -> None:
    spark.sql(
        f"CREATE TABLE {table} ({DATA_COLUMNS}, {METADATA_COLUMNS}) USING iceberg "
        "TBLPROPERTIES ('format-version' = '2', 'write.parquet.compression-codec' = 'zstd')"
    )
    spark.range(1, size + 1).selectExpr(
        "id",
        "id % 1000 AS customer",
        "'new' AS status",
        "CAST(id % 10000 / 100 AS DECIMAL(10, 2)) AS amount",
        f"timestamp_millis({BASE_MS} + id * 1000) AS created_at",
        "id AS _tm_order",
    ).createOrReplaceTempView("bench_initial")
    stamped_insert(
        spark, table, changelog_select("bench_initial", "'r'"), BASE_MS + size * 1000, size
    )
    # changes: ~70% updates and ~10% deletes of random existing keys, ~20% new keys
    spark.range(changes).selectExpr(
        "id AS n",
        "pmod(hash(id, 7), 10) AS kind",
        f"pmod(hash(id, 13), {size}) + 1 AS existing",
    ).selectExpr(
        f"CASE WHEN kind < 2 THEN {size} + n + 1 ELSE existing END AS id",
        "CASE WHEN kind < 2 THEN 'c' WHEN kind < 3 THEN 'd' ELSE 'u' END AS op",
        f"{size} + n + 1 AS _tm_order",
    ).selectExpr(
        "id",
        "id % 1000 AS customer",
        "CASE op WHEN 'u' THEN 'paid' ELSE 'new' END AS status",
        "CAST(id % 10000 / 100 + 1 AS DECIMAL(10, 2)) AS amount",
        f"timestamp_millis({BASE_MS} + id * 1000) AS created_at",
        "op",
        "_tm_order",
    ).createOrReplaceTempView("bench_changes")
    stamped_insert(
        spark,
        table,
        changelog_select("bench_changes", "op"),
        BASE_MS + (size + changes) * 1000 + 10_000,
        size + changes,
    )


def merge_window(spark: SparkSession, spec: MirrorSpec, end_ms: int) -> int:
    """One window merge as ``WindowJobs.merge_mirror`` runs it; returns the keys merged."""
    state = mirror_state(spark, spec.mirror)
    merged = state.merged_order if state else 0
    bound = find_bound(spec.changelog, table_snapshots(spark, spec.changelog), end_ms)
    stamps: dict[str, str] = {
        MirrorKey.WINDOW_START: str(end_ms - 300_000),
        MirrorKey.WINDOW_END: str(end_ms),
        MirrorKey.MERGED_ORDER: str(bound.order),
        MirrorKey.SOURCE_WATERMARK: str(bound.watermark_ms),
        MirrorKey.CHANGELOG_SNAPSHOT: str(bound.commit_id),
    }
    return merge_range(spark, spec, merged, bound.order, stamps).keys


def rebuild(spark: SparkSession, changelog: str, target: str) -> None:
    """The old way: the whole changelog, latest change per key, written over the table."""
    spark.sql(
        f"INSERT OVERWRITE {target} SELECT id, customer, status, amount, created_at FROM ("
        "SELECT *, row_number() OVER (PARTITION BY id ORDER BY _tm_order DESC) AS rank "
        f"FROM {changelog}) WHERE rank = 1 AND _tm_op != 'd'"
    )


def run_size(spark: SparkSession, namespace: str, size: int, changes: int) -> Result:
    changelog = f"{namespace}.changelog_{size}"
    started = time.monotonic()
    build_changelog(spark, changelog, size, changes)
    spec = MirrorSpec(mirror=f"{namespace}.mirror_{size}", changelog=changelog, key=("id",))
    merge_window(spark, spec, BASE_MS + size * 1000)  # window 1: the initial load
    load_s = time.monotonic() - started

    started = time.monotonic()
    keys = merge_window(spark, spec, BASE_MS + (size + changes) * 1000)
    merge_s = time.monotonic() - started

    target = f"{namespace}.rebuild_{size}"
    spark.sql(f"CREATE TABLE {target} ({DATA_COLUMNS}) USING iceberg")
    rebuild(spark, changelog, target)  # the first build; the timed one replaces it
    started = time.monotonic()
    rebuild(spark, changelog, target)
    rebuild_s = time.monotonic() - started

    mirror_rows = spark.table(spec.mirror).count()
    rebuilt_rows = spark.table(target).count()
    if mirror_rows != rebuilt_rows:
        raise RuntimeError(f"mirror has {mirror_rows} rows, the rebuild {rebuilt_rows}")
    return Result(size, changes, load_s, merge_s, rebuild_s, keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="mirror sizes, comma-separated")
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument(
        "--warm-up",
        type=int,
        default=20_000,
        help="mirror size of an unreported first round, so JVM warm-up is not billed to the "
        "first size (0: none)",
    )
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args(argv)
    endpoints = Stack(StackSettings.from_env()).endpoints()
    spark = build_session(
        SparkSettings(
            app_name="tidemark-window-bench",
            jars=endpoints.spark.jars,
            conf={"spark.driver.memory": "4g"},
        ),
        endpoints.catalog.name,
        endpoints.catalog.properties(),
    )
    namespace = f"{endpoints.catalog.name}.window_bench_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE {namespace}")
    results = []
    try:
        if args.warm_up:
            run_size(spark, namespace, args.warm_up, args.changes)
        for size in [int(s) for s in args.sizes.split(",")]:
            results.append(run_size(spark, namespace, size, args.changes))
            sys.stdout.write(f"done: {results[-1]}\n")
            sys.stdout.flush()
    finally:
        for (table,) in spark.sql(f"SHOW TABLES IN {namespace}").select("tableName").collect():
            spark.sql(f"DROP TABLE {namespace}.{table} PURGE")
        spark.sql(f"DROP NAMESPACE {namespace}")
        spark.stop()
    lines = [
        "| mirror rows | changes | keys merged | window merge (s) | full rebuild (s) | load (s) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r.size:,} | {r.changes:,} | {r.merged_keys:,} | {r.merge_s:.1f} | "
        f"{r.rebuild_s:.1f} | {r.load_s:.1f} |"
        for r in results
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    if args.figures:
        write_figures(args.figures, figures(results))
    return 0


def figures(results: list[Result]) -> list[Figure]:
    """Issue #7's target: the merge nearly flat in mirror size (10M rows at most 3x 100k)."""
    out = []
    for r in results:
        out += [
            Figure("window", f"{r.changes:,} changes into {r.size:,} rows: merge", r.merge_s, "s"),
            Figure("window", f"{r.size:,} rows: full rebuild (the old way)", r.rebuild_s, "s"),
        ]
    smallest, largest = min(results, key=lambda r: r.size), max(results, key=lambda r: r.size)
    if largest.size >= 100 * smallest.size:
        out.append(
            Figure(
                "window",
                f"merge at {largest.size:,} rows / at {smallest.size:,}",
                largest.merge_s / smallest.merge_s,
                "×",
                Target("<=", 3, 7),
            )
        )
    return out


if __name__ == "__main__":
    sys.exit(main())
