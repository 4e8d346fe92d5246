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
import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ingest.bootstrap.display import BootstrapDisplay
from ingest.changelog.catalogs import SinkCatalog
from ingest.changelog.fencing import ConcurrentWriterError
from ingest.changelog.reports import CommitReportPublisher, KafkaReports, PublisherSettings
from ingest.launch import build_runner
from ingest.lease import LeaseTiming, SourceLease, ingest_lease
from ingest.outages import ingest_outage, probe
from ingest.settings import IngestSettings
from ingest.stream.runner import LEASE_LOST, RunSummary, StopWhen
from tidemark.config.model import PipelineConfig, StartupMode, reveal
from tidemark.metrics import IngestMetrics, forget_stream
from tidemark.outages import Backoff, Dependency, OutageLog, OutageLogs

logger = logging.getLogger(__name__)

#: ingest gives up when its terms end meeting another writer's commit this many times ...
MAX_WRITER_CONFLICTS = 3
#: ... within this many seconds: a lasting misconfiguration, not a thawed process
WRITER_CONFLICT_SECONDS = 600.0
#: between probes of a service that is down: a probe is one cheap request, and the wait after
#: the service's return is up to the cap (with 30 s, a 62 s catalog outage waited 29 s more:
#: ``bench/outage_bench.py``)
PROBE_BACKOFF = Backoff(first=0.5, most=5.0)
#: an outage met this soon after the last one ended goes on with its backoff: the probe said
#: the service answers, the term found it does not (a table on another bucket, say)
AGAIN_SECONDS = 10.0


def run(
    config: PipelineConfig,
    open_catalog: Callable[[], SinkCatalog],
    stop: StopWhen,
    timing: LeaseTiming = LeaseTiming(),  # noqa: B008 - frozen
    display: BootstrapDisplay | None = None,
    backoff: Backoff = PROBE_BACKOFF,
) -> RunSummary:
    """Ingest ``config``'s pipeline into the catalog ``open_catalog`` opens until ``stop``
    says, as its standby while another process is active, waiting out outages of the services
    it needs (``ingest.outages``). The bootstrap reports to ``display`` (log lines without
    one). Raises ``ConcurrentWriterError`` when terms keep ending on another writer's commit."""
    requested = stop.requested or threading.Event()
    deadline = None if stop.max_seconds is None else time.monotonic() + stop.max_seconds
    name = config.pipeline.name
    lease = SourceLease(config.source.connection, ingest_lease(config), name, timing)
    waits = _Waits(config, open_catalog, backoff, requested, deadline)
    conflicts: list[float] = []  # when terms ended meeting another writer's commit
    metrics = IngestMetrics(name)
    if config.tidemark.reports is None:
        logger.warning(
            "The pipeline has no tidemark.reports block: commit reports are not published, "
            "and the scheduler cannot see this pipeline's progress"
        )
    while True:
        metrics.active(False)
        try:
            acquired = lease.acquire(requested, deadline)
        except Exception as error:  # noqa: BLE001 - an outage is waited out, the rest raised
            if not waits.wait_out(error):
                return RunSummary(stopped_because=f"stopped while {waits.waiting}")
            continue
        if not acquired:
            return RunSummary(stopped_because="stopped while waiting as a standby")
        metrics.active(True)
        try:
            summary = _terms(config, open_catalog, stop, lease, waits, display)
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


def _terms(
    config: PipelineConfig,
    open_catalog: Callable[[], SinkCatalog],
    stop: StopWhen,
    lease: SourceLease,
    waits: _Waits,
    display: BootstrapDisplay | None,
) -> RunSummary:
    """Terms as the active ingest while this process holds the lease: a term that meets an
    outage ends, and the next starts once the service answers again, from the tables' own
    progress (``ingest.outages``)."""
    while True:
        remaining = None if waits.deadline is None else max(0.0, waits.deadline - time.monotonic())
        term = replace(stop, max_seconds=remaining, requested=waits.requested, lease=lease.lost)
        try:
            kafka = waits.log(Dependency.KAFKA)  # one per process: not said again each term
            return _while_active(config, open_catalog(), term, display, kafka)
        except ConcurrentWriterError:
            raise
        except Exception as error:  # noqa: BLE001 - an outage is waited out, the rest raised
            if not waits.wait_out(error, lease):
                reason = LEASE_LOST if lease.lost.is_set() else f"stopped while {waits.waiting}"
                return RunSummary(stopped_because=reason)


