"""Outage benchmark (issue #45): how ingest comes back after its catalog went away.

Against the local stack's MariaDB and Kafka, and a PostgreSQL of the benchmark's own that holds
the JDBC catalog (its warehouse a folder of its own): the stack's PostgreSQL serves everything
else and is never killed. A database ``outage_{tag}`` of ``--tables`` small tables (the scale
benchmark's: ``id INT PRIMARY KEY, name, qty, price, ts``, 10 rows each) is routed 1:1 into
changelog tables by ``tidemark ingest FILE --metrics-port P``, a process of its own whose log is
kept. Once every table's bootstrap is committed, ``--tps`` single-row autocommit ``UPDATE``
transactions a second (``qty = qty + 1``), round-robin over the tables, run until the end.

Then, ``--settle-seconds`` after the load began and after each recovery, the benchmark's
PostgreSQL is killed with SIGKILL, kept down, and started again (``Postgres.up()``, which
returns once it answers): ``--outages`` short outages of ``--outage-seconds`` (figure 1), then
one of ``--long-outage-seconds`` (figure 2). For each, from **the return** (the moment
``up()`` returned: the server answers, to within its 0.2 s health poll):

- **first commit**: the first changelog commit after the return, in any table: the earliest
  snapshot timestamp after it. Read from the tables' snapshots once the run is over, not from
  the ``tidemark_ingest_commits_total`` metric: a snapshot's time is the writer's own, to the
  millisecond, taken as the commit is built (a few ms before the catalog's ``UPDATE``), and
  reading it afterwards puts no load on the catalog being measured or on the two cores; the
  metric counts only commits whose outcome ingest saw (not one the outage hid) and is known
  only as often as it is scraped. The metric's view, scraped every 0.1 s, is on the console.
- **caught up**: the first moment every changelog table holds every change its source table
  had received by the return. The load goes on after the return, so "every change written so
  far" is taken at the return; what is written later is the ordinary lag. The changes a table
  holds are its rows (Iceberg's ``total-records``) less those of its bootstrap; the changes its
  source table received are its ``SUM(qty)`` less the same before the load (one ``UPDATE`` is
  one changelog row), read from the source right after the return, in one statement.
- **backlog**: the changes the source held that the changelogs did not, at the return; **drained
  per second**: the changes committed from the return until caught up, over that time (the
  load's new changes that rode in the same commits included); and the same changes over the
  time from the first commit on, without ingest's wait for the catalog.
- **probe answered**: ingest's ``The catalog is back`` log line, after the return (its probes
  back off from 1 s to 30 s: the rest of the time to the first commit is its new term, which
  loads every table and reads the binlog again from the oldest table's position).

The benchmark waits for the next outage until the metric's watermarks of every table have
passed the return, or ``--catch-up-timeout``. Also: the WARNING and ERROR lines ingest logged
per outage, the times it exited (0 expected), and its peak RSS. Figures, not assertions; p50
and p95 are nearest-rank (over 5 outages p95 is the slowest). Everything it creates (the
source database, the report topic, the PostgreSQL and its folder, with the catalog and the
warehouse) is removed at the end, failed or not.

``python -m bench.outage_bench [--quick] [--tables 100] [--outages 5] ...``
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.catalog import Catalog

from bench.lakes import LocalLake
from bench.polling import wait_until
from bench.report import Figure, load_average, render, this_machine, write_figures
from bench.scale_bench import (
    ROWS_PER_TABLE,
    create_source,
    descendants,
    drop_database,
    keep_log,
    log_tail,
    peak_rss_mb,
    percentile,
    pipeline_file,
    run_load,
    start_process,
    stop_process,
    table_names,
)
from tidemark.errors import first_line
from tidemark.sinks.iceberg import iceberg_commits
from tidemark.stack.endpoints import CatalogEndpoint, StackEndpoints
from tidemark.stack.postgres import Postgres
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

BENCHMARK = "outage"
#: the benchmarks' replica ids are 4900-4999; one pipeline runs at a time
SERVER_ID = 4977
#: how often the live wait scrapes ingest's metrics
SCRAPE_S = 0.1
#: ingest's log line format (``tidemark.app.cli``): local time, level, logger, message
_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) [\w.]+: (.*)$")
_OUTAGE_LINE = re.compile(r"^(.+?) is (unavailable|back)\b")
#: a line per table at each term's start, left out of the log's tail on the console
_NOISE = "pyiceberg.io: Loaded FileIO"


@dataclass(frozen=True)
class Options:
    tables: int = 100
    tps: int = 500
    #: short outages (figure 1), each this long
    outages: int = 5
    outage_seconds: float = 10.0
    #: then one long outage under the load (figure 2)
    long_outage_seconds: float = 60.0
    #: of the load before the first outage, and after each recovery before the next
    settle_seconds: float = 20.0
    catch_up_timeout: float = 300.0
    start_timeout: float = 300.0


QUICK = Options(tables=20, outages=2, long_outage_seconds=20.0, settle_seconds=10.0)


# --- what one outage measured, and the pure computations (tests/bench/test_outage_bench.py) ------


@dataclass(frozen=True)
class OutageRecord:
    """One outage as the benchmark made it: epoch seconds, and what the source held."""

    seconds: float
    killed: float
    #: ``Postgres.up()`` returned: the server answers again
    returned: float
    #: per changelog table, the changes its source table had received by the return
    written: Mapping[str, int]
    #: when the metric first showed a commit after the return, and every table's watermark
    #: past the return (the live view); None if not within the wait
    metric_first_commit: float | None = None
    metric_caught_up: float | None = None


@dataclass(frozen=True)
class Recovery:
    """What the changelogs' commits say of one outage, in seconds from the return."""

    backlog: int
    first_commit_s: float
    caught_up_s: float
    drained_per_s: float
    #: the same changes over the time from the first commit on: how fast ingest commits once
    #: it works again, its wait for the catalog left out
    drained_from_first_per_s: float = float("nan")


