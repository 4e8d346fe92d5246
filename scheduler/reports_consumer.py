"""Commit reports from Kafka, committed back only once the scheduler has recorded them.

The only module of ``scheduler`` that imports ``confluent_kafka``. One consumer group per
pipeline (``tidemark-scheduler.<pipeline>``), so two pipelines sharing the topic each see every
report. Offsets are never committed automatically: ``poll`` returns a batch, the caller records
it durably, then calls ``commit(batch)``. A crash in between redelivers the batch, and the
state store ignores reports it already holds (table and snapshot id), so every report is
recorded exactly once whatever Kafka redelivers or ingest republishes.

While Kafka is away the consumer reads nothing and the log says so once, once a minute while it
stays away, and once when it is back (``tidemark.kafka_log``: librdkafka's own line per failed
connection, twenty a second from a consumer, is a debug line).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from scheduler.errors import SchedulerError
from tidemark.config.model import ReportsSettings, reveal
from tidemark.contracts.reports import CommitReport, WatermarkReport, read_report
from tidemark.errors import TerminalError, TransientError
from tidemark.kafka_log import KafkaClientLog
from tidemark.outages import Dependency, OutageLog

logger = logging.getLogger(__name__)

GROUP_PREFIX = "tidemark-scheduler."
#: librdkafka settings exactly-once recording depends on; a user may not change them
_FIXED = {"enable.auto.commit": False, "enable.auto.offset.store": False}


class ReportsUnavailableError(SchedulerError, TransientError):
    """Kafka did not answer, or the topic does not exist yet; the next tick tries again."""


class KafkaRefusedError(SchedulerError, TerminalError):
    """The broker refused our credentials or TLS: trying again changes nothing."""


@dataclass(frozen=True)
class ConsumerSettings:
    topic: str
    #: librdkafka properties, ``bootstrap.servers`` at least (secrets among them: not shown)
    kafka: Mapping[str, str] = field(repr=False)
    group_id: str

    @classmethod
    def from_reports(cls, reports: ReportsSettings, pipeline: str) -> ConsumerSettings:
        return cls(reports.topic, reveal(reports.kafka), GROUP_PREFIX + pipeline)

    @property
    def pipeline(self) -> str:
        """The pipeline the group reads for (``from_reports``): its metrics' label."""
        return self.group_id.removeprefix(GROUP_PREFIX)

    def consumer_config(self) -> dict[str, Any]:
        return {
            # a new group reads the topic from its start: reports published before the
            # scheduler first ran are the tables' first watermarks
            "auto.offset.reset": "earliest",
            # static membership: a standby that takes over joins as the same member and gets
            # the partitions at once, where a new member would wait out the killed one's
            # session (45 s); the pipeline lock keeps it to one consumer at a time
            "group.instance.id": self.group_id,
            **self.kafka,
            "group.id": self.group_id,
            **_FIXED,
        }


@dataclass(frozen=True)
class ReportBatch:
    """Reports read in one poll, and the offsets to commit once they are recorded."""

    reports: tuple[CommitReport, ...] = ()
    watermarks: tuple[WatermarkReport, ...] = ()
    #: (partition, next offset to read) per partition seen
    offsets: tuple[tuple[int, int], ...] = field(default=())

    def __len__(self) -> int:
        return len(self.reports) + len(self.watermarks)


