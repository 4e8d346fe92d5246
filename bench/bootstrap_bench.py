"""Bootstrap benchmark: snapshot rows/s next to a plain SELECT, and what it costs the source.

Run by ``make bench`` against the local stack, on a sysbench table of ``--rows`` rows:

1. the physical limit: a plain ``SELECT *`` of the table through the connection the
   bootstrap reads with (``tidemark.bulk_reads``), rows counted only;
2. the bootstrap (``scan.startup.mode: snapshot``) of the same table into a fresh changelog
   table: consistent snapshot, key chunks, type mapping, Iceberg commits; and the process's peak
   memory before and after, to show it does not grow with the table;
3. sysbench ``oltp_write_only`` TPS (``THREADS`` threads) for as long as the first bootstrap
   took (at least ``--seconds``), alone and then while bootstraps of the table run back to
   back, ``--tps-trials`` times in turn; the loss is the median of the trials' losses, as one
   trial alone swung by 15 points here. And InnoDB's history list length (undo not yet
   purged) sampled meanwhile, which a transaction left open for the whole table makes grow
   with the load.

Each round runs on each server of ``--sources`` with each algorithm of ``--algorithms``: the
table in one consistent snapshot (MariaDB's) and a chunk at a time (the incremental snapshot,
``scan.incremental.snapshot.enabled``; MySQL's only one). On MySQL, ``--priorities`` adds rounds
whose reads run in a resource group of that thread priority (``tidemark.ingest.
snapshot-resource-group``; 19 is the lowest): the bench creates the group and lets the CDC
account join it for the run.

Next to TPS, two figures that do not depend on how busy the machine is: the server's CPU time
per million rows of the first bootstrap (from ``/proc``: the TPS loss a bootstrap at R rows/s
costs a server saturated on one core is about R times that, before any priority), and the
bootstrap's own rows/s while sysbench runs (what a priority or a gate trades for the TPS it
keeps): the rows of the bootstraps run back to back from the load's start over the time until
the last of them ends, after the load, so an upper bound of what was read under the load.

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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from bench.ingest_bench import parse_transactions, sysbench_args, sysbench_async
from bench.report import Figure, Target, write_figures
from bench.scale_bench import parse_stat
from bench.scratch import drop_namespace, stack_catalog
from ingest.changelog.catalogs import IcebergSinkCatalog
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from tidemark.bulk_reads import open_bulk_connection, streaming_cursor
from tidemark.catalog import load_catalog
from tidemark.config import load_pipeline
from tidemark.stack.endpoints import SOURCE_FLAVORS, SourceEndpoint, StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

THREADS = 4  # enough to keep both cores of this machine class busy without the bootstrap
#: ``scan.incremental.snapshot.enabled`` of each algorithm
ALGORITHMS = {"snapshot": "false", "incremental": "true"}
#: seconds between two readings of InnoDB's history list length
HISTORY_EVERY = 0.5


@dataclass(frozen=True)
class Cores:
    """Where the source (the server's threads and sysbench) runs, as a ``taskset`` CPU list;
    empty when everything shares every core."""

    source: str = ""

    def sysbench(self) -> tuple[str, ...]:
        """What sysbench's command line starts with."""
        return ("taskset", "--cpu-list", self.source) if self.source else ()


@contextmanager
def cores_apart(source: SourceEndpoint, *, split: bool) -> Iterator[Cores]:
    """With ``split``, the server's threads on the first half of this machine's cores and
    this process's on the rest, until the end of the block (threads started meanwhile inherit
    their creator's cores); the server's cores are then given back."""
    cpus = sorted(os.sched_getaffinity(0))
    if not split or len(cpus) < 2:
        yield Cores()
        return
    theirs, own = set(cpus[: len(cpus) // 2]), set(cpus[len(cpus) // 2 :])
    server = _threads(_server_pid(source))
    before = {thread: os.sched_getaffinity(thread) for thread in server}
    for thread in server:
        os.sched_setaffinity(thread, theirs)
    for thread in _threads(os.getpid()):
        os.sched_setaffinity(thread, own)
    try:
        yield Cores(",".join(map(str, sorted(theirs))))
    finally:
        for thread in _threads(os.getpid()):
            os.sched_setaffinity(thread, set(cpus))
        for thread in _threads(_server_pid(source)):
            os.sched_setaffinity(thread, before.get(thread, set(cpus)))


def _server_pid(source: SourceEndpoint) -> int:
    """The database server's process, from its pid file: it must run on this machine."""
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT @@pid_file")
        (pid_file,) = cursor.fetchone()
    return int(Path(pid_file).read_text().split()[0])


def _threads(pid: int) -> list[int]:
    return [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]


@dataclass
class Result:
    source: str
    algorithm: str
    rows: int
    max_rate: int | None
    select_rows_per_s: float
    bootstrap_rows_per_s: float
    peak_rss_mb_before: float
    peak_rss_mb_after: float
    #: sysbench TPS alone and during bootstraps, a pair per trial
    tps_trials: list[tuple[float, float]]
    cores: Cores
    #: InnoDB's history list length when the loaded bootstrap started, and its largest since
    history_start: int = 0
    history_max: int = 0
    #: pipeline.parallelism: the readers of the table's chunks
    readers: int = 1
    #: the thread priority of the resource group the reads ran in; None: not in one
    priority: int | None = None
    #: the server's CPU seconds per million rows, in the first (unloaded) bootstrap
    server_cpu_per_million: float = 0.0
    #: the bootstrap's rows/s during each trial's load
    rows_per_s_during: list[float] = field(default_factory=list)
    #: tidemark.ingest options of the round, KEY=VALUE
    ingest_options: tuple[str, ...] = ()

    @property
    def tps_alone(self) -> float:
        return statistics.median(alone for alone, _ in self.tps_trials)

    @property
    def tps_during(self) -> float:
        return statistics.median(during for _, during in self.tps_trials)

    @property
    def tps_losses(self) -> list[float]:
        """Each trial's TPS loss, as a fraction of its TPS alone."""
        return [1 - during / alone for alone, during in self.tps_trials]


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
    parser.add_argument(
        "--sources", nargs="+", choices=SOURCE_FLAVORS, default=list(SOURCE_FLAVORS)
    )
    parser.add_argument(
        "--algorithms",
        nargs="+",
        choices=list(ALGORITHMS),
        default=list(ALGORITHMS),
        help="one consistent snapshot per table, or a chunk at a time (MySQL: incremental only)",
    )
    parser.add_argument(
        "--readers",
        nargs="+",
        type=int,
        default=[1, 2],
        help="pipeline.parallelism of the incremental rounds: a table's chunks read by that many",
    )
    parser.add_argument(
        "--tps-trials",
        type=int,
        default=5,
        help="sysbench rounds alone and during bootstraps, in turn; the loss is their median",
    )
    parser.add_argument(
        "--source-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a source option for every round (scan.incremental.snapshot.chunk.size=65536)",
    )
    parser.add_argument(
        "--priorities",
        nargs="+",
        default=["default"],
        help="MySQL: also read in a resource group of each thread priority (0-19) given; "
        "'default': in none",
    )
    parser.add_argument(
        "--ingest-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a tidemark.ingest option for every round (snapshot-max-threads-running=3)",
    )
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    caps = [None if cap == "none" else int(cap) for cap in args.max_rates.split(",")]
    endpoints = Stack(StackSettings.from_env()).endpoints()
    results = []
    for flavor in args.sources:
        source = endpoints.source(flavor)
        algorithms = [a for a in args.algorithms if flavor == "mariadb" or a == "incremental"]
        results += on_source(endpoints, source, args, caps, algorithms)
    print("\n\n".join(table(result) for result in results))  # noqa: T201
    if args.figures:
        write_figures(args.figures, [f for result in results for f in figures(result)])
    return 0


def on_source(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    args: argparse.Namespace,
    caps: list[int | None],
    algorithms: list[str],
) -> list[Result]:
    """Every round on one server, in a sysbench database of its own, dropped afterwards."""
    database = f"bench_{uuid.uuid4().hex[:6]}"
    admin = source.admin_source()
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {database}")
    try:
        prepare = [*sysbench_args(source, database, 2), "prepare"]
        prepare = [
            arg.replace("--table-size=100000", f"--table-size={args.rows}") for arg in prepare
        ]
        subprocess.run(prepare, check=True, capture_output=True)
        priorities = [None if p == "default" else int(p) for p in args.priorities]
        if source.flavor != "mysql":
            priorities = [None]
        with cores_apart(source, split=args.cores == "split") as cores:
            return [
                run(
                    endpoints,
                    source,
                    database,
                    args.rows,
                    args.seconds,
                    args.tps_trials,
                    cap,
                    cores,
                    *round_,
                    extra_options=args.source_option,
                    priority=priority,
                    ingest_options=args.ingest_option,
                )
                for round_ in _rounds(algorithms, args.readers)
                for cap in caps
                for priority in priorities
            ]
    finally:
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {database}")


@contextmanager
def resource_group(source: SourceEndpoint, priority: int | None) -> Iterator[str | None]:
    """A resource group of thread ``priority`` that the CDC account may join, for the block;
    None without a priority."""
    if priority is None:
        yield None
        return
    group, account = f"tidemark_bench_p{priority}", f"'{source.cdc_user}'@'%'"
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.RESOURCE_GROUPS "
            "WHERE RESOURCE_GROUP_NAME = %s",
            (group,),
        )
        (left_behind,) = cursor.fetchone()
        verb = "ALTER" if left_behind else "CREATE"  # by a bench run that was killed
        kind = "" if left_behind else "TYPE = USER "
        cursor.execute(f"{verb} RESOURCE GROUP {group} {kind}THREAD_PRIORITY = {priority}")
        cursor.execute(f"SHOW GRANTS FOR {account}")
        granted = any("RESOURCE_GROUP_USER" in str(row[0]) for row in cursor.fetchall())
        if not granted:
            cursor.execute(f"GRANT RESOURCE_GROUP_USER ON *.* TO {account}")
    try:
        yield group
    finally:
        with source.admin_source().connect() as conn, conn.cursor() as cursor:
            if not granted:
                cursor.execute(f"REVOKE RESOURCE_GROUP_USER ON *.* FROM {account}")
            cursor.execute(f"DROP RESOURCE GROUP {group} FORCE")


def _rounds(algorithms: list[str], readers: list[int]) -> list[tuple[str, int]]:
    """(algorithm, readers) of each round: one snapshot is read by one reader."""
    return [
        (algorithm, count)
        for algorithm in algorithms
        for count in (readers if algorithm == "incremental" else [1])
    ]


def figures(result: Result) -> list[Figure]:
    """Issue #5's targets: at least 50k rows/s, and less than 10% sysbench TPS loss; issue
    #27's: at least 150k rows/s with two readers."""
    cap = f"{_round(result)}, " + (
        f"cap {result.max_rate:,} rows/s" if result.max_rate else "no cap"
    )
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
            _rate_target(result),
        ),
        Figure(
            "bootstrap",
            f"{cap}: server CPU per million rows",
            result.server_cpu_per_million,
            "s",
        ),
        Figure("bootstrap", f"{cap}: peak RSS after", result.peak_rss_mb_after, "MB"),
        Figure("bootstrap", f"{cap}: sysbench TPS alone", result.tps_alone, "TPS"),
        Figure("bootstrap", f"{cap}: sysbench TPS during bootstraps", result.tps_during, "TPS"),
        Figure(
            "bootstrap",
            f"{cap}: TPS loss, median of {len(result.tps_trials)} trials",
            100 * statistics.median(result.tps_losses),
            "%",
            Target("<", 10, 5),
        ),
        Figure(
            "bootstrap",
            f"{cap}: bootstrap during the load",
            statistics.median(result.rows_per_s_during),
            "rows/s",
        ),
        Figure(
            "bootstrap",
            f"{cap}: history list length, most during the bootstrap",
            result.history_max,
            "",
        ),
        Figure(
            "bootstrap",
            f"{cap}: history list length, growth during the bootstrap",
            result.history_max - result.history_start,
            "",
        ),
    ]


