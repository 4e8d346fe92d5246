"""Commit reports to Kafka, at least once and in commit order per table, through Kafka outages.

The only module of ``ingest`` that imports ``confluent_kafka``.

The lake is the source of truth: every changelog commit written by ingest carries its
watermark, position and row count, so any report can be rebuilt from a table's commit history
(``report_from_commit``, over ``tidemark.sinks`` commits). The publisher therefore never needs
to keep a report in memory for long, and a report it could not send is never lost:

- ``publish`` hands the report to librdkafka and returns at once. librdkafka keeps it and retries
  until the broker takes it (``message.timeout.ms=0``: no local timeout), in produce order
  (``enable.idempotence``), acknowledged by every in-sync replica (``acks=all``). A short outage
  therefore costs nothing but memory.
- When ``max_pending`` reports wait unacknowledged, when a delivery fails for good, or when the
  topic is not known to exist, later reports of that table are not handed over: the table is
  *behind*, and ``catch_up`` republishes its missing reports from the table's history, in order.
- After a crash or a restart nothing is in memory: ``catch_up`` reads the tail of the topic to
  find, per table, the last snapshot already published, and republishes every later one.

``recover`` runs ``catch_up`` for the tables that are behind in a background thread, so the
ingest loop never waits for Kafka; call it on every tick. Consumers deduplicate by table and
snapshot id (docs/architecture.md#commit-report): a report may arrive twice. On first arrival
the reports of a table come in commit order, with one exception: when the broker refuses a
report for good (the topic was deleted, the message is too large), reports of that table already
sent after it stay on the topic, and the refused one follows them when it is republished.

While Kafka is away the log says so once, once a minute while it stays away, and once when it
is back (``tidemark.kafka_log``: librdkafka's own line per failed connection is a debug line);
``tidemark_dependency_up{dependency="kafka"}`` is 0 meanwhile.

Watermark reports (``publish_watermark``) are best effort: each says as much as the one before
and more, and the scheduler applies one only to commit reports it has, so a dropped one costs a
watermark report interval of freshness and nothing else.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ingest.changelog.catalogs import SinkCatalog
from ingest.errors import IngestError
from tidemark.config.model import ReportsSettings, reveal
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.errors import ConfigError, TransientError
from tidemark.kafka_log import KafkaClientLog, fix_for
from tidemark.outages import Dependency, OutageLog
from tidemark.sinks.commits import Commit
from tidemark.sinks.protocols import ChangelogHistory

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

#: librdkafka settings a commit report's durability depends on; a user may not weaken them
_DURABLE = {"acks": "all", "enable.idempotence": "true"}
_SAME_VALUES = {"acks": {"all", "-1"}, "enable.idempotence": {"true"}}
#: delivery errors of reports dropped on purpose at shutdown
_PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})


class ReportsUnavailableError(IngestError, TransientError):
    """Kafka did not answer in time; the reports wait in the changelog history meanwhile."""


@dataclass(frozen=True)
class PublisherSettings:
    topic: str
    #: librdkafka properties, ``bootstrap.servers`` at least
    kafka: Mapping[str, str]
    #: reports handed to Kafka and not yet acknowledged, at most; beyond, tables fall behind
    max_pending: int = 10_000
    #: partitions of the topic when the publisher creates it
    partitions: int = 3
    #: how long an admin or consumer call to Kafka may take
    kafka_timeout_seconds: float = 10.0
    #: messages read at a time when looking back through the topic for a table's last report
    tail_window: int = 1_000
    #: how long ``recover`` waits after a catch-up that failed before it tries again
    retry_seconds: float = 15.0
    #: the pipeline's name: the label of its ``tidemark_dependency_*`` metrics
    pipeline: str = ""

    @classmethod
    def from_reports(cls, reports: ReportsSettings, pipeline: str) -> PublisherSettings:
        return cls(topic=reports.topic, kafka=reveal(reports.kafka), pipeline=pipeline)

    def producer_config(self) -> dict[str, Any]:
        for key, allowed in _SAME_VALUES.items():
            value = str(self.kafka.get(key, _DURABLE[key])).lower()
            if value not in allowed:
                raise ConfigError(
                    f"reports.kafka.{key} is {value!r}, which could lose commit reports; "
                    f"remove it (Tidemark sets {key}={_DURABLE[key]})"
                )
        # no local timeout: librdkafka retries until the broker is back; memory is bounded by
        # max_pending, and what is dropped is rebuilt from Iceberg
        return {"message.timeout.ms": "0", **self.kafka, **_DURABLE}

    def client_config(self) -> dict[str, Any]:
        """For the admin client and the tail reader: connection settings only."""
        return dict(self.kafka)


# -- reports from the changelog's history -----------------------------------------------------


def report_from_commit(table: str, commit: Commit) -> CommitReport | None:
    """The report for a commit ingest made; None for others (compaction, users' commits)."""
    progress = commit.progress()
    if progress is None:
        return None
    return CommitReport(
        table=table,
        snapshot_id=commit.commit_id,
        watermark_ms=progress.watermark_ms,
        position=str(progress.position),
        rows_added=commit.rows_added,
        committed_at_ms=commit.committed_at_ms,
        source=progress.source,
        partial=progress.partial_rows > 0,
        last_order=progress.last_order,
        late_rows=progress.late_rows,
        late_from_ms=None if progress.late_range is None else progress.late_range[0],
        late_to_ms=None if progress.late_range is None else progress.late_range[1],
        nulled_values=dict(progress.nulled),
    )


def history_reports(table: str, history: ChangelogHistory) -> list[CommitReport]:
    """The reports of every ingest commit in ``history``, ``table``'s, oldest first."""
    reports = (report_from_commit(table, commit) for commit in history.commits())
    return [report for report in reports if report is not None][::-1]


def table_history(catalog: SinkCatalog, table: str) -> list[CommitReport]:
    """The reports of every ingest commit in ``table``'s current history, oldest first."""
    history = catalog.load_changelog(table)
    return [] if history is None else history_reports(table, history)


def reports_after(history: Sequence[CommitReport], last: CommitReport | None) -> list[CommitReport]:
    """What a consumer has not seen when ``last`` is the table's last report on the topic.

    If that snapshot has left the history (expired, or the table was recreated), everything
    committed after it is.
    """
    if last is None:
        return list(history)
    ids = [report.snapshot_id for report in history]
    if last.snapshot_id in ids:
        return list(history[ids.index(last.snapshot_id) + 1 :])
    return [report for report in history if report.committed_at_ms > last.committed_at_ms]


# -- the publisher ---------------------------------------------------------------------------


@dataclass
class _State:
    """What the publisher knows, guarded by its lock."""

    #: per table, the last report handed to librdkafka (None: nothing on the topic)
    handed: dict[str, CommitReport | None] = field(default_factory=dict)
    #: per table, the last report acknowledged, in order, with no failure before it
    delivered: dict[str, CommitReport | None] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)
    #: tables whose recent reports were not handed over; value: the newest such snapshot id
    behind: dict[str, int | None] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)
    #: reports republished by background catch-ups since the tables were last all caught up
    republished: int = 0
    topic_ready: bool = False
    topic_created: bool = False

    def pending(self) -> int:
        return sum(self.in_flight.values())