class ReportsConsumer:
    """Reads commit reports; used by one thread at a time (the scheduler's tick). ``outages``
    says when Kafka goes away and comes back (one is made for the pipeline if not given)."""

    def __init__(self, settings: ConsumerSettings, *, outages: OutageLog | None = None) -> None:
        self._settings = settings
        #: the broker's refusal of our credentials or TLS, which librdkafka only retries
        self._refused: KafkaError | None = None
        self._kafka = KafkaClientLog(
            outages or OutageLog(Dependency.KAFKA, settings.pipeline, logger),
            logger,
            client=f"the scheduler's consumer of {settings.topic}",
            action="no commit report is read until it is back",
        )
        self._consumer = Consumer(
            {**settings.consumer_config(), **self._kafka.config(), "error_cb": self._on_error}
        )
        self._consumer.subscribe([settings.topic])

    def _on_error(self, error: KafkaError) -> None:
        # a wrong password, or a certificate that does not verify: the same at every try,
        # said by the KafkaRefusedError that poll raises. A handshake cut short (a broker
        # restarting) is an _SSL error too, and passes.
        if error.code() == KafkaError._AUTHENTICATION or (
            error.code() == KafkaError._SSL and "certificate verify failed" in error.str()
        ):
            self._refused = error
            return
        self._kafka.on_error(error)

    def poll(self, max_messages: int = 500, timeout: float = 0.5) -> ReportBatch:
        """Up to ``max_messages`` reports. Raises ``TerminalError`` (from
        ``read_report``) for a report of a newer major version or a malformed one:
        the scheduler stops rather than skip a watermark it cannot read."""
        try:
            messages = self._consumer.consume(num_messages=max_messages, timeout=timeout)
        except KafkaException as error:
            raise ReportsUnavailableError(f"reading {self._settings.topic}: {error}") from None
        if messages:
            self._refused = None  # read after all: whatever was refused has passed
            self._kafka.answered()
        elif self._kafka.outages.is_down:
            self._probe(timeout)
        if self._refused is not None:
            raise KafkaRefusedError(
                f"Kafka refused the scheduler's connection to read {self._settings.topic}: "
                f"{self._refused.str()}; check the pipeline's tidemark.reports.kafka.* "
                "security settings (security.protocol, sasl.*, ssl.*)"
            )
        reports: list[CommitReport] = []
        watermarks: list[WatermarkReport] = []
        offsets: dict[int, int] = {}
        for message in messages:
            problem = message.error()
            if problem is not None:
                self._raise(problem)
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:  # only error events lack them
                continue
            report = read_report(message.value() or b"")
            if isinstance(report, CommitReport):
                reports.append(report)
            else:
                watermarks.append(report)
            offsets[partition] = offset + 1
        return ReportBatch(tuple(reports), tuple(watermarks), tuple(sorted(offsets.items())))

    def commit(self, batch: ReportBatch) -> None:
        """Store the batch's offsets in the group: call only after recording its reports."""
        if not batch.offsets:
            return
        partitions = [TopicPartition(self._settings.topic, p, o) for p, o in batch.offsets]
        try:
            self._consumer.commit(offsets=partitions, asynchronous=False)
        except KafkaException as error:
            # the batch is recorded; Kafka redelivers it and the store ignores the duplicates
            raise ReportsUnavailableError(
                f"committing offsets of {self._settings.topic} for group "
                f"{self._settings.group_id}: {error}"
            ) from None
        self._kafka.answered()

    def close(self) -> None:
        self._consumer.close()

    def _probe(self, timeout: float) -> None:
        """While Kafka is away, ask for the topic's metadata: when no report comes, its
        answer is the first sign that Kafka is back."""
        try:
            self._consumer.list_topics(self._settings.topic, timeout=timeout)
        except KafkaException as error:
            servers = self._settings.kafka.get("bootstrap.servers")
            self._kafka.failed(error.args[0], f"asking {servers} for {self._settings.topic}")
            return
        self._kafka.answered()

    def _raise(self, error: KafkaError) -> None:
        if error.code() == KafkaError._PARTITION_EOF:
            return
        if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise ReportsUnavailableError(
                f"the commit report topic {self._settings.topic} does not exist yet; ingest "
                "creates it when it starts (or create it, since the broker may not)"
            )
        if error.retriable() or not error.fatal():
            raise ReportsUnavailableError(f"reading {self._settings.topic}: {error}")
        raise SchedulerError(f"Kafka consumer failed for good on {self._settings.topic}: {error}")