def _rate_target(result: Result) -> Target | None:
    """Issue #27 asks for 150k rows/s with two readers; issue #5 for 50k from one."""
    if result.max_rate:
        return None
    return Target(">=", 150_000, 27) if result.readers == 2 else Target(">=", 50_000, 5)


def _round(result: Result) -> str:
    readers = f", {result.readers} readers" if result.readers > 1 else ""
    priority = f", priority {result.priority}" if result.priority is not None else ""
    options = "".join(f", {option}" for option in result.ingest_options)
    return f"{result.source}, {result.algorithm}{readers}{priority}{options}"


def run(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    rows: int,
    seconds: int,
    trials: int,
    max_rate: int | None,
    cores: Cores,
    algorithm: str,
    readers: int = 1,
    extra_options: Sequence[str] = (),
    priority: int | None = None,
    ingest_options: Sequence[str] = (),
) -> Result:
    select_rate = plain_select(source, database)
    peak_before = _peak_rss_mb()
    level = "d" if priority is None else priority
    name = f"{database}_{{}}{algorithm[0]}{readers}_{max_rate or 0}_{level}"
    options = "\n".join(
        [
            f"scan.incremental.snapshot.enabled: {ALGORITHMS[algorithm]}",
            *(": ".join(option.split("=", 1)) for option in extra_options),
        ]
    )
    namespaces: list[str] = []
    server = _server_pid(source)

    with tempfile.TemporaryDirectory() as folder, resource_group(source, priority) as group:

        def bootstrap_once() -> None:
            namespaces.append(name.format(f"{len(namespaces)}_"))
            bootstrap(
                endpoints,
                source,
                database,
                Path(folder),
                namespaces[-1],
                max_rate,
                options,
                readers,
                group,
                ingest_options,
            )

        began, cpu_before = time.perf_counter(), _cpu_seconds(server)
        bootstrap_once()
        took = time.perf_counter() - began
        server_cpu = _cpu_seconds(server) - cpu_before
        peak_after = _peak_rss_mb()
        window = max(seconds, round(took))
        pairs, rates_during = [], []
        with HistoryLength(source) as history:
            for _ in range(trials):
                alone = _tps(source, database, window, cores)
                done_before, began = len(namespaces), time.perf_counter()
                during = _tps_while(bootstrap_once, source, database, window, cores)
                rates_during.append(
                    (len(namespaces) - done_before) * rows / (time.perf_counter() - began)
                )
                pairs.append((alone, during))
    catalog = stack_catalog(endpoints)
    for namespace in namespaces:
        drop_namespace(catalog, namespace)
    return Result(
        source.name,
        algorithm,
        rows,
        max_rate,
        select_rate,
        rows / took,
        peak_before,
        peak_after,
        pairs,
        cores,
        history.start,
        history.most,
        readers,
        priority,
        server_cpu / rows * 1_000_000,
        rates_during,
        tuple(ingest_options),
    )


