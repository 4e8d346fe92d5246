"""Paimon ingest benchmark: ingest rows/s into a Paimon sink against into Iceberg, on the same
binlog, in one run (#43).

For each table count of ``--tables`` it writes two binlogs in a database of its own on the
stack's MariaDB (``--source``):

- **OLTP**: sysbench ``oltp_write_only`` with one unthrottled thread for ``--seconds`` over that
  many ``sbtest`` tables (small transactions: four row changes each, one table each);
- **bulk**: ``--bulk-rows`` rows spread over that many ``bulk`` tables, inserted, updated and
  deleted a thousand rows a statement (one transaction each).

Then each binlog is ingested from its saved start to its saved end (as ``ingest_bench``'s
replay does: decode in a process of its own, conversion, commits every 2 s or 50,000 rows,
the pipeline file's defaults) into a fresh Paimon warehouse on local disk (filesystem
metastore, in a temporary folder on the same disk as the stack's warehouse) and into fresh
Iceberg tables of the stack's JDBC catalog (a local-disk warehouse), ``--trials`` times each,
taking turns (Iceberg first in even trials, Paimon first in odd ones: on a shared machine the
second of two runs is often the slower). Each clock starts once the runner is built (tables
created, their first empty commit made, the reading process started) and stops when the
stream reaches the binlog's end with every commit landed.

Figures: the median rows/s of each sink, the ratio Paimon / Iceberg of the medians, and each
sink's commit time p50/p95 over every commit with rows of every trial (the sink table's own
``commit`` call, from the rows handed to it to the commit landed: not the wait for a free
commit thread). Figures, not assertions.

With ``--profile FOLDER``, each workload is ingested into Paimon once more, after its trials and
not counted, under cProfile in every thread of the process (the reading process is not
profiled): ``FOLDER/<workload>.prof``, for ``python -m pstats`` or snakeviz.

    python -m bench.paimon_ingest_bench --tables 1 20 --seconds 20 --bulk-rows 100000
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from bench.ingest_bench import parse_transactions, sysbench, sysbench_async
from bench.report import Figure, write_figures
from bench.scratch import drop_namespace
from ingest.changelog.catalogs import IcebergSinkCatalog, SinkCatalog, open_sink_catalog
from ingest.changelog.listing import Listing
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from ingest.stream.runner import StopWhen
from tidemark.config import load_pipeline
from tidemark.config.model import PaimonSink, reveal
from tidemark.contracts.bootstrap_state import BootstrapState
from tidemark.contracts.progress import TableProgress
from tidemark.sinks.commits import Commit
from tidemark.sinks.protocols import ChangelogWriter, SinkTableSpec
from tidemark.source import BinlogPosition, current_position
from tidemark.stack.endpoints import SOURCE_FLAVORS, SourceEndpoint, StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

SINKS = ("iceberg", "paimon")
#: rows of each sysbench table: the load updates and deletes them; they are written before
#: the measured binlog starts
SYSBENCH_TABLE_ROWS = 10_000
#: rows a bulk statement inserts, updates or deletes
BULK_STATEMENT_ROWS = 1000
#: the benchmarks' replica ids are 4900-4999 (tests/server_ids.py)
SERVER_ID = 4945


@dataclass(frozen=True)
class Workload:
    """A binlog range written by one load over ``tables`` tables matching ``pattern``."""

    name: str
    tables: int
    pattern: str
    start: BinlogPosition
    end: BinlogPosition
    #: transactions the load committed
    transactions: int

    @property
    def label(self) -> str:
        return f"{self.name}, {self.tables} table{'s' if self.tables > 1 else ''}"


@dataclass
class Ingest:
    """One sink's ingest of a workload's binlog."""

    sink: str
    rows: int
    seconds: float
    commits: int
    #: seconds of each commit with rows
    commit_seconds: list[float]

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds


@dataclass
class Comparison:
    """A workload ingested into each sink, ``trials`` times, in turn."""

    workload: Workload
    runs: list[Ingest] = field(default_factory=list)

    def rates(self, sink: str) -> list[float]:
        return [run.rows_per_s for run in self.runs if run.sink == sink]

    def median(self, sink: str) -> float:
        return statistics.median(self.rates(sink))

    @property
    def ratio(self) -> float:
        """Paimon's median rows/s over Iceberg's."""
        return self.median("paimon") / self.median("iceberg")

    @property
    def rows(self) -> int:
        return self.runs[0].rows

    def commit_quantile(self, sink: str, q: float) -> float:
        seconds = sorted(s for run in self.runs if run.sink == sink for s in run.commit_seconds)
        if not seconds:
            return float("nan")
        return seconds[min(len(seconds) - 1, int(len(seconds) * q))]


class TimedWriter:
    """A sink table whose commits with rows are timed; everything else is the table's."""

    def __init__(self, writer: ChangelogWriter, seconds: list[float]) -> None:
        self._writer = writer
        self._seconds = seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def commit(
        self, rows: pa.Table, progress: TableProgress, bootstrap: BootstrapState | None = None
    ) -> Commit:
        began = time.perf_counter()
        commit = self._writer.commit(rows, progress, bootstrap)
        if rows.num_rows:
            self._seconds.append(time.perf_counter() - began)  # list.append: thread-safe
        return commit


