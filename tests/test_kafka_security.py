"""Commit reports over Kafka's TLS and SASL_SSL listeners: ingest publishes and the scheduler's
consumer reads with nothing but librdkafka properties under ``tidemark.reports.kafka.*``, on a
broker of the test's own with the listeners the test adds and a certificate it makes. The SASL
password is a canary, found in no log line or command output."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import generate_latest
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from ingest.changelog.reports import (
    CommitReportPublisher,
    PublisherSettings,
    ReportsUnavailableError,
)
from ingest.stream.runner import StopWhen
from scheduler.reports_consumer import ConsumerSettings, KafkaRefusedError, ReportsConsumer
from tests.ingest.pipelines import orders_pipeline, reports_block
from tests.stack_helpers import free_ports
from tests.tls_certificates import Authority, ServerFiles
from tidemark.app.cli import main
from tidemark.app.page_server import StatusPages
from tidemark.app.pipeline import Pipeline
from tidemark.contracts.reports import CommitReport
from tidemark.metrics import REGISTRY
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints
from tidemark.stack.kafka import Kafka
from tidemark.stack.settings import StackSettings

SASL_USER, SASL_PASSWORD = "scheduler", f"Kafka-canary-{uuid.uuid4().hex}"


class _SecuredKafka(Kafka):
    """The stack's broker, with a TLS listener and a SASL_SSL one (PLAIN) beside its own."""

    def __init__(self, settings: StackSettings, files: ServerFiles, ssl: int, sasl: int) -> None:
        super().__init__(settings)
        self._files, self._ssl, self._sasl = files, ssl, sasl

    def install(self) -> None:
        super().install()
        host, plain = self.settings.host, self.port
        controller = self.settings.kafka_controller_port
        properties = self.data_dir / "server.properties"
        lines = [
            line
            for line in properties.read_text().splitlines()
            if not line.startswith(("listeners=", "advertised.listeners=", "listener.security"))
        ]
        keystore = self._files.key_and_chain()
        lines += [
            f"listeners=PLAINTEXT://{host}:{plain},CONTROLLER://{host}:{controller},"
            f"SSL://{host}:{self._ssl},SASL_SSL://{host}:{self._sasl}",
            f"advertised.listeners=PLAINTEXT://{host}:{plain},SSL://{host}:{self._ssl},"
            f"SASL_SSL://{host}:{self._sasl}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,"
            "SASL_SSL:SASL_SSL",
            "ssl.keystore.type=PEM",
            f"ssl.keystore.location={keystore}",
            "sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config="
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{SASL_USER}="{SASL_PASSWORD}";',
        ]
        properties.write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class SecuredBroker:
    ca: Path
    ssl: dict[str, str]
    sasl_ssl: dict[str, str]

    def create_topic(self, topic: str) -> None:
        """A topic of one partition, made over the TLS listener (the broker makes none)."""
        config: dict[str, str | int | float | bool] = {**self.ssl}
        admin = AdminClient(config)  # kept: the topic's future needs the client alive
        admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(60)


@pytest.fixture
def secured_broker(second_home: Path, tmp_path: Path) -> SecuredBroker:
    authority = Authority(tmp_path, "kafka")
    files = authority.server("localhost", "127.0.0.1")
    plain, controller, ssl, sasl = free_ports(4)
    settings = StackSettings(home=second_home, kafka_port=plain, kafka_controller_port=controller)
    _SecuredKafka(settings, files, ssl, sasl).up()
    tls = {"security.protocol": "SSL", "ssl.ca.location": str(authority.ca_file)}
    return SecuredBroker(
        authority.ca_file,
        {"bootstrap.servers": f"127.0.0.1:{ssl}", **tls},
        {
            "bootstrap.servers": f"127.0.0.1:{sasl}",
            **tls,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": SASL_USER,
            "sasl.password": SASL_PASSWORD,
        },
    )


