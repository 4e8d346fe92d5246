"""Commit reports reach Kafka in commit order per table, through outages and restarts.

Tables are real changelog tables in the stack's catalog, committed the way ingest commits. The
outage tests start a broker of their own (the shared one serves other tests) and stop it.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from pyiceberg.catalog import Catalog

from ingest.changelog.catalogs import IcebergSinkCatalog
from ingest.changelog.reports import (
    CommitReportPublisher,
    PublisherSettings,
    ReportsUnavailableError,
    report_from_commit,
)
from ingest.changelog.table import ChangelogTable, open_changelog
from tests.kafka_outage import FAST_RECONNECT, HANDFUL, ManualClock, kafka_outages, said
from tests.stack_helpers import free_ports
from tidemark.contracts.progress import TableProgress
from tidemark.contracts.reports import CommitReport
from tidemark.errors import ConfigError
from tidemark.metrics import sample
from tidemark.source import BinlogPosition
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.kafka import Kafka
from tidemark.stack.process import wait_for

#: how long a test waits for Kafka to deliver what it should
DEADLINE = 60.0
#: a publish that waits for the network would take far longer
PROMPT = 0.05
LOGGER = "ingest.changelog.reports"


# -- changelog tables committed like ingest commits ------------------------------------------


class Changelog:
    """A real changelog table and the reports of the commits made to it here."""

    def __init__(self, catalog: Catalog, identifier: str) -> None:
        schema = pa.schema([pa.field("id", pa.int64())])
        self._catalog = catalog
        self._table: ChangelogTable = open_changelog(catalog, identifier, schema, {})
        self.identifier = identifier
        self.reports: list[CommitReport] = []

    def commit(
        self, *, partial_rows: int = 0, nulled: tuple[tuple[str, int], ...] = ()
    ) -> CommitReport:
        """Append one row with its progress, as ingest does; the report of that commit."""
        n = len(self.reports) + 1
        row = {
            "id": n,
            "_tm_op": "c",
            "_tm_event_time": datetime.now(UTC),
            "_tm_position": f"mariadb-bin.000001:{1000 + n}",
            "_tm_source_db": "shop",
            "_tm_source_table": "orders",
            "_tm_order": n,
            "_tm_schema_version": 1,
        }
        progress = TableProgress(
            position=BinlogPosition("mariadb-bin.000001", 1000 + n),
            watermark_ms=1_767_225_600_000 + n,
            last_order=n,
            source="127.0.0.1:47306",
            partial_rows=partial_rows,
            nulled=nulled,
        )
        made = self._table.commit(pa.Table.from_pylist([row], self._table.schema), progress)
        report = report_from_commit(self.identifier, made)
        assert report is not None
        self.reports.append(report)
        return report


def read_topic(servers: str, topic: str, count: int) -> dict[str, list[CommitReport]]:
    """Every report on ``topic`` per table key, in offset order, once ``count`` are there."""
    consumer = Consumer(
        {"bootstrap.servers": servers, "group.id": topic, "enable.auto.commit": False}
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in partitions
        }
        assert sum(ends.values()) == count, f"{sum(ends.values())} reports, expected {count}"
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions if ends[p]])
        by_table: dict[str, list[CommitReport]] = {}
        deadline = time.monotonic() + DEADLINE
        while sum(map(len, by_table.values())) < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=1):
                assert message.error() is None, message.error()
                report = CommitReport.from_json(message.value() or b"")
                assert message.key() == report.table.encode()
                by_table.setdefault(report.table, []).append(report)
        return by_table
    finally:
        consumer.close()


def wait_until_delivered(publisher: CommitReportPublisher) -> None:
    assert wait_for(lambda: publisher.pending() == 0, timeout=DEADLINE), publisher.pending()


def publish_promptly(publisher: CommitReportPublisher, report: CommitReport) -> None:
    started = time.monotonic()
    publisher.publish(report)
    assert time.monotonic() - started < PROMPT


# -- against the shared broker ---------------------------------------------------------------


def test_reports_are_published_keyed_by_table_in_commit_order(
    endpoints: StackEndpoints, catalog: Catalog, namespace: str, unique_name: str
) -> None:
    servers = endpoints.kafka.bootstrap_servers
    orders = Changelog(catalog, f"{namespace}.orders")
    customers = Changelog(catalog, f"{namespace}.customers")
    for changelog in (orders, customers, orders):  # committed before the publisher existed
        changelog.commit()
    settings = PublisherSettings(topic=unique_name, kafka={"bootstrap.servers": servers})
    publisher = CommitReportPublisher(settings)

    assert (
        publisher.catch_up(IcebergSinkCatalog(catalog), [orders.identifier, customers.identifier])
        == 3
    )
    for changelog in (customers, orders, customers, orders):
        publisher.publish(changelog.commit())
    wait_until_delivered(publisher)
    assert publisher.close(timeout=10) == 0

    topic = AdminClient({"bootstrap.servers": servers}).list_topics(unique_name, timeout=30)
    assert len(topic.topics[unique_name].partitions) == settings.partitions
    assert read_topic(servers, unique_name, 7) == {
        orders.identifier: orders.reports,
        customers.identifier: customers.reports,
    }
    restarted = CommitReportPublisher(settings)
    assert (
        restarted.catch_up(IcebergSinkCatalog(catalog), [orders.identifier, customers.identifier])
        == 0
    )
    assert restarted.close(timeout=10) == 0


def test_a_report_is_rebuilt_from_its_snapshot_summary(catalog: Catalog, namespace: str) -> None:
    orders = Changelog(catalog, f"{namespace}.orders")

    whole, part = orders.commit(), orders.commit(partial_rows=3)
    nulled = orders.commit(nulled=(("day", 2), ("seen", 1)))

    assert whole.model_dump(exclude={"snapshot_id", "committed_at_ms"}) == {
        "version": "1.4",
        "table": f"{namespace}.orders",
        "watermark_ms": 1_767_225_600_001,
        "position": "mariadb-bin.000001:1001",
        "rows_added": 1,
        "source": "127.0.0.1:47306",
        "partial": False,
        "last_order": 1,
        "late_rows": 0,
        "late_from_ms": None,
        "late_to_ms": None,
        "nulled_values": {},
    }
    assert (part.partial, part.position) == (True, "mariadb-bin.000001:1002")
    assert nulled.nulled_values == {"day": 2, "seen": 1}


def test_the_last_report_of_a_table_is_found_behind_many_of_another(
    endpoints: StackEndpoints, catalog: Catalog, namespace: str, unique_name: str
) -> None:
    servers = endpoints.kafka.bootstrap_servers
    settings = PublisherSettings(
        topic=unique_name, kafka={"bootstrap.servers": servers}, partitions=1, tail_window=2
    )
    orders = Changelog(catalog, f"{namespace}.orders")
    customers = Changelog(catalog, f"{namespace}.customers")
    first = CommitReportPublisher(settings)
    first.catch_up(IcebergSinkCatalog(catalog), [orders.identifier, customers.identifier])
    for changelog in (orders, orders, *[customers] * 5):
        first.publish(changelog.commit())
    wait_until_delivered(first)
    first.close(timeout=10)
    orders.commit()  # committed, then the process died before publishing

    second = CommitReportPublisher(settings)

    assert (
        second.catch_up(IcebergSinkCatalog(catalog), [orders.identifier, customers.identifier]) == 1
    )
    wait_until_delivered(second)
    assert read_topic(servers, unique_name, 8) == {
        orders.identifier: orders.reports,
        customers.identifier: customers.reports,
    }
    second.close(timeout=10)


def test_settings_that_could_lose_reports_are_refused() -> None:
    settings = PublisherSettings(
        topic="reports", kafka={"bootstrap.servers": "127.0.0.1:9", "acks": "1"}
    )

    with pytest.raises(ConfigError) as failure:
        CommitReportPublisher(settings)

    assert str(failure.value) == (
        "reports.kafka.acks is '1', which could lose commit reports; remove it "
        "(Tidemark sets acks=all)"
    )


def test_recover_retries_no_more_often_than_retry_seconds(
    catalog: Catalog, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    (closed_port,) = free_ports(1)
    now = [0.0]
    settings = PublisherSettings(
        topic="never-created",
        kafka={"bootstrap.servers": f"127.0.0.1:{closed_port}", "log_level": "0"},
        kafka_timeout_seconds=0.5,
        retry_seconds=15,
    )
    publisher = CommitReportPublisher(settings, clock=lambda: now[0])
    orders = Changelog(catalog, f"{namespace}.orders")
    publish_promptly(publisher, orders.commit())  # no topic known yet: waits in the history
    assert publisher.behind() == {orders.identifier}

    def attempts() -> int:
        return sum("still waiting for Kafka" in r.message for r in caplog.records)

    with caplog.at_level(logging.DEBUG, logger="ingest.changelog.reports"):
        publisher.recover(IcebergSinkCatalog(catalog))
        assert wait_for(lambda: attempts() == 1, timeout=DEADLINE)
        now[0] = 14.0
        publisher.recover(IcebergSinkCatalog(catalog))  # too soon: no second attempt starts
        now[0] = 15.0
        publisher.recover(IcebergSinkCatalog(catalog))
        assert wait_for(lambda: attempts() == 2, timeout=DEADLINE)

    assert publisher.behind() == {orders.identifier}
    assert publisher.close(timeout=5) == 0


# -- a broker of the test's own (tests/conftest.py's own_kafka), stopped and started ---------


def test_the_broker_of_its_own_is_defined_once_for_every_suite() -> None:
    """``own_kafka`` is tests/conftest.py's, not a copy per module that may drift."""
    tests = Path(__file__).parents[2]
    defined = [
        str(path.relative_to(tests.parent))
        for path in sorted(tests.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name == "own_kafka"
    ]
    assert defined == ["tests/conftest.py"]


def own_settings(kafka: Kafka, topic: str, *, max_pending: int = 10_000) -> PublisherSettings:
    servers = {"bootstrap.servers": kafka.bootstrap_servers, **FAST_RECONNECT}
    return PublisherSettings(
        topic=topic, kafka=servers, kafka_timeout_seconds=2, max_pending=max_pending
    )


def test_publish_never_waits_for_kafka_and_missed_reports_arrive_in_order(
    own_kafka: Kafka, catalog: Catalog, namespace: str, unique_name: str
) -> None:
    publisher = CommitReportPublisher(own_settings(own_kafka, unique_name))
    orders = Changelog(catalog, f"{namespace}.orders")
    orders.commit()
    assert publisher.catch_up(IcebergSinkCatalog(catalog), [orders.identifier]) == 1
    wait_until_delivered(publisher)

    own_kafka.down()
    for _ in range(20):  # ingest keeps committing to Iceberg
        publish_promptly(publisher, orders.commit())
    assert publisher.pending() == 20
    assert publisher.behind() == frozenset()
    own_kafka.up()

    wait_until_delivered(publisher)
    assert read_topic(own_kafka.bootstrap_servers, unique_name, 21) == {
        orders.identifier: orders.reports
    }
    assert publisher.close(timeout=10) == 0


def test_reports_beyond_the_memory_bound_are_rebuilt_from_iceberg_history(
    own_kafka: Kafka, catalog: Catalog, namespace: str, unique_name: str
) -> None:
    publisher = CommitReportPublisher(own_settings(own_kafka, unique_name, max_pending=3))
    orders = Changelog(catalog, f"{namespace}.orders")
    publisher.catch_up(IcebergSinkCatalog(catalog), [orders.identifier])

    own_kafka.down()
    for _ in range(8):
        publish_promptly(publisher, orders.commit())
    assert publisher.pending() == 3
    assert publisher.behind() == {orders.identifier}
    own_kafka.up()

    def caught_up() -> bool:
        publisher.recover(IcebergSinkCatalog(catalog))  # what the ingest loop does on every tick
        return not publisher.behind() and publisher.pending() == 0

    assert wait_for(caught_up, timeout=DEADLINE)
    assert read_topic(own_kafka.bootstrap_servers, unique_name, 8) == {
        orders.identifier: orders.reports
    }
    publisher.close(timeout=10)


def test_a_kafka_outage_is_said_once_then_once_a_minute_then_once_when_over(
    own_kafka: Kafka,
    catalog: Catalog,
    namespace: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    outages = kafka_outages(unique_name, LOGGER, clock)
    publisher = CommitReportPublisher(
        own_settings(own_kafka, unique_name, max_pending=5), outages=outages
    )
    orders = Changelog(catalog, f"{namespace}.orders")
    orders.commit()
    publisher.catch_up(IcebergSinkCatalog(catalog), [orders.identifier])
    wait_until_delivered(publisher)

    def noticed() -> bool:
        publisher.recover(
            IcebergSinkCatalog(catalog)
        )  # the ingest loop's tick, which serves librdkafka's news
        return outages.is_down

    caplog.clear()  # what a new broker said at first (no idempotence PID yet, say)
    with caplog.at_level(logging.INFO):
        own_kafka.down()
        assert wait_for(noticed, timeout=DEADLINE)
        for _ in range(30):  # two and a half minutes of ingest, committing every 5 s
            publish_promptly(publisher, orders.commit())
            publisher.recover(IcebergSinkCatalog(catalog))
            clock.now += 5
        assert publisher.behind() == {orders.identifier}  # beyond max_pending
        assert sample("tidemark_dependency_up", pipeline=unique_name, dependency="kafka") == 0
        own_kafka.up()

        def caught_up() -> bool:
            publisher.recover(IcebergSinkCatalog(catalog))
            return not publisher.behind() and publisher.pending() == 0

        assert wait_for(caught_up, timeout=DEADLINE)

    assert read_topic(own_kafka.bootstrap_servers, unique_name, 31) == {
        orders.identifier: orders.reports
    }
    lines = said(caplog, LOGGER)
    assert len(lines) <= HANDFUL, "\n".join([f"{len(lines)} lines:", *lines])
    went, *reminders, back, caught = lines
    assert went.startswith("WARNING Kafka is unavailable (")
    assert went.endswith(
        "): commit reports wait in the changelog history and follow when it is back"
    )
    assert [r.split(" (")[0] for r in reminders] == [
        "WARNING Still waiting for Kafka, unavailable for 60 s",
        "WARNING Still waiting for Kafka, unavailable for 120 s",
    ]
    assert back == "INFO Kafka is back after 150 s"
    assert caught == f"INFO Caught up 25 commit report(s) for {orders.identifier}"
    assert sample("tidemark_dependency_up", pipeline=unique_name, dependency="kafka") == 1
    publisher.close(timeout=10)


#: an ingest process that publishes the reports it reads on stdin, until it is killed
CHILD = """
import json, sys
from ingest.changelog.reports import CommitReportPublisher, PublisherSettings
from tidemark.contracts.reports import CommitReport

publisher = CommitReportPublisher(PublisherSettings(**json.loads(sys.argv[1])))
publisher.ensure_topic()
sys.stdout.write("ready\\n")
sys.stdout.flush()
for line in sys.stdin:
    publisher.publish(CommitReport.model_validate_json(line))
    sys.stdout.write(f"pending {publisher.pending()}\\n")
    sys.stdout.flush()
"""


def test_reports_of_a_killed_ingest_are_republished_by_the_next_one(
    own_kafka: Kafka, catalog: Catalog, namespace: str, unique_name: str
) -> None:
    settings = own_settings(own_kafka, unique_name)
    orders = Changelog(catalog, f"{namespace}.orders")
    first = orders.commit()
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            json.dumps({"topic": unique_name, "kafka": dict(settings.kafka)}),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        child.stdin.write(first.model_dump_json() + "\n")
        child.stdin.flush()
        assert child.stdout.readline().startswith("pending ")
        assert wait_for(lambda: _on_topic(own_kafka, unique_name) == 1, timeout=DEADLINE)

        own_kafka.down()
        for _ in range(5):
            child.stdin.write(orders.commit().model_dump_json() + "\n")
            child.stdin.flush()
            assert child.stdout.readline().startswith("pending ")
        os.kill(child.pid, signal.SIGKILL)  # its unsent reports die with it
    finally:
        child.kill()
        child.wait()

    restarted = CommitReportPublisher(settings)  # Kafka is still down
    with pytest.raises(ReportsUnavailableError):
        restarted.catch_up(IcebergSinkCatalog(catalog), [orders.identifier])
    assert restarted.behind() == {orders.identifier}
    publish_promptly(restarted, orders.commit())
    own_kafka.up()

    def caught_up() -> bool:
        restarted.recover(IcebergSinkCatalog(catalog))
        return not restarted.behind() and restarted.pending() == 0

    assert wait_for(caught_up, timeout=DEADLINE)
    assert read_topic(own_kafka.bootstrap_servers, unique_name, 7) == {
        orders.identifier: orders.reports
    }
    restarted.close(timeout=10)


def _on_topic(kafka: Kafka, topic: str) -> int:
    """How many reports ``topic`` holds; -1 while a new topic's partitions have no leader."""
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": topic})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        )
    except KafkaException:
        return -1
    finally:
        consumer.close()


def test_a_report_the_broker_refuses_is_republished_once_it_accepts_it(
    endpoints: StackEndpoints, catalog: Catalog, namespace: str, unique_name: str
) -> None:
    servers = endpoints.kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})
    too_small = {"max.message.bytes": "100"}  # a report is some 300 bytes
    created = admin.create_topics([NewTopic(unique_name, num_partitions=1, config=too_small)])
    created[unique_name].result(timeout=30)
    settings = PublisherSettings(
        topic=unique_name, kafka={"bootstrap.servers": servers}, retry_seconds=0
    )
    publisher = CommitReportPublisher(settings)
    orders = Changelog(catalog, f"{namespace}.orders")
    publisher.catch_up(IcebergSinkCatalog(catalog), [orders.identifier])

    for _ in range(3):
        publisher.publish(orders.commit())
    wait_until_delivered(publisher)  # refused, not lost
    assert publisher.behind() == {orders.identifier}
    resource = ConfigResource(
        ResourceType.TOPIC,
        unique_name,
        incremental_configs=[
            ConfigEntry(
                "max.message.bytes",
                "1048588",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)

    def caught_up() -> bool:
        publisher.recover(IcebergSinkCatalog(catalog))
        return not publisher.behind() and publisher.pending() == 0

    assert wait_for(caught_up, timeout=DEADLINE)
    assert read_topic(servers, unique_name, 3) == {orders.identifier: orders.reports}
    publisher.close(timeout=10)
