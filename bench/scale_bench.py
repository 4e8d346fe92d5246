"""Scale benchmark (issues #25, #44): one pipeline of N small tables, N = 10, 100, 1,000 (3,000),
on either lake of the stack or both.

For each N: a database ``scale_n{N}_{storage}_{tag}`` of N tables (``id INT PRIMARY KEY, name
VARCHAR(32), qty INT, price DECIMAL(10,2), ts DATETIME(3)``, 10 rows each), selected by one
pattern and routed 1:1 into the namespace of the same name, with default ingest settings; the
method of the measurements by hand of 2026-11-25 (``scale-2026-11-25.md``), in code. With
``--storage local s3`` each N runs on the JDBC catalog over local disk, then on the REST
catalog over S3 (``bench.lakes``: the catalog's rows, the scheduler's state and the
namespace's files of each), one after the other, and the figures come side by side, named
after their lake:

1. **Start**: ingest runs as ``tidemark ingest`` does, under a wrapper that times its stages
   (``bench.scale_ingest``): from process start to the first binlog event read, and its parts,
   onboard (plan, changelog tables, schema trackers) and bootstrap (the 10 rows of each table).
2. **Idle** for ``--idle-seconds``, ``--settle-seconds`` after streaming began: catalog
   commits/s (the metadata versions of the namespace's tables in the catalog's database, the
   REST server's too, summed; the runner's own count beside it on the console) and ingest's
   CPU (its process and the binlog-reading child, from /proc), in % of one core. Other
   databases' binlog events still reach the reader: on a shared machine the minute is quiet
   for this pipeline only.
3. **Load**: ``--tps`` single-row autocommit ``UPDATE`` transactions a second, round-robin
   over all tables, for ``--load-seconds`` (PyMySQL, paced; the rate reached is a figure).
   Watermark lag = t − the table's watermark at t: the newest its commits stamped (in their
   snapshot summaries) or a watermark report gave it, for every table at every second of the
   load after its first 5 s: p50 and p99.
   **Drain** (#46): once the load's rows are committed, ``--bursts`` bursts of one ``UPDATE``
   of every table, as fast as one connection goes, each followed by quiet: seconds from the
   burst's last write to the last table's commit holding its row (the first commit of the
   table with rows that began after its write), p50 and p95 over the bursts; a burst not
   drained ``--drain-wait`` after its last write counts as later than any.
4. **Windows** (Spark; skipped with ``--no-scheduler``): ``tidemark schedule FILE`` starts
   (Spark ``local[*]``, 4 workers, the merges without Spark in ``--merge-processes``, by
   default one per core) while ingest runs on and a light load (``--scheduler-tps``) keeps the
   tables changing. For the first ``--windows`` window ends at least 30 s after the
   scheduler is up, each mirror's merge (its ``succeeded`` time in the scheduler's state)
   after the window's end: p50 and p95 over mirrors and windows, a merge not done
   ``--merge-wait`` after the end counting as later than any. The scheduler starts from the
   topic's first report, as a new scheduler does: windows that ended before it started are
   merged first. Also the merges finished per minute and the scheduler's CPU (its process and
   JVM) from its start-up's end to the phase's. On a new pipeline the measured window is
   usually each mirror's first (created by Spark): the console lists the merges done per
   window end.
5. Ingest's peak RSS (VmHWM, main process); the namespace's files (du of its folder on local
   disk, the sizes of its objects on S3: small files count whole blocks on disk only) growing
   per table-hour while idle and under load; the most ``*.metadata.json`` files any table of
   the namespace keeps once ingest has stopped (current + 10 previous with retention).

The targets are issue #25's, stated at 1,000 tables: they are shown for N ≥ 1,000 only; on
S3 those #44 set again (start, idle commits, lag, merges) name #44. ``--commit-threads K``
runs ingest with K commit threads (an experiment; the pipeline file cannot set it). A
figure that could not be measured (ingest not streaming before ``--start-timeout``, a process
that died) is "n/a" with the reason in its name; every load and wait has a deadline, and the
database, namespace, topic, consumer group and scheduler state it created are removed.

``python -m bench.scale_bench [--quick] [--tables 10 100 1000] [--storage local s3] ...``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg2
from confluent_kafka.admin import AdminClient, NewTopic

from bench.lakes import LABELS, BenchLake, Usage, bench_lake
from bench.report import (
    Figure,
    Target,
    load_average,
    render,
    render_columns,
    this_machine,
    write_figures,
)
from scheduler.gate import mirror_task
from scheduler.reports_consumer import GROUP_PREFIX
from scheduler.state import DEFAULT_SCHEMA, StateStore
from tidemark.config.model import IngestOptions
from tidemark.stack.endpoints import STORAGES, StackEndpoints, Storage
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack
from tidemark.windows import Window

ISSUE = 25
#: the issue whose targets a lake's figures answer to: #44 set #25's (start, idle commits, lag,
#: merges) for the REST catalog on S3
ISSUES: dict[Storage, int] = {"local": ISSUE, "s3": 44}
#: the benchmarks' replica ids are 4900-4999; one pipeline runs at a time
SERVER_ID = 4975
ROWS_PER_TABLE = 10
#: how long after the scheduler is up the first measured window may end at the earliest
SCHEDULER_WARM_UP_S = 30.0
#: the first seconds of the load are not sampled: tables idle until then carry the watermark
#: of their last watermark report (watermark-report-interval, 10 s) until their first flush
LOAD_WARM_UP_S = 5.0
#: how often the running phases look at the processes and the scheduler's state
POLL_S = 1.0


@dataclass(frozen=True)
class Options:
    tables: tuple[int, ...] = (10, 100, 1000)
    settle_seconds: float = 10.0
    idle_seconds: float = 60.0
    load_seconds: float = 60.0
    tps: int = 500
    scheduler: bool = True
    window_minutes: int = 5
    windows: int = 1
    merge_wait: float = 180.0
    #: bursts of one write per table measured after the load (#46)
    bursts: int = 3
    #: seconds after a burst's last write it must be committed by
    drain_wait: float = 120.0
    scheduler_tps: int = 50
    #: ``tidemark schedule --max-workers``: windows running at once
    scheduler_workers: int = 4
    #: ``tidemark schedule --merge-processes``; None: its default, one per core
    merge_processes: int | None = None
    start_timeout: float = 300.0
    scheduler_start_timeout: float = 180.0
    #: sample ingest's main thread (``bench.scale_ingest --profile``) and print where the idle
    #: minute and the load spent it
    profile: bool = False
    #: the lakes each N runs on, in turn: ``local`` (JDBC catalog, local disk), ``s3`` (REST
    #: catalog, object store)
    storages: tuple[Storage, ...] = ("local",)
    #: ingest's commit threads for this run only (``bench.scale_ingest --commit-threads``);
    #: None: ingest's own default
    commit_threads: int | None = None


QUICK = Options(
    tables=(10, 100),
    settle_seconds=5.0,
    idle_seconds=20.0,
    load_seconds=20.0,
    window_minutes=1,
    merge_wait=60.0,
    bursts=2,
    drain_wait=60.0,
)


@dataclass
class ScaleResult:
    """What one N measured; NaN where nothing was, and why in ``missing`` (by phase)."""

    tables: int
    options: Options
    storage: Storage = "local"
    start_s: float = float("nan")
    onboard_s: float = float("nan")
    bootstrap_s: float = float("nan")
    build_runner_s: float = float("nan")
    idle_catalog_commits_per_s: float = float("nan")
    idle_runner_commits_per_s: float = float("nan")
    idle_cpu_cores: float = float("nan")
    load_tps: float = float("nan")
    lag_p50_s: float = float("nan")
    lag_p99_s: float = float("nan")
    lag_max_s: float = float("nan")
    load_commits_per_s: float = float("nan")
    #: under the load, in cores: ingest (``INGEST``), each of the lake's services, the machine
    load_cpu: dict[str, float] = field(default_factory=dict)
    flush_p50_s: float = float("nan")
    flush_max_s: float = float("nan")
    #: per burst, seconds from its last write to its last row committed; None: not drained
    drain_delays: list[float | None] = field(default_factory=list)
    window_ends: list[datetime] = field(default_factory=list)
    #: seconds from each measured window's end to each mirror's merge; None: not merged
    merge_delays: list[float | None] = field(default_factory=list)
    merges_per_minute: float = float("nan")
    #: mirror merges succeeded by the phase's end, per window end (the backlog's included)
    merged_by_end: dict[datetime, int] = field(default_factory=dict)
    scheduler_cpu_cores: float = float("nan")
    peak_rss_mb: float = float("nan")
    reader_peak_rss_mb: float = float("nan")
    idle_mb_per_table_hour: float = float("nan")
    load_mb_per_table_hour: float = float("nan")
    end_mb_per_table: float = float("nan")
    metadata_files_max: float = float("nan")
    changelog_metadata_files_max: float = float("nan")
    #: phase ("start", "idle", "load", "drain", "windows", "end") -> why its figures are missing
    missing: dict[str, str] = field(default_factory=dict)


# --- pure helpers (tests/bench/test_scale_bench.py) ------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile; NaN when there are no values or it falls on an infinite one
    (a merge that never happened is later than any)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    value = ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]
    return value if value != float("inf") else float("nan")


@dataclass(frozen=True)
class ProcStat:
    """What /proc/<pid>/stat says of a process's CPU, in seconds."""

    pid: int
    ppid: int
    cpu_seconds: float
    #: of its children that ended and were waited for
    children_cpu_seconds: float