#: per changelog table, its commits as (timestamp ms, changes it holds after the commit), in time
Commits = Mapping[str, Sequence[tuple[int, int]]]


def changes_at(commits: Sequence[tuple[int, int]], at_ms: float) -> int:
    """The changes a table held at ``at_ms``: its newest commit's then (0 before any)."""
    held = 0
    for timestamp, changes in commits:
        if timestamp > at_ms:
            break
        held = changes
    return held


def recovery(outage: OutageRecord, commits: Commits) -> Recovery:
    """First commit, caught up, backlog and its drain after ``outage`` (the module's
    description); NaN for what did not happen in ``commits``."""
    nan = float("nan")
    returned_ms = outage.returned * 1000
    after = [ts for table in commits.values() for ts, _ in table if ts > returned_ms]
    first = (min(after) - returned_ms) / 1000 if after else nan
    held = {table: changes_at(commits.get(table, ()), returned_ms) for table in outage.written}
    backlog = sum(max(0, outage.written[table] - held[table]) for table in outage.written)
    reached: list[float] = []
    for table, needed in outage.written.items():
        when = next((ts for ts, changes in commits.get(table, ()) if changes >= needed), None)
        if when is None:
            return Recovery(backlog, first, nan, nan)
        reached.append(max(returned_ms, when))
    caught_ms = max(reached, default=returned_ms)
    if caught_ms <= returned_ms:
        return Recovery(backlog, first, 0.0, nan)
    committed = sum(changes_at(commits.get(t, ()), caught_ms) - held[t] for t in outage.written)
    seconds = (caught_ms - returned_ms) / 1000
    working = seconds - first  # nothing is committed between the return and the first commit
    return Recovery(
        backlog, first, seconds, committed / seconds, committed / working if working > 0 else nan
    )


@dataclass(frozen=True)
class LogLine:
    at: float  # epoch seconds
    level: str
    message: str


def parse_log(text: str) -> list[LogLine]:
    """Ingest's log lines with their time (the machine's local time, as the CLI writes it)."""
    lines = []
    for line in text.splitlines():
        match = _LOG_LINE.match(line)
        if match:
            at = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            lines.append(LogLine(at, match.group(2), match.group(3)))
    return lines


