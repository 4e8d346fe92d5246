"""Ingest benchmark: throughput against the plain library's decode, and lag under sysbench.

Run by ``make bench`` against the local stack. For each sysbench load (OLTP-shaped: one row
per event) it:

1. loads ``oltp_write_only`` with sysbench for ``--seconds`` while ``tidemark ingest`` follows
   the binlog live, and records the lag of every commit (commit time minus the watermark it
   published: how far the lake trails the source);
2. replays the binlog that load wrote three times, from a saved start to a saved end: with the
   plain ``mysql-replication`` decode (rows counted, nothing else), with Tidemark's decode alone
   (``ingest.binlog``: the events Tidemark's ingest reads, rows counted), and with the full
   ingest (decode, conversion, Iceberg commits) into a fresh changelog table.

Each clock starts once its code is imported: the plain decode's in its own process, the full
ingest's after its reading process has started (``process.warm``, which a pipeline
does while it onboards its tables). Without that the 0.15 s a new interpreter takes to import
would land in the replay's first rows, a tenth of the capped load's replay.

Then a bulk-shaped binlog (``--bulk-rows`` rows inserted, updated and deleted a thousand per
statement) is replayed the same three ways.

Prints a markdown table. Figures, not assertions: nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.report import Figure, Target, write_figures
from bench.scratch import drop_namespace
from ingest.binlog import process
from ingest.binlog.events import RowsChanged
from ingest.binlog.reader import BinlogReader
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from ingest.stream.runner import StopWhen
from tidemark.catalog import load_catalog
from tidemark.config import load_pipeline
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.source import BinlogPosition, SourceConnection, current_position
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

TABLE_SIZE = 100_000


@dataclass
class Result:
    threads: int
    rate: int
    load_rows_per_s: float
    tps: float
    plain_rows_per_s: float
    ingest_rows_per_s: float
    rows: int
    lag_p50_s: float
    lag_p99_s: float
    #: Tidemark's decode alone (``ingest.binlog``), rows counted
    decode_rows_per_s: float = float("nan")


@dataclass
class Replay:
    """One binlog range read three ways."""

    rows: int
    plain_rows_per_s: float
    decode_rows_per_s: float
    ingest_rows_per_s: float


class LagRecorder:
    """A report sink that keeps how far each commit trails the source."""

    def __init__(self) -> None:
        self.lags: list[float] = []

    def publish(self, report: CommitReport) -> None:
        if report.rows_added and report.watermark_ms > 0:
            self.lags.append((report.committed_at_ms - report.watermark_ms) / 1000)

    def publish_watermark(self, report: WatermarkReport) -> None:
        pass  # the lag of commits with rows is the figure

    def tick(self) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=30, help="sysbench load per round")
    parser.add_argument(
        "--loads",
        nargs="+",
        default=["1", "2", "1@500"],
        help="sysbench rounds: THREADS, or THREADS@TPS for a rate-limited load",
    )
    parser.add_argument(
        "--bulk-rows", type=int, default=0, help="rows of the bulk-shaped binlog (0: none)"
    )
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    endpoints = Stack(StackSettings.from_env()).endpoints()
    database = f"bench_{uuid.uuid4().hex[:6]}"
    admin = endpoints.mariadb.admin_source()
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {database}")
    sysbench(endpoints, database, "prepare", threads=1, seconds=0)
    loads = [tuple(int(part) for part in (load.split("@") + ["0"])[:2]) for load in args.loads]
    try:
        results = [
            round_(endpoints, database, threads, rate, args.seconds) for threads, rate in loads
        ]
        bulk = bulk_round(endpoints, database, args.bulk_rows) if args.bulk_rows else None
    finally:
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {database}")
    print(table(results))  # noqa: T201
    if bulk is not None:
        print(bulk_table(bulk))  # noqa: T201
    if args.figures:
        write_figures(args.figures, figures(results) + bulk_figures(bulk))
    return 0


def figures(results: list[Result]) -> list[Figure]:
    """Issue #4's targets: ingest at least 80% of the plain decode, and lag p99 under 10 s with
    one unthrottled sysbench thread."""
    out = []
    for r in results:
        load = _load(r)
        lag_target = Target("<", 10, 4) if r.threads == 1 and not r.rate else None
        out += [
            Figure("ingest", f"{load}: row changes/s written", r.load_rows_per_s, "rows/s"),
            Figure("ingest", f"{load}: plain library decode", r.plain_rows_per_s, "rows/s"),
            Figure("ingest", f"{load}: Tidemark decode", r.decode_rows_per_s, "rows/s"),
            Figure("ingest", f"{load}: Tidemark ingest", r.ingest_rows_per_s, "rows/s"),
            Figure(
                "ingest",
                f"{load}: ingest speed-up over plain decode",
                r.ingest_rows_per_s / r.plain_rows_per_s,
                "×",
                Target(">=", 10, 10),
            ),
            Figure(
                "ingest",
                f"{load}: ingest / plain decode",
                100 * r.ingest_rows_per_s / r.plain_rows_per_s,
                "%",
                Target(">=", 80, 4),
            ),
            Figure("ingest", f"{load}: live lag p50", r.lag_p50_s, "s"),
            Figure("ingest", f"{load}: live lag p99", r.lag_p99_s, "s", lag_target),
        ]
    return out


def round_(
    endpoints: StackEndpoints, database: str, threads: int, rate: int, seconds: int
) -> Result:
    cdc = endpoints.mariadb.cdc_source(server_id=4900 + threads)
    name = f"{threads}t{rate}"
    with tempfile.TemporaryDirectory() as folder:
        live = pipeline(Path(folder), endpoints, database, f"{database}_live{name}")
        config = load_pipeline(live)
        catalog = load_catalog(config.tidemark.catalog_name, catalog_properties(endpoints))
        lag = LagRecorder()
        follower = build_runner(config, catalog, reports=lag, settings=IngestSettings())
        start = current_position(cdc)
        load = sysbench_async(endpoints, database, threads, seconds, rate)
        ingest_thread = threading.Thread(
            target=follower.run, args=(StopWhen(max_seconds=seconds + 15),)
        )
        ingest_thread.start()
        transactions = parse_transactions(load.communicate()[0])
        end = current_position(cdc)
        ingest_thread.join()

        replayed = replay(endpoints, database, f"{database}_replay{name}", start, end)
    drop_namespace(catalog, f"{database}_live{name}")
    lags = sorted(lag.lags) or [float("nan")]
    return Result(
        threads=threads,
        rate=rate,
        load_rows_per_s=replayed.rows / seconds,
        tps=transactions / seconds,
        plain_rows_per_s=replayed.plain_rows_per_s,
        ingest_rows_per_s=replayed.ingest_rows_per_s,
        rows=replayed.rows,
        lag_p50_s=statistics.median(lags),
        lag_p99_s=lags[min(len(lags) - 1, int(len(lags) * 0.99))],
        decode_rows_per_s=replayed.decode_rows_per_s,
    )


def replay(
    endpoints: StackEndpoints,
    database: str,
    namespace: str,
    start: BinlogPosition,
    end: BinlogPosition,
    table: str = "sbtest1",
) -> Replay:
    """The binlog of ``database`` between two positions read by the plain library, by
    Tidemark's decode alone, and by the full ingest of ``table`` into a fresh changelog
    table."""
    cdc = endpoints.mariadb.cdc_source(server_id=4990)
    process.warm()  # imports while the plain decode runs (see the module's docstring)
    plain_rows, plain_s = plain_decode(cdc, start, end, database)
    decoded_rows, decode_s = tidemark_decode(cdc, start, end, database)
    with tempfile.TemporaryDirectory() as folder:
        config = load_pipeline(
            pipeline(Path(folder), endpoints, database, namespace, start=start, tables=table)
        )
        catalog = load_catalog(config.tidemark.catalog_name, catalog_properties(endpoints))
        runner = build_runner(config, catalog, reports=None, settings=IngestSettings())
        began = time.perf_counter()
        summary = runner.run(StopWhen(until_position=end))
        ingest_s = time.perf_counter() - began
    drop_namespace(catalog, namespace)
    if not plain_rows == decoded_rows == summary.rows:
        raise RuntimeError(
            f"the three reads disagree: plain {plain_rows}, decode {decoded_rows}, "
            f"ingest {summary.rows} rows"
        )
    return Replay(
        plain_rows, plain_rows / plain_s, decoded_rows / decode_s, summary.rows / ingest_s
    )


def tidemark_decode(
    source: SourceConnection, start: BinlogPosition, end: BinlogPosition, database: str
) -> tuple[int, float]:
    """Rows and seconds of ``ingest.binlog`` alone over the same range: what ingest reads."""
    rows = 0
    began = time.perf_counter()
    with BinlogReader(source, start, databases=[database]) as reader:
        for event in reader:
            if isinstance(event, RowsChanged) and event.database == database:
                rows += len(event.rows)
            if event.position >= end:
                break
    return rows, time.perf_counter() - began


def bulk_round(endpoints: StackEndpoints, database: str, rows: int) -> Replay:
    """A bulk-shaped binlog: ``rows`` inserted, then updated and deleted, a thousand rows per
    statement (a batch job's shape), read three ways."""
    admin = endpoints.mariadb.admin_source()
    cdc = endpoints.mariadb.cdc_source(server_id=4990)
    start = current_position(cdc)
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"USE {database}")
        cursor.execute(
            "CREATE TABLE bulk (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, "
            "pad CHAR(60) NOT NULL)"
        )
        for first in range(0, rows, 1000):
            cursor.execute(
                "INSERT INTO bulk SELECT seq, seq % 1000, REPEAT('c', 120), REPEAT('p', 60) "
                f"FROM seq_{first + 1}_to_{min(first + 1000, rows)}"
            )
        for first in range(0, rows, 1000):
            cursor.execute(f"UPDATE bulk SET k = k + 1 WHERE id > {first} AND id <= {first + 1000}")
        cursor.execute("DELETE FROM bulk")
        conn.commit()
    end = current_position(cdc)
    return replay(endpoints, database, f"{database}_bulk", start, end, table="bulk")


