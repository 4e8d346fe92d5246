"""Window latency benchmark (issue #8): how soon after a window's end its results are in.

Under a steady sysbench ``oltp_write_only`` load (one thread at ``--tps``), ``tidemark run``
follows a fresh sysbench table as a user runs it (ingest as a child process, the scheduler,
one warm Spark session) with one-minute windows and one job: an ordinary SQL statement that
counts the mirror's rows per window into a report table. After ``--minutes`` of load it reads,
from the scheduler's state in PostgreSQL, when each window's mirror merge and job succeeded,
and from the changelog's snapshot history when the commit that completed the window (the one
its commit report announced) was made.
The first window (the bootstrap's) is left out.

Figures, not assertions: ``python -m bench.latency_bench [--minutes 4] [--tps 200]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg2
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog import Catalog

from bench.ingest_bench import sysbench, sysbench_async
from bench.report import Figure, Target, write_figures
from bench.scratch import drop_namespace, stack_catalog
from scheduler.gate import job_task, mirror_task
from scheduler.state import DEFAULT_SCHEMA, StateSettings, StateStore
from tidemark.contracts.changelog import SummaryKey
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

JOB = "changes_per_window"
JOB_SQL = """\
CREATE TABLE IF NOT EXISTS {catalog}.{namespace}.rows_per_window (
    window_end TIMESTAMP, mirror_rows BIGINT
) USING iceberg;
INSERT INTO {catalog}.{namespace}.rows_per_window
SELECT TIMESTAMP '${{window_end}}', count(*) FROM {catalog}.{namespace}.sbtest1;
"""


@dataclass(frozen=True)
class WindowTimes:
    window_end: datetime
    #: seconds after the window's end
    merged_s: float
    job_done_s: float
    #: seconds from the commit of the report that completed the window to the job's success
    report_to_job_s: float


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=4, help="how long the load runs")
    parser.add_argument("--tps", type=int, default=200, help="sysbench transactions per second")
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    windows = measure(args.minutes, args.tps)
    sys.stdout.write(table(windows, args.tps))
    if args.figures:
        write_figures(args.figures, figures(windows, args.tps))
    return 0


def measure(minutes: float, tps: int) -> list[WindowTimes]:
    endpoints = Stack(StackSettings.from_env()).endpoints()
    name = f"bench_latency_{uuid.uuid4().hex[:6]}"
    admin = endpoints.mariadb.admin_source()
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    kafka = AdminClient({"bootstrap.servers": endpoints.kafka.bootstrap_servers})
    kafka.create_topics([NewTopic(name, num_partitions=1)])[name].result(timeout=30)
    state = StateSettings.from_catalog(endpoints.catalog.properties(), schema=DEFAULT_SCHEMA)
    try:
        sysbench(endpoints.mariadb, name, "prepare", threads=1)
        with tempfile.TemporaryDirectory() as folder:
            path = _pipeline(Path(folder), endpoints, name)
            run = subprocess.Popen(
                [sys.executable, "-m", "tidemark.app.cli", "run", str(path)],
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                load = sysbench_async(endpoints.mariadb, name, 1, round(minutes * 60), tps)
                load.communicate()
                _until_windows_end(state, name, time.time())
            finally:
                run.send_signal(signal.SIGTERM)
                run.wait(timeout=120)
        commits = _watermark_commits(stack_catalog(endpoints), f"{name}.sbtest1_changelog")
        return _window_times(state, name, commits)
    finally:
        StateStore(state).forget(name, [f"{name}.sbtest1_changelog"])
        kafka.delete_topics([name])[name].result(timeout=30)
        drop_namespace(stack_catalog(endpoints), name)
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {name}")


def _pipeline(folder: Path, endpoints: StackEndpoints, name: str) -> Path:
    (folder / "job.sql").write_text(JOB_SQL.format(catalog=endpoints.catalog.name, namespace=name))
    path = folder / "pipeline.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            endpoints.catalog,
            database=name,
            tables="sbtest1",
            namespace=name,
            server_id=4960,
            startup="initial",
            extra=(
                "tidemark:\n"
                "  window: 1 min\n"
                "  reports:\n"
                f"    topic: {name}\n"
                f"    kafka.bootstrap.servers: {endpoints.kafka.bootstrap_servers}\n"
                "  jobs:\n"
                f"    {JOB}:\n"
                f"      inputs: [{name}.sbtest1]\n"
                "      sql: job.sql\n"
            ),
        )
    )
    return path


def _until_windows_end(state: StateSettings, pipeline: str, load_ended: float) -> None:
    """Wait (up to three minutes) for the job of the window holding the load's end."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        with _cursor(state) as cursor:
            cursor.execute(
                f"SELECT max(window_end) FROM {state.schema}.window_runs "
                "WHERE pipeline = %s AND task = %s AND state = 'succeeded'",
                (pipeline, str(job_task(JOB))),
            )
            (done,) = cursor.fetchone() or (None,)
        if done is not None and done.timestamp() >= load_ended:
            return
        time.sleep(2)  # a benchmark's wait for Spark, not a test's
    raise TimeoutError("the last window's job did not succeed within 3 minutes of the load")


