"""Mirror merges in worker processes, so that a window's merges use every core.

A scheduler merges a thousand mirrors in the minute after each window's end. On threads of one
process, the Python part of those merges (PyIceberg's planning and commit, Arrow's calls) takes
turns on one interpreter lock: at 1,000 tables the scheduler sat at one core of two through a
window's merges, about 15 merges a second (bench/README.md, 2026-11-26). ``MergeProcesses``
runs each merge's part without Spark (``spark_jobs.lake_merge``) in one of ``processes`` worker
processes; the window's thread waits for the answer, and runs Spark's ``MERGE`` itself when
the answer says so (the JVM stays in the scheduler's process).

- Each mirror goes to the same worker every window (a hash of its name), so that worker's
  caches serve it: the changelog's manifests decoded once (``spark_jobs.order_range``), the
  catalog's connections.
- Workers are spawned, not forked (a fork would copy the locks of the JVM gateway's and
  Kafka's threads mid-use). They log through the scheduler's own handlers.
- A worker ends with the scheduler however that ends (kill -9 too): it watches its parent.
  It ignores SIGINT and SIGTERM, which a terminal or a service manager sends the whole group:
  the scheduler decides when to stop, and lets the merges running finish first.
- A worker that dies (out of memory, killed) fails its merge with a ``TransientError``, so the
  window is retried, on a worker started in its place.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
import zlib
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from logging.handlers import QueueHandler, QueueListener
from multiprocessing.queues import Queue

from pyiceberg.catalog import Catalog

from spark_jobs.lake_merge import MergeOutcome, MergeRequest, SparkMerge, merge_in_lake
from tidemark.catalog import load_catalog
from tidemark.errors import TransientError

logger = logging.getLogger(__name__)

#: how often a worker looks whether its parent is still there, in seconds
PARENT_CHECK_SECONDS = 1.0


@dataclass(frozen=True)
class CatalogAddress:
    """The catalog a worker merges in: its name and PyIceberg properties (secrets included,
    which cross a pipe to our own child only)."""

    name: str
    properties: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, name: str, properties: Mapping[str, str]) -> CatalogAddress:
        return cls(name, tuple(sorted(properties.items())))


class MergeProcesses:
    """``processes`` worker processes for ``spark_jobs.lake_merge``."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"processes must be positive, got: {processes}")
        self._context = multiprocessing.get_context("spawn")
        self._logs: Queue[logging.LogRecord] = self._context.Queue()
        self._listener = QueueListener(self._logs, _LogHere())
        self._listener.start()
        self._lock = threading.Lock()
        self._closed = False
        self._workers = [self._worker() for _ in range(processes)]

    def merge(self, catalog: CatalogAddress, request: MergeRequest) -> MergeOutcome | SparkMerge:
        """``merge_in_lake`` of ``request`` in ``catalog``, in the mirror's worker."""
        index = zlib.crc32(request.mirror.encode()) % len(self._workers)
        with self._lock:
            if self._closed:
                raise TransientError(
                    "the scheduler is stopping: the window is merged at its next start"
                )
            worker = self._workers[index]
        try:
            return worker.submit(_merge, catalog, request).result()
        except BrokenProcessPool as error:
            self._replace(index, worker)
            raise TransientError(
                f"the process merging {request.mirror} ended before the merge did ({error}); "
                "the window is merged again on a new one"
            ) from error

    def pids(self) -> list[int]:
        """The workers' process ids (for status and tests)."""
        with self._lock:
            workers = list(self._workers)
        return [future.result() for future in [worker.submit(os.getpid) for worker in workers]]

    def close(self) -> None:
        """Stop the workers once their merges are done; queued ones are cancelled."""
        with self._lock:
            self._closed = True
            workers = list(self._workers)
        for worker in workers:
            worker.shutdown(wait=True, cancel_futures=True)
        self._listener.stop()
        self._logs.close()

    def _worker(self) -> ProcessPoolExecutor:
        worker = ProcessPoolExecutor(
            1,
            mp_context=self._context,
            initializer=_start_worker,
            initargs=(os.getpid(), self._logs, logging.getLogger().getEffectiveLevel()),
        )
        # started now, in parallel, rather than by the first window's merge
        worker.submit(_ready)
        return worker

    def _replace(self, index: int, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._workers[index] is broken and not self._closed:
                self._workers[index] = self._worker()
        broken.shutdown(wait=False, cancel_futures=True)


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
    threading.Thread(target=_end_with, args=(parent,), name="parent-watch", daemon=True).start()


def _end_with(parent: int) -> None:
    """End this worker once ``parent`` is gone (then the worker has been re-parented)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


def _ready() -> None:
    """Nothing: the first call starts the worker."""


def _merge(catalog: CatalogAddress, request: MergeRequest) -> MergeOutcome | SparkMerge:
    lake = _catalogs.get(catalog)
    if lake is None:
        lake = _catalogs[catalog] = load_catalog(catalog.name, dict(catalog.properties))
    return merge_in_lake(lake, request)
