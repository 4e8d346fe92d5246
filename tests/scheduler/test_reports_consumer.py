"""The scheduler's consumer through a Kafka outage, on a broker of the test's own: it reads
every report once, and the log says the outage once, once a minute, and once when it is over."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from bench.workloads.shop_schedule import publish
from scheduler.reports_consumer import GROUP_PREFIX, ConsumerSettings, ReportsConsumer
from tests.kafka_outage import FAST_RECONNECT, HANDFUL, ManualClock, kafka_outages, said
from tests.scheduler.harness import DEADLINE, REPORTS
from tidemark.contracts.reports import CommitReport
from tidemark.metrics import sample
from tidemark.outages import OutageLog
from tidemark.stack.kafka import Kafka
from tidemark.stack.process import wait_for

LOGGER = "scheduler.reports_consumer"
#: how long the scheduler's tick waits for reports here
POLL_SECONDS = 0.1


@pytest.fixture
def own_topic(own_kafka: Kafka, unique_name: str) -> str:
    admin = AdminClient({"bootstrap.servers": own_kafka.bootstrap_servers})
    admin.create_topics([NewTopic(unique_name, num_partitions=3)])[unique_name].result(30)
    return unique_name


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def outages(clock: ManualClock, unique_name: str) -> OutageLog:
    return kafka_outages(unique_name, LOGGER, clock)


@pytest.fixture
def consumer(
    own_kafka: Kafka, own_topic: str, unique_name: str, outages: OutageLog
) -> Iterator[ReportsConsumer]:
    kafka = {"bootstrap.servers": own_kafka.bootstrap_servers, **FAST_RECONNECT}
    settings = ConsumerSettings(own_topic, kafka, GROUP_PREFIX + unique_name)
    consumer = ReportsConsumer(settings, outages=outages)
    yield consumer
    consumer.close()


class Reading:
    """What the scheduler's tick does with the consumer: read, record, commit."""

    def __init__(self, consumer: ReportsConsumer) -> None:
        self.consumer = consumer
        self.read: list[CommitReport] = []

    def tick(self) -> int:
        batch = self.consumer.poll(timeout=POLL_SECONDS)
        self.read.extend(batch.reports)
        self.consumer.commit(batch)
        return len(batch.reports)

    def until(self, count: int) -> bool:
        self.tick()
        return len(self.read) >= count


def test_a_kafka_outage_is_said_once_then_once_a_minute_then_once_when_over(
    own_kafka: Kafka,
    own_topic: str,
    consumer: ReportsConsumer,
    outages: OutageLog,
    clock: ManualClock,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    servers = own_kafka.bootstrap_servers
    reading = Reading(consumer)
    publish(servers, own_topic, REPORTS[:3])
    assert wait_for(lambda: reading.until(3), timeout=DEADLINE)

    caplog.clear()
    with caplog.at_level(logging.INFO):
        own_kafka.down()

        def noticed() -> bool:
            reading.tick()
            return outages.is_down

        assert wait_for(noticed, timeout=DEADLINE)
        for _ in range(30):  # the scheduler ticking for two and a half minutes
            assert reading.tick() == 0
            clock.now += 5
        assert sample("tidemark_dependency_up", pipeline=unique_name, dependency="kafka") == 0
        own_kafka.up()
        publish(servers, own_topic, REPORTS[3:])
        assert wait_for(lambda: reading.until(len(REPORTS)), timeout=DEADLINE)

    read = Counter((r.table, r.snapshot_id) for r in reading.read)
    assert read == Counter((r.table, r.snapshot_id) for r in REPORTS)  # each once
    lines = said(caplog, LOGGER)
    assert len(lines) <= HANDFUL, "\n".join([f"{len(lines)} lines:", *lines])
    went, *reminders, back = lines
    assert went.startswith("WARNING Kafka is unavailable (")
    assert went.endswith("): no commit report is read until it is back")
    assert [r.split(" (")[0] for r in reminders] == [
        "WARNING Still waiting for Kafka, unavailable for 60 s",
        "WARNING Still waiting for Kafka, unavailable for 120 s",
    ]
    assert back == "INFO Kafka is back after 150 s"
    assert sample("tidemark_dependency_up", pipeline=unique_name, dependency="kafka") == 1
