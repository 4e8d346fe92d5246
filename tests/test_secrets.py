"""Secrets stay secret: a pipeline whose source and catalog passwords are distinctive runs, is
looked at and is misconfigured, and neither password is found in any log line, command output,
metric, status page, commit report, table property or snapshot summary. (The Kafka password is
searched for in the same places by tests/test_kafka_security.py, whose broker has a SASL
listener.)"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from prometheus_client import generate_latest
from psycopg2 import sql
from pydantic import SecretStr
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from ingest.stream.runner import StopWhen
from scheduler.state import DEFAULT_SCHEMA
from tests.ingest.pipelines import orders_pipeline, reports_block
from tidemark.app.cli import main
from tidemark.app.page_server import StatusPages
from tidemark.app.pipeline import Pipeline
from tidemark.metrics import REGISTRY
from tidemark.source import current_position
from tidemark.stack.endpoints import (
    CatalogEndpoint,
    LakeEndpoint,
    SourceEndpoint,
    StackEndpoints,
)
from tidemark.stack.postgres import CATALOG_DATABASE, Postgres
from tidemark.stack.settings import StackSettings

#: passwords nothing else contains: the source account's and the catalog's
CANARY = f"Canary-{uuid.uuid4().hex}"
CATALOG_CANARY = f"Catalog-canary-{uuid.uuid4().hex}"


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


@pytest.fixture
def canary_catalog(
    stack_settings: StackSettings, endpoints: StackEndpoints, unique_name: str
) -> Iterator[CatalogEndpoint]:
    """The stack's catalog, reached with a role of its own whose password is
    ``CATALOG_CANARY``: it may read and write the catalog's tables and read the scheduler's
    state, as a pipeline's role would."""
    role = sql.Identifier(f"tm_{unique_name}"[:63])
    grants = [
        sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(CATALOG_CANARY)),
        sql.SQL("GRANT USAGE, CREATE ON SCHEMA public TO {}").format(role),
        sql.SQL("GRANT ALL ON ALL TABLES IN SCHEMA public TO {}").format(role),
    ]
    superuser = Postgres(stack_settings).superuser(CATALOG_DATABASE)
    try:
        with superuser, superuser.cursor() as cursor:
            cursor.execute("SELECT to_regnamespace(%s)", (DEFAULT_SCHEMA,))
            if (cursor.fetchone() or (None,))[0] is not None:  # a scheduler ran on the stack
                state = sql.Identifier(DEFAULT_SCHEMA)
                grants.append(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(state, role))
                grants.append(
                    sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(state, role)
                )
            for grant in grants:
                cursor.execute(grant)
        yield endpoints.catalog.model_copy(
            update={"user": role.strings[0], "password": SecretStr(CATALOG_CANARY)}
        )
        with superuser, superuser.cursor() as cursor:
            # the catalog's own tables, had the role been the first to make them, stay
            owner = sql.Identifier(endpoints.catalog.user)
            cursor.execute(sql.SQL("REASSIGN OWNED BY {} TO {}").format(role, owner))
            cursor.execute(sql.SQL("DROP OWNED BY {}").format(role))
            cursor.execute(sql.SQL("DROP ROLE {}").format(role))
    finally:
        superuser.close()


#: ``look(lake, secret, refused_by, page_refusals)``: runs the canary pipeline into ``lake`` and
#: looks at it everywhere (``_look_everywhere``); what each place showed, and standard error
Look = Callable[[LakeEndpoint, str, str, int], tuple[dict[str, str], str]]


@pytest.fixture
def look(
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
) -> Look:
    def looked(
        lake: LakeEndpoint, secret: str, refused_by: str, page_refusals: int
    ) -> tuple[dict[str, str], str]:
        path = _canary_pipeline(
            canary_account,
            lake,
            source,
            endpoints,
            source_database,
            namespace,
            reports_topic,
            tmp_path,
            server_id,
        )
        return _look_everywhere(
            path,
            secret,
            refused_by,
            page_refusals,
            endpoints,
            namespace,
            reports_topic,
            catalog,
            caplog,
            capfd,
        )

    return looked


def test_the_passwords_are_in_no_log_output_metric_page_report_or_table_property(
    look: Look, canary_catalog: CatalogEndpoint
) -> None:
    places, errors = look(canary_catalog, CATALOG_CANARY, "status", 2)

    for password in (CANARY, CATALOG_CANARY):
        assert [place for place, content in places.items() if password in content] == []
    assert "password authentication failed" in errors, "the wrong catalog password was tried"