def parse_stat(text: str, ticks: int) -> ProcStat:
    """/proc/<pid>/stat: the command (field 2) is in parentheses and may hold spaces."""
    pid = int(text.split(" ", 1)[0])
    fields = text[text.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state): ppid is field 4, utime..cstime fields 14-17
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return ProcStat(pid, int(fields[1]), (utime + stime) / ticks, (cutime + cstime) / ticks)


def status_kib(text: str, key: str) -> int:
    """A ``kB`` line of /proc/<pid>/status (VmHWM, VmRSS); 0 if absent."""
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def lag_samples(
    commits: Iterable[tuple[float, str, int]],
    tables: Sequence[str],
    start: float,
    end: float,
    *,
    unknown_since: float,
    step: float = 1.0,
) -> list[float]:
    """Every ``step`` from ``start`` to ``end``, for every table: t − the newest watermark the
    table had committed by t. ``commits`` are (commit ended, table, watermark ms); a table with
    no positive watermark yet counts from ``unknown_since``."""
    ordered = sorted(commits)
    latest: dict[str, int] = {}
    samples: list[float] = []
    done = 0
    for k in range(int((end - start) / step) + 1):
        t = start + k * step
        while done < len(ordered) and ordered[done][0] <= t:
            _, table, watermark = ordered[done]
            latest[table] = max(latest.get(table, 0), watermark)
            done += 1
        for table in tables:
            watermark = latest.get(table, 0)
            samples.append(t - (watermark / 1000 if watermark > 0 else unknown_since))
    return samples


def merge_delays(
    runs: Iterable[tuple[str, datetime, str, datetime]],
    mirrors: Sequence[str],
    ends: Sequence[datetime],
) -> list[float | None]:
    """Seconds from each window end to each mirror's merge of it (``runs``: the scheduler's
    window runs, task, window end, state, updated at); None where none succeeded."""
    done = {(task, end): at for task, end, state, at in runs if state == "succeeded"}
    delays: list[float | None] = []
    for end in ends:
        for mirror in mirrors:
            at = done.get((str(mirror_task(mirror)), end))
            delays.append(None if at is None else (at - end).total_seconds())
    return delays


def first_window_ends(after: datetime, length: timedelta, count: int) -> list[datetime]:
    """The ends of the ``count`` windows of ``length`` that end first, strictly after ``after``."""
    first = Window.containing(after, length).end
    return [first + i * length for i in range(count)]


def paced(
    execute: Callable[[int], None],
    rate: float,
    seconds: float,
    *,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, float]:
    """Call ``execute(k)`` for k = 0, 1, ... at ``rate`` a second (late calls go at once) until
    ``seconds`` have passed or ``stop`` is set; how many calls, and how long it took."""
    began = clock()
    deadline = began + seconds
    done = 0
    while not (stop is not None and stop.is_set()):
        now = clock()
        if now >= deadline:
            break
        due = began + done / rate
        if due > now:
            sleep(min(due, deadline) - now)
            continue
        execute(done)
        done += 1
    return done, clock() - began


# --- the machine: /proc, the warehouse folder, the catalog ------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> ProcStat | None:
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text(), _TICKS)
    except (OSError, ValueError, IndexError):
        return None  # gone