def _tps_while(
    work: Callable[[], None], source: SourceEndpoint, database: str, seconds: int, cores: Cores
) -> float:
    """sysbench TPS over ``seconds`` while ``work`` runs again and again, the last time until
    it ends after the load."""
    during: list[float] = []
    load = threading.Thread(target=lambda: during.append(_tps(source, database, seconds, cores)))
    load.start()
    while load.is_alive():
        work()
    load.join()
    return during[0]


class HistoryLength:
    """InnoDB's history list length (``trx_rseg_history_len``: undo logs not yet purged), read
    every ``HISTORY_EVERY`` seconds in a thread while the block runs."""

    def __init__(self, source: SourceEndpoint) -> None:
        self._conn = pymysql.connect(**source.admin_source().pymysql_settings(), autocommit=True)
        self._done = threading.Event()
        self.start = self.most = self._read()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> HistoryLength:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.most = max(self.most, self._read())
        self._conn.close()

    def _watch(self) -> None:
        while not self._done.wait(HISTORY_EVERY):
            self.most = max(self.most, self._read())

    def _read(self) -> int:
        with self._conn.cursor() as cursor:
            cursor.execute(
                "SELECT `COUNT` FROM information_schema.INNODB_METRICS "
                "WHERE NAME = 'trx_rseg_history_len'"
            )
            row = cursor.fetchone()
        return int(row[0]) if row else -1