def bulk_figures(bulk: Replay | None) -> list[Figure]:
    """Issue #10: no slower than the plain library on bulk events."""
    if bulk is None:
        return []
    return [
        Figure("ingest", "bulk: plain library decode", bulk.plain_rows_per_s, "rows/s"),
        Figure("ingest", "bulk: Tidemark decode", bulk.decode_rows_per_s, "rows/s"),
        Figure("ingest", "bulk: Tidemark ingest", bulk.ingest_rows_per_s, "rows/s"),
        Figure(
            "ingest",
            "bulk: ingest / plain decode",
            100 * bulk.ingest_rows_per_s / bulk.plain_rows_per_s,
            "%",
            Target(">=", 100, 10),
        ),
    ]


def bulk_table(bulk: Replay) -> str:
    return (
        "| bulk binlog | rows | plain library decode rows/s | Tidemark decode rows/s "
        "| Tidemark ingest rows/s | ingest / plain |\n|---|---|---|---|---|---|\n"
        f"| 1,000 rows a statement | {bulk.rows:,} | {bulk.plain_rows_per_s:,.0f} "
        f"| {bulk.decode_rows_per_s:,.0f} | {bulk.ingest_rows_per_s:,.0f} "
        f"| {bulk.ingest_rows_per_s / bulk.plain_rows_per_s:.0%} |"
    )


