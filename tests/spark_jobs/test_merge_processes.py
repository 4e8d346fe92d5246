"""Mirror merges in worker processes (``spark_jobs.merge_processes``): they run there, their log
lines reach the scheduler's log, a worker that dies costs a retry and nothing else, and no
worker outlives its scheduler. That such merges leave the mirror as Spark's do is
``test_arrow_merge``'s differential test, run in workers too."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyspark.sql import SparkSession

from spark_jobs.merge_processes import MergeProcesses
from tests.spark_jobs.orders_windows import StartOrders, mirror_rows
from tests.spark_jobs.sources import source_rows
from tidemark.errors import TransientError

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection

ROOT = Path(__file__).resolve().parents[2]
ONE_SHARD = "SELECT order_no, status, amount FROM orders_0 ORDER BY order_no"
#: a scheduler in miniature: starts the workers, names them, and waits
SCHEDULER = """
import sys
from spark_jobs.merge_processes import MergeProcesses
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

    created = [record for record in caplog.records if record.msg.startswith("Creating mirror")]
    assert [record.name for record in created] == ["spark_jobs.arrow_merge"]
    assert created[0].process != os.getpid()
    assert not outcome.by_spark
    assert outcome.changes == 1


def test_a_worker_killed_during_a_window_fails_its_merge_for_a_retry_on_a_new_worker(
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
    window = orders.window_after(first.window)
    for pid in merge_processes.pids():
        os.kill(pid, signal.SIGKILL)

    with pytest.raises(TransientError, match="ended before the merge did"):
        orders.merge(window)
    retried = orders.merge(window)

    assert (retried.previous_order, retried.changes) == (first.merged_order, 2)
    assert mirror_rows(spark, orders.mirror) == source_rows(admin_connection, ONE_SHARD)


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
    assert scheduler.stdout is not None
    workers = [int(pid) for pid in scheduler.stdout.readline().split()]
    assert len(workers) == 2 and all(running(pid) for pid in workers)

    scheduler.kill()
    scheduler.wait(10)

    deadline = time.monotonic() + 15
    while any(running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if running(pid)]
    for pid in left:  # not to leave them to the rest of the suite
        os.kill(pid, signal.SIGKILL)
    assert left == []