def said(lines: Sequence[LogLine], what: str, since: float) -> float | None:
    """When the first ``<service> is <what>`` line (``unavailable``, ``back``) at or after
    ``since`` was logged."""
    for line in lines:
        match = _OUTAGE_LINE.match(line.message)
        if line.at >= since and match and match.group(2) == what:
            return line.at
    return None


def warnings_between(lines: Sequence[LogLine], began: float, ended: float) -> int:
    return sum(began <= line.at < ended and line.level in ("WARNING", "ERROR") for line in lines)


# --- the benchmark's own PostgreSQL -------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def own_postgres(stack: StackSettings, name: str) -> Iterator[Postgres]:
    """A PostgreSQL of the benchmark's own, to kill: its home a folder of the stack's home (it
    runs as the postgres user, who cannot enter a root-only temporary folder); stopped and its
    folder removed at the end."""
    home = stack.home / "bench-stacks" / name
    home.mkdir(parents=True)
    try:
        postgres = Postgres(StackSettings(home=home, postgres_port=free_port()))
        try:
            postgres.up()
            yield postgres
        finally:
            postgres.down()
    finally:
        shutil.rmtree(home, ignore_errors=True)
        with suppress(OSError):
            home.parent.rmdir()  # when no other run's is left


def catalog_endpoint(postgres: Postgres) -> CatalogEndpoint:
    """A JDBC catalog in ``postgres``, its warehouse in that PostgreSQL's home."""
    described = postgres.endpoint()
    return CatalogEndpoint(
        name=described["catalog_name"],
        uri=described["jdbc_uri"],
        user=described["user"],
        password=described["password"],
        warehouse=described["warehouse"],
    )


def kill(postgres: Postgres) -> float:
    """SIGKILL the server; when, once it refuses connections."""
    pid = postgres.running_pid()
    if pid is None:
        raise RuntimeError("the benchmark's PostgreSQL is not running")
    os.kill(pid, signal.SIGKILL)
    killed = time.time()
    wait_until("the killed PostgreSQL refusing connections", lambda: not postgres.is_healthy(), 30)
    return killed


# --- the run --------------------------------------------------------------------------------------


@dataclass
class OutageResult:
    options: Options
    outages: list[OutageRecord] = field(default_factory=list)
    recoveries: list[Recovery] = field(default_factory=list)
    log: list[LogLine] = field(default_factory=list)
    load_tps: float = float("nan")
    ingest_exits: int = 0
    peak_rss_mb: float = float("nan")
    reader_peak_rss_mb: float = float("nan")
    #: why figures are missing
    missing: list[str] = field(default_factory=list)


