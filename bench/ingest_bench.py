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

All of it runs on each source server of ``--sources`` (MariaDB and MySQL). On MySQL the
``--compressed-loads`` rounds run again with ``binlog_transaction_compression = ON``. The plain
library cannot read compressed transactions, so those rounds compare Tidemark with itself: the
binlog of the compressed round and that of the uncompressed round of the same load are
replayed in turn, ``--compression-trials`` times each, and the medians compared. One replay
after the other showed the second slower by up to a quarter whichever it was, on a shared
machine; taking turns spreads that over both.

Prints a markdown table. Figures, not assertions: nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.report import Figure, Target, write_figures
from bench.scratch import drop_namespace
from ingest.binlog import process
from ingest.binlog.events import RowsChanged
from ingest.binlog.reader import BinlogReader
from ingest.changelog.catalogs import IcebergSinkCatalog
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from ingest.stream.runner import StopWhen
from tidemark.catalog import load_catalog
from tidemark.config import load_pipeline
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.source import BinlogPosition, SourceConnection, current_position
from tidemark.stack.endpoints import SOURCE_FLAVORS, SourceEndpoint, StackEndpoints
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
    #: the binlog the load wrote, from its first event to the end of its last
    binlog: tuple[BinlogPosition, BinlogPosition]
    #: Tidemark's decode alone (``ingest.binlog``), rows counted
    decode_rows_per_s: float = float("nan")
    #: the source server, as people name it
    source: str = "MariaDB"
    #: written with binlog_transaction_compression = ON (MySQL): no plain decode to compare
    compressed: bool = False


@dataclass
class Replay:
    """One binlog range read three ways."""

    rows: int
    #: NaN where the plain library cannot read the binlog (compressed transactions)
    plain_rows_per_s: float
    decode_rows_per_s: float
    ingest_rows_per_s: float
    source: str = "MariaDB"


@dataclass
class CompressionTrials:
    """The binlogs of one load written with and without compressed transactions, replayed in
    turn: every trial's decode and ingest rate, rows/s."""

    load: str
    decode: list[float]
    decode_compressed: list[float]
    ingest: list[float]
    ingest_compressed: list[float]

    def ratio(self, compressed: list[float], plain: list[float]) -> float:
        """The compressed median as a percentage of the uncompressed one."""
        return 100 * statistics.median(compressed) / statistics.median(plain)


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
        "--compressed-loads",
        nargs="*",
        default=["1"],
        help="MySQL rounds run again with binlog_transaction_compression = ON",
    )
    parser.add_argument(
        "--compression-trials",
        type=int,
        default=5,
        help="replays of each binlog, compressed and not, taking turns",
    )
    parser.add_argument(
        "--bulk-rows", type=int, default=0, help="rows of the bulk-shaped binlog (0: none)"
    )
    parser.add_argument(
        "--sources", nargs="+", choices=SOURCE_FLAVORS, default=list(SOURCE_FLAVORS)
    )
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    endpoints = Stack(StackSettings.from_env()).endpoints()
    results: list[Result] = []
    bulks: list[Replay] = []
    comparisons: list[CompressionTrials] = []
    for flavor in args.sources:
        compressed = args.compressed_loads if flavor == "mysql" else []
        source_results, bulk, source_comparisons = on_source(
            endpoints,
            endpoints.source(flavor),
            args.loads,
            compressed,
            args.seconds,
            args.bulk_rows,
            args.compression_trials,
        )
        results += source_results
        bulks += [bulk] if bulk is not None else []
        comparisons += source_comparisons
    print(table(results))  # noqa: T201
    if comparisons:
        print(compression_table(comparisons))  # noqa: T201
    if bulks:
        print(bulk_table(bulks))  # noqa: T201
    if args.figures:
        write_figures(
            args.figures,
            figures(results)
            + [figure for trials in comparisons for figure in compression_figures(trials)]
            + [figure for bulk in bulks for figure in bulk_figures(bulk)],
        )
    return 0


def on_source(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    loads: list[str],
    compressed_loads: list[str],
    seconds: int,
    bulk_rows: int,
    compression_trials: int,
) -> tuple[list[Result], Replay | None, list[CompressionTrials]]:
    """Every round on one source server, in a database of its own, dropped afterwards."""
    database = f"bench_{uuid.uuid4().hex[:6]}"
    admin = source.admin_source()
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {database}")
    sysbench(source, database, "prepare", threads=1)
    rounds = [(load, False) for load in loads] + [(load, True) for load in compressed_loads]
    try:
        results = []
        for load, compressed in rounds:
            threads, rate = (int(part) for part in (load.split("@") + ["0"])[:2])
            results.append(round_(endpoints, source, database, threads, rate, seconds, compressed))
        comparisons = [
            trials(endpoints, source, database, twin, result, compression_trials)
            for result in results
            if result.compressed and (twin := uncompressed_twin(result, results)) is not None
        ]
        bulk = bulk_round(endpoints, source, database, bulk_rows) if bulk_rows else None
    finally:
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {database}")
    return results, bulk, comparisons