def _every_stat() -> Iterator[ProcStat]:
    """Every process's, in /proc."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                yield stat


def descendants(root: int) -> list[int]:
    """``root``'s children, theirs, and so on (from every process's parent in /proc)."""
    children: dict[int, list[int]] = {}
    for stat in _every_stat():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and its descendants (those that ended included, once
    waited for)."""
    own = _stat(root)
    if own is None:
        return float("nan")
    total = own.cpu_seconds + own.children_cpu_seconds
    for pid in descendants(root):
        stat = _stat(pid)
        if stat is not None:
            total += stat.cpu_seconds + stat.children_cpu_seconds
    return total


def machine_cpu_seconds(stats: Iterable[ProcStat]) -> float:
    """CPU seconds used by every process of ``stats`` (each process of the machine), and by
    those that ended and were waited for. Not /proc/stat's busy time: it samples a core at each
    tick, and missed most of the short bursts of a paced load (0.09 cores for the whole machine
    against 0.18 for ingest alone, whose time is the scheduler's own count)."""
    return sum(stat.cpu_seconds + stat.children_cpu_seconds for stat in stats)


#: the name ``read_cpu`` gives the whole machine
MACHINE = "machine"
#: what the CPU figures call ingest's process tree
INGEST = "ingest"


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds so far of named process trees and of the machine, at ``at`` (monotonic)."""

    at: float
    seconds: dict[str, float]


def read_cpu(pids: Mapping[str, int]) -> CpuReading:
    """Now: each of ``pids``' trees (``tree_cpu_seconds``), and the ``MACHINE``."""
    seconds = {name: tree_cpu_seconds(pid) for name, pid in pids.items()}
    seconds[MACHINE] = machine_cpu_seconds(_every_stat())
    return CpuReading(time.monotonic(), seconds)


def cores_between(before: CpuReading, after: CpuReading) -> dict[str, float]:
    """Each name's CPU between two readings, in cores (NaN for a process gone meanwhile)."""
    wall = after.at - before.at
    return {
        name: (after.seconds.get(name, float("nan")) - used) / wall
        for name, used in before.seconds.items()
    }


def peak_rss_mb(pid: int) -> float:
    try:
        return status_kib(Path(f"/proc/{pid}/status").read_text(), "VmHWM") / 1024
    except OSError:
        return float("nan")


# --- processes ---------------------------------------------------------------------------------


class Events:
    """The JSON lines ``bench.scale_ingest`` writes, read as they come."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = ""
        self.items: list[dict[str, Any]] = []

    def poll(self) -> None:
        try:
            with self.path.open() as file:
                file.seek(self._offset)
                text = file.read()
                self._offset = file.tell()
        except FileNotFoundError:
            return
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        self.items += [json.loads(line) for line in lines if line]

    def first(self, event: str) -> dict[str, Any] | None:
        return next((item for item in self.items if item["e"] == event), None)

    def all(self, event: str) -> list[dict[str, Any]]:
        return [item for item in self.items if item["e"] == event]


def start_process(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    """A process of its own session and group, so that it and its children (a JVM, a binlog
    reader) can be ended together, and by nothing else."""
    with log.open("ab") as output:
        return subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            start_new_session=True,
        )


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, then after ``timeout`` SIGKILL to its group; then whatever of its group is left
    (a JVM whose driver was killed)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            sys.stdout.write(f"  (pid {process.pid} did not stop in {timeout:.0f} s: killed)\n")
    with _ignoring(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with _ignoring(subprocess.TimeoutExpired):
        process.wait(30)


@contextmanager
def _ignoring(*errors: type[BaseException]) -> Iterator[None]:
    try:
        yield
    except errors:
        pass


def keep_log(log: Path) -> Path:
    """A copy of a process's log that outlives the run's scratch folder."""
    kept = Path(tempfile.gettempdir()) / f"{log.parent.name}-{log.name}"
    with _ignoring(OSError):
        shutil.copyfile(log, kept)
    return kept


def log_tail(log: Path, lines: int = 15) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# --- the source and the load -------------------------------------------------------------------


def table_names(n: int) -> list[str]:
    width = max(4, len(str(n - 1)))
    return [f"t_{i:0{width}d}" for i in range(n)]


def create_source(endpoints: StackEndpoints, database: str, tables: Sequence[str]) -> None:
    with endpoints.mariadb.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {database}")
        for table in tables:
            cursor.execute(
                f"CREATE TABLE {database}.{table} (id INT PRIMARY KEY, name VARCHAR(32), "
                "qty INT, price DECIMAL(10,2), ts DATETIME(3))"
            )
            cursor.execute(
                f"INSERT INTO {database}.{table} VALUES "
                + ", ".join(
                    f"({i}, 'row {i}', {i * 10}, {i * 1.25:.2f}, NOW(3))"
                    for i in range(1, ROWS_PER_TABLE + 1)
                )
            )


def run_load(
    endpoints: StackEndpoints,
    database: str,
    tables: Sequence[str],
    rate: float,
    seconds: float,
    stop: threading.Event | None = None,
) -> tuple[int, float]:
    """Single-row autocommit UPDATEs, round-robin over ``tables`` (each table's rows in turn),
    at ``rate`` a second; transactions done and seconds taken."""
    statements = [
        f"UPDATE {database}.{table} SET qty = qty + 1, ts = NOW(3) WHERE id = %s"
        for table in tables
    ]
    connection = endpoints.mariadb.admin_source().connect()  # autocommit
    try:
        with connection.cursor() as cursor:

            def update(k: int) -> None:
                cursor.execute(statements[k % len(tables)], ((k // len(tables)) % 10 + 1,))

            return paced(update, rate, seconds, stop=stop)
    finally:
        connection.close()


def run_burst(endpoints: StackEndpoints, database: str, tables: Sequence[str]) -> dict[str, float]:
    """One autocommit ``UPDATE`` of each table, as fast as one connection goes; when each
    table's was sent (Unix time: ingest may read it before the client hears it is done)."""
    connection = endpoints.mariadb.admin_source().connect()  # autocommit
    written = {}
    try:
        with connection.cursor() as cursor:
            for table in tables:
                written[table] = time.time()
                cursor.execute(f"UPDATE {database}.{table} SET qty = qty + 1 WHERE id = 1")
    finally:
        connection.close()
    return written


def pipeline_file(
    folder: Path, lake: BenchLake, name: str, window_minutes: int, server_id: int = SERVER_ID
) -> Path:
    """A pipeline of every table of the database ``name`` into the namespace ``name`` of
    ``lake``, from their existing rows on, reporting to the topic ``name``."""
    endpoints = lake.endpoints
    path = folder / f"{name}.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            lake.endpoint,
            database=name,
            tables="\\.*",
            namespace=name,
            server_id=server_id,
            startup="initial",
            extra=(
                "tidemark:\n"
                f"  window: {window_minutes} min\n"
                "  reports:\n"
                f"    topic: {name}\n"
                f"    kafka.bootstrap.servers: {endpoints.kafka.bootstrap_servers}\n"
            ),
        )
    )
    return path


