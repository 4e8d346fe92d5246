"""How a Kafka client of ours turns librdkafka's lines and errors into one line per outage."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError

from tests.kafka_outage import ManualClock, kafka_outages, said
from tidemark.kafka_log import KafkaClientLog
from tidemark.metrics import sample

LOGGER = "tests.kafka_log"
REFUSED = "127.0.0.1:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed: Connection refused"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def kafka(clock: ManualClock, unique_name: str, caplog: pytest.LogCaptureFixture) -> KafkaClientLog:
    caplog.set_level(logging.INFO, logger=LOGGER)  # what an operator reads by default
    return KafkaClientLog(
        kafka_outages(unique_name, LOGGER, clock),
        logging.getLogger(LOGGER),
        client="commit reports",
        action="reports wait",
        clock=clock,
    )


def librdkafka_line(kafka: KafkaClientLog, level: int, facility: str, text: str) -> None:
    """What confluent_kafka calls on a client's ``logger`` for one of librdkafka's lines."""
    kafka.log(level, "%s [%s] %s", facility, "rdkafka#producer-1", text)


def test_librdkafka_lines_of_one_failed_connection_are_debug_lines(
    kafka: KafkaClientLog, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        for _ in range(156):  # a consumer's second of reconnecting, eight times over
            librdkafka_line(kafka, logging.ERROR, "FAIL", REFUSED)
        librdkafka_line(kafka, logging.WARNING, "REQTMOUT", "Timed out 1 in-flight request")

    assert said(caplog, LOGGER) == []
    assert len([r for r in caplog.records if r.levelno == logging.DEBUG]) == 157


def test_other_librdkafka_lines_pass_at_most_once_a_minute_each(
    kafka: KafkaClientLog, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):
        librdkafka_line(kafka, logging.WARNING, "MAXPOLL", "Application maximum poll exceeded")
        librdkafka_line(kafka, logging.WARNING, "CONFWARN", "Configuration property ignored")
        clock.now += 20
    librdkafka_line(kafka, logging.WARNING, "MAXPOLL", "Application maximum poll exceeded")

    assert said(caplog, LOGGER) == [
        "WARNING MAXPOLL [rdkafka#producer-1] Application maximum poll exceeded",
        "WARNING CONFWARN [rdkafka#producer-1] Configuration property ignored",
        "WARNING MAXPOLL [rdkafka#producer-1] Application maximum poll exceeded",
    ]


def test_every_broker_down_is_an_outage_said_once_then_once_a_minute_then_once_when_over(
    kafka: KafkaClientLog, clock: ManualClock, caplog: pytest.LogCaptureFixture, unique_name: str
) -> None:
    labels = {"pipeline": unique_name, "dependency": "kafka"}
    kafka.on_error(KafkaError(KafkaError._TRANSPORT, REFUSED))
    kafka.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    for _ in range(150):  # librdkafka tries again every second for two and a half minutes
        kafka.on_error(KafkaError(KafkaError._TRANSPORT, REFUSED))
        clock.now += 1
    assert sample("tidemark_dependency_up", **labels) == 0
    kafka.answered()

    assert said(caplog, LOGGER) == [
        f"WARNING Kafka is unavailable ({REFUSED}): reports wait",
        f"WARNING Still waiting for Kafka, unavailable for 60 s ({REFUSED})",
        f"WARNING Still waiting for Kafka, unavailable for 120 s ({REFUSED})",
        "INFO Kafka is back after 150 s",
    ]
    assert sample("tidemark_dependency_up", **labels) == 1


def test_one_failed_connection_while_other_brokers_answer_is_no_outage(
    kafka: KafkaClientLog, caplog: pytest.LogCaptureFixture, unique_name: str
) -> None:
    kafka.on_error(KafkaError(KafkaError._TRANSPORT, REFUSED))  # a broker of three restarts

    assert said(caplog, LOGGER) == []
    assert sample("tidemark_dependency_up", pipeline=unique_name, dependency="kafka") == 1


def test_a_refusal_is_said_with_its_fix_once_a_minute_and_is_no_outage(
    kafka: KafkaClientLog, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    failed = "SASL authentication error: Authentication failed: Invalid username or password"
    for _ in range(90):  # librdkafka tries again every second
        kafka.on_error(KafkaError(KafkaError._AUTHENTICATION, failed))
        clock.now += 1

    line = (
        f"ERROR Kafka error for commit reports: {failed} (_AUTHENTICATION); check the "
        "pipeline's tidemark.reports.kafka.* security settings (security.protocol, sasl.*, ssl.*)"
    )
    assert said(caplog, LOGGER) == [line, line]  # at 0 s and at 60 s
    assert not kafka.outages.is_down