class Run:
    """One pipeline on the benchmark's own catalog, and its outages."""

    def __init__(
        self, endpoints: StackEndpoints, postgres: Postgres, options: Options, folder: Path
    ) -> None:
        self.endpoints = endpoints
        self.postgres = postgres
        self.options = options
        self.folder = folder
        self.name = f"outage_{uuid.uuid4().hex[:6]}"
        self.lake = LocalLake(endpoints.model_copy(update={"catalog": catalog_endpoint(postgres)}))
        self.tables = table_names(options.tables)
        self.changelogs = {f"{self.name}.{table}_changelog": table for table in self.tables}
        self.log = folder / "ingest.log"
        self.metrics_port = free_port()
        self.metrics = f"http://127.0.0.1:{self.metrics_port}/metrics"
        self.ingest: subprocess.Popen[bytes] | None = None
        self.result = OutageResult(options)
        self._base_sums: dict[str, int] = {}
        self._base_rows: dict[str, int] = {}

    # -- set-up, removed in reverse by ``cleanup``

    def create(self, cleanup: ExitStack) -> Path:
        cleanup.callback(drop_database, self.endpoints, self.name)
        create_source(self.endpoints, self.name, self.tables)
        kafka = AdminClient({"bootstrap.servers": self.endpoints.kafka.bootstrap_servers})
        kafka.create_topics([NewTopic(self.name, num_partitions=1)])[self.name].result(timeout=30)
        cleanup.callback(lambda: kafka.delete_topics([self.name])[self.name].result(timeout=30))
        return pipeline_file(self.folder, self.lake, self.name, 1, SERVER_ID)

    def start_ingest(self, path: Path, cleanup: ExitStack) -> None:
        options = self.options
        lifetime = (
            options.start_timeout
            + (options.outages + 1) * (options.settle_seconds + options.catch_up_timeout)
            + options.outages * options.outage_seconds
            + options.long_outage_seconds
            + 300
        )
        self.ingest = start_process(
            [
                *(sys.executable, "-m", "tidemark.app.cli", "ingest", str(path)),
                *("--metrics-port", str(self.metrics_port), "--max-seconds", f"{lifetime:.0f}"),
            ],
            self.log,
        )
        cleanup.callback(stop_process, self.ingest, 60)
        cleanup.callback(keep_log, self.log)
        wait_until("every table bootstrapped", self._bootstrapped, options.start_timeout, 1.0)

    def _bootstrapped(self) -> bool:
        self._alive_or_fail()
        try:
            rows = self._rows(self.lake.catalog())
        except Exception:  # noqa: BLE001 - not created yet: poll again
            return False
        if len(rows) < len(self.changelogs) or min(rows.values()) < ROWS_PER_TABLE:
            return False
        self._base_rows = rows
        return True

    def _rows(self, catalog: Catalog) -> dict[str, int]:
        """Each changelog's rows now (Iceberg's ``total-records``), of those that have some."""
        rows = {}
        for changelog in self.changelogs:
            commit = next(iceberg_commits(catalog.load_table(changelog).metadata), None)
            if commit is not None and commit.total_rows is not None:
                rows[changelog] = commit.total_rows
        return rows

    def _alive_or_fail(self) -> None:
        if self.ingest is not None and self.ingest.poll() is not None:
            self.result.ingest_exits += 1
            lines = log_tail(self.log, 400).splitlines()
            sys.stdout.write("\n".join([line for line in lines if _NOISE not in line][-20:]) + "\n")
            raise RuntimeError(f"ingest exited with code {self.ingest.returncode}")

    # -- the source

    def source_changes(self) -> dict[str, int]:
        """Per changelog, the changes its source table received since the load began (every
        ``UPDATE`` adds 1 to a ``qty``), read in one statement: one read view."""
        query = " UNION ALL ".join(
            f"SELECT '{table}', SUM(qty) FROM {self.name}.{table}" for table in self.tables
        )
        with self.endpoints.mariadb.admin_source().connect() as conn, conn.cursor() as cursor:
            cursor.execute(query)
            sums = {str(table): int(total) for table, total in cursor.fetchall()}
        if not self._base_sums:
            self._base_sums = sums
        return {
            changelog: sums[table] - self._base_sums[table]
            for changelog, table in self.changelogs.items()
        }

    # -- the outages

    def outages(self) -> None:
        """The load from now on, and the outages under it: the short ones, then the long one."""
        options = self.options
        self.source_changes()  # the sums before the load
        stop = threading.Event()
        load = _Load(self, stop)
        sys.stdout.write(f"  bootstrapped; {options.tps} tx/s from {_clock(time.time())}\n")
        try:
            for seconds in [options.outage_seconds] * options.outages + [
                options.long_outage_seconds
            ]:
                record = self.outage(seconds)
                self.result.outages.append(record)
                sys.stdout.write(_progress(record))
                sys.stdout.flush()
            self.memory()
        finally:
            stop.set()
            self.result.load_tps = load.join()

    def settle(self) -> None:
        deadline = time.monotonic() + self.options.settle_seconds
        while time.monotonic() < deadline:
            self._alive_or_fail()
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))

    def outage(self, seconds: float) -> OutageRecord:
        """Kill the catalog's PostgreSQL, keep it down ``seconds``, start it, and wait until
        the metrics show ingest caught up (or the wait's end)."""
        self.settle()
        killed = kill(self.postgres)
        commits_before = self._commits_seen()
        while time.time() < killed + seconds:
            self._alive_or_fail()
            time.sleep(min(0.5, max(0.0, killed + seconds - time.time())))
        self.postgres.up()
        returned = time.time()
        written = self.source_changes()
        first_seen, caught_seen = None, None
        deadline = time.monotonic() + self.options.catch_up_timeout
        while caught_seen is None and time.monotonic() < deadline:
            self._alive_or_fail()
            families = _scrape(self.metrics)
            now = time.time()
            if first_seen is None and _total(families, "tidemark_ingest_commits") > commits_before:
                first_seen = now
            watermarks = families.get("tidemark_ingest_watermark_timestamp_seconds", {})
            if len(watermarks) >= len(self.changelogs) and min(watermarks.values()) >= returned:
                caught_seen = now
            time.sleep(SCRAPE_S)
        if caught_seen is None:
            self.result.missing.append(
                f"the {seconds:g} s outage at {_clock(killed)}: not caught up "
                f"{self.options.catch_up_timeout:g} s after the return"
            )
        return OutageRecord(seconds, killed, returned, written, first_seen, caught_seen)

    def _commits_seen(self) -> float:
        return _total(_scrape(self.metrics), "tidemark_ingest_commits")

    # -- afterwards

    def commits(self) -> dict[str, list[tuple[int, int]]]:
        """Every changelog's commits: (timestamp ms, changes held), from its snapshots."""
        catalog = self.lake.catalog()
        found = {}
        for changelog in self.changelogs:
            history = iceberg_commits(catalog.load_table(changelog).metadata)
            found[changelog] = sorted(
                (c.committed_at_ms, c.total_rows - self._base_rows[changelog])
                for c in history
                if c.total_rows is not None
            )
        return found

    def analyse(self) -> None:
        """Once the load has stopped: the commits read back (the catalog answers) and the log."""
        result = self.result
        if result.outages:
            try:
                commits = self.commits()
            except Exception as error:  # noqa: BLE001 - no figures then, and why
                result.missing.append(f"the commits not readable: {first_line(error)}")
            else:
                result.recoveries = [recovery(outage, commits) for outage in result.outages]
        with suppress(OSError):
            result.log = parse_log(self.log.read_text(errors="replace"))

    def keep_log(self) -> None:
        sys.stdout.write(f"  ingest's log is kept: {keep_log(self.log)}\n")

    def memory(self) -> None:
        if self.ingest is not None and self.ingest.poll() is None:
            self.result.peak_rss_mb = peak_rss_mb(self.ingest.pid)
            readers = [peak_rss_mb(pid) for pid in descendants(self.ingest.pid)]
            self.result.reader_peak_rss_mb = max(readers, default=float("nan"))