def figures(results: list[Result]) -> list[Figure]:
    """Issue #4's targets: ingest at least 80% of the plain decode, and lag p99 under 10 s with
    one unthrottled sysbench thread; #10's (and #26's on MySQL) ingest 10× the plain decode."""
    out = []
    for r in results:
        load = _load(r)
        lag_target = Target("<", 10, 4) if r.threads == 1 and not r.rate else None
        if r.compressed:
            out += [
                Figure("ingest", f"{load}: Tidemark ingest", r.ingest_rows_per_s, "rows/s"),
                Figure("ingest", f"{load}: live lag p99", r.lag_p99_s, "s"),
            ]
            continue
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


def compression_figures(trials: CompressionTrials) -> list[Figure]:
    """#26's target: no slower with compressed transactions than without."""
    return [
        Figure(
            "ingest",
            f"{trials.load}: decode compressed / uncompressed (medians)",
            trials.ratio(trials.decode_compressed, trials.decode),
            "%",
        ),
        Figure(
            "ingest",
            f"{trials.load}: ingest compressed / uncompressed (medians)",
            trials.ratio(trials.ingest_compressed, trials.ingest),
            "%",
            Target(">=", 100, 26),
        ),
    ]


def compression_table(comparisons: list[CompressionTrials]) -> str:
    header = (
        "| load, binlogs replayed in turn | trials | Tidemark decode rows/s, median "
        "(uncompressed / compressed) | ratio | Tidemark ingest rows/s, median "
        "(uncompressed / compressed) | ratio |\n|---|---|---|---|---|---|"
    )
    lines = [
        f"| {t.load} | {len(t.ingest)} "
        f"| {statistics.median(t.decode):,.0f} / {statistics.median(t.decode_compressed):,.0f} "
        f"| {t.ratio(t.decode_compressed, t.decode):.0f}% "
        f"| {statistics.median(t.ingest):,.0f} / {statistics.median(t.ingest_compressed):,.0f} "
        f"| {t.ratio(t.ingest_compressed, t.ingest):.0f}% |"
        for t in comparisons
    ]
    return "\n".join([header, *lines])


def uncompressed_twin(result: Result, results: list[Result]) -> Result | None:
    """The round of the same load on the same server without compression."""
    return next(
        (
            other
            for other in results
            if not other.compressed
            and (other.source, other.threads, other.rate)
            == (result.source, result.threads, result.rate)
        ),
        None,
    )


def round_(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    threads: int,
    rate: int,
    seconds: int,
    compressed: bool = False,
) -> Result:
    cdc = source.cdc_source(server_id=4900 + threads)
    name = f"{threads}t{rate}{'z' if compressed else ''}"
    with tempfile.TemporaryDirectory() as folder:
        live = pipeline(Path(folder), endpoints, source, database, f"{database}_live{name}")
        config = load_pipeline(live)
        catalog = load_catalog(config.tidemark.catalog_name, catalog_properties(endpoints))
        lag = LagRecorder()
        follower = build_runner(
            config, IcebergSinkCatalog(catalog), reports=lag, settings=IngestSettings()
        )
        start = current_position(cdc)
        with transaction_compression(source, compressed):  # sysbench's sessions take it
            load = sysbench_async(source, database, threads, seconds, rate)
            ingest_thread = threading.Thread(
                target=follower.run, args=(StopWhen(max_seconds=seconds + 15),)
            )
            ingest_thread.start()
            transactions = parse_transactions(load.communicate()[0])
        end = current_position(cdc)
        ingest_thread.join()

        replayed = replay(
            endpoints,
            source,
            database,
            f"{database}_replay{name}",
            start,
            end,
            plain=not compressed,
        )
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
        source=source.name,
        compressed=compressed,
        binlog=(start, end),
    )