def plain_select(source: SourceEndpoint, database: str) -> float:
    """Rows/s of ``SELECT *`` on the connection the bootstrap reads with, rows only counted."""
    conn = open_bulk_connection(source.admin_source(), autocommit=True)
    cursor = streaming_cursor(conn)
    began = time.perf_counter()
    cursor.execute(f"SELECT * FROM {database}.sbtest1")
    count = 0
    while batch := cursor.fetchmany(10_000):
        count += len(batch)
    elapsed = time.perf_counter() - began
    conn.close()
    return count / elapsed


def bootstrap(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    database: str,
    folder: Path,
    namespace: str,
    max_rate: int | None = None,
    source_options: str = "",
    readers: int = 1,
    group: str | None = None,
    ingest_options: Sequence[str] = (),
) -> None:
    path = folder / f"{namespace}.yaml"
    text = local_pipeline(  # one table: pipeline.parallelism is its chunks' readers
        source,
        endpoints.catalog,
        database=database,
        tables="sbtest1",
        namespace=namespace,
        server_id=4980 + len(namespace) % 10,
        startup="snapshot",
        source_options=source_options,
        parallelism=readers,
        extra=_ingest_block(
            [f"snapshot-max-rows-per-second: {max_rate}"] * bool(max_rate)
            + [f"snapshot-resource-group: {group}"] * bool(group)
            + [": ".join(option.split("=", 1)) for option in ingest_options]
        ),
    )
    path.write_text(text)
    config = load_pipeline(path)
    catalog = load_catalog(config.tidemark.catalog_name, endpoints.catalog.properties())
    settings = IngestSettings.from_options(config.tidemark.ingest)
    build_runner(config, IcebergSinkCatalog(catalog), reports=None, settings=settings)