class _Waits:
    """Waiting out the outages one ingest process meets: each service's ``OutageLog``, and
    the waits between probes until every service that was down answers."""

    def __init__(
        self,
        config: PipelineConfig,
        open_catalog: Callable[[], SinkCatalog],
        backoff: Backoff,
        requested: threading.Event,
        deadline: float | None,
    ) -> None:
        self._source = config.source.connection
        self._pipeline = config.pipeline.name
        self._open_catalog = open_catalog
        self._backoff = backoff
        self.requested = requested
        self.deadline = deadline
        self._logs = OutageLogs(self._pipeline, logger)
        #: what the last wait waited for, for the reason a run stopped in it
        self.waiting = ""
        #: the attempts of the last wait, and when it ended: a service that answers the probe
        #: but fails the term again at once (a probe too kind) is not asked every second
        self._attempts, self._ended = 0, -math.inf

    def wait_out(self, error: Exception, lease: SourceLease | None = None) -> bool:
        """Wait until the service whose outage ``error`` shows answers again (True), or until
        stopped, the deadline passes or ``lease`` is lost (False); raise ``error`` when it
        shows no outage. The lease, when held, says that its holder waits."""
        outage = ingest_outage(error, self._catalog_if_open())
        if outage is None:
            raise error
        down = {outage.dependency}
        self.log(outage.dependency).down(
            outage.detail, "ingest pauses and retries; no row is lost, none doubled"
        )
        recent = time.monotonic() - self._ended < AGAIN_SECONDS
        attempt = self._attempts if recent else 0
        try:
            while down:
                dependency = min(down)
                self.waiting = f"waiting for {dependency.described}"
                if lease is not None:
                    lease.waiting(self.log(dependency).waiting())
                attempt += 1
                if self._stopped(lease, self._backoff.delay(attempt)):
                    return False
                try:
                    probe(dependency, self._source, self._open_catalog)
                except Exception as again:  # noqa: BLE001 - as above
                    outage = ingest_outage(again, self._catalog_if_open())
                    if outage is None:
                        raise
                    self.log(outage.dependency).down(outage.detail)
                    down.add(outage.dependency)
                    continue
                self.log(dependency).up()
                down.discard(dependency)
            return True
        finally:
            self._attempts, self._ended = attempt, time.monotonic()
            if lease is not None:
                lease.waiting(None)

    def _stopped(self, lease: SourceLease | None, seconds: float) -> bool:
        if self.deadline is not None:
            seconds = min(seconds, max(0.0, self.deadline - time.monotonic()))
        if self.requested.wait(seconds):
            return True
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return True
        return lease is not None and lease.lost.is_set()

    def log(self, dependency: Dependency) -> OutageLog:
        return self._logs.of(dependency)

    def _catalog_if_open(self) -> SinkCatalog | None:
        try:
            return self._open_catalog()
        except Exception:  # noqa: BLE001 - only names a full disk's folder
            return None


def _while_active(
    config: PipelineConfig,
    catalog: SinkCatalog,
    stop: StopWhen,
    display: BootstrapDisplay | None,
    kafka: OutageLog,
) -> RunSummary:
    """One term as the active ingest: onboard, bootstrap what needs it, stream; ``kafka`` is
    the process's log of Kafka outages, which outlives the term."""
    reports = None
    if config.tidemark.reports is not None:
        publisher = CommitReportPublisher(
            PublisherSettings.from_reports(config.tidemark.reports, config.pipeline.name),
            outages=kafka,
        )
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
