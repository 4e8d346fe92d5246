"""Paimon read benchmark: Spark SQL over ``tidemark_paimon`` against the same rows in Iceberg.

The same ``--rows`` rows (an orders table: id, customer_id, amount, note) are written once to
a Paimon primary-key table (``--buckets`` buckets, one commit, as pypaimon writes it: every
file at level 0, so the read merges) and once to an Iceberg table of the stack's JDBC catalog.
Then one aggregate (``GROUP BY customer_id``: count, sum) runs ``--runs`` times over each in
the same Spark session, after one untimed run each (the first Paimon query also starts the
Python workers), and once more over Paimon with only the query's two columns given as the
reader's schema (Spark prunes no column of a Python data source). Figures: the median seconds
of each and the ratio Paimon / Iceberg; figures, not assertions.

    python -m bench.paimon_read_bench --rows 100000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pyspark.sql import SparkSession

from bench.report import Figure, write_figures
from spark_jobs.paimon_datasource import NAME, register
from spark_jobs.session import SparkSettings, build_session
from tidemark.catalog import load_catalog, purge_namespace
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

QUERY = "SELECT customer_id, count(*) AS orders, sum(amount) AS revenue FROM {} GROUP BY 1"


def orders(rows: int) -> pa.Table:
    ids = pa.array(range(rows), pa.int64())
    return pa.table(
        {
            "id": ids,
            "customer_id": pa.array([i % 1000 for i in range(rows)], pa.int64()),
            "amount": pa.array([(i % 997) / 10 for i in range(rows)], pa.float64()),
            "note": pa.array([f"order {i}" for i in range(rows)], pa.string()),
        }
    )


def write_paimon(warehouse: str, data: pa.Table, buckets: int) -> dict[str, str]:
    options = {"metastore": "filesystem", "warehouse": warehouse}
    catalog = CatalogFactory.create(options)
    catalog.create_database("bench", ignore_if_exists=True)
    key = data.schema.field("id").with_nullable(False)
    schema = data.schema.set(0, key)
    table_options = {"bucket": str(buckets), "write-only": "true", "file.format": "parquet"}
    catalog.create_table(
        "bench.orders",
        Schema.from_pyarrow_schema(schema, primary_keys=["id"], options=table_options),
        ignore_if_exists=False,
    )
    table = catalog.get_table("bench.orders")
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(data.cast(schema))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    return options


def timed(spark: SparkSession, table: str, runs: int) -> tuple[list[float], int]:
    spark.sql(QUERY.format(table)).collect()  # untimed: Python workers, caches
    seconds, groups = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        groups = len(spark.sql(QUERY.format(table)).collect())
        seconds.append(time.perf_counter() - started)
    return seconds, groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--buckets", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()

    endpoints = Stack(StackSettings.from_env()).endpoints()
    catalog = load_catalog(endpoints.catalog.name, endpoints.catalog.properties())
    namespace = f"bench_paimon_read_{uuid.uuid4().hex[:8]}"
    data = orders(args.rows)
    catalog.create_namespace(namespace)
    try:
        with tempfile.TemporaryDirectory() as warehouse:
            iceberg = catalog.create_table(f"{namespace}.orders", data.schema)
            iceberg.append(data)
            paimon = write_paimon(warehouse, data, args.buckets)
            spark = build_session(
                SparkSettings(app_name="tidemark-bench", jars=endpoints.spark.jars),
                endpoints.catalog.name,
                endpoints.catalog.properties(),
            )
            spark.sparkContext.setLogLevel("ERROR")
            register(spark)
            reader = spark.read.format(NAME).options(**paimon)
            reader.load("bench.orders").createOrReplaceTempView("paimon_orders")
            paimon_seconds, paimon_groups = timed(spark, "paimon_orders", args.runs)
            # Spark prunes no column of a Python source: a given schema is what is read
            narrow = reader.schema("customer_id BIGINT, amount DOUBLE").load("bench.orders")
            narrow.createOrReplaceTempView("paimon_orders_narrow")
            narrow_seconds, _ = timed(spark, "paimon_orders_narrow", args.runs)
            iceberg_seconds, iceberg_groups = timed(
                spark, f"{endpoints.catalog.name}.{namespace}.orders", args.runs
            )
    finally:
        purge_namespace(catalog, namespace, drop=True)

    assert paimon_groups == iceberg_groups, (paimon_groups, iceberg_groups)
    paimon_median = statistics.median(paimon_seconds)
    iceberg_median = statistics.median(iceberg_seconds)
    ratio = paimon_median / iceberg_median
    narrow_median = statistics.median(narrow_seconds)
    sys.stdout.write(
        f"| {args.rows:,} rows, GROUP BY (median of {args.runs}) | seconds |\n| --- | --- |\n"
        f"| Paimon, tidemark_paimon ({args.buckets} buckets, level 0) | {paimon_median:.2f} |\n"
        f"| Paimon, the query's two columns given as the schema | {narrow_median:.2f} |\n"
        f"| Iceberg, Spark's reader | {iceberg_median:.2f} |\n"
        f"| Paimon / Iceberg | {ratio:.1f}x |\n"
    )
    if args.figures:
        write_figures(
            args.figures,
            [
                Figure("paimon read", f"{args.rows:,}-row aggregate, Paimon", paimon_median, "s"),
                Figure(
                    "paimon read",
                    f"{args.rows:,}-row aggregate, Paimon, 2 columns",
                    narrow_median,
                    "s",
                ),
                Figure("paimon read", f"{args.rows:,}-row aggregate, Iceberg", iceberg_median, "s"),
                Figure("paimon read", "Paimon / Iceberg", ratio, "×"),
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