def _scrape(url: str) -> dict[str, dict[str, float]]:
    """Ingest's metrics: per sample name, per ``table`` label (or "") its value."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    samples: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(family.name, {})[sample.labels.get("table", "")] = sample.value
    return samples


def _total(families: Mapping[str, Mapping[str, float]], name: str) -> float:
    return sum(families.get(name, {}).values())


def _clock(epoch: float) -> str:
    return f"{datetime.fromtimestamp(epoch, UTC):%H:%M:%S} UTC"


def measure(endpoints: StackEndpoints, stack: StackSettings, options: Options) -> OutageResult:
    """The run, and its clean-up whatever happens: ingest stopped, its log kept, the topic and
    the source database removed, then the benchmark's PostgreSQL stopped and its folder gone."""
    with tempfile.TemporaryDirectory(prefix="outage_bench_") as scratch, ExitStack() as cleanup:
        postgres = cleanup.enter_context(own_postgres(stack, f"outage-{uuid.uuid4().hex[:6]}"))
        run = Run(endpoints, postgres, options, Path(scratch))
        sys.stdout.write(
            f"{run.name}: {options.tables} tables; the catalog in a PostgreSQL of its own on "
            f"port {postgres.port}; load average {load_average()}\n"
        )
        cleanup.callback(run.keep_log)  # after ingest has stopped
        path = run.create(cleanup)
        try:
            run.start_ingest(path, cleanup)
            run.outages()
        except Exception as error:  # the figures measured so far are shown, with why not more
            sys.stdout.write(f"  stopped: {type(error).__name__}: {error}\n")
            run.result.missing.append(first_line(error))
        run.analyse()
    return run.result