def _watermark_commits(catalog: Catalog, changelog: str) -> list[tuple[int, float]]:
    """(watermark ms, commit time s) of each ingest commit of ``changelog``, from its snapshot
    history: what each commit report said (the scheduler prunes the reports it has used)."""
    commits = []
    for snapshot in catalog.load_table(changelog).snapshots():
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        if SummaryKey.WATERMARK in summary:
            commits.append((int(summary[SummaryKey.WATERMARK]), snapshot.timestamp_ms / 1000))
    return sorted(commits)


def _window_times(
    state: StateSettings, pipeline: str, commits: list[tuple[int, float]]
) -> list[WindowTimes]:
    merge, job = str(mirror_task(f"{pipeline}.sbtest1")), str(job_task(JOB))
    with _cursor(state) as cursor:
        cursor.execute(
            f"SELECT task, window_end, updated_at FROM {state.schema}.window_runs "
            "WHERE pipeline = %s AND state = 'succeeded' ORDER BY window_end",
            (pipeline,),
        )
        done = {(task, end): at for task, end, at in cursor.fetchall()}
        times = []
        for (task, end), job_done in sorted(done.items(), key=lambda item: item[0][1]):
            if task != job or (merge, end) not in done:
                continue
            end_ms = int(end.timestamp() * 1000)
            completed = min((at for mark, at in commits if mark >= end_ms), default=None)
            if completed is None:
                continue
            times.append(
                WindowTimes(
                    end,
                    (done[(merge, end)] - end).total_seconds(),
                    (job_done - end).total_seconds(),
                    job_done.timestamp() - completed,
                )
            )
    return times[1:]  # the first window is the bootstrap's


@contextmanager
def _cursor(state: StateSettings) -> Iterator[psycopg2.extensions.cursor]:
    params: dict[str, Any] = dict(state.connection)
    connection = psycopg2.connect(**params)
    try:
        yield connection.cursor()
    finally:
        connection.close()


def _p(values: list[float], p: int) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def figures(windows: list[WindowTimes], tps: int) -> list[Figure]:
    """Issue #8's target: the job done within 30 s of the window's end at p95."""
    merged = [w.merged_s for w in windows]
    job = [w.job_done_s for w in windows]
    report = [w.report_to_job_s for w in windows]
    load = f"sysbench 1 thread at {tps} TPS, 1-min windows"
    return [
        Figure("latency", f"{load}: windows measured", len(windows), ""),
        Figure("latency", "window end → mirror merged, p50", _p(merged, 50), "s"),
        Figure("latency", "window end → mirror merged, p95", _p(merged, 95), "s"),
        Figure("latency", "window end → job done, p50", _p(job, 50), "s"),
        Figure("latency", "window end → job done, p95", _p(job, 95), "s", Target("<", 30, 8)),
        Figure("latency", "completing commit report → job done, p50", _p(report, 50), "s"),
        Figure("latency", "completing commit report → job done, p95", _p(report, 95), "s"),
    ]


def table(windows: list[WindowTimes], tps: int) -> str:
    lines = [
        f"sysbench oltp_write_only, 1 thread at {tps} TPS; seconds after each window's end",
        "",
        "| window end | mirror merged | job done | report committed → job done |",
        "|---|---|---|---|",
        *(
            f"| {w.window_end:%H:%M} | {w.merged_s:.1f} | {w.job_done_s:.1f} | "
            f"{w.report_to_job_s:.1f} |"
            for w in windows
        ),
    ]
    if windows:
        lines.append(
            f"| median | {statistics.median(w.merged_s for w in windows):.1f} | "
            f"{statistics.median(w.job_done_s for w in windows):.1f} | "
            f"{statistics.median(w.report_to_job_s for w in windows):.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
