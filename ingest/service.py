"""The long-running ingest: a standby until it holds the pipeline's lease, then the stream.

What ``scheduler.service`` is to the scheduler. ``run`` waits as the standby of the pipeline's
active ingest (``ingest.lease``), and while it holds the lease onboards, bootstraps and streams
(``ingest.launch.build_runner``), publishing a commit report after each commit when the file
has ``tidemark.reports``. On losing the lease, or on meeting another writer's commit, it waits
again; each time it becomes active it resumes from the tables' own progress, so every row is
committed exactly once whoever was active before.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace

from pyiceberg.catalog import Catalog

from ingest.bootstrap.display import BootstrapDisplay
from ingest.changelog.fencing import ConcurrentWriterError
from ingest.changelog.reports import CommitReportPublisher, KafkaReports, PublisherSettings
from ingest.launch import build_runner
from ingest.lease import LeaseTiming, SourceLease, ingest_lease
from ingest.settings import IngestSettings
from ingest.stream.runner import RunSummary, StopWhen
from tidemark.config.model import PipelineConfig, StartupMode, reveal
from tidemark.metrics import IngestMetrics, forget_stream

logger = logging.getLogger(__name__)

#: ingest gives up when its terms end meeting another writer's commit this many times ...
MAX_WRITER_CONFLICTS = 3
#: ... within this many seconds: a lasting misconfiguration, not a thawed process
WRITER_CONFLICT_SECONDS = 600.0


def run(
    config: PipelineConfig,
    catalog: Catalog,
    stop: StopWhen,
    timing: LeaseTiming = LeaseTiming(),  # noqa: B008 - frozen
    display: BootstrapDisplay | None = None,
) -> RunSummary:
    """Ingest ``config``'s pipeline into ``catalog`` until ``stop`` says, as its standby while
    another process is active. The bootstrap reports to ``display`` (log lines without one).
    Raises ``ConcurrentWriterError`` when terms keep ending on another writer's commit."""
    requested = stop.requested or threading.Event()
    deadline = None if stop.max_seconds is None else time.monotonic() + stop.max_seconds
    name = config.pipeline.name
    lease = SourceLease(config.source.connection, ingest_lease(config), name, timing)
    conflicts: list[float] = []  # when terms ended meeting another writer's commit
    metrics = IngestMetrics(name)
    while True:
        metrics.active(False)
        if not lease.acquire(requested, deadline):
            return RunSummary(stopped_because="stopped while waiting as a standby")
        metrics.active(True)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        term = replace(stop, max_seconds=remaining, requested=requested, lease=lease.lost)
        try:
            summary = _while_active(config, catalog, term, display)
        except ConcurrentWriterError:
            # a writer without the lease (a process frozen past it, or another pipeline
            # name on the same tables): nothing was committed; read the progress again
            now = time.monotonic()
            conflicts = [t for t in conflicts if now - t < WRITER_CONFLICT_SECONDS] + [now]
            if len(conflicts) >= MAX_WRITER_CONFLICTS:
                raise
            logger.exception("Another writer committed to this pipeline's tables")
            continue
        finally:
            lease.release()
            metrics.active(False)
            forget_stream(name)
        if not lease.lost.is_set():
            return summary


def _while_active(
    config: PipelineConfig, catalog: Catalog, stop: StopWhen, display: BootstrapDisplay | None
) -> RunSummary:
    """One term as the active ingest: onboard, bootstrap what needs it, stream."""
    reports = None
    if config.tidemark.reports is None:
        logger.warning(
            "The pipeline has no tidemark.reports block: commit reports are not published, "
            "and the scheduler cannot see this pipeline's progress"
        )
    else:
        publisher = CommitReportPublisher(PublisherSettings.from_reports(config.tidemark.reports))
        reports = KafkaReports(publisher, catalog)
    settings = IngestSettings.from_options(
        config.tidemark.ingest, reveal(config.sink.catalog_properties).get("type", "")
    )
    runner = build_runner(config, catalog, reports=reports, settings=settings, display=display)
    if reports is not None:
        reports.start(runner.changelog_identifiers())
    if config.source.startup.mode is StartupMode.SNAPSHOT:
        # only the existing rows: stream just far enough to make the bootstrap consistent
        consistent = runner.consistent_from()
        until = min(stop.until_position or consistent, consistent)
        stop = replace(stop, until_position=until)
    try:
        return runner.run(stop)
    finally:
        if reports is not None:
            reports.close()