def trials(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    uncompressed: Result,
    compressed: Result,
    count: int,
) -> CompressionTrials:
    """The binlogs of two rounds of one load, without and with compressed transactions,
    replayed in turn ``count`` times each (decode alone, then the full ingest)."""
    rates: dict[bool, list[Replay]] = {False: [], True: []}
    for trial in range(count):
        for result in (uncompressed, compressed):
            rates[result.compressed].append(
                replay(
                    endpoints,
                    source,
                    database,
                    f"{database}_trial{trial}{'z' if result.compressed else ''}",
                    *result.binlog,
                    plain=False,
                )
            )
    return CompressionTrials(
        load=_load(uncompressed),
        decode=[r.decode_rows_per_s for r in rates[False]],
        decode_compressed=[r.decode_rows_per_s for r in rates[True]],
        ingest=[r.ingest_rows_per_s for r in rates[False]],
        ingest_compressed=[r.ingest_rows_per_s for r in rates[True]],
    )


@contextlib.contextmanager
def transaction_compression(source: SourceEndpoint, on: bool) -> Iterator[None]:
    """MySQL's ``binlog_transaction_compression`` on for the sessions that start inside."""
    if not on:
        yield
        return
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute("SET GLOBAL binlog_transaction_compression = ON")
        try:
            yield
        finally:
            cursor.execute("SET GLOBAL binlog_transaction_compression = OFF")


def replay(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    namespace: str,
    start: BinlogPosition,
    end: BinlogPosition,
    table: str = "sbtest1",
    *,
    plain: bool = True,
) -> Replay:
    """The binlog of ``database`` between two positions read by the plain library (unless
    not ``plain``), by Tidemark's decode alone, and by the full ingest of ``table`` into a
    fresh changelog table."""
    cdc = source.cdc_source(server_id=4990)
    process.warm()  # imports while the plain decode runs (see the module's docstring)
    plain_rows, plain_s = plain_decode(cdc, start, end, database) if plain else (-1, 0.0)
    decoded_rows, decode_s = tidemark_decode(cdc, start, end, database)
    with tempfile.TemporaryDirectory() as folder:
        config = load_pipeline(
            pipeline(
                Path(folder), endpoints, source, database, namespace, start=start, tables=table
            )
        )
        catalog = load_catalog(config.tidemark.catalog_name, catalog_properties(endpoints))
        runner = build_runner(
            config, IcebergSinkCatalog(catalog), reports=None, settings=IngestSettings()
        )
        began = time.perf_counter()
        summary = runner.run(StopWhen(until_position=end))
        ingest_s = time.perf_counter() - began
    drop_namespace(catalog, namespace)
    if decoded_rows != summary.rows or (plain and plain_rows != decoded_rows):
        raise RuntimeError(
            f"the reads disagree: plain {plain_rows if plain else 'not read'}, decode "
            f"{decoded_rows}, ingest {summary.rows} rows"
        )
    return Replay(
        decoded_rows,
        plain_rows / plain_s if plain else float("nan"),
        decoded_rows / decode_s,
        summary.rows / ingest_s,
        source.name,
    )


def tidemark_decode(
    source: SourceConnection, start: BinlogPosition, end: BinlogPosition, database: str
) -> tuple[int, float]:
    """Rows and seconds of ``ingest.binlog`` alone over the same range: what ingest reads."""
    rows = 0
    began = time.perf_counter()
    with BinlogReader(source, start, databases=[database]) as reader:
        for event in reader:
            if isinstance(event, RowsChanged):
                rows += len(event.rows) if event.database == database else 0
            elif event.position >= end:
                # not at a row event: those of a compressed transaction all end where the
                # transaction does
                break
    return rows, time.perf_counter() - began


def bulk_round(
    endpoints: StackEndpoints, source: SourceEndpoint, database: str, rows: int
) -> Replay:
    """A bulk-shaped binlog: ``rows`` inserted, then updated and deleted, a thousand rows per
    statement (a batch job's shape), read three ways."""
    admin = source.admin_source()
    cdc = source.cdc_source(server_id=4990)
    start = current_position(cdc)
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"USE {database}")
        cursor.execute(
            "CREATE TABLE bulk (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, "
            "pad CHAR(60) NOT NULL)"
        )
        for first in range(0, rows, 1000):
            cursor.execute(  # a recursive CTE: MariaDB's seq_ tables are not MySQL's
                "INSERT INTO bulk WITH RECURSIVE n (seq) AS (SELECT %s UNION ALL "
                "SELECT seq + 1 FROM n WHERE seq < %s) "
                "SELECT seq, seq %% 1000, REPEAT('c', 120), REPEAT('p', 60) FROM n",
                (first + 1, min(first + 1000, rows)),
            )
        for first in range(0, rows, 1000):
            cursor.execute(f"UPDATE bulk SET k = k + 1 WHERE id > {first} AND id <= {first + 1000}")
        cursor.execute("DELETE FROM bulk")
        conn.commit()
    end = current_position(cdc)
    return replay(endpoints, source, database, f"{database}_bulk", start, end, table="bulk")


