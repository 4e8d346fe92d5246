"""Fixtures of the outage tests: services of the test's own, to kill and start again while a
pipeline runs on them (the shared ones serve every other test)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr
from pyiceberg.catalog import Catalog

from tests.outages.services import OwnS3Lake, OwnSource
from tests.stack_helpers import free_port_block, free_ports
from tidemark.catalog import load_catalog
from tidemark.stack.endpoints import (
    CatalogEndpoint,
    ObjectStoreEndpoint,
    RestCatalogEndpoint,
    SourceEndpoint,
)
from tidemark.stack.mariadb import MariaDB
from tidemark.stack.object_store import ObjectStore
from tidemark.stack.postgres import Postgres
from tidemark.stack.rest_catalog import RestCatalog
from tidemark.stack.settings import OBJECT_STORE_HTTP_PORTS, SEAWEEDFS_GRPC_OFFSET, StackSettings


@pytest.fixture
def own_lake(own_postgres: Postgres) -> CatalogEndpoint:
    """A JDBC catalog in the test's own PostgreSQL, its warehouse in the test's own folder."""
    endpoint = own_postgres.endpoint()
    return CatalogEndpoint(
        name=endpoint["catalog_name"],
        uri=endpoint["jdbc_uri"],
        user=endpoint["user"],
        password=endpoint["password"],
        warehouse=endpoint["warehouse"],
    )


@pytest.fixture
def small_disk(second_home: Path) -> Iterator[Path]:
    """A folder on a filesystem of its own, 16 MiB (a tmpfs: the test runs as root, as the
    stack's PostgreSQL does), to fill up."""
    folder = second_home / "small-disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    assert mounted.returncode == 0, f"could not mount a tmpfs (run the tests as root): {mounted}"
    yield folder
    subprocess.run(["umount", "--lazy", str(folder)], check=True)


@pytest.fixture
def own_catalog(own_lake: CatalogEndpoint) -> Catalog:
    return load_catalog(own_lake.name, own_lake.properties())


@pytest.fixture
def own_s3_lake(second_home: Path) -> OwnS3Lake:
    postgres_port, rest_port = free_ports(2)
    settings = StackSettings(
        home=second_home,
        postgres_port=postgres_port,
        object_store_port=free_port_block(OBJECT_STORE_HTTP_PORTS, SEAWEEDFS_GRPC_OFFSET),
        rest_catalog_port=rest_port,
    )
    postgres, store, rest = Postgres(settings), ObjectStore(settings), RestCatalog(settings)
    for service in (postgres, store, rest):  # the stack's order: each needs the ones before
        service.up()
    described = rest.endpoint()
    return OwnS3Lake(
        postgres,
        store,
        rest,
        RestCatalogEndpoint(
            name=described["name"],
            uri=described["uri"],
            warehouse=described["warehouse"],
            object_store=ObjectStoreEndpoint.model_validate(store.endpoint()),
            state_dsn=SecretStr(postgres.state_dsn()),
        ),
    )


@pytest.fixture
def own_source(second_home: Path) -> OwnSource:
    (port,) = free_ports(1)
    server = MariaDB(StackSettings(home=second_home, mariadb_port=port))
    server.up()
    endpoint = SourceEndpoint.model_validate(server.endpoint())
    with endpoint.admin_source().connect() as connection, connection.cursor() as cursor:
        cursor.execute("CREATE DATABASE outages")
    return OwnSource(server, endpoint, "outages")