class CommitReportPublisher:
    """Publishes commit reports keyed by table; see the module's description for the design.

    At start, call ``catch_up(catalog, tables)`` for every table of the pipeline before the
    first ``publish``: it creates the topic if needed and republishes what a previous run
    committed but did not publish. Then ``publish`` after each commit, ``recover`` on every
    tick of the ingest loop, and ``close`` at shutdown. ``outages`` says when Kafka goes away
    and comes back (one is made for ``settings.pipeline`` if not given).
    """

    def __init__(
        self,
        settings: PublisherSettings,
        *,
        clock: Clock = time.monotonic,
        outages: OutageLog | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._kafka = KafkaClientLog(
            outages or OutageLog(Dependency.KAFKA, settings.pipeline, logger),
            logger,
            client="commit reports",
            action="commit reports wait in the changelog history and follow when it is back",
        )
        self._producer = Producer({**settings.producer_config(), **self._kafka.config()})
        self._lock = threading.RLock()
        self._state = _State()
        self._worker: threading.Thread | None = None
        self._last_attempt = float("-inf")

    # -- the ingest loop's side: never blocks ----------------------------------------------

    def publish(self, report: CommitReport) -> None:
        """Hand ``report`` to Kafka, or leave it to ``catch_up`` when that cannot be done now."""
        with self._lock:
            if not self._can_hand_over(report.table):
                self._fall_behind(report.table, report.snapshot_id)
            elif not self._produce(report):
                self._fall_behind(report.table, report.snapshot_id)
        self._producer.poll(0)

    def publish_watermark(self, report: WatermarkReport) -> None:
        """Hand ``report`` to Kafka if it can be done now; otherwise drop it: the next one
        promises as much and more, and the scheduler applies a mark only to commit reports
        it has, which are never dropped."""
        with self._lock:
            ready = self._state.topic_ready and self._state.pending() < self._settings.max_pending
        if ready:
            try:
                self._producer.produce(
                    self._settings.topic,
                    key=report.key.encode(),
                    value=report.to_json(),
                    on_delivery=self._on_watermark_delivery,
                )
            except (BufferError, KafkaException) as error:
                logger.debug("Watermark report not sent (%s); the next one follows", error)
        self._producer.poll(0)

    def pending(self) -> int:
        """Reports handed to Kafka and not yet acknowledged."""
        self._producer.poll(0)
        with self._lock:
            return self._state.pending()

    def behind(self) -> frozenset[str]:
        """Tables with reports that only ``catch_up`` can still publish."""
        with self._lock:
            return frozenset(self._state.behind)

    def recover(self, catalog: SinkCatalog) -> None:
        """Start a background ``catch_up`` of the tables that are behind, if one is due."""
        self._producer.poll(0)
        with self._lock:
            if self._state.pending():  # reports wait for Kafka: a reminder if one is due
                self._kafka.still_waiting()
            if self._worker is not None and self._worker.is_alive():
                return
            if self._clock() - self._last_attempt < self._settings.retry_seconds:
                return
            tables = [t for t in self._state.behind if not self._state.in_flight.get(t)]
            if not tables:
                return
            self._last_attempt = self._clock()
            self._worker = threading.Thread(
                target=self._recover, args=(catalog, tables), name="commit-reports", daemon=True
            )
            self._worker.start()

    def close(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for acknowledgements; returns how many are missing
        (the next start republishes them from the changelog history)."""
        deadline = self._clock() + timeout
        if self._worker is not None:
            self._worker.join(max(0.0, deadline - self._clock()))
        remaining = self._producer.flush(max(0.0, deadline - self._clock()))
        if remaining:
            logger.warning(
                "%d commit report(s) not acknowledged by Kafka at shutdown; the next start "
                "republishes them from the changelog history",
                remaining,
            )
            self._producer.purge()
            self._producer.poll(0)
        return int(remaining)

    # -- catching up from Iceberg: blocks up to the Kafka timeouts ------------------------

    def catch_up(self, catalog: SinkCatalog, tables: Iterable[str]) -> int:
        """Republish, in order, every report of ``tables`` the topic does not have yet.

        Returns how many were handed to Kafka. Raises ``ReportsUnavailableError`` when Kafka
        does not answer; the tables are then behind and ``recover`` tries again.
        """
        tables = list(tables)
        with self._lock:
            for table in tables:
                self._state.behind.setdefault(table, None)
        self.ensure_topic()
        self._learn_topic_tail(tables)
        return sum(self._catch_up_table(table, table_history(catalog, table)) for table in tables)

    def _recover(self, catalog: SinkCatalog, tables: list[str]) -> None:
        try:
            count = self.catch_up(catalog, tables)
        except ReportsUnavailableError as error:  # the outage log says so
            logger.debug("Commit reports still waiting for Kafka: %s", error)
            return
        except Exception:  # a thread must not die silently; the next recover retries
            logger.exception("Catching up commit reports for %s failed", ", ".join(tables))
            return
        with self._lock:  # only failures wait retry_seconds; a bounded catch-up goes on
            self._last_attempt = float("-inf")
            self._state.republished += count
            if any(table in self._state.behind for table in tables):
                return  # said once they are all caught up
            count, self._state.republished = self._state.republished, 0
        logger.info("Caught up %d commit report(s) for %s", count, ", ".join(tables))

    def _catch_up_table(self, table: str, history: list[CommitReport]) -> int:
        with self._lock:
            last = self._state.handed.get(table)
            missing = reports_after(history, last)
            produced = 0
            for report in missing:
                if self._state.pending() >= self._settings.max_pending or not self._produce(report):
                    return produced
                produced += 1
            newest_dropped = self._state.behind.get(table)
            in_history = {report.snapshot_id for report in history}
            if newest_dropped is None or newest_dropped in in_history:
                self._state.behind.pop(table, None)
                self._state.failed.discard(table)
            return produced

    # -- Kafka -------------------------------------------------------------------------------

    def ensure_topic(self) -> None:
        """Create the topic if it is missing (brokers may refuse to create it on first use).

        ``catch_up`` calls it; until it has succeeded once, reports wait in the history.
        """
        with self._lock:
            if self._state.topic_ready:
                return
        admin = AdminClient({**self._settings.client_config(), **self._kafka.config()})
        timeout = self._settings.kafka_timeout_seconds
        try:
            if self._settings.topic not in admin.list_topics(timeout=timeout).topics:
                self._create_topic(admin, timeout)
        except KafkaException as error:
            servers = self._settings.kafka.get("bootstrap.servers")
            self._kafka.failed(error.args[0], f"asking {servers} for {self._settings.topic}")
            raise ReportsUnavailableError(
                f"Kafka at {servers} did not answer within {timeout:g}s: {error}"
            ) from error
        self._kafka.answered()
        with self._lock:
            self._state.topic_ready = True

    def _create_topic(self, admin: AdminClient, timeout: float) -> None:
        topic = NewTopic(
            self._settings.topic, num_partitions=self._settings.partitions, replication_factor=-1
        )
        try:
            admin.create_topics([topic], request_timeout=timeout)[self._settings.topic].result(
                timeout
            )
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            return
        logger.info("Created the commit report topic %s", self._settings.topic)
        with self._lock:
            self._state.topic_created = True

    def _learn_topic_tail(self, tables: list[str]) -> None:
        with self._lock:
            unknown = {t for t in tables if t not in self._state.handed}
            created = self._state.topic_created  # by this publisher: nothing on it before
        if not unknown:
            return
        found = {} if created else _TailReader(self._settings, self._kafka).last_reports(unknown)
        with self._lock:
            for table in unknown:
                self._state.handed.setdefault(table, found.get(table))
                self._state.delivered.setdefault(table, found.get(table))

    def _can_hand_over(self, table: str) -> bool:
        state = self._state
        return (
            state.topic_ready
            and table not in state.behind
            and state.pending() < self._settings.max_pending
        )

    def _produce(self, report: CommitReport) -> bool:
        try:
            self._producer.produce(
                self._settings.topic,
                key=report.table.encode(),
                value=report.to_json(),
                on_delivery=lambda error, _message: self._on_delivery(report, error),
            )
        except BufferError:  # librdkafka's own queue is full
            return False
        except KafkaException as error:  # refused before sending; the history keeps it
            self._log_refusal(report, error.args[0])
            return False
        self._state.handed[report.table] = report
        self._state.in_flight[report.table] = self._state.in_flight.get(report.table, 0) + 1
        return True

    def _fall_behind(self, table: str, snapshot_id: int) -> None:
        if table not in self._state.behind:
            # while Kafka is away, its outage line says as much for every table
            logger.log(
                logging.DEBUG if self._kafka.outages.is_down else logging.WARNING,
                "Commit reports of %s wait in its changelog history until Kafka takes them "
                "(%d unacknowledged)",
                table,
                self._state.pending(),
            )
        self._state.behind[table] = snapshot_id

    def _on_delivery(self, report: CommitReport, error: KafkaError | None) -> None:
        if error is None:
            self._kafka.answered()
        table = report.table
        with self._lock:
            self._state.in_flight[table] -= 1
            if table in self._state.failed:
                return
            if error is None:
                self._state.delivered[table] = report
                return
            if error.code() not in _PURGED:
                self._log_refusal(report, error)
            self._state.failed.add(table)
            self._state.handed[table] = self._state.delivered.get(table)
            if table not in self._state.delivered:
                del self._state.handed[table]  # read the topic again
            self._fall_behind(table, report.snapshot_id)

    def _log_refusal(self, report: CommitReport, error: KafkaError) -> None:
        # refused again at each republication: said once a minute
        logger.log(
            logging.ERROR if self._kafka.due(f"refused {error.name()}") else logging.DEBUG,
            "Kafka refused the commit report of %s snapshot %d (%s); %s. It will be "
            "republished from the changelog history",
            report.table,
            report.snapshot_id,
            error,
            fix_for(error.name()),
        )

    def _on_watermark_delivery(self, error: KafkaError | None, _message: Message) -> None:
        if error is None:
            self._kafka.answered()
        elif error.code() not in _PURGED:
            logger.debug("Kafka refused a watermark report (%s); the next one follows", error)


class _TailReader:
    """Finds each table's last report by reading the topic backwards, a window at a time."""

    def __init__(self, settings: PublisherSettings, kafka: KafkaClientLog) -> None:
        self._settings = settings
        self._kafka = kafka

    def last_reports(self, tables: set[str]) -> dict[str, CommitReport]:
        consumer = Consumer(
            {
                **self._settings.client_config(),
                **self._kafka.config(),
                "group.id": "tidemark-commit-report-tail",  # never joined or committed
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        try:
            found = self._scan(consumer, tables)
        except KafkaException as error:
            self._kafka.failed(error.args[0], f"reading the end of {self._settings.topic}")
            raise ReportsUnavailableError(
                f"could not read the commit report topic {self._settings.topic}: {error}"
            ) from error
        except ReportsUnavailableError as error:  # a read that took too long
            self._kafka.unavailable(str(error))
            raise
        finally:
            consumer.close()
        self._kafka.answered()
        return found

    def _scan(self, consumer: Consumer, tables: set[str]) -> dict[str, CommitReport]:
        timeout = self._settings.kafka_timeout_seconds
        metadata = consumer.list_topics(self._settings.topic, timeout=timeout)
        partitions = sorted(metadata.topics[self._settings.topic].partitions)
        found: dict[str, CommitReport] = {}
        for partition in partitions:
            if tables <= found.keys():
                break
            tp = TopicPartition(self._settings.topic, partition)
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout)
            self._scan_partition(consumer, partition, low, high, tables - found.keys(), found)
        return found

    def _scan_partition(
        self,
        consumer: Consumer,
        partition: int,
        low: int,
        high: int,
        wanted: set[str],
        found: dict[str, CommitReport],
    ) -> None:
        end = high
        while end > low and not wanted <= found.keys():
            start = max(low, end - self._settings.tail_window)
            newest: dict[str, CommitReport] = {}
            for message in self._read(consumer, partition, start, end):
                table = (message.key() or b"").decode()
                if table in wanted and table not in found:
                    newest[table] = CommitReport.from_json(message.value() or b"")
            found.update(newest)
            end = start

    def _read(self, consumer: Consumer, partition: int, start: int, end: int) -> list[Message]:
        """Messages at offsets ``start`` to ``end - 1`` of ``partition``."""
        consumer.assign([TopicPartition(self._settings.topic, partition, start)])
        deadline = time.monotonic() + self._settings.kafka_timeout_seconds
        messages: list[Message] = []
        while time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=0.5):
                offset = _offset(message)
                if offset is None or offset >= end:
                    return messages
                if offset >= start:  # never one fetched for an earlier window
                    messages.append(message)
                if offset == end - 1:
                    return messages
        raise ReportsUnavailableError(
            f"reading offsets {start}-{end} of {self._settings.topic}[{partition}] took longer "
            f"than {self._settings.kafka_timeout_seconds:g}s"
        )


def _offset(message: Message) -> int | None:
    """The message's offset; None at the end of the partition."""
    error = message.error()
    if error is not None and error.code() == KafkaError._PARTITION_EOF:
        return None
    if error is not None:
        raise KafkaException(error)
    return message.offset()


class KafkaReports:
    """The ingest loop's view of the publisher: publish after a commit, retry on each tick."""

    def __init__(self, publisher: CommitReportPublisher, catalog: SinkCatalog) -> None:
        self._publisher = publisher
        self._catalog = catalog

    def start(self, tables: Iterable[str]) -> None:
        """Republish what earlier runs committed but did not publish; Kafka being down is no
        reason not to ingest: the tables stay behind and ``tick`` retries."""
        try:
            count = self._publisher.catch_up(self._catalog, tables)
        except ReportsUnavailableError as error:  # the outage log says so
            logger.debug("Kafka is not reachable; commit reports will follow: %s", error)
            return
        if count:
            logger.info("Republished %d commit report(s) an earlier run had not sent", count)

    def publish(self, report: CommitReport) -> None:
        self._publisher.publish(report)

    def publish_watermark(self, report: WatermarkReport) -> None:
        self._publisher.publish_watermark(report)

    def tick(self) -> None:
        self._publisher.recover(self._catalog)

    def close(self, timeout: float = 10.0) -> int:
        return self._publisher.close(timeout)
