"""Fixtures over the real local stack (``tidemark stack up``); a service that is down fails the run.

Set ``TIDEMARK_HOME`` / ``TIDEMARK_<SERVICE>_PORT`` to run the suite against another stack.

Every test that reaches a service is marked ``services``: by its fixtures (any that needs
``endpoints``, ``stack`` or ``second_home``), or by the marker itself when it reaches one another
way. ``pytest -m "not services"`` (``make unit``) is the lane that needs no service.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from ingest.changelog.catalogs import IcebergSinkCatalog, SinkCatalog
from spark_jobs.session import SparkSettings, build_session
from tests.runners import MakeRunner, runner_factory
from tests.server_ids import ServerIds
from tests.server_share import shared_servers
from tests.stack_helpers import free_ports, second_stack_home
from tidemark.catalog import load_catalog, purge_namespace
from tidemark.stack.endpoints import (
    SOURCE_FLAVORS,
    STORAGES,
    LakeEndpoint,
    SourceEndpoint,
    SourceFlavor,
    StackEndpoints,
    Storage,
)
from tidemark.stack.kafka import Kafka
from tidemark.stack.postgres import Postgres
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack, StackNotHealthyError


@pytest.fixture(scope="session")
def stack_settings() -> StackSettings:
    return StackSettings.from_env()


@pytest.fixture(scope="session")
def stack(stack_settings: StackSettings) -> Stack:
    return Stack(stack_settings)


@pytest.fixture(scope="session")
def endpoints(stack: Stack) -> StackEndpoints:
    try:
        return stack.endpoints()
    except StackNotHealthyError as error:
        pytest.fail(str(error), pytrace=False)


#: the fixtures through which a test reaches a service: every fixture of a service needs one
SERVICE_FIXTURES = frozenset({"endpoints", "stack", "second_home"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)


@pytest.fixture(autouse=True)
def _servers_shared(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test of the services shares the stack's servers with the tests of other workers, or
    has them alone when marked ``server_wide`` (``tests.server_share``). Set up before the
    test's other function-scoped fixtures, so they run under it too; the session's (the
    endpoints, the catalog, Spark) come before it and change no server."""
    if request.node.get_closest_marker("services") is None:
        yield
        return
    alone = request.node.get_closest_marker("server_wide") is not None
    home = request.getfixturevalue("stack_settings").home
    with shared_servers(home / "test-locks" / "servers.lock", alone):
        yield


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``every_source`` runs once per source server of the stack, and one marked
    ``every_storage`` once per lake of the stack (JDBC on local disk, REST on S3), unless it
    names its servers or storages itself (``parametrize("source", ["mysql"], indirect=True)``)."""
    for fixture, marker, values in (
        ("source", "every_source", SOURCE_FLAVORS),
        ("storage", "every_storage", STORAGES),
    ):
        if _chosen_by(metafunc, fixture, marker):
            metafunc.parametrize(fixture, values, indirect=True)


def _chosen_by(metafunc: pytest.Metafunc, fixture: str, marker: str) -> bool:
    if fixture not in metafunc.fixturenames or not metafunc.definition.get_closest_marker(marker):
        return False
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if fixture in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return False
    return True


@pytest.fixture
def source(request: pytest.FixtureRequest, endpoints: StackEndpoints) -> SourceEndpoint:
    """The source server the test reads: each of MariaDB and MySQL in turn for a test marked
    ``every_source``, MariaDB for the others."""
    flavor: SourceFlavor = getattr(request, "param", "mariadb")
    for server, only in (("MariaDB", "mariadb_only"), ("MySQL", "mysql_only")):
        marker = request.node.get_closest_marker(only)
        if marker is not None and flavor != server.lower():
            pytest.skip(f"{server} only: {marker.args[0]}")
    return endpoints.source(flavor)


@pytest.fixture(scope="session")
def server_ids(endpoints: StackEndpoints) -> Iterator[ServerIds]:
    """``server_ids()``: a replica id for a binlog reader that no other reader of this run, or
    of a concurrent run on the same stack, uses (see ``tests.server_ids``)."""
    with ServerIds.reserved(endpoints.mariadb.admin_source()) as ids:
        yield ids


@pytest.fixture
def server_id(server_ids: ServerIds) -> int:
    """The test's own replica id, for the binlog readers of its pipeline; a test that needs
    more than one reader at a time takes more from ``server_ids``."""
    return server_ids()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name no other test or earlier run has used: test name plus a random suffix."""
    base = "".join(ch if ch.isalnum() else "_" for ch in request.node.name.lower())[:30]
    return f"{base}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def source_database(source: SourceEndpoint, unique_name: str) -> Iterator[str]:
    """A fresh database on the test's source server, dropped afterwards."""
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{unique_name}`")
    yield unique_name
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{unique_name}`")