def _ingest_block(options: list[str]) -> str:
    return "".join(["tidemark:\n  ingest:\n", *(f"    {o}\n" for o in options)]) if options else ""


def _tps(source: SourceEndpoint, database: str, seconds: int, cores: Cores) -> float:
    load = sysbench_async(
        source, database, threads=THREADS, seconds=seconds, prefix=cores.sysbench()
    )
    return parse_transactions(load.communicate()[0]) / seconds


def _cpu_seconds(pid: int) -> float:
    """The CPU time ``pid`` has used, all its threads, user and system."""
    return parse_stat(Path(f"/proc/{pid}/stat").read_text(), os.sysconf("SC_CLK_TCK")).cpu_seconds


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def table(result: Result) -> str:
    return "\n".join(
        [
            "| server, algorithm | rows | cap (rows/s) | source's CPUs | plain SELECT rows/s "
            "| bootstrap rows/s (snapshot + Iceberg) | bootstrap / SELECT "
            "| server CPU s per 1M rows "
            "| peak RSS before → after | sysbench TPS alone | TPS during bootstraps "
            "| TPS loss, median (least to most) | bootstrap rows/s during the load "
            "| history list length, start → most |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {_round(result)} | {result.rows:,} | {result.max_rate or 'none'} "
            f"| {result.cores.source or 'all'} "
            f"| {result.select_rows_per_s:,.0f} "
            f"| {result.bootstrap_rows_per_s:,.0f} "
            f"| {result.bootstrap_rows_per_s / result.select_rows_per_s:.0%} "
            f"| {result.server_cpu_per_million:.2f} "
            f"| {result.peak_rss_mb_before:,.0f} → {result.peak_rss_mb_after:,.0f} MB "
            f"| {result.tps_alone:,.0f} | {result.tps_during:,.0f} "
            f"| {statistics.median(result.tps_losses):.0%} "
            f"({min(result.tps_losses):.0%} to {max(result.tps_losses):.0%}) "
            f"| {statistics.median(result.rows_per_s_during):,.0f} "
            f"| {result.history_start:,} → {result.history_max:,} |",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