# --- one N ------------------------------------------------------------------------------------


class Phases:
    """One N's run: the processes, the files, and the result they fill in."""

    def __init__(self, lake: BenchLake, n: int, options: Options, folder: Path) -> None:
        self.endpoints = lake.endpoints
        self.lake = lake
        self.options = options
        self.name = f"scale_n{n}_{lake.storage}_{uuid.uuid4().hex[:6]}"
        self.tables = table_names(n)
        self.sinks = [f"{self.name}.{table}" for table in self.tables]
        self.changelogs = {f"{sink}_changelog" for sink in self.sinks}
        self.folder = folder
        self.result = ScaleResult(n, options, lake.storage)
        self.events = Events(folder / "events.jsonl")
        self.ingest: subprocess.Popen[bytes] | None = None
        self.launched = 0.0
        self.profile = folder / "profile.jsonl"
        #: (name, began, ended) of the idle minute and the load, for the profile
        self.spans: list[tuple[str, float, float]] = []

    # -- ingest

    def start_ingest(self, path: Path, lifetime: float) -> bool:
        """Start ingest and wait until it streams; False (and why) when it does not in time."""
        self.launched = time.time()
        self.ingest = start_process(
            [
                sys.executable,
                "-m",
                "bench.scale_ingest",
                str(path),
                "--events",
                str(self.events.path),
                "--max-seconds",
                f"{lifetime:.0f}",
                *(("--profile", str(self.profile)) if self.options.profile else ()),
                *(
                    ("--commit-threads", str(self.options.commit_threads))
                    if self.options.commit_threads is not None
                    else ()
                ),
            ],
            self.folder / "ingest.log",
        )
        deadline = time.monotonic() + self.options.start_timeout
        while time.monotonic() < deadline:
            self.events.poll()
            streaming = self.events.first("streaming")
            if streaming is not None:
                self._start_figures(streaming["at"])
                return True
            if self.ingest.poll() is not None:
                self._missing("start", f"ingest exited with code {self.ingest.returncode}")
                return False
            time.sleep(0.2)
        self._missing("start", f"not streaming after {self.options.start_timeout:.0f} s")
        return False

    def _start_figures(self, streaming_at: float) -> None:
        result = self.result
        result.start_s = streaming_at - self.launched
        for event, attribute in (
            ("onboard", "onboard_s"),
            ("bootstrap", "bootstrap_s"),
            ("build_runner", "build_runner_s"),
        ):
            found = self.events.first(event)
            if found is not None:
                setattr(result, attribute, found["ended"] - found["began"])
        if self.events.first("bootstrap") is None:
            result.bootstrap_s = 0.0

    def alive(self) -> bool:
        return self.ingest is not None and self.ingest.poll() is None

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` while ingest runs; False as soon as it does not."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        return self.alive()

    def _died(self, phase: str) -> None:
        code = self.ingest.returncode if self.ingest is not None else None
        self._missing(phase, f"ingest exited with code {code}")

    def _missing(self, phase: str, why: str) -> None:
        self.result.missing.setdefault(phase, why)
        sys.stdout.write(f"  {self.result.tables:,} tables, {phase}: {why}\n")
        if self.ingest is not None and self.ingest.poll() is not None:
            sys.stdout.write(log_tail(self.folder / "ingest.log", 60) + "\n")
            sys.stdout.write(f"  (its log is kept: {keep_log(self.folder / 'ingest.log')})\n")
        sys.stdout.flush()

    def _commits_between(self, began: float, ended: float) -> list[dict[str, Any]]:
        return [
            commit
            for commit in self.events.all("commit")
            if began <= commit["ended"] < ended and commit["table"] in self.changelogs
        ]

    # -- the phases

    def idle(self) -> tuple[float, Usage] | None:
        """The quiet minute; its end and the folder then, or None if ingest died."""
        assert self.ingest is not None
        if not self.wait(self.options.settle_seconds):
            self._died("idle")
            return None
        began, cpu, commits = time.time(), tree_cpu_seconds(self.ingest.pid), self._catalog()
        folder = self.lake.files(self.name)
        if not self.wait(self.options.idle_seconds):
            self._died("idle")
            return None
        ended = time.time()
        self.spans.append(("idle", began, ended))
        result = self.result
        result.idle_cpu_cores = (tree_cpu_seconds(self.ingest.pid) - cpu) / (ended - began)
        result.idle_catalog_commits_per_s = (self._catalog() - commits) / (ended - began)
        end_folder = self.lake.files(self.name)
        self.events.poll()
        result.idle_runner_commits_per_s = len(self._commits_between(began, ended)) / (
            ended - began
        )
        result.idle_mb_per_table_hour = _per_table_hour(
            end_folder.bytes - folder.bytes, len(self.tables), ended - began
        )
        return ended, end_folder

    def _catalog(self) -> float:
        try:
            return float(self.lake.commits(self.name))
        except psycopg2.Error as error:
            sys.stdout.write(f"  catalog not readable: {error}\n")
            return float("nan")

    def load(self, idle_ended: float, idle_folder: Usage) -> None:
        options, result = self.options, self.result
        assert self.ingest is not None
        pids = {INGEST: self.ingest.pid, **self.lake.pids}
        began, cpu = time.time(), read_cpu(pids)
        done, took = run_load(
            self.endpoints, self.name, self.tables, options.tps, options.load_seconds
        )
        ended = time.time()
        result.load_cpu = cores_between(cpu, read_cpu(pids))
        self.spans.append((f"{options.tps} tx/s", began, ended))
        result.load_tps = done / took
        if not self.alive():
            self._died("load")
            return
        self.events.poll()
        commits = [
            (c["ended"], c["table"], c["wm"])
            for c in self.events.all("commit")
            if c["table"] in self.changelogs
        ] + [  # a watermark report moves the tables it names as a commit would
            (w["at"], table, w["wm"])
            for w in self.events.all("watermark")
            for table in w["tables"]
            if table in self.changelogs
        ]
        lags = lag_samples(
            commits,
            sorted(self.changelogs),
            began + min(LOAD_WARM_UP_S, took / 2),
            ended,
            unknown_since=self.launched,
        )
        result.lag_p50_s = percentile(lags, 50)
        result.lag_p99_s = percentile(lags, 99)
        result.lag_max_s = max(lags) if lags else float("nan")
        result.load_commits_per_s = len(self._commits_between(began, ended)) / (ended - began)
        flushes = [
            f["ended"] - f["began"] for f in self.events.all("flush") if began <= f["ended"] < ended
        ]
        if flushes:
            result.flush_p50_s = statistics.median(flushes)
            result.flush_max_s = max(flushes)
        folder = self.lake.files(self.name)
        result.load_mb_per_table_hour = _per_table_hour(
            folder.bytes - idle_folder.bytes, len(self.tables), ended - idle_ended
        )

    def drain(self) -> None:
        """Bursts of one write per table, each followed by quiet (``drain_delays``)."""
        options = self.options
        for _ in range(options.bursts):
            if not self._quiet(options.drain_wait):
                if not self.alive():
                    self._died("drain")
                else:
                    self._missing("drain", "the load's rows were still committing")
                return
            written = run_burst(self.endpoints, self.name, self.tables)
            last_write = max(written.values())
            drained = self._drained(written, last_write + options.drain_wait)
            self.result.drain_delays.append(None if drained is None else drained - last_write)
            if not self.alive():
                self._died("drain")
                return

    def _quiet(self, timeout: float, quiet_for: float = 3.0) -> bool:
        """Wait until no commit with rows has ended for ``quiet_for`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            self.events.poll()
            last = max((c["ended"] for c in self.events.all("commit") if c["rows"]), default=0.0)
            if time.time() - last >= quiet_for:
                return True
            time.sleep(0.2)
        return False

    def _drained(self, written: Mapping[str, float], deadline: float) -> float | None:
        """When the last table's row of the burst was committed; None if not by ``deadline``."""
        waiting = {f"{self.name}.{table}_changelog": at for table, at in written.items()}
        last = 0.0
        while time.time() < deadline and self.alive():
            self.events.poll()
            for commit in self.events.all("commit"):
                at = waiting.get(commit["table"])
                if at is not None and commit["rows"] and commit["began"] >= at:
                    del waiting[commit["table"]]
                    last = max(last, commit["ended"])
            if not waiting:
                return last
            time.sleep(0.1)
        return None

    def windows(self, path: Path, cleanup: ExitStack) -> None:
        """The scheduler with Spark, under a light load, until the measured windows are merged
        or ``merge_wait`` after the last one ends."""
        options = self.options
        length = timedelta(minutes=options.window_minutes)
        log = self.folder / "scheduler.log"
        launched = time.time()
        lifetime = (
            options.scheduler_start_timeout
            + SCHEDULER_WARM_UP_S
            + (options.windows + 1) * length.total_seconds()
            + options.merge_wait
            + 60
        )
        scheduler = start_process(
            [
                sys.executable,
                "-m",
                "tidemark.app.cli",
                "schedule",
                str(path),
                "--max-seconds",
                f"{lifetime:.0f}",
                "--max-workers",
                str(options.scheduler_workers),
                *(
                    ["--merge-processes", str(options.merge_processes)]
                    if options.merge_processes is not None
                    else []
                ),
            ],
            log,
        )
        cleanup.callback(stop_process, scheduler, 30)
        stop_load = threading.Event()
        load = threading.Thread(
            target=run_load,
            args=(self.endpoints, self.name, self.tables, options.scheduler_tps, lifetime),
            kwargs={"stop": stop_load},
            daemon=True,
        )
        load.start()
        try:
            self._windows(scheduler, launched, log, length, stop_load)
        finally:
            stop_load.set()
            load.join(30)

    def _windows(
        self,
        scheduler: subprocess.Popen[bytes],
        launched: float,
        log: Path,
        length: timedelta,
        stop_load: threading.Event,
    ) -> None:
        options, result = self.options, self.result
        deadline = time.monotonic() + options.scheduler_start_timeout
        while "Scheduler started for" not in log_tail(log, 400):
            if scheduler.poll() is not None or time.monotonic() > deadline:
                why = (
                    f"the scheduler exited with code {scheduler.returncode}"
                    if scheduler.poll() is not None
                    else f"the scheduler did not start in {options.scheduler_start_timeout:.0f} s"
                )
                self._missing("windows", why)
                sys.stdout.write(log_tail(log, 40) + f"\n  (its log is kept: {keep_log(log)})\n")
                return
            time.sleep(0.5)
        ready, cpu = time.time(), tree_cpu_seconds(scheduler.pid)
        ends = first_window_ends(
            datetime.fromtimestamp(ready + SCHEDULER_WARM_UP_S, UTC), length, options.windows
        )
        result.window_ends = ends
        last = ends[-1].timestamp()
        sys.stdout.write(
            f"  scheduler up after {ready - launched:.0f} s; measuring "
            f"the windows ending {', '.join(f'{end:%H:%M}' for end in ends)} UTC\n"
        )
        sys.stdout.flush()
        runs: list[tuple[str, datetime, str, datetime]] = []
        while True:
            now = time.time()
            if now >= last:
                stop_load.set()
            runs = self._window_runs()
            delays = merge_delays(runs, self.sinks, ends)
            if now >= last and all(delay is not None for delay in delays):
                break
            if now >= last + options.merge_wait:
                break
            if scheduler.poll() is not None:
                self._missing("windows", f"the scheduler exited with code {scheduler.returncode}")
                sys.stdout.write(log_tail(log, 40) + f"\n  (its log is kept: {keep_log(log)})\n")
                break
            if not self.alive():
                self._died("windows")
                break
            time.sleep(2.0)
        ended = time.time()
        result.scheduler_cpu_cores = (tree_cpu_seconds(scheduler.pid) - cpu) / (ended - ready)
        if "windows" not in result.missing:  # cut short: the delays would say nothing
            result.merge_delays = merge_delays(runs, self.sinks, ends)
        merged = [
            at
            for task, _end, state, at in runs
            if state == "succeeded" and task.startswith("mirror:") and at.timestamp() >= ready
        ]
        result.merges_per_minute = len(merged) / ((ended - ready) / 60)
        for task, end, state, _at in sorted(runs, key=lambda run: run[1]):
            if state == "succeeded" and task.startswith("mirror:"):
                result.merged_by_end[end] = result.merged_by_end.get(end, 0) + 1

    def _window_runs(self) -> list[tuple[str, datetime, str, datetime]]:
        with self.lake.state_cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s)", (f"{DEFAULT_SCHEMA}.window_runs",))
            if (cursor.fetchone() or (None,))[0] is None:
                return []
            cursor.execute(
                f"SELECT task, window_end, state, updated_at FROM {DEFAULT_SCHEMA}.window_runs "
                "WHERE pipeline = %s",
                (self.name,),
            )
            return list(cursor.fetchall())

    def finish(self) -> None:
        """Memory and the warehouse's size at the end, while ingest still runs."""
        result = self.result
        if self.alive():
            assert self.ingest is not None
            result.peak_rss_mb = peak_rss_mb(self.ingest.pid)
            readers = [peak_rss_mb(pid) for pid in descendants(self.ingest.pid)]
            result.reader_peak_rss_mb = max(readers, default=float("nan"))
        folder = self.lake.files(self.name)
        if folder.metadata_files:
            result.end_mb_per_table = folder.bytes / 2**20 / len(self.tables)

    def count_metadata_files(self) -> None:
        """Each table's metadata files once ingest has stopped: while it runs, a commit under
        way has written its new file and not yet removed the oldest (four commit at once)."""
        folder = self.lake.files(self.name)
        if folder.metadata_files:
            result = self.result
            result.metadata_files_max = max(folder.metadata_files.values())
            result.changelog_metadata_files_max = max(
                (count for table, count in folder.metadata_files.items() if "changelog" in table),
                default=float("nan"),
            )


