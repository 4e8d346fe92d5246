"""Mirror merges in worker processes, so that a window's merges use every core.

A scheduler merges a thousand mirrors in the minute after each window's end. On threads of one
process, the Python part of those merges (PyIceberg's planning and commit, Arrow's calls) takes
turns on one interpreter lock: at 1,000 tables the scheduler sat at one core of two through a
window's merges, about 15 merges a second (bench/README.md, 2026-11-26). ``MergeProcesses``
runs each merge's part without Spark (``spark_jobs.merge.lake``) in one of ``processes`` worker
processes; the window's thread waits for the answer, and runs Spark's ``MERGE`` itself when
the answer says so (the JVM stays in the scheduler's process).

- Each mirror goes to the same worker every window (a hash of its name), so that worker's
  caches serve it: the changelog's manifests decoded once (``spark_jobs.merge.order_range``), the
  catalog's connections.
- Workers are spawned, not forked (a fork would copy the locks of the JVM gateway's and
  Kafka's threads mid-use). They log through the scheduler's own handlers.
- A worker ends with the scheduler however that ends (kill -9 too): it watches its parent.
  It ignores SIGINT and SIGTERM, which a terminal or a service manager sends the whole group:
  the scheduler decides when to stop, and lets the merges running finish first.
- A worker that dies (out of memory, killed) is replaced, and the merges it held are tried
  once more on the new one (all but one of them only waited behind the merge that killed it);
  a merge whose second worker dies too fails with a ``TransientError``, and its window is
  retried later. A merge killed before its commit committed nothing; one killed after it left
  its stamp, so the retry finds the window held.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import signal
import threading
import zlib
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from logging.handlers import QueueHandler, QueueListener
from multiprocessing.context import SpawnContext
from multiprocessing.queues import Queue
from pathlib import Path
from typing import TypeVar

from pyiceberg.catalog import Catalog

from spark_jobs.merge.lake import MergeOutcome, MergeRequest, SparkMerge, merge_in_lake
from tidemark.catalog import load_catalog
from tidemark.errors import TransientError
from tidemark.lifeline import end_with_parent

logger = logging.getLogger(__name__)
T = TypeVar("T")

_STOPPING = "the scheduler is stopping: the window is merged at its next start"


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity, capped by a cgroup CPU quota (a
    container's ``--cpus``), which the affinity does not show."""
    cores = len(os.sched_getaffinity(0))
    quota = _cgroup_quota()
    return cores if quota is None else max(1, min(cores, math.ceil(quota)))


def _cgroup_quota() -> float | None:
    """The cores a cgroup's CPU quota allows (v2's ``cpu.max``, v1's CFS quota and period);
    None without a quota."""
    try:
        limit, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
    except (OSError, ValueError):
        try:
            limit = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text().strip()
            period = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    if limit in ("max", "-1"):
        return None
    return int(limit) / int(period)


@dataclass(frozen=True)
class CatalogAddress:
    """The catalog a worker merges in: its name and PyIceberg properties (secrets included,
    which cross a pipe to our own child only)."""

    name: str
    properties: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, name: str, properties: Mapping[str, str]) -> CatalogAddress:
        return cls(name, tuple(sorted(properties.items())))


class _Worker:
    """One worker process and the queue its log records come through: a queue of its own, so
    a worker killed while writing a record leaves the others' logs as they were."""

    def __init__(self, context: SpawnContext) -> None:
        self.logs: Queue[logging.LogRecord] = context.Queue()
        self.listener = QueueListener(self.logs, _LogHere())
        self.listener.start()
        self.pool = ProcessPoolExecutor(
            1,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(), self.logs, logging.getLogger().getEffectiveLevel()),
        )
        self.ready = self.pool.submit(_ready)  # started now, beside the others

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.listener.stop()
        self.logs.close()

    def abandon(self) -> None:
        """Let go of a worker that died: its queue may hold half a record, so its listener (a
        daemon thread) is left to end with the process rather than waited for."""
        self.pool.shutdown(wait=False, cancel_futures=True)


class MergeProcesses:
    """``processes`` worker processes for ``spark_jobs.merge.lake``; started when made, so a
    worker that cannot start fails here, with its error."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"processes must be positive, got: {processes}")
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._closed = False
        self._workers = [_Worker(self._context) for _ in range(processes)]
        try:
            for worker in self._workers:
                worker.ready.result()
        except BaseException:
            self.close()
            raise

    def merge(self, catalog: CatalogAddress, request: MergeRequest) -> MergeOutcome | SparkMerge:
        """``merge_in_lake`` of ``request`` in ``catalog``, in the mirror's worker."""
        index = zlib.crc32(request.mirror.encode()) % len(self._workers)
        return self._call(index, f"the merge of {request.mirror}", _merge, catalog, request)

    def pids(self) -> list[int]:
        """The workers' process ids (for status and tests)."""
        return [self._call(index, "os.getpid", os.getpid) for index in range(len(self._workers))]

    def _call(self, index: int, what: str, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` in worker ``index``. A call whose worker dies is made once more
        on the worker started in its place: it may only have waited behind the merge that
        killed the worker. What ``function`` raises comes back as it is."""
        for attempt in (1, 2):
            worker = self._worker(index)
            try:
                return _submitted(worker.pool, function, *args).result()
            except BrokenProcessPool as error:
                self._replace(index, worker)
                if attempt == 2:
                    raise TransientError(
                        f"the worker processes ended twice under {what} ({error}); the window "
                        "is merged again later"
                    ) from error
            except CancelledError as error:  # closed meanwhile
                raise TransientError(_STOPPING) from error
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop the workers once their merges are done; queued ones are cancelled."""
        with self._lock:
            self._closed = True
            workers = list(self._workers)
        for worker in workers:
            worker.close()

    def _worker(self, index: int) -> _Worker:
        with self._lock:
            if self._closed:
                raise TransientError(_STOPPING)
            return self._workers[index]

    def _replace(self, index: int, broken: _Worker) -> None:
        with self._lock:
            if self._workers[index] is not broken or self._closed:
                return  # replaced by another thread already, or closing
            self._workers[index] = _Worker(self._context)
        broken.abandon()


def _submitted(pool: ProcessPoolExecutor, function: Callable[..., T], *args: object) -> Future[T]:
    try:
        return pool.submit(function, *args)
    except BrokenProcessPool:
        raise
    except RuntimeError as error:  # "cannot schedule new futures after shutdown"
        raise TransientError(_STOPPING) from error


class _LogHere(logging.Handler):
    """A worker's record, handled by the logger of its name here, as if logged here."""

    def emit(self, record: logging.LogRecord) -> None:
        here = logging.getLogger(record.name)
        if here.isEnabledFor(record.levelno):
            here.handle(record)


# --- the worker -----------------------------------------------------------------------------

#: the worker's catalogs, loaded once each
_catalogs: dict[CatalogAddress, Catalog] = {}


def _start_worker(parent: int, logs: Queue[logging.LogRecord], level: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    root = logging.getLogger()
    root.handlers[:] = [QueueHandler(logs)]
    root.setLevel(level)
    end_with_parent(parent)


def _ready() -> None:
    """Nothing: the first call starts the worker."""


def _merge(catalog: CatalogAddress, request: MergeRequest) -> MergeOutcome | SparkMerge:
    lake = _catalogs.get(catalog)
    if lake is None:
        lake = _catalogs[catalog] = load_catalog(catalog.name, dict(catalog.properties))
    return merge_in_lake(lake, request)