class _Load:
    """The paced load in a thread of its own, from now until ``stop``."""

    def __init__(self, run: Run, stop: threading.Event) -> None:
        self._tps = float("nan")
        self._thread = threading.Thread(target=self._run, args=(run, stop), name="load")
        self._thread.start()

    def _run(self, run: Run, stop: threading.Event) -> None:
        done, took = run_load(run.endpoints, run.name, run.tables, run.options.tps, 86400.0, stop)
        self._tps = done / took if took else float("nan")

    def join(self) -> float:
        """Transactions a second reached, once stopped."""
        self._thread.join()
        return self._tps


def _progress(record: OutageRecord) -> str:
    seen = {"first commit": record.metric_first_commit, "caught up": record.metric_caught_up}
    shown = [f"{what} {at - record.returned:.1f} s" for what, at in seen.items() if at is not None]
    return (
        f"  catalog down {record.returned - record.killed:.1f} s from {_clock(record.killed)}; "
        f"{sum(record.written.values()):,} changes written by the return; the metrics: "
        f"{', '.join(shown) or 'nothing'} after the return\n"
    )


# --- figures and the console ----------------------------------------------------------------------


@dataclass(frozen=True)
class OutageDetail:
    """One outage's figures, from the commits and the log, in seconds."""

    record: OutageRecord
    recovery: Recovery
    #: from the kill to ingest's "unavailable" line; from the return to its "back" line
    noticed_s: float
    probe_s: float
    #: WARNING and ERROR lines from the kill to the next outage's (or the end)
    warnings: int


def details(result: OutageResult) -> list[OutageDetail]:
    nan = float("nan")
    unread = Recovery(0, nan, nan, nan)  # the commits could not be read
    recoveries = result.recoveries or [unread] * len(result.outages)
    out = []
    for number, (record, found) in enumerate(zip(result.outages, recoveries, strict=True)):
        following = result.outages[number + 1 : number + 2]
        ended = following[0].killed if following else float("inf")
        noticed = said(result.log, "unavailable", record.killed)
        back = said(result.log, "back", record.killed)
        out.append(
            OutageDetail(
                record,
                found,
                nan if noticed is None else noticed - record.killed,
                nan if back is None else back - record.returned,
                warnings_between(result.log, record.killed, ended),
            )
        )
    return out