@pytest.mark.parametrize("storage", ["s3"], indirect=True)
def test_the_object_store_s_keys_are_in_no_log_output_metric_page_report_or_table_property(
    look: Look, lake: LakeEndpoint, endpoints: StackEndpoints
) -> None:
    """A REST catalog on S3: the store's secret key is the catalog's canary (the stack's
    store has one key pair)."""
    secret = endpoints.rest_catalog.object_store.secret_access_key.get_secret_value()

    places, errors = look(lake, secret, "ingest", 1)

    for password in (CANARY, secret):
        assert [place for place, content in places.items() if password in content] == []
    assert "SIGNATURE_DOES_NOT_MATCH" in errors, "the wrong secret key was tried"


def _canary_pipeline(
    account: str,
    lake: LakeEndpoint,
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    reports_topic: str,
    tmp_path: Path,
    server_id: int,
) -> Path:
    """The orders pipeline into ``lake``, read with the canary account, reporting to Kafka."""
    with source.admin_source().connect() as admin, admin.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.orders (id INT PRIMARY KEY, v INT)")
        cursor.execute(f"INSERT INTO `{source_database}`.orders VALUES (1, 1), (2, 2)")
    path = orders_pipeline(
        tmp_path,
        source,
        lake,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
        extra=reports_block(
            reports_topic, {"bootstrap.servers": endpoints.kafka.bootstrap_servers}
        ),
    )
    text = path.read_text()
    path.write_text(
        text.replace(f"username: {source.cdc_user}", f"username: {account}").replace(
            f"password: {source.cdc_password.get_secret_value()}", f"password: {CANARY}"
        )
    )
    return path


def _look_everywhere(
    path: Path,
    catalog_secret: str,
    refused_by_catalog: str,
    page_refusals: int,
    endpoints: StackEndpoints,
    namespace: str,
    reports_topic: str,
    catalog: Catalog,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> tuple[dict[str, str], str]:
    """Runs the pipeline at ``path``, looks at it with every command and the status page, and
    with the source's and the catalog's secrets wrong (``refused_by_catalog`` is the command
    that fails then, ``page_refusals`` the pipelines the page cannot read: a REST catalog needs
    no object store to show a pipeline, only ingest writes there); what each place showed, and
    the standard error."""
    wrong = path.with_name("wrong.yaml")  # the account refused: its message names no password
    wrong.write_text(path.read_text().replace(CANARY, f"{CANARY}-wrong"))
    wrong_catalog = path.with_name("wrong_catalog.yaml")
    wrong_catalog.write_text(path.read_text().replace(catalog_secret, f"{catalog_secret}-wrong"))

    with caplog.at_level(logging.DEBUG):
        pipeline = Pipeline.open(path)
        end = current_position(pipeline.config.source.connection)
        pipeline.ingest(StopWhen(until_position=end, max_seconds=60))
        for command in (["status"], ["status", "--json"], ["plan"], ["validate"]):
            assert main([*command, str(path)]) == 0
        assert main(["plan", str(wrong)]) == 1
        assert main([refused_by_catalog, str(wrong_catalog)]) == 1
        page = StatusPages(
            [pipeline, Pipeline.open(wrong), Pipeline.open(wrong_catalog)],
            lambda: datetime.now(UTC),
        ).html()
    shown = capfd.readouterr()  # the reading process's output too

    changelog = catalog.load_table(f"{namespace}.orders_changelog")
    places = {
        "logs": caplog.text,  # each record formatted, with its traceback
        "standard output": shown.out,
        "standard error": shown.err,
        "commit reports": "\n".join(_messages(endpoints, reports_topic)),
        "table properties": repr(changelog.properties),
        "snapshot summaries": repr([s.summary for s in changelog.snapshots()]),
        "metrics": generate_latest(REGISTRY).decode(),
        "status page": page,
    }
    assert all(places.values()), (
        f"nothing was captured in {[k for k, v in places.items() if not v]}"
    )
    assert "refused the account" in shown.err, "the wrong source password was tried"
    assert page.count("Cannot read this pipeline") == page_refusals, "the page shows refusals"
    assert 'data-table="' in page, "the page shows the pipeline that works"
    return places, shown.err


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