def test_reports_are_published_over_sasl_ssl_and_read_over_tls_and_the_password_shows_nowhere(
    secured_broker: SecuredBroker,
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    unique_name: str,
    tmp_path: Path,
    server_id: int,
    catalog: Catalog,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    topic = f"reports.{unique_name}"
    secured_broker.create_topic(topic)
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.orders (id INT PRIMARY KEY)")
        cursor.execute(f"INSERT INTO `{source_database}`.orders VALUES (1), (2)")
    path = orders_pipeline(
        tmp_path,
        source,
        endpoints.catalog,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
        extra=reports_block(topic, secured_broker.sasl_ssl),
    )
    assert SASL_PASSWORD in path.read_text()

    with caplog.at_level(logging.DEBUG):
        pipeline = Pipeline.open(path)
        end = current_position(pipeline.config.source.connection)
        pipeline.ingest(StopWhen(until_position=end))
        for command in (["status"], ["status", "--json"], ["plan"], ["validate"]):
            assert main([*command, str(path)]) == 0
        page = StatusPages([pipeline], lambda: datetime.now(UTC)).html()
    shown = capfd.readouterr()

    consumer = ReportsConsumer(ConsumerSettings(topic, secured_broker.ssl, unique_name))
    reports: list[CommitReport] = []
    try:

        def read() -> bool:
            reports.extend(consumer.poll().reports)
            return bool(reports)

        wait_until("a commit report published over SASL_SSL, read over TLS", read, 60)
    finally:
        consumer.close()
    assert {report.table for report in reports} == {f"{namespace}.orders_changelog"}
    changelog = catalog.load_table(f"{namespace}.orders_changelog")
    places = {
        "logs": caplog.text,
        "standard output": shown.out,
        "standard error": shown.err,
        "commit reports": "\n".join(report.model_dump_json() for report in reports),
        "metrics": generate_latest(REGISTRY).decode(),
        "status page": page,
        "table properties": repr(changelog.properties),
        "snapshot summaries": repr([s.summary for s in changelog.snapshots()]),
    }
    assert places["logs"] and places["standard output"], "the run and the commands were captured"
    assert 'data-table="' in page, "the page shows the pipeline"
    assert [place for place, content in places.items() if SASL_PASSWORD in content] == []


@pytest.mark.parametrize(
    ("listener", "wrong", "said"),
    [
        ("sasl_ssl", "password", "SASL authentication error: Authentication failed"),
        ("ssl", "ca", "certificate verify failed"),
    ],
)
def test_a_broker_that_refuses_the_scheduler_stops_it_with_the_reason(
    listener: str,
    wrong: str,
    said: str,
    secured_broker: SecuredBroker,
    unique_name: str,
    tmp_path: Path,
) -> None:
    topic = f"reports.{unique_name}"
    secured_broker.create_topic(topic)
    settings = dict(secured_broker.sasl_ssl if listener == "sasl_ssl" else secured_broker.ssl)
    if wrong == "password":
        settings["sasl.password"] = "not-the-password"
    else:
        settings["ssl.ca.location"] = str(Authority(tmp_path, "stranger").ca_file)
    consumer = ReportsConsumer(ConsumerSettings(topic, settings, unique_name))
    try:
        with pytest.raises(KafkaRefusedError) as refused:
            wait_until("the broker's refusal", lambda: consumer.poll().reports, 60)
    finally:
        consumer.close()

    assert said in str(refused.value)
    assert "not-the-password" not in str(refused.value)


def test_a_broker_that_refuses_ingest_says_why_once_with_the_fix(
    secured_broker: SecuredBroker, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    topic = f"reports.{unique_name}"
    secured_broker.create_topic(topic)
    settings = {**secured_broker.sasl_ssl, "sasl.password": "not-the-password"}
    publisher = CommitReportPublisher(PublisherSettings(topic, settings, kafka_timeout_seconds=2))

    def refused_again() -> bool:
        publisher.pending()  # the ingest loop's polls, which serve librdkafka's news
        return any("again" in r.getMessage() for r in caplog.records)

    with caplog.at_level(logging.DEBUG, logger="ingest.changelog.reports"):
        with pytest.raises(ReportsUnavailableError):
            publisher.ensure_topic()
        wait_until("the broker's second refusal", refused_again, 60)
    publisher.close(timeout=1)

    lines = [f"{r.levelname} {r.getMessage()}" for r in caplog.records if r.levelno >= logging.INFO]
    errors = [line for line in lines if line.startswith("ERROR")]
    # the other line: Kafka is unavailable, since the topic's metadata did not come
    assert len(lines) <= 2 and len(errors) == 1, lines
    (error,) = errors
    assert error.startswith("ERROR Kafka error for commit reports: ")
    assert "SASL authentication error: Authentication failed" in error
    assert error.endswith(
        "(_AUTHENTICATION); check the pipeline's tidemark.reports.kafka.* security settings "
        "(security.protocol, sasl.*, ssl.*)"
    )