def profile_summary(path: Path, began: float, ended: float, top: int = 25) -> str:
    """The frames ``bench.scale_ingest --profile`` saw most often between ``began`` and
    ``ended``: per frame, the share of samples whose stack holds it (those in every sample, the
    way down to the loop, left out)."""
    stacks: dict[int, list[str]] = {}
    counts: dict[str, int] = {}
    samples = 0
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return "    (no samples)\n"
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue  # the last line, cut by a kill
        if "stack" in item:
            stacks[item["stack"]] = item["frames"]
        elif began <= item["t"] < ended:
            samples += 1
            for frame in dict.fromkeys(stacks.get(item["s"], [])):
                counts[frame] = counts.get(frame, 0) + 1
    if not samples:
        return "    (no samples)\n"
    ranked = sorted(
        ((frame, n) for frame, n in counts.items() if n < samples), key=lambda item: -item[1]
    )[:top]
    if not ranked:  # every sample in the same frames: show where they end
        deepest = max(counts, key=lambda frame: (counts[frame], list(counts).index(frame)))
        return f"    (all {samples} samples in one stack, down to {deepest})\n"
    return "".join(f"    {100 * n / samples:5.1f}%  {frame}\n" for frame, n in ranked)


def _per_table_hour(grown: int, tables: int, seconds: float) -> float:
    return grown / 2**20 / tables / (seconds / 3600)