def bulk_figures(bulk: Replay | None) -> list[Figure]:
    """Issue #10: no slower than the plain library on bulk events."""
    if bulk is None:
        return []
    load = f"{bulk.source}, bulk"
    return [
        Figure("ingest", f"{load}: plain library decode", bulk.plain_rows_per_s, "rows/s"),
        Figure("ingest", f"{load}: Tidemark decode", bulk.decode_rows_per_s, "rows/s"),
        Figure("ingest", f"{load}: Tidemark ingest", bulk.ingest_rows_per_s, "rows/s"),
        Figure(
            "ingest",
            f"{load}: ingest / plain decode",
            100 * bulk.ingest_rows_per_s / bulk.plain_rows_per_s,
            "%",
            Target(">=", 100, 10),
        ),
    ]


def bulk_table(bulks: list[Replay]) -> str:
    header = (
        "| bulk binlog | rows | plain library decode rows/s | Tidemark decode rows/s "
        "| Tidemark ingest rows/s | ingest / plain |\n|---|---|---|---|---|---|"
    )
    lines = [
        f"| {bulk.source}, 1,000 rows a statement | {bulk.rows:,} "
        f"| {bulk.plain_rows_per_s:,.0f} | {bulk.decode_rows_per_s:,.0f} "
        f"| {bulk.ingest_rows_per_s:,.0f} | {bulk.ingest_rows_per_s / bulk.plain_rows_per_s:.0%} |"
        for bulk in bulks
    ]
    return "\n".join([header, *lines])


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


def sysbench_args(
    source: SourceEndpoint, database: str, threads: int, tables: int = 1, size: int = TABLE_SIZE
) -> list[str]:
    """sysbench's ``oltp_write_only`` on ``tables`` tables (``sbtest1`` ...) of ``size`` rows."""
    return [
        "sysbench",
        "oltp_write_only",
        f"--mysql-host={source.host}",
        f"--mysql-port={source.port}",
        f"--mysql-user={source.admin_user}",
        f"--mysql-password={source.admin_password.get_secret_value()}",
        f"--mysql-db={database}",
        f"--tables={tables}",
        f"--table-size={size}",
        f"--threads={threads}",
    ]


def sysbench(
    source: SourceEndpoint,
    database: str,
    command: str,
    *,
    threads: int,
    tables: int = 1,
    size: int = TABLE_SIZE,
) -> None:
    """sysbench's ``command`` (``prepare``), to its end."""
    subprocess.run(
        [*sysbench_args(source, database, threads, tables, size), command],
        check=True,
        capture_output=True,
    )


def sysbench_async(
    source: SourceEndpoint,
    database: str,
    threads: int,
    seconds: int,
    rate: int = 0,
    prefix: Sequence[str] = (),
    tables: int = 1,
    size: int = TABLE_SIZE,
) -> subprocess.Popen[str]:
    """sysbench's load in the background; ``prefix`` goes before its command (``taskset``)."""
    return subprocess.Popen(
        [
            *prefix,
            *sysbench_args(source, database, threads, tables, size),
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
    source: SourceEndpoint,
    database: str,
    namespace: str,
    start: BinlogPosition | None = None,
    tables: str = "sbtest1",
) -> Path:
    path = folder / f"{namespace}.yaml"
    path.write_text(
        local_pipeline(
            source,
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
    """The rounds as a markdown table; a compressed round's plain decode is not read."""
    header = (
        "| sysbench load | TPS | row changes/s written | plain library decode rows/s "
        "| Tidemark decode rows/s | Tidemark ingest rows/s (decode + Iceberg) "
        "| ingest / plain | live lag p50 | live lag p99 |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {_load(r)} | {r.tps:,.0f} | {r.load_rows_per_s:,.0f} | {r.plain_rows_per_s:,.0f} "
        f"| {r.decode_rows_per_s:,.0f} | {r.ingest_rows_per_s:,.0f} "
        f"| {_ratio(r)} "
        f"| {r.lag_p50_s:.1f} s | {r.lag_p99_s:.1f} s |"
        for r in results
    ]
    return "\n".join([header, *lines])


def _ratio(result: Result) -> str:
    if result.compressed:
        return "n/a"
    return f"{result.ingest_rows_per_s / result.plain_rows_per_s:.1f}×"


def _load(result: Result) -> str:
    threads = f"{result.source}, {result.threads} thread{'s' if result.threads > 1 else ''}"
    if result.compressed:
        threads += ", compressed"
    return f"{threads}, capped at {result.rate} TPS" if result.rate else threads


if __name__ == "__main__":
    sys.exit(main())
