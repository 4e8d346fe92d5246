"""Paimon maintenance benchmark: what one pass (``spark_jobs.paimon_maintenance``) costs a table.

For each of ``--rows`` × ``--buckets`` this writes a Paimon table as ingest does (pypaimon,
``write-only``, the watermark and progress in each snapshot) into a warehouse on local disk:
the rows in ``--load-commits`` commits, then times

- the *first* pass, which rewrites every file ingest wrote, and
- a *steady* pass, after ``--commits`` more commits each updating and deleting
  ``--change-percent`` of the rows: what a scheduled pass meets, a compacted table and
  ingest's newer level-0 files (it rewrites each bucket: a full compaction).

Both expire every snapshot the table's retention lets go below the newest progress snapshot.
A pass on a tiny table runs first so that loading Paimon's classes is not in the figures (it is
reported on its own); the Spark session's start is not in them either. Figures, not assertions.

    python -m bench.paimon_maintenance_bench --rows 10000 100000 --buckets 1 4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.report import Figure, write_figures
from bench.workloads.paimon_tables import Change, ContractTable, upserts
from spark_jobs.paimon_maintenance import PaimonMaintenanceResult, maintain_paimon_table
from spark_jobs.session import SparkSettings, build_session
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

#: snapshots go as soon as nothing needs them: the figures include expiry's work
RETENTION = {"snapshot.time-retained": "1 ms", "snapshot.num-retained.min": "1"}


@dataclass(frozen=True)
class Measured:
    rows: int
    buckets: int
    first: PaimonMaintenanceResult
    steady: PaimonMaintenanceResult


def build(warehouse: Path, name: str, rows: int, buckets: int, load_commits: int) -> ContractTable:
    table = ContractTable(warehouse, f"bench.{name}", buckets=buckets, options=RETENTION)
    per_commit = -(-rows // load_commits)
    for n, first in enumerate(range(0, rows, per_commit)):
        keys = range(first, min(first + per_commit, rows))
        table.commit(upserts(keys, "v0", first), 1_000 * (n + 1))
    return table


def ingest_since(table: ContractTable, rows: int, commits: int, percent: float) -> None:
    """``commits`` commits, each updating and deleting ``percent`` of the rows."""
    changed = max(1, int(rows * percent / 100))
    for n in range(commits):
        start = (n * changed * 2) % rows
        keys = [(start + i) % rows for i in range(changed * 2)]
        changes = [
            *upserts(keys[:changed], f"v{n + 1}", rows * (n + 2), "+U"),
            *(
                Change(key, "", rows * (n + 2) + changed + i, "-D")
                for i, key in enumerate(keys[changed:])
            ),
        ]
        table.commit(changes, 1_000_000 + n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--buckets", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--load-commits", type=int, default=10)
    parser.add_argument("--commits", type=int, default=60, help="ingest commits between passes")
    parser.add_argument("--change-percent", type=float, default=0.5)
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()

    endpoints = Stack(StackSettings.from_env()).endpoints()
    spark = build_session(
        SparkSettings(app_name="tidemark-bench", jars=endpoints.spark.jars),
        endpoints.catalog.name,
        endpoints.catalog.properties(),
    )
    spark.sparkContext.setLogLevel("ERROR")
    measured: list[Measured] = []
    with tempfile.TemporaryDirectory(prefix="tidemark-paimon-bench-") as folder:
        warehouse = Path(folder)
        warm_up = build(warehouse, "warm_up", 100, 1, 2)
        started = time.perf_counter()
        maintain_paimon_table(spark, warm_up.catalog_options, warm_up.identifier, keep_from=None)
        cold = time.perf_counter() - started
        for rows in args.rows:
            for buckets in args.buckets:
                table = build(warehouse, f"t_{rows}_{buckets}", rows, buckets, args.load_commits)
                first = maintain_paimon_table(
                    spark, table.catalog_options, table.identifier, keep_from=None
                )
                ingest_since(table, rows, args.commits, args.change_percent)
                steady = maintain_paimon_table(
                    spark, table.catalog_options, table.identifier, keep_from=None
                )
                measured.append(Measured(rows, buckets, first, steady))

    lines = [
        "| rows | buckets | first pass | files in → out | steady pass | files in → out "
        "| snapshots expired |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(
            f"| {m.rows:,} | {m.buckets} | {m.first.seconds:.2f} s | {m.first.files_compacted} → "
            f"{m.first.files_written} | {m.steady.seconds:.2f} s | {m.steady.files_compacted} → "
            f"{m.steady.files_written} | {m.steady.snapshots_expired} |"
            for m in measured
        ),
        "",
        f"first pass in a fresh JVM (loading Paimon's classes, a 100-row table): {cold:.2f} s; "
        f"steady: after {args.commits} commits of {args.change_percent}% updates and as many "
        "deletes",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    if args.figures:
        figures = [Figure("paimon-maintenance", "first pass in a fresh JVM (100 rows)", cold, "s")]
        for m in measured:
            size = f"{m.rows:,} rows, {m.buckets} bucket{'s' if m.buckets > 1 else ''}"
            figures += [
                Figure("paimon-maintenance", f"{size}: first pass", m.first.seconds, "s"),
                Figure("paimon-maintenance", f"{size}: steady pass", m.steady.seconds, "s"),
            ]
        write_figures(args.figures, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
