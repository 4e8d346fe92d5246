"""What the scheduler calls to run a window: the Spark window jobs, or anything shaped so.

``spark_jobs.executor.SparkWindowExecutor`` provides these methods; the scheduler never imports
``spark_jobs`` (pyspark stays behind that package). Both calls must be idempotent per window:
a window found ``running`` after a restart is run again, so the effect is exactly once only if
a second run of a window that already took effect changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from tidemark.outages import Outage
from tidemark.windows import Window


class WindowExecutor(Protocol):
    def merge_mirror(self, sink_table: str, window: Window, up_to_order: int | None) -> object:
        """Merge the changelog of ``sink_table`` into its mirror up to ``window.end``: the rows
        with ``_tm_order`` up to ``up_to_order`` (None: decide from the snapshots' watermarks)."""
        ...

    def run_job(
        self,
        job_name: str,
        window: Window,
        snapshots: Mapping[str, int] | None = None,
        since: Mapping[str, int] | None = None,
    ) -> object:
        """Run the job's SQL for ``window``; the mirrors it reads stand exactly at its end.
        A job over Paimon tables reads each input at the snapshot id ``snapshots`` gives it
        (the scheduler's pin; None: the first snapshot whose watermark reaches the end), and
        the window's changes to it after the snapshot ``since`` gives (the one the job's
        previous window read; None: the first snapshot whose watermark reaches the start)."""
        ...

    def maintain(self, sink_table: str, keep_from: int | None = None) -> object:
        """Compact the changelog and the mirror of ``sink_table`` and expire the snapshots no
        window needs; the scheduler runs no merge of that mirror meanwhile. A Paimon table
        keeps snapshot ``keep_from`` and every newer one (what a pending window may read)."""
        ...

    def outage(self) -> Outage | None:
        """A service the windows need (the lake's catalog, its storage) that does not answer
        now; asked after a window failed, whose attempt then does not count."""
        ...
