"""The stack's Iceberg REST catalog (Iceberg's own server on PostgreSQL, its warehouse on the
S3 store): what PyIceberg does through it, where it listens, and that it keeps its tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import SecretStr
from pyiceberg.catalog import Catalog, load_catalog

from tests.stack_helpers import free_port_block, free_ports, listening_addresses
from tidemark.app.cli import main
from tidemark.stack.endpoints import ObjectStoreEndpoint, RestCatalogEndpoint, StackEndpoints
from tidemark.stack.object_store import ObjectStore
from tidemark.stack.postgres import Postgres
from tidemark.stack.rest_catalog import RestCatalog, launcher_environment
from tidemark.stack.service import Service
from tidemark.stack.settings import OBJECT_STORE_HTTP_PORTS, SEAWEEDFS_GRPC_OFFSET, StackSettings
from tidemark.stack.stack import Stack

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def pyiceberg_catalog(endpoint: RestCatalogEndpoint) -> Catalog:
    """PyIceberg's REST catalog from the endpoint's Java-named properties."""
    java = endpoint.properties()
    return load_catalog(
        endpoint.name,
        type="rest",
        uri=java["uri"],
        **{
            "s3.endpoint": java["s3.endpoint"],
            "s3.access-key-id": java["s3.access-key-id"],
            "s3.secret-access-key": java["s3.secret-access-key"],
            "s3.region": java["client.region"],
        },
    )


@pytest.fixture
def rest_namespace(endpoints: StackEndpoints, unique_name: str) -> Iterator[tuple[Catalog, str]]:
    catalog = pyiceberg_catalog(endpoints.rest_catalog)
    catalog.create_namespace(unique_name)
    yield catalog, unique_name
    for identifier in catalog.list_tables(unique_name):
        catalog.purge_table(identifier)
    catalog.drop_namespace(unique_name)


def test_pyiceberg_writes_a_table_to_the_object_store_and_reads_it_back(
    rest_namespace: tuple[Catalog, str], endpoints: StackEndpoints
) -> None:
    catalog, namespace = rest_namespace
    table = catalog.create_table(f"{namespace}.people", schema=SCHEMA)

    table.append(
        pa.table({"id": [1, 2], "name": ["ada", "bob"]}, schema=SCHEMA),
        snapshot_properties={"tidemark.batch": "1"},
    )
    reloaded = catalog.load_table(f"{namespace}.people")

    assert reloaded.scan().to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "name": "ada"},
        {"id": 2, "name": "bob"},
    ]
    snapshot = reloaded.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary["tidemark.batch"] == "1"
    bucket = endpoints.object_store.bucket
    assert reloaded.location() == f"s3://{bucket}/{namespace}/people"


def test_the_catalog_listens_on_loopback_only(stack: Stack) -> None:
    (catalog,) = (daemon for daemon in stack.daemons if isinstance(daemon, RestCatalog))
    pid = catalog.running_pid()
    assert pid is not None

    assert listening_addresses(pid) == {("127.0.0.1", stack.settings.rest_catalog_port)}


def test_status_json_names_the_catalog_and_its_warehouse(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stack", "status", "--json"]) == 0

    report = json.loads(capsys.readouterr().out)["services"]["rest_catalog"]
    assert report["healthy"] is True
    assert {key: report[key] for key in ("name", "uri", "warehouse")} == {
        "name": "tidemark",
        "uri": f"http://127.0.0.1:{stack.settings.rest_catalog_port}",
        "warehouse": "s3://warehouse/",
    }


def test_a_catalog_stopped_and_started_again_keeps_its_tables(second_home: Path) -> None:
    postgres_port, rest_port = free_ports(2)
    settings = StackSettings(
        home=second_home,
        postgres_port=postgres_port,
        object_store_port=free_port_block(OBJECT_STORE_HTTP_PORTS, SEAWEEDFS_GRPC_OFFSET),
        rest_catalog_port=rest_port,
    )
    services: list[Service] = [Postgres(settings), ObjectStore(settings), RestCatalog(settings)]
    for service in services:
        service.up()
    endpoint = RestCatalogEndpoint(
        **RestCatalog(settings).endpoint(),
        object_store=ObjectStoreEndpoint(**ObjectStore(settings).endpoint()),
        state_dsn=SecretStr(Postgres(settings).state_dsn()),
    )
    catalog = pyiceberg_catalog(endpoint)
    catalog.create_namespace("kept")
    table = catalog.create_table("kept.people", schema=SCHEMA)
    table.append(pa.table({"id": [1], "name": ["ada"]}, schema=SCHEMA))

    assert [service.name for service in reversed(services) if service.down()] == [
        "rest_catalog",
        "object_store",
        "postgres",
    ]
    for service in services:
        service.up()

    kept = pyiceberg_catalog(endpoint).load_table("kept.people")
    assert kept.scan().to_arrow().to_pylist() == [{"id": 1, "name": "ada"}]


def test_the_launcher_reads_properties_named_as_the_fixture_names_them() -> None:
    inherited = {"PATH": "/usr/bin", "CATALOG_URI": "jdbc:sqlite::memory:"}

    environment = launcher_environment(
        inherited,
        {"uri": "jdbc:postgresql://h/db", "io-impl": "S3FileIO", "s3.path-style-access": "true"},
    )

    assert environment == {
        "PATH": "/usr/bin",
        "CATALOG_URI": "jdbc:postgresql://h/db",
        "CATALOG_IO__IMPL": "S3FileIO",
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
    }


def test_a_shell_variable_named_like_a_catalog_property_does_not_reach_the_catalog() -> None:
    environment = launcher_environment({"CATALOG_WAREHOUSE": "file:///tmp/elsewhere"}, {})

    assert environment == {}


def test_a_property_the_fixture_cannot_spell_is_refused() -> None:
    with pytest.raises(ValueError, match="'jdbc.schema_version' cannot be passed"):
        launcher_environment({}, {"jdbc.schema_version": "V1"})
