"""Bootstrap benchmark: snapshot rows/s next to a plain SELECT, and what it costs the source.

Run by ``make bench`` against the local stack, on a sysbench table of ``--rows`` rows:

1. the physical limit: a plain ``SELECT *`` of the table through PyMySQL (rows counted only);
2. the bootstrap (``scan.startup.mode: snapshot``) of the same table into a fresh changelog
   table: consistent snapshot, key chunks, type mapping, Iceberg commits; and the process's peak
   memory before and after, to show it does not grow with the table;
3. sysbench ``oltp_write_only`` TPS (``THREADS`` threads) while a second bootstrap runs, for as
   long as the first one took, next to the mean of the same load alone just before and after.

The TPS loss is the cost of the bootstrap *to the source*. In production Tidemark runs on its
own host, never on the database's; on one machine, the database and sysbench would otherwise
share their cores with the bootstrap's Python, and the loss would mostly measure that. So by
default (``--cores split``) the server's threads and sysbench run on half of the cores and
this process on the other half, for the whole run, alone and during alike; ``--cores shared``
measures the machine as it is. The server's CPU affinity is restored at the end.

Prints a markdown table. Figures, not assertions: nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pymysql

from bench.ingest_bench import parse_transactions, sysbench_args, sysbench_async
from bench.report import Figure, Target, write_figures
from bench.scratch import drop_namespace, stack_catalog
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from tidemark.catalog import load_catalog
from tidemark.config import load_pipeline
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

THREADS = 4  # enough to keep both cores of this machine class busy without the bootstrap


@dataclass(frozen=True)
class Cores:
    """Where the source (the server's threads and sysbench) runs, as a ``taskset`` CPU list;
    empty when everything shares every core."""

    source: str = ""

    def sysbench(self) -> tuple[str, ...]:
        """What sysbench's command line starts with."""
        return ("taskset", "--cpu-list", self.source) if self.source else ()


@contextmanager
def cores_apart(endpoints: StackEndpoints, *, split: bool) -> Iterator[Cores]:
    """With ``split``, the server's threads on the first half of this machine's cores and
    this process's on the rest, until the end of the block (threads started meanwhile inherit
    their creator's cores); the server's cores are then given back."""
    cpus = sorted(os.sched_getaffinity(0))
    if not split or len(cpus) < 2:
        yield Cores()
        return
    source, own = set(cpus[: len(cpus) // 2]), set(cpus[len(cpus) // 2 :])
    server = _threads(_server_pid(endpoints))
    before = {thread: os.sched_getaffinity(thread) for thread in server}
    for thread in server:
        os.sched_setaffinity(thread, source)
    for thread in _threads(os.getpid()):
        os.sched_setaffinity(thread, own)
    try:
        yield Cores(",".join(map(str, sorted(source))))
    finally:
        for thread in _threads(os.getpid()):
            os.sched_setaffinity(thread, set(cpus))
        for thread in _threads(_server_pid(endpoints)):
            os.sched_setaffinity(thread, before.get(thread, set(cpus)))


def _server_pid(endpoints: StackEndpoints) -> int:
    """The database server's process, from its pid file: it must run on this machine."""
    with endpoints.mariadb.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT @@pid_file")
        (pid_file,) = cursor.fetchone()
    return int(Path(pid_file).read_text().split()[0])


def _threads(pid: int) -> list[int]:
    return [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]


@dataclass
class Result:
    rows: int
    max_rate: int | None
    select_rows_per_s: float
    bootstrap_rows_per_s: float
    peak_rss_mb_before: float
    peak_rss_mb_after: float
    tps_alone: float
    tps_during: float
    cores: Cores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the sysbench table")
    parser.add_argument(
        "--seconds", type=int, default=5, help="shortest sysbench round (else a bootstrap's time)"
    )
    parser.add_argument(
        "--max-rates",
        default="none",
        help="tidemark.ingest.snapshot-max-rows-per-second to apply, one round each, "
        "comma-separated ('none': no cap)",
    )
    parser.add_argument(
        "--cores",
        choices=("split", "shared"),
        default="split",
        help="split: the source (server and sysbench) on half of the cores, the bootstrap on "
        "the others, as on separate hosts; shared: all on every core",
    )
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    caps = [None if cap == "none" else int(cap) for cap in args.max_rates.split(",")]
    endpoints = Stack(StackSettings.from_env()).endpoints()
    database = f"bench_{uuid.uuid4().hex[:6]}"
    admin = endpoints.mariadb.admin_source()
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {database}")
    try:
        prepare = [*sysbench_args(endpoints.mariadb, database, 2), "prepare"]
        prepare = [
            arg.replace("--table-size=100000", f"--table-size={args.rows}") for arg in prepare
        ]
        subprocess.run(prepare, check=True, capture_output=True)
        with cores_apart(endpoints, split=args.cores == "split") as cores:
            results = [
                run(endpoints, database, args.rows, args.seconds, cap, cores) for cap in caps
            ]
    finally:
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {database}")
    print("\n\n".join(table(result) for result in results))  # noqa: T201
    if args.figures:
        write_figures(args.figures, [f for result in results for f in figures(result)])
    return 0


def figures(result: Result) -> list[Figure]:
    """Issue #5's targets: at least 50k rows/s, and less than 10% sysbench TPS loss."""
    cap = f"cap {result.max_rate:,} rows/s" if result.max_rate else "no cap"
    if result.cores.source:
        cap += f", source alone on CPU {result.cores.source}"
    return [
        Figure(
            "bootstrap",
            f"{result.rows:,} rows, {cap}: plain SELECT",
            result.select_rows_per_s,
            "rows/s",
        ),
        Figure(
            "bootstrap",
            f"{result.rows:,} rows, {cap}: bootstrap",
            result.bootstrap_rows_per_s,
            "rows/s",
            None if result.max_rate else Target(">=", 50_000, 5),
        ),
        Figure("bootstrap", f"{cap}: peak RSS after", result.peak_rss_mb_after, "MB"),
        Figure("bootstrap", f"{cap}: sysbench TPS alone", result.tps_alone, "TPS"),
        Figure("bootstrap", f"{cap}: sysbench TPS during the bootstrap", result.tps_during, "TPS"),
        Figure(
            "bootstrap",
            f"{cap}: TPS loss",
            100 * (1 - result.tps_during / result.tps_alone),
            "%",
            Target("<", 10, 5),
        ),
    ]


def run(
    endpoints: StackEndpoints,
    database: str,
    rows: int,
    seconds: int,
    max_rate: int | None,
    cores: Cores,
) -> Result:
    select_rate = plain_select(endpoints, database)
    peak_before = _peak_rss_mb()
    with tempfile.TemporaryDirectory() as folder:
        began = time.perf_counter()
        bootstrap(endpoints, database, Path(folder), f"{database}_a{max_rate or 0}", max_rate)
        took = time.perf_counter() - began
        peak_after = _peak_rss_mb()
        # the load runs as long as a bootstrap takes; alone before and after, to show the noise
        window = max(seconds, round(took))
        before = _tps(endpoints, database, window, cores)
        during: list[float] = []
        load = threading.Thread(
            target=lambda: during.append(_tps(endpoints, database, window, cores))
        )
        load.start()
        bootstrap(endpoints, database, Path(folder), f"{database}_b{max_rate or 0}", max_rate)
        load.join()
        after = _tps(endpoints, database, window, cores)
    catalog = stack_catalog(endpoints)
    for run_name in "ab":
        drop_namespace(catalog, f"{database}_{run_name}{max_rate or 0}")
    return Result(
        rows,
        max_rate,
        select_rate,
        rows / took,
        peak_before,
        peak_after,
        (before + after) / 2,
        during[0],
        cores,
    )


def plain_select(endpoints: StackEndpoints, database: str) -> float:
    settings = endpoints.mariadb.admin_source().pymysql_settings()
    conn = pymysql.connect(**settings, database=database)
    cursor = pymysql.cursors.SSCursor(conn)
    began = time.perf_counter()
    cursor.execute("SELECT * FROM sbtest1")
    count = 0
    while batch := cursor.fetchmany(10_000):
        count += len(batch)
    elapsed = time.perf_counter() - began
    conn.close()
    return count / elapsed


def bootstrap(
    endpoints: StackEndpoints,
    database: str,
    folder: Path,
    namespace: str,
    max_rate: int | None = None,
) -> None:
    path = folder / f"{namespace}.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            endpoints.catalog,
            database=database,
            tables="sbtest1",
            namespace=namespace,
            server_id=4980 + len(namespace) % 10,
            startup="snapshot",
            extra=(
                f"tidemark:\n  ingest:\n    snapshot-max-rows-per-second: {max_rate}\n"
                if max_rate
                else ""
            ),
        )
    )
    config = load_pipeline(path)
    catalog = load_catalog(config.tidemark.catalog_name, endpoints.catalog.properties())
    settings = IngestSettings.from_options(config.tidemark.ingest)
    build_runner(config, catalog, reports=None, settings=settings)


def _tps(endpoints: StackEndpoints, database: str, seconds: int, cores: Cores) -> float:
    load = sysbench_async(
        endpoints.mariadb, database, threads=THREADS, seconds=seconds, prefix=cores.sysbench()
    )
    return parse_transactions(load.communicate()[0]) / seconds


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def table(result: Result) -> str:
    return "\n".join(
        [
            "| rows | cap (rows/s) | source's CPUs | plain SELECT rows/s "
            "| bootstrap rows/s (snapshot + Iceberg) | bootstrap / SELECT "
            "| peak RSS before → after | sysbench TPS alone | TPS during bootstrap | TPS loss |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {result.rows:,} | {result.max_rate or 'none'} | {result.cores.source or 'all'} "
            f"| {result.select_rows_per_s:,.0f} "
            f"| {result.bootstrap_rows_per_s:,.0f} "
            f"| {result.bootstrap_rows_per_s / result.select_rows_per_s:.0%} "
            f"| {result.peak_rss_mb_before:,.0f} → {result.peak_rss_mb_after:,.0f} MB "
            f"| {result.tps_alone:,.0f} | {result.tps_during:,.0f} "
            f"| {1 - result.tps_during / result.tps_alone:.0%} |",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
