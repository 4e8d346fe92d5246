"""Mirror merges in worker processes (``spark_jobs.merge.processes``): they run there, their log
lines reach the scheduler's log, a worker that dies is replaced and costs nothing else, and no
worker outlives its scheduler. That such merges leave the mirror as Spark's do is
``test_arrow_merge``'s differential test, run in workers too."""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyspark.sql import SparkSession

from bench.polling import wait_until
from spark_jobs.merge.lake import MergeRequest
from spark_jobs.merge.processes import CatalogAddress, MergeProcesses
from spark_jobs.merge.request import MirrorSpec
from tests.spark_jobs.orders_windows import StartOrders, mirror_rows
from tests.spark_jobs.sources import source_rows
from tidemark.errors import ConfigError
from tidemark.windows import Window

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection

ROOT = Path(__file__).resolve().parents[2]
ONE_SHARD = "SELECT order_no, status, amount FROM orders_0 ORDER BY order_no"
WINDOW = Window.ending_at(datetime(2026, 1, 1, 10, 5, tzinfo=UTC), timedelta(minutes=5))
#: a scheduler in miniature: starts the workers, names them, and waits
SCHEDULER = """
import sys
from spark_jobs.merge.lake import MergeRequest
from spark_jobs.merge.processes import CatalogAddress, MergeProcesses
from spark_jobs.merge.request import MirrorSpec
processes = MergeProcesses(2)
print(*processes.pids(), flush=True)
sys.stdin.read()
"""


def test_a_merge_runs_in_a_worker_process_whose_log_lines_reach_the_scheduler_log(
    orders_windows: StartOrders, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):  # before the workers start: they log at this level
        orders = orders_windows(in_processes=True)
        outcome = orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 1, NULL)")

        # a worker's records come on a pipe of their own, not with its answer
        created = wait_until(
            "the worker's 'Creating mirror' record in the log", lambda: created_records(caplog), 10
        )

    assert [record.name for record in created] == ["spark_jobs.merge.arrow"]
    assert created[0].process != os.getpid()
    assert not outcome.by_spark
    assert outcome.changes == 1


def created_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.msg.startswith("Creating mirror")]


def test_workers_killed_between_windows_are_replaced_and_the_next_merge_runs_on_the_new_ones(
    orders_windows: StartOrders,
    merge_processes: MergeProcesses,
    admin_connection: Connection,
    spark: SparkSession,
) -> None:
    orders = orders_windows(in_processes=True)
    first = orders.change_and_merge("INSERT INTO orders_0 VALUES (1, 101, 'new', 1, NULL)")
    orders.change(
        "UPDATE orders_0 SET status = 'paid' WHERE order_no = 101",
        "INSERT INTO orders_0 VALUES (2, 102, 'new', 2, NULL)",
    )
    killed = merge_processes.pids()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)

    merged = orders.merge(orders.window_after(first.window))

    assert (merged.previous_order, merged.changes) == (first.merged_order, 2)
    assert mirror_rows(spark, orders.mirror) == source_rows(admin_connection, ONE_SHARD)
    assert not set(merge_processes.pids()) & set(killed)


def test_an_error_of_the_merge_itself_comes_back_from_the_worker_as_it_is(
    merge_processes: MergeProcesses,
) -> None:
    unusable = CatalogAddress.of("tidemark", {"type": "hadoop", "warehouse": "file:///tmp"})
    request = MergeRequest("shop.orders", MirrorSpec("m", "c", ("id",)), "ns.c", "ns.m", WINDOW)

    with pytest.raises(ConfigError, match="cannot be shared with PyIceberg"):
        merge_processes.merge(unusable, request)


def running(pid: int) -> bool:
    """Whether ``pid`` runs: neither gone nor a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_workers_end_with_a_scheduler_killed_with_sigkill() -> None:
    scheduler = subprocess.Popen(
        [sys.executable, "-c", SCHEDULER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    workers: list[int] = []
    try:
        workers = [int(pid) for pid in first_line(scheduler, timeout=60).split()]
        assert len(workers) == 2 and all(running(pid) for pid in workers)

        scheduler.kill()
        scheduler.wait(10)

        wait_until(
            "the workers ended with their scheduler",
            lambda: not any(running(pid) for pid in workers),
            15,
        )
    finally:
        scheduler.kill()
        for pid in workers:  # not to leave them to the rest of the suite
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], timeout)
    assert readable, f"no line from the process within {timeout} s"
    return process.stdout.readline()