def measure(lake: BenchLake, n: int, options: Options) -> ScaleResult:
    endpoints = lake.endpoints
    with tempfile.TemporaryDirectory(prefix="scale_bench_") as scratch:
        phases = Phases(lake, n, options, Path(scratch))
        run_started = time.time()
        sys.stdout.write(f"\n{n:,} tables on {lake.label}: {phases.name}\n")
        sys.stdout.flush()
        with ExitStack() as cleanup:
            _create(endpoints, phases, cleanup)
            sys.stdout.write(f"  source created in {time.time() - run_started:.0f} s\n")
            path = pipeline_file(Path(scratch), lake, phases.name, options.window_minutes)
            lifetime = (
                options.start_timeout
                + options.settle_seconds
                + options.idle_seconds
                + options.load_seconds
                + (
                    options.scheduler_start_timeout
                    + (options.windows + 2) * options.window_minutes * 60
                    + options.merge_wait
                    if options.scheduler
                    else 0
                )
                + 300
            )
            cleanup.callback(_stop_ingest, phases, 60 + 0.1 * n)
            try:
                _phases(phases, path, lifetime, cleanup)
            except Exception as error:  # a figure not measured says why; the next N runs
                traceback.print_exc(file=sys.stdout)
                phases.result.missing.setdefault("error", f"{type(error).__name__}: {error}")
        if options.profile:  # ingest has stopped: its sampler has written every sample
            for span, began, ended in phases.spans:
                sys.stdout.write(
                    f"  ingest's main thread, {span} ({ended - began:.0f} s), inclusive:\n"
                    + profile_summary(phases.profile, began, ended)
                )
        return phases.result


def _phases(phases: Phases, path: Path, lifetime: float, cleanup: ExitStack) -> None:
    if not phases.start_ingest(path, lifetime):
        return
    result = phases.result
    sys.stdout.write(
        f"  streaming after {result.start_s:.1f} s (onboard {result.onboard_s:.1f} s, "
        f"bootstrap {result.bootstrap_s:.1f} s)\n"
    )
    sys.stdout.flush()
    idled = phases.idle()
    if idled is not None:
        phases.load(*idled)
        if phases.alive():
            phases.drain()
        if phases.options.scheduler and phases.alive():
            phases.windows(path, cleanup)
    phases.finish()


def _stop_ingest(phases: Phases, timeout: float) -> None:
    if phases.ingest is None:
        return
    stop_process(phases.ingest, timeout)
    phases.count_metadata_files()
    phases.events.poll()
    stopped = phases.events.first("stopped")
    if stopped is not None:
        sys.stdout.write(
            f"  ingest stopped ({stopped['reason']}): {stopped['rows']:,} rows in "
            f"{stopped['commits']:,} commits\n"
        )


def _create(endpoints: StackEndpoints, phases: Phases, cleanup: ExitStack) -> None:
    """The source tables, the report topic; and their removal, with the namespace, the
    scheduler's state and its consumer group, registered first (they run last)."""
    name = phases.name
    cleanup.callback(drop_database, endpoints, name)
    create_source(endpoints, name, phases.tables)
    kafka = AdminClient({"bootstrap.servers": endpoints.kafka.bootstrap_servers})
    kafka.create_topics([NewTopic(name, num_partitions=1)])[name].result(timeout=30)
    cleanup.callback(_delete_topic, kafka, name)
    cleanup.callback(phases.lake.drop_namespace, name)
    cleanup.callback(_forget_schedule, phases.lake, kafka, name, sorted(phases.changelogs))


def drop_database(endpoints: StackEndpoints, name: str) -> None:
    with endpoints.mariadb.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")