@pytest.fixture
def admin_connection(
    source: SourceEndpoint, source_database: str
) -> Iterator[pymysql.connections.Connection[pymysql.cursors.Cursor]]:
    """An admin connection to the test's own database, autocommit on."""
    conn = source.admin_source().connect()
    conn.select_db(source_database)
    yield conn
    conn.close()


@pytest.fixture
def storage(request: pytest.FixtureRequest) -> Storage:
    """The lake the test writes to: each of the stack's in turn for a test marked
    ``every_storage``, the JDBC catalog on local disk for the others."""
    return getattr(request, "param", "local")


@pytest.fixture
def lake(endpoints: StackEndpoints, storage: Storage) -> LakeEndpoint:
    """The catalog of the test's storage, described as a pipeline file describes it."""
    return endpoints.lake(storage)


@pytest.fixture(scope="session")
def catalogs(endpoints: StackEndpoints) -> dict[Storage, Catalog]:
    """PyIceberg's view of each lake, opened once per run when first asked for."""
    return {}


@pytest.fixture
def catalog(catalogs: dict[Storage, Catalog], lake: LakeEndpoint, storage: Storage) -> Catalog:
    """PyIceberg's view of the test's lake."""
    if storage not in catalogs:
        catalogs[storage] = load_catalog(lake.name, lake.properties())
    return catalogs[storage]


@pytest.fixture
def sink_catalog(catalog: Catalog) -> SinkCatalog:
    """The test's lake as ingest uses it (``ingest.changelog.catalogs``)."""
    return IcebergSinkCatalog(catalog)


@pytest.fixture
def make_runner(catalog: Catalog) -> MakeRunner:
    """``make_runner(config)``: the ingest run of a pipeline over the test's catalog (see
    ``tests.runners``)."""
    return runner_factory(catalog)


@pytest.fixture(scope="session")
def spark_context(endpoints: StackEndpoints) -> Iterator[SparkSession]:
    """One local Spark for the whole run, on the JDBC catalog: the JVM takes seconds to start."""
    settings = SparkSettings(app_name="tidemark-tests", jars=endpoints.spark.jars)
    session = build_session(settings, endpoints.catalog.name, endpoints.catalog.properties())
    yield session
    session.stop()


@pytest.fixture
def spark(
    spark_context: SparkSession, endpoints: StackEndpoints, lake: LakeEndpoint
) -> SparkSession:
    """A Spark session on the test's lake, its catalog under the lake's name (a session of its
    own on the one Spark, for the REST catalog: ``spark_jobs.session.build_session``)."""
    settings = SparkSettings(app_name="tidemark-tests", jars=endpoints.spark.jars)
    return build_session(settings, lake.name, lake.properties())


@pytest.fixture
def namespace(catalog: Catalog, unique_name: str) -> Iterator[str]:
    """A fresh Iceberg namespace for one test, with its tables dropped afterwards."""
    catalog.create_namespace(unique_name)
    yield unique_name
    purge_namespace(catalog, unique_name, drop=True)


@pytest.fixture
def second_home(stack_settings: StackSettings, unique_name: str) -> Iterator[Path]:
    """A second stack's home beside the first, for services of the test's own (see
    ``second_stack_home``): whatever the test starts there is stopped afterwards."""
    with second_stack_home(stack_settings, unique_name) as home:
        yield home


@pytest.fixture
def own_kafka(second_home: Path) -> Kafka:
    """A broker of the test's own, to stop and start (the shared one serves other tests); each
    test that asks gets a new one, stopped and removed afterwards."""
    port, controller_port = free_ports(2)
    kafka = Kafka(
        StackSettings(home=second_home, kafka_port=port, kafka_controller_port=controller_port)
    )
    kafka.up()
    return kafka


@pytest.fixture
def own_postgres(second_home: Path) -> Postgres:
    """A PostgreSQL of the test's own (a JDBC catalog, a state database) to kill and start
    again; the shared one serves every other test."""
    (port,) = free_ports(1)
    postgres = Postgres(StackSettings(home=second_home, postgres_port=port))
    postgres.up()
    return postgres


@pytest.fixture
def reports_topic(endpoints: StackEndpoints, unique_name: str) -> Iterator[str]:
    """A fresh commit report topic of one partition (the broker does not create topics on
    first use); the scheduler's tests make theirs with three."""
    admin = AdminClient({"bootstrap.servers": endpoints.kafka.bootstrap_servers})
    topic = f"reports.{unique_name}"
    for future in admin.create_topics([NewTopic(topic, num_partitions=1)]).values():
        future.result(timeout=30)
    yield topic
    if topic in admin.list_topics(timeout=30).topics:  # a test may have deleted it
        for future in admin.delete_topics([topic]).values():
            future.result(timeout=30)