def plain_decode(
    source: SourceConnection, start: BinlogPosition, end: BinlogPosition, database: str
) -> tuple[int, float]:
    """Rows and seconds of the library alone, as published, decoding every row event between
    two positions: in a process of its own (``bench.plain_decode``), since importing ingest
    changes the library in this one."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.plain_decode",
            f"--host={source.host}",
            f"--port={source.port}",
            f"--user={source.user}",
            f"--server-id={source.server_id + 100}",
            f"--database={database}",
            f"--start={start}",
            f"--end={end}",
        ],
        input=source.password.get_secret_value() + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    measured = json.loads(done.stdout)
    return int(measured["rows"]), float(measured["seconds"])


def sysbench_args(endpoints: StackEndpoints, database: str, threads: int) -> list[str]:
    mariadb = endpoints.mariadb
    return [
        "sysbench",
        "oltp_write_only",
        f"--mysql-host={mariadb.host}",
        f"--mysql-port={mariadb.port}",
        f"--mysql-user={mariadb.admin_user}",
        f"--mysql-password={mariadb.admin_password.get_secret_value()}",
        f"--mysql-db={database}",
        "--tables=1",
        f"--table-size={TABLE_SIZE}",
        f"--threads={threads}",
    ]


def sysbench(endpoints: StackEndpoints, database: str, command: str, **kw: int) -> None:
    subprocess.run(
        [*sysbench_args(endpoints, database, kw["threads"]), command],
        check=True,
        capture_output=True,
    )


def sysbench_async(
    endpoints: StackEndpoints,
    database: str,
    threads: int,
    seconds: int,
    rate: int = 0,
    prefix: Sequence[str] = (),
) -> subprocess.Popen[str]:
    """sysbench's load in the background; ``prefix`` goes before its command (``taskset``)."""
    return subprocess.Popen(
        [
            *prefix,
            *sysbench_args(endpoints, database, threads),
            f"--time={seconds}",
            f"--rate={rate}",
            "run",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


def parse_transactions(output: str) -> int:
    for line in output.splitlines():
        if line.strip().startswith("transactions:"):
            return int(line.split()[1])
    raise RuntimeError(f"sysbench printed no transaction count:\n{output}")


def catalog_properties(endpoints: StackEndpoints) -> dict[str, str]:
    return endpoints.catalog.properties()


def pipeline(
    folder: Path,
    endpoints: StackEndpoints,
    database: str,
    namespace: str,
    start: BinlogPosition | None = None,
    tables: str = "sbtest1",
) -> Path:
    path = folder / f"{namespace}.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            endpoints.catalog,
            database=database,
            tables=tables,
            namespace=namespace,
            server_id=4950 + len(namespace) % 40,
            startup=start or "latest-offset",
        )
    )
    return path


def table(results: list[Result]) -> str:
    header = (
        "| sysbench load | TPS | row changes/s written | plain library decode rows/s "
        "| Tidemark decode rows/s | Tidemark ingest rows/s (decode + Iceberg) "
        "| ingest / plain | live lag p50 | live lag p99 |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {_load(r)} | {r.tps:,.0f} | {r.load_rows_per_s:,.0f} | {r.plain_rows_per_s:,.0f} "
        f"| {r.decode_rows_per_s:,.0f} | {r.ingest_rows_per_s:,.0f} "
        f"| {r.ingest_rows_per_s / r.plain_rows_per_s:.1f}× "
        f"| {r.lag_p50_s:.1f} s | {r.lag_p99_s:.1f} s |"
        for r in results
    ]
    return "\n".join([header, *lines])


def _load(result: Result) -> str:
    threads = f"{result.threads} thread{'s' if result.threads > 1 else ''}"
    return f"{threads}, capped at {result.rate} TPS" if result.rate else threads


if __name__ == "__main__":
    sys.exit(main())