class TimedCatalog:
    """A sink catalog whose tables time their commits into ``commit_seconds``."""

    def __init__(self, catalog: SinkCatalog) -> None:
        self._catalog = catalog
        self.commit_seconds: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)

    def open_changelog(self, spec: SinkTableSpec, listing: Listing | None) -> ChangelogWriter:
        table = self._catalog.open_changelog(spec, listing)
        return cast(ChangelogWriter, TimedWriter(table, self.commit_seconds))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--seconds", type=int, default=20, help="the OLTP load's length")
    parser.add_argument("--bulk-rows", type=int, default=100_000, help="0: no bulk workload")
    parser.add_argument("--trials", type=int, default=3, help="ingests of each binlog per sink")
    parser.add_argument("--source", choices=SOURCE_FLAVORS, default="mariadb")
    parser.add_argument("--profile", type=Path, help="profile one more Paimon ingest each, here")
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    endpoints = Stack(StackSettings.from_env()).endpoints()
    source = endpoints.source(args.source)
    comparisons = []
    for tables in args.tables:
        with scratch_database(source) as database:
            workloads = [oltp(source, database, tables, args.seconds)]
            if args.bulk_rows:
                workloads.append(bulk(source, database, tables, args.bulk_rows))
            for workload in workloads:
                comparisons.append(compare(endpoints, source, database, workload, args.trials))
                if args.profile:
                    profile(endpoints, source, database, workload, args.profile)
                sys.stdout.write(table(comparisons[-1:]) + "\n")
                sys.stdout.flush()
    sys.stdout.write("\n" + table(comparisons) + "\n")
    if args.figures:
        write_figures(args.figures, [f for c in comparisons for f in figures(c)])
    return 0


@contextlib.contextmanager
def scratch_database(source: SourceEndpoint) -> Iterator[str]:
    """A database of its own on ``source``, dropped afterwards."""
    admin = source.admin_source()
    name = f"bench_pi_{uuid.uuid4().hex[:6]}"
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {name}")


def oltp(source: SourceEndpoint, database: str, tables: int, seconds: int) -> Workload:
    """sysbench ``oltp_write_only``, one unthrottled thread over ``tables`` tables."""
    sysbench(source, database, "prepare", threads=1, tables=tables, size=SYSBENCH_TABLE_ROWS)
    cdc = source.cdc_source(server_id=SERVER_ID)
    start = current_position(cdc)
    load = sysbench_async(source, database, 1, seconds, tables=tables, size=SYSBENCH_TABLE_ROWS)
    transactions = parse_transactions(load.communicate()[0])
    end = current_position(cdc)
    return Workload("OLTP", tables, "sbtest\\d+", start, end, transactions)


