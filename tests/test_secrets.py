"""Secrets stay secret: a pipeline whose source password is distinctive runs, is looked at and
is misconfigured, and the password is found in no log line, command output, commit report,
table property or snapshot summary. (The catalog's password is the stack's own, not
distinctive enough to search for; ``tests/config/test_secrets_and_variables.py`` masks it in
what the configuration shows.)"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyiceberg.catalog import Catalog

from ingest.stream.runner import StopWhen
from tests.ingest.pipelines import orders_pipeline, reports_block
from tests.polling import wait_until
from tidemark.cli import main
from tidemark.pipeline import Pipeline
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

#: a password nothing else contains
CANARY = f"Canary-{uuid.uuid4().hex}"


@pytest.fixture
def canary_account(source: SourceEndpoint, unique_name: str, source_database: str) -> Iterator[str]:
    """A CDC account whose password is ``CANARY``."""
    user = f"tm_{unique_name}"[:32]
    with source.admin_source().connect() as admin, admin.cursor() as cursor:
        cursor.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, CANARY))
        cursor.execute(f"GRANT SELECT ON `{source_database}`.* TO %s@'%%'", (user,))
        cursor.execute("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO %s@'%%'", (user,))
        yield user
        cursor.execute("DROP USER %s@'%%'", (user,))


def test_the_source_password_is_in_no_log_output_report_or_table_property(
    canary_account: str,
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    reports_topic: str,
    catalog: Catalog,
    tmp_path: Path,
    server_id: int,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    with source.admin_source().connect() as admin, admin.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.orders (id INT PRIMARY KEY, v INT)")
        cursor.execute(f"INSERT INTO `{source_database}`.orders VALUES (1, 1), (2, 2)")
    path = orders_pipeline(
        tmp_path,
        source,
        endpoints.catalog,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
        extra=reports_block(
            reports_topic, {"bootstrap.servers": endpoints.kafka.bootstrap_servers}
        ),
    )
    text = path.read_text()
    path.write_text(
        text.replace(f"username: {source.cdc_user}", f"username: {canary_account}").replace(
            f"password: {source.cdc_password.get_secret_value()}", f"password: {CANARY}"
        )
    )
    wrong = tmp_path / "wrong.yaml"  # the account refused: its message names no password
    wrong.write_text(path.read_text().replace(CANARY, f"{CANARY}-wrong"))

    with caplog.at_level(logging.DEBUG):
        pipeline = Pipeline.open(path)
        end = current_position(pipeline.config.source.connection())
        pipeline.ingest(StopWhen(until_position=end, max_seconds=60))
        for command in (["status"], ["status", "--json"], ["plan"], ["validate"]):
            assert main([*command, str(path)]) == 0
        assert main(["plan", str(wrong)]) == 1
    shown = capfd.readouterr()  # the reading process's output too

    changelog = catalog.load_table(f"{namespace}.orders_changelog")
    places = {
        "logs": caplog.text,  # each record formatted, with its traceback
        "standard output": shown.out,
        "standard error": shown.err,
        "commit reports": "\n".join(_messages(endpoints, reports_topic)),
        "table properties": repr(changelog.properties),
        "snapshot summaries": repr([s.summary for s in changelog.snapshots()]),
    }
    assert all(places.values()), (
        f"nothing was captured in {[k for k, v in places.items() if not v]}"
    )
    assert "refused the account" in shown.err, "the wrong password was tried"
    assert [place for place, content in places.items() if CANARY in content] == []


def _messages(endpoints: StackEndpoints, topic: str) -> list[str]:
    """Every message on ``topic``'s partition 0, decoded."""
    consumer = Consumer(
        {"bootstrap.servers": endpoints.kafka.bootstrap_servers, "group.id": f"read-{topic}"}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        messages: list[str] = []

        def read_all() -> bool:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                messages.append((message.value() or b"").decode(errors="replace"))
            return len(messages) >= high

        wait_until(f"the {high} messages of {topic}", read_all, 60)
        return messages
    finally:
        consumer.close()