def figures(result: OutageResult) -> list[Figure]:
    """Figure 1 over the short outages (p50, p95), figure 2 of the long one, and the rest."""
    options = result.options
    label = f"{options.tables} tables at {options.tps} tx/s"
    found = details(result)
    short, long = found[: options.outages], found[options.outages :]
    nan = float("nan")
    out = []
    what = f"{label}, catalog down {options.outage_seconds:g} s"
    out.append(Figure(BENCHMARK, f"{what}: outages measured", float(len(short)), ""))
    for name, values in (
        ("return → ingest's probe answers", [d.probe_s for d in short]),
        ("return → first commit", [d.recovery.first_commit_s for d in short]),
        ("return → caught up", [d.recovery.caught_up_s for d in short]),
    ):
        ordered = [float("inf") if v != v else v for v in values]  # NaN: never, later than any
        for p in (50, 95):
            out.append(Figure(BENCHMARK, f"{what}: {name}, p{p}", percentile(ordered, p), "s"))
    what = f"{label}, catalog down {options.long_outage_seconds:g} s"
    one = long[0] if long else None
    for name, value, unit in (
        ("backlog at the return", one.recovery.backlog if one else nan, "changes"),
        ("return → ingest's probe answers", one.probe_s if one else nan, "s"),
        ("return → first commit", one.recovery.first_commit_s if one else nan, "s"),
        ("return → caught up", one.recovery.caught_up_s if one else nan, "s"),
        ("backlog drained", one.recovery.drained_per_s if one else nan, "changes/s"),
        (
            "backlog drained from the first commit on",
            one.recovery.drained_from_first_per_s if one else nan,
            "changes/s",
        ),
    ):
        out.append(Figure(BENCHMARK, f"{what}: {name}", float(value), unit))
    out += [
        Figure(BENCHMARK, f"{label}: load reached", result.load_tps, "tx/s"),
        Figure(
            BENCHMARK,
            f"{label}: WARNING/ERROR log lines per outage, max",
            float(max((d.warnings for d in found), default=nan)),
            "",
        ),
        Figure(BENCHMARK, f"{label}: ingest exited", float(result.ingest_exits), ""),
        Figure(BENCHMARK, f"{label}: ingest peak RSS", result.peak_rss_mb, "MB"),
    ]
    if result.missing:  # a figure not measured says why
        why = result.missing[0]
        out = [f if f.value == f.value else replace(f, name=f"{f.name} ({why})") for f in out]
    return out


def table(result: OutageResult) -> str:
    """Every outage, for the console."""
    lines = [
        "| killed (UTC) | down | kill → noticed | backlog | return → probe answers "
        "| → first commit (metric) | → caught up (metric) | drained (from the first commit) "
        "| log lines |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d in details(result):
        r, found = d.record, d.recovery
        first_seen = _after(r.metric_first_commit, r.returned)
        caught_seen = _after(r.metric_caught_up, r.returned)
        lines.append(
            f"| {_clock(r.killed)} | {r.returned - r.killed:.1f} s | {d.noticed_s:.2f} s "
            f"| {found.backlog:,} | {d.probe_s:.2f} s | {found.first_commit_s:.2f} s "
            f"({first_seen}) | {found.caught_up_s:.2f} s ({caught_seen}) "
            f"| {found.drained_per_s:,.0f}/s ({found.drained_from_first_per_s:,.0f}/s) "
            f"| {d.warnings} |"
        )
    return "\n".join(lines) + "\n"


def _after(at: float | None, returned: float) -> str:
    return "n/a" if at is None else f"{at - returned:.2f} s"


def parse_args(argv: Sequence[str] | None = None) -> tuple[Options, Path | None]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 tables, 2 short outages, 20 s")
    parser.add_argument("--tables", type=int, help="source tables (100)")
    parser.add_argument("--tps", type=int, help="transactions/s of the load (500)")
    parser.add_argument("--outages", type=int, help="short outages (5)")
    parser.add_argument("--outage-seconds", type=float, help="each short outage's length (10)")
    parser.add_argument("--long-outage-seconds", type=float, help="the long outage's (60)")
    parser.add_argument("--settle-seconds", type=float, help="load before each outage (20)")
    parser.add_argument("--catch-up-timeout", type=float, help="seconds after a return (300)")
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args(argv)
    options = QUICK if args.quick else Options()
    given = {
        key: getattr(args, key)
        for key in (
            "tables",
            "tps",
            "outages",
            "outage_seconds",
            "long_outage_seconds",
            "settle_seconds",
            "catch_up_timeout",
        )
        if getattr(args, key) is not None
    }
    return replace(options, **given), args.figures


def main(argv: Sequence[str] | None = None) -> int:
    options, figures_path = parse_args(argv)
    settings = StackSettings.from_env()
    started = datetime.now(UTC)
    result = measure(Stack(settings).endpoints(), settings, options)
    sys.stdout.write(f"\n{table(result)}")
    for why in result.missing:
        sys.stdout.write(f"  not measured: {why}\n")
    sys.stdout.write(f"load average at the end {load_average()}\n\n")
    every = figures(result)
    sys.stdout.write(render(every, this_machine(), started))
    if figures_path:
        write_figures(figures_path, every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