def _wait_until_left(admin: AdminClient, settings: ConsumerSettings, timeout: float) -> None:
    """Return once the pipeline's group has no member. A scheduler is a static member
    (``consumer_config``): when it stops, the broker keeps it in the group until its session
    ends, so a pipeline started over right after its scheduler stopped waits that long; a
    member still there after it is a scheduler still running."""
    group = settings.group_id
    session = float(settings.kafka.get("session.timeout.ms", _SESSION_MS)) / 1000
    deadline = time.monotonic() + session + timeout
    said = False
    while True:
        members = (
            admin.describe_consumer_groups([group], request_timeout=timeout)[group]
            .result(timeout)
            .members
        )
        if not members:
            return
        if time.monotonic() > deadline:
            raise ReportsUnavailableError(
                f"the consumer group {group} still has a member ({members[0].host}) "
                f"{session + timeout:g} s on: a scheduler of this pipeline is running; stop it "
                "and start over again"
            )
        if not said:
            logger.info(
                "Waiting for the scheduler that last read %s to leave group %s: a stopped "
                "scheduler stays in it until its session ends (%g s)",
                settings.topic,
                group,
                session,
            )
            said = True
        time.sleep(0.5)


#: librdkafka's default ``session.timeout.ms``
_SESSION_MS = 45_000


def forget_reports(settings: ConsumerSettings, timeout: float = 30.0) -> tuple[str, ...]:
    """Delete the pipeline's consumer group and the report topic, and return once the broker
    no longer lists the topic: for starting a pipeline over whose tables were recreated, so no
    report of the old tables reaches the new scheduler. A topic that other consumer groups have
    read (other pipelines' schedulers) is kept, and those groups are returned; the pipeline's
    group then stays too, its offsets moved past every report there is."""
    config: dict[str, Any] = {**settings.kafka, "logger": logger}
    admin = AdminClient(config)
    try:
        groups = admin.list_consumer_groups(request_timeout=timeout).result(timeout)
        if groups.errors:  # a group not listed could be one that reads the topic
            raise ReportsUnavailableError(
                f"listing the consumer groups of {settings.topic}'s cluster: {groups.errors[0]}"
            )
        names = [group.group_id for group in groups.valid]
        others = tuple(
            name
            for name in names
            if name != settings.group_id and _has_read(admin, name, settings.topic, timeout)
        )
        if others:
            # the topic stays for them; the group skips the reports on it now, which are of
            # the tables dropped (a new group would read them from the start)
            _skip_to_end(settings, timeout)
            return others
        if settings.group_id in names:
            _wait_until_left(admin, settings, timeout)
            admin.delete_consumer_groups([settings.group_id], request_timeout=timeout)[
                settings.group_id
            ].result(timeout)
        if settings.topic in admin.list_topics(timeout=timeout).topics:
            admin.delete_topics([settings.topic], operation_timeout=timeout)[settings.topic].result(
                timeout
            )
    except KafkaException as error:
        raise ReportsUnavailableError(
            f"forgetting the reports of group {settings.group_id} on {settings.topic}: {error}"
        ) from None
    deadline = time.monotonic() + timeout
    while settings.topic in admin.list_topics(timeout=timeout).topics:
        if time.monotonic() > deadline:
            raise ReportsUnavailableError(
                f"Kafka still lists {settings.topic} {timeout:g} s after deleting it"
            )
        time.sleep(0.2)  # topic deletion finishes in the background on the broker
    return ()


def _skip_to_end(settings: ConsumerSettings, timeout: float) -> None:
    """Commits the end of every partition of the topic as the group's offsets."""
    consumer = Consumer({**settings.kafka, "group.id": settings.group_id, "logger": logger})
    try:
        topic = consumer.list_topics(settings.topic, timeout=timeout).topics[settings.topic]
        ends = [
            TopicPartition(
                settings.topic,
                partition,
                consumer.get_watermark_offsets(
                    TopicPartition(settings.topic, partition), timeout=timeout
                )[1],
            )
            for partition in topic.partitions
        ]
        consumer.commit(offsets=ends, asynchronous=False)
    finally:
        consumer.close()


def _has_read(admin: AdminClient, group: str, topic: str, timeout: float) -> bool:
    """Whether consumer ``group`` has committed an offset on ``topic``."""
    request = [ConsumerGroupTopicPartitions(group)]
    offsets = admin.list_consumer_group_offsets(request, request_timeout=timeout)[group]
    committed = offsets.result(timeout).topic_partitions or []
    return any(partition.topic == topic for partition in committed)