def bulk(source: SourceEndpoint, database: str, tables: int, rows: int) -> Workload:
    """``rows`` rows over ``tables`` tables, inserted, updated, then deleted, a thousand rows a
    statement (each its own transaction), table after table."""
    cdc = source.cdc_source(server_id=SERVER_ID)
    each = max(BULK_STATEMENT_ROWS, rows // tables)
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"USE {database}")
        for number in range(1, tables + 1):
            cursor.execute(
                f"CREATE TABLE bulk{number} (id INT PRIMARY KEY, k INT NOT NULL, "
                "c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)"
            )
        start = current_position(cdc)
        statements = 0
        for number in range(1, tables + 1):
            for first in range(0, each, BULK_STATEMENT_ROWS):
                last = min(first + BULK_STATEMENT_ROWS, each)
                cursor.execute(  # a recursive CTE: MariaDB's seq_ tables are not MySQL's
                    f"INSERT INTO bulk{number} WITH RECURSIVE n (seq) AS (SELECT %s UNION ALL "
                    "SELECT seq + 1 FROM n WHERE seq < %s) "
                    "SELECT seq, seq %% 1000, REPEAT('c', 120), REPEAT('p', 60) FROM n",
                    (first + 1, last),
                )
            for first in range(0, each, BULK_STATEMENT_ROWS):
                cursor.execute(
                    f"UPDATE bulk{number} SET k = k + 1 "
                    f"WHERE id > {first} AND id <= {first + BULK_STATEMENT_ROWS}"
                )
            for first in range(0, each, BULK_STATEMENT_ROWS):
                cursor.execute(
                    f"DELETE FROM bulk{number} "
                    f"WHERE id > {first} AND id <= {first + BULK_STATEMENT_ROWS}"
                )
            statements += 3 * -(-each // BULK_STATEMENT_ROWS)
    end = current_position(cdc)
    return Workload("bulk", tables, "bulk\\d+", start, end, statements)


def compare(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    workload: Workload,
    trials: int,
) -> Comparison:
    """``workload``'s binlog ingested into each sink ``trials`` times, taking turns."""
    comparison = Comparison(workload)
    with tempfile.TemporaryDirectory(prefix="tidemark-paimon-bench-") as scratch:
        for trial in range(trials):
            for sink in SINKS if trial % 2 == 0 else reversed(SINKS):
                namespace = f"{database}_{workload.name.lower()}{workload.tables}_{sink}{trial}"
                run = ingest(endpoints, source, database, workload, sink, namespace, scratch)
                comparison.runs.append(run)
                sys.stdout.write(
                    f"{workload.label}, trial {trial + 1}, {sink}: {run.rows:,} rows in "
                    f"{run.seconds:.2f} s, {run.rows_per_s:,.0f} rows/s, {run.commits} commits\n"
                )
                sys.stdout.flush()
    counts = {run.rows for run in comparison.runs}
    if len(counts) != 1:
        raise RuntimeError(f"{workload.label}: the ingests disagree on the rows: {counts}")
    return comparison


def ingest(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    workload: Workload,
    sink: str,
    namespace: str,
    scratch: str,
) -> Ingest:
    """``workload``'s binlog ingested into fresh tables of ``sink`` in ``namespace`` (a
    Paimon warehouse of its own under ``scratch``), then removed."""
    warehouse = Path(scratch) / namespace if sink == "paimon" else None
    pipeline = Path(scratch) / f"{namespace}.yaml"
    pipeline.write_text(
        local_pipeline(
            source,
            endpoints.catalog,
            database=database,
            tables=workload.pattern,
            namespace=namespace,
            server_id=SERVER_ID,
            startup=workload.start,
            paimon_warehouse=None if warehouse is None else str(warehouse),
        )
    )
    config = load_pipeline(pipeline)
    properties = reveal(config.sink.catalog_properties)
    prefix = config.sink.commit_user_prefix if isinstance(config.sink, PaimonSink) else None
    catalog = open_sink_catalog(config.sink.type, config.tidemark.catalog_name, properties, prefix)
    timed = TimedCatalog(catalog)
    settings = IngestSettings.from_options(config.tidemark.ingest, properties.get("type", ""))
    try:
        runner = build_runner(config, cast(SinkCatalog, timed), reports=None, settings=settings)
        timed.commit_seconds.clear()  # the tables' first, empty, commits are not measured
        began = time.perf_counter()
        summary = runner.run(StopWhen(until_position=workload.end))
        seconds = time.perf_counter() - began
    finally:
        if isinstance(catalog, IcebergSinkCatalog):
            drop_namespace(catalog.iceberg, namespace)
        if warehouse is not None:
            shutil.rmtree(warehouse, ignore_errors=True)
    return Ingest(sink, summary.rows, seconds, summary.commits, list(timed.commit_seconds))


def profile(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    workload: Workload,
    folder: Path,
) -> None:
    """One more Paimon ingest of ``workload`` under cProfile, written to ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{workload.label.replace(', ', '-').replace(' ', '-')}.prof"
    namespace = f"{database}_{workload.name.lower()}{workload.tables}_profiled"
    with tempfile.TemporaryDirectory(prefix="tidemark-paimon-bench-") as scratch:
        with every_thread_profiled(path):
            run = ingest(endpoints, source, database, workload, "paimon", namespace, scratch)
    sys.stdout.write(
        f"{workload.label}, profiled: {run.rows_per_s:,.0f} rows/s under cProfile; {path}\n"
    )


@contextlib.contextmanager
def every_thread_profiled(path: Path) -> Iterator[None]:
    """cProfile in this thread and in every thread started inside (ingest's commit threads),
    their statistics added up into ``path``."""
    profiles = [cProfile.Profile()]
    lock = threading.Lock()

    def start(*_: object) -> None:  # a new thread's first call: its own profiler from here
        thread_profile = cProfile.Profile()
        with lock:
            profiles.append(thread_profile)
        thread_profile.enable()

    threading.setprofile(start)
    profiles[0].enable()
    try:
        yield
    finally:
        profiles[0].disable()
        threading.setprofile(None)
        with lock:
            stats = pstats.Stats(profiles[0])
            for thread_profile in profiles[1:]:
                stats.add(thread_profile)
        stats.dump_stats(path)


def figures(comparison: Comparison) -> list[Figure]:
    label = comparison.workload.label
    out = [
        Figure("paimon ingest", f"{label}: Iceberg ingest", comparison.median("iceberg"), "rows/s"),
        Figure("paimon ingest", f"{label}: Paimon ingest", comparison.median("paimon"), "rows/s"),
        Figure("paimon ingest", f"{label}: Paimon / Iceberg", comparison.ratio, "×"),
    ]
    for sink, name in (("iceberg", "Iceberg"), ("paimon", "Paimon")):
        for q, quantile in ((0.5, "p50"), (0.95, "p95")):
            out.append(
                Figure(
                    "paimon ingest",
                    f"{label}: {name} commit {quantile}",
                    comparison.commit_quantile(sink, q),
                    "s",
                )
            )
    return out


def table(comparisons: list[Comparison]) -> str:
    header = (
        "| binlog | rows | Iceberg rows/s (trials) | Paimon rows/s (trials) | Paimon / Iceberg "
        "| commits with rows, Iceberg / Paimon | commit p50 / p95, Iceberg | commit p50 / p95, "
        "Paimon |\n|---|---:|---|---|---:|---|---|---|"
    )
    lines = [
        f"| {c.workload.label} | {c.rows:,} "
        f"| **{c.median('iceberg'):,.0f}** ({_rates(c.rates('iceberg'))}) "
        f"| **{c.median('paimon'):,.0f}** ({_rates(c.rates('paimon'))}) "
        f"| **{c.ratio:.2f}×** "
        f"| {_commit_count(c, 'iceberg')} / {_commit_count(c, 'paimon')} "
        f"| {_latency(c, 'iceberg')} | {_latency(c, 'paimon')} |"
        for c in comparisons
    ]
    return "\n".join([header, *lines])


def _rates(rates: list[float]) -> str:
    return ", ".join(f"{rate:,.0f}" for rate in rates)


def _commit_count(comparison: Comparison, sink: str) -> str:
    counts = [len(run.commit_seconds) for run in comparison.runs if run.sink == sink]
    return f"{statistics.median(counts):.0f}"


def _latency(comparison: Comparison, sink: str) -> str:
    p50 = comparison.commit_quantile(sink, 0.5)
    p95 = comparison.commit_quantile(sink, 0.95)
    return f"{p50:.3f} / {p95:.3f} s"


if __name__ == "__main__":
    sys.exit(main())