def _delete_topic(kafka: AdminClient, name: str) -> None:
    kafka.delete_topics([name])[name].result(timeout=30)


def _forget_schedule(lake: BenchLake, kafka: AdminClient, name: str, changelogs: list[str]) -> None:
    StateStore(lake.state()).forget(name, changelogs)
    group = GROUP_PREFIX + name
    with _ignoring(Exception):  # no such group: the scheduler never ran
        kafka.delete_consumer_groups([group])[group].result(timeout=30)


# --- figures and the console -----------------------------------------------------------------


def _load_cpu_figures(
    result: ScaleResult, load: str, figure: Callable[[str, str, float, str], Figure]
) -> list[Figure]:
    """Where the cores went under the load: ingest, the lake's servers (the catalog's and the
    storage's: PostgreSQL, and the REST server and object store on S3), the whole machine
    (the source server and Kafka too)."""
    cpu = result.load_cpu
    services = [cores for name, cores in cpu.items() if name not in (INGEST, MACHINE)]
    nan = float("nan")
    return [
        figure("load", f"{load}: ingest CPU", cpu.get(INGEST, nan), "cores"),
        figure(
            "load",
            f"{load}: CPU of the catalog's and the storage's servers",
            sum(services) if services else nan,
            "cores",
        ),
        figure(
            "load", f"{load}: CPU of all the machine's processes", cpu.get(MACHINE, nan), "cores"
        ),
    ]


def run_label(result: ScaleResult) -> str:
    """What a run's figures are named after: N, the lake, and ingest's commit threads when the
    run set them."""
    label = f"{result.tables:,} tables on {LABELS[result.storage]}"
    threads = result.options.commit_threads
    return label if threads is None else f"{label} ({threads} commit threads)"


def figures(result: ScaleResult, label: str | None = None, *, why: bool = True) -> list[Figure]:
    """Issue #25's targets, at 1,000 tables and more, and on S3 issue #44's (the same bounds
    for start, idle commits, lag and merges); named after ``label`` (``run_label``'s by
    default); a figure not measured says why, unless not ``why``."""
    n, options = result.tables, result.options
    at_scale = n >= 1000
    on_storage = ISSUES[result.storage]

    def figure(
        phase: str,
        text: str,
        value: float,
        unit: str,
        op: str = "",
        bound: float = 0.0,
        issue: int = ISSUE,
    ) -> Figure:
        if value != value and why:  # NaN: why, from its phase or else the phase that failed first
            reason = missing.get(phase) or next(iter(result.missing.values()), None)
            text = f"{text} ({reason})" if reason else text
        target = Target(op, bound, issue) if op and at_scale else None
        return Figure("scale", text, value, unit, target)

    missing = dict(result.missing)
    if result.merge_delays:  # measured, but merged later than the wait
        missing["merges"] = f"not all merged {options.merge_wait:.0f} s after the end"
    if None in result.drain_delays:
        missing.setdefault("drain", f"not committed {options.drain_wait:.0f} s after the burst")
    label = run_label(result) if label is None else label
    load = f"{label}, {options.tps} tx/s"
    out = [
        figure("start", f"{label}: start → streaming", result.start_s, "s", "<=", 30, on_storage),
        figure("start", f"{label}: onboard", result.onboard_s, "s"),
        figure("start", f"{label}: bootstrap", result.bootstrap_s, "s"),
        figure(
            "idle",
            f"{label}, idle: catalog commits/s",
            result.idle_catalog_commits_per_s,
            "commits/s",
            "<=",
            2,
            on_storage,
        ),
        figure(
            "idle",
            # the minute measured ends before the first round: ingest paces one empty commit per
            # table over each idle-commit-interval, from its start
            f"{label}, idle: empty commits/s once paced (N ÷ idle-commit-interval, by design)",
            n / IngestOptions().idle_commit_interval.total_seconds(),
            "commits/s",
            "<=",
            2,
            on_storage,
        ),
        figure(
            "idle",
            f"{label}, idle: ingest CPU, % of a core",
            100 * result.idle_cpu_cores,
            "%",
            "<=",
            10,
        ),
        figure("load", f"{load}: transactions/s reached", result.load_tps, "tx/s"),
        figure("load", f"{load}: watermark lag p50", result.lag_p50_s, "s"),
        figure("load", f"{load}: watermark lag p99", result.lag_p99_s, "s", "<=", 10, on_storage),
        figure("load", f"{load}: table commits/s", result.load_commits_per_s, "commits/s"),
        *_load_cpu_figures(result, load, figure),
    ]
    if options.bursts:
        drains = [float("inf") if d is None else d for d in result.drain_delays]
        burst = f"{label}, a burst of one write per table, then quiet"
        out += [
            figure("drain", f"{burst}: last row committed, p50", percentile(drains, 50), "s"),
            figure(
                "drain",
                f"{burst}: last row committed, p95",
                percentile(drains, 95),
                "s",
                "<=",
                10,
                46,
            ),
        ]
    if options.scheduler:
        windows = f"{label}, {options.window_minutes}-min windows"
        delays = [float("inf") if d is None else d for d in result.merge_delays]
        within = 100 * sum(d <= 60 for d in delays) / len(delays) if delays else float("nan")
        measured = float(len(delays)) if delays else float("nan")
        merges = "merges" if delays else "windows"
        out += [
            figure("windows", f"{windows}: mirror windows measured", measured, ""),
            figure(
                merges,
                f"{windows}: window end → mirror merged, p50",
                percentile(delays, 50),
                "s",
            ),
            figure(
                merges,
                f"{windows}: window end → mirror merged, p95",
                percentile(delays, 95),
                "s",
                "<=",
                60,
                on_storage,
            ),
            figure("windows", f"{windows}: mirrors merged within 60 s of the end", within, "%"),
            figure(
                "windows",
                f"{windows}: mirror merges finished per minute "
                f"({n / options.window_minutes:,.0f} needed)",
                result.merges_per_minute,
                "merges/min",
            ),
            figure(
                "windows",
                f"{windows}: scheduler CPU (with its JVM)",
                result.scheduler_cpu_cores,
                "cores",
            ),
        ]
    out += [
        figure("end", f"{label}: ingest peak RSS", result.peak_rss_mb, "MB", "<=", 1024),
        figure(
            "idle",
            f"{label}, idle: warehouse growth per table-hour",
            result.idle_mb_per_table_hour,
            "MB",
        ),
        figure(
            "load",
            f"{load}: warehouse growth per table-hour",
            result.load_mb_per_table_hour,
            "MB",
        ),
        figure(
            "end",
            f"{label}: metadata files per table at the end, max",
            result.metadata_files_max,
            "",
            "<=",
            11,
        ),
    ]
    return out


