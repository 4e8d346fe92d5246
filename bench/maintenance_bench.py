"""Maintenance benchmark: an ingest commit's time before and after compaction and expiry.

PyIceberg writes a new manifest list and metadata file per commit, and both grow with the
table's history, so commits slow down as snapshots pile up
(docs/architecture.md#history-outside-the-table). Against the local
stack this builds a changelog of ``--commits`` one-row commits carrying Tidemark progress,
times ``--sample`` further commits, runs ``spark_jobs.maintenance`` on it (no mirror, no
minimum age: only ingest's newest progress holds history back), and times ``--sample``
commits again. Prints a markdown table; figures, not assertions.

    python -m bench.maintenance_bench --commits 600
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

from bench.report import Figure, write_figures
from bench.workloads.changelog_commits import DATA, commit
from ingest.changelog.table import ChangelogTable, open_changelog
from spark_jobs.maintenance import MaintenanceSettings, TableMaintainer
from spark_jobs.session import SparkSettings, build_session
from tidemark.catalog import load_catalog, purge_namespace
from tidemark.config.plan import SinkTable
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack


def timed_commits(table: ChangelogTable, first: int, count: int) -> list[float]:
    seconds = []
    for index in range(first, first + count):
        started = time.perf_counter()
        commit(table, index)
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=600)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    parser.add_argument(
        "--no-expiry",
        action="store_true",
        help="compact only (keep every snapshot), to tell the effect of each step apart",
    )
    args = parser.parse_args()

    endpoints = Stack(StackSettings.from_env()).endpoints()
    catalog = load_catalog(endpoints.catalog.name, endpoints.catalog.properties())
    namespace = f"bench_maintenance_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    name = f"{namespace}.orders_changelog"
    table = open_changelog(catalog, name, DATA, {})
    try:
        early = timed_commits(table, 0, args.sample)
        timed_commits(table, args.sample, args.commits - 2 * args.sample)
        before = timed_commits(table, args.commits - args.sample, args.sample)

        spark = build_session(
            SparkSettings(app_name="tidemark-bench", jars=endpoints.spark.jars),
            endpoints.catalog.name,
            endpoints.catalog.properties(),
        )
        spark.sparkContext.setLogLevel("ERROR")
        # a minimum age of a day keeps every snapshot this run made
        age = timedelta(days=1) if args.no_expiry else timedelta(0)
        settings = MaintenanceSettings(min_snapshot_age=age, retain_last=1)
        sink = SinkTable(namespace, ("id",), "bench", (), None, timedelta(minutes=5), name)
        started = time.perf_counter()
        [result] = TableMaintainer(spark, endpoints.catalog.name, settings).maintain(sink)
        maintain_seconds = time.perf_counter() - started

        table = ChangelogTable(catalog.load_table(name))
        after = timed_commits(table, args.commits, args.sample)
    finally:
        purge_namespace(catalog, namespace, drop=True)

    assert result.files_before and result.files_after
    lines = [
        "| commit time (median of "
        f"{args.sample}) | first commits | at {args.commits} snapshots | after maintenance |",
        "| --- | --- | --- | --- |",
        f"| seconds | {statistics.median(early):.3f} | {statistics.median(before):.3f} "
        f"| {statistics.median(after):.3f} |",
        "",
        f"maintenance: {result.files_before.data_files} -> {result.files_after.data_files} data "
        f"files, {result.snapshots_before} snapshots, {result.snapshots_expired} expired; "
        f"compaction {result.compact_seconds:.1f} s, expiry {result.expire_seconds:.1f} s, "
        f"{maintain_seconds:.1f} s in all (Spark session start not included)",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    if args.figures:
        median = statistics.median
        write_figures(
            args.figures,
            [
                Figure("maintenance", "ingest commit, first commits", median(early), "s"),
                Figure(
                    "maintenance", f"ingest commit at {args.commits} snapshots", median(before), "s"
                ),
                Figure("maintenance", "ingest commit after maintenance", median(after), "s"),
                Figure("maintenance", "maintenance (compaction + expiry)", maintain_seconds, "s"),
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