def side_by_side(results: Sequence[ScaleResult]) -> str:
    """Each N's figures on every lake it ran on, one column per lake (why a figure is missing
    is in the table of every figure)."""
    tables = []
    for n in dict.fromkeys(result.tables for result in results):
        runs = [result for result in results if result.tables == n]
        tables.append(
            render_columns(
                [LABELS[run.storage] for run in runs],
                [figures(run, f"{n:,} tables", why=False) for run in runs],
            )
        )
    return "\n".join(tables)


def details(result: ScaleResult) -> str:
    """What the figures leave out, for the console."""
    delays = [d for d in result.merge_delays if d is not None]
    lines = [
        f"{run_label(result)}: build_runner {result.build_runner_s:.1f} s; idle: the runner's own "
        f"{result.idle_runner_commits_per_s:.1f} commits/s; load: one flush median "
        f"{result.flush_p50_s:.2f} s, max {result.flush_max_s:.2f} s; lag max "
        f"{result.lag_max_s:.1f} s; reader child peak RSS {result.reader_peak_rss_mb:.0f} MB; "
        f"warehouse {result.end_mb_per_table:.3f} MB per table at the end; changelog "
        f"metadata files max {result.changelog_metadata_files_max:.0f}",
    ]
    if result.load_cpu:
        lines.append(
            "  CPU under the load, cores: "
            + ", ".join(f"{name} {cores:.2f}" for name, cores in result.load_cpu.items())
        )
    if result.merged_by_end:
        lines.append(
            "  mirror merges done by the end, per window end: "
            + ", ".join(f"{end:%H:%M} {count}" for end, count in result.merged_by_end.items())
        )
    if result.window_ends:
        lines.append(
            f"  windows ending {', '.join(f'{end:%H:%M}' for end in result.window_ends)} UTC: "
            f"{len(delays)} of {len(result.merge_delays)} mirror merges done"
            + (f", from {min(delays):.1f} s to {max(delays):.1f} s after the end" if delays else "")
        )
        per_window = len(result.merge_delays) // len(result.window_ends)
        for number, end in enumerate(result.window_ends):
            mine = result.merge_delays[number * per_window : (number + 1) * per_window]
            finished = [float("inf") if d is None else d for d in mine]
            if finished:
                lines.append(
                    f"  window ending {end:%H:%M}: merged p50 {percentile(finished, 50):.1f} s, "
                    f"p95 {percentile(finished, 95):.1f} s after the end"
                )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None = None) -> tuple[Options, Path | None]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10, 100; short phases")
    parser.add_argument("--tables", type=int, nargs="+", help="the values of N")
    parser.add_argument("--settle-seconds", type=float)
    parser.add_argument("--idle-seconds", type=float)
    parser.add_argument("--load-seconds", type=float)
    parser.add_argument("--tps", type=int, help="transactions/s of the load")
    parser.add_argument("--no-scheduler", action="store_true", help="skip the windows (Spark)")
    parser.add_argument("--window-minutes", type=int, help="5 by default, 1 with --quick")
    parser.add_argument("--windows", type=int, help="window ends measured")
    parser.add_argument("--merge-wait", type=float, help="seconds after the last window's end")
    parser.add_argument("--bursts", type=int, help="bursts of one write per table (0: none)")
    parser.add_argument("--drain-wait", type=float, help="seconds a burst may take to commit")
    parser.add_argument("--scheduler-tps", type=int, help="transactions/s while scheduling")
    parser.add_argument("--scheduler-workers", type=int, help="the scheduler's --max-workers")
    parser.add_argument(
        "--merge-processes", type=int, help="the scheduler's --merge-processes (0: in its threads)"
    )
    parser.add_argument("--start-timeout", type=float, help="seconds until ingest streams")
    parser.add_argument(
        "--profile", action="store_true", help="sample ingest's stack; print the idle and load"
    )
    parser.add_argument(
        "--storage",
        nargs="+",
        choices=STORAGES,
        help="the lakes to run each N on, in turn (default: local); two: side by side",
    )
    parser.add_argument(
        "--commit-threads", type=int, help="ingest's commit threads, for this run only"
    )
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args(argv)
    options = QUICK if args.quick else Options()
    given = {
        key: getattr(args, key)
        for key in (
            "settle_seconds",
            "idle_seconds",
            "load_seconds",
            "tps",
            "window_minutes",
            "windows",
            "merge_wait",
            "bursts",
            "drain_wait",
            "scheduler_tps",
            "scheduler_workers",
            "merge_processes",
            "start_timeout",
            "commit_threads",
        )
        if getattr(args, key) is not None
    }
    if args.storage:
        given["storages"] = tuple(dict.fromkeys(args.storage))
    if args.tables:
        given["tables"] = tuple(args.tables)
    if args.no_scheduler:
        given["scheduler"] = False
    if args.profile:
        given["profile"] = True
    return replace(options, **given), args.figures


def main(argv: Sequence[str] | None = None) -> int:
    options, figures_path = parse_args(argv)
    stack = Stack(StackSettings.from_env())
    endpoints, status = stack.endpoints(), stack.status()
    started = datetime.now(UTC)
    sys.stdout.write(
        f"machine: {os.cpu_count()} cores, load average {load_average()}; "
        f"{', '.join(f'{n:,}' for n in options.tables)} tables; idle "
        f"{options.idle_seconds:g} s, load {options.tps} tx/s for {options.load_seconds:g} s"
        + (f", {options.window_minutes}-min windows" if options.scheduler else ", no scheduler")
        + "\n"
    )
    results = []
    for n in options.tables:
        for storage in options.storages:  # each N on every lake in turn: alike conditions
            results.append(measure(bench_lake(endpoints, storage, status), n, options))
            sys.stdout.write(details(results[-1]))
            sys.stdout.flush()
    every = [figure for result in results for figure in figures(result)]
    sys.stdout.write(f"load average at the end {load_average()}\n\n")
    machine = this_machine()
    sys.stdout.write(render(every, machine, started))
    if len(options.storages) > 1:
        sys.stdout.write(f"\nSide by side ({machine.describe()}):\n\n{side_by_side(results)}")
    if figures_path:
        write_figures(figures_path, every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
