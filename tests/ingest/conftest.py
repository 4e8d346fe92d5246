"""Fixtures shared by the ingest tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.ingest.source_rows import SourceBinlog
from tests.stack_helpers import free_ports
from tidemark.stack.endpoints import SourceEndpoint
from tidemark.stack.mariadb import MariaDB
from tidemark.stack.mysql import MySQL
from tidemark.stack.service import Service
from tidemark.stack.settings import StackSettings

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]


@pytest.fixture
def orders(admin_connection: Connection) -> Connection:
    """The test's database with an ``orders (id, item, qty)`` table; its admin connection."""
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(40), qty INT)")
    return admin_connection


@pytest.fixture
def source_binlog(
    source: SourceEndpoint, admin_connection: Connection, source_database: str, server_id: int
) -> SourceBinlog:
    """Statements run in the test's database, and the row changes the binlog carries for them."""
    return SourceBinlog(source, admin_connection, source_database, server_id)


@pytest.fixture
def private_source(source: SourceEndpoint, second_home: Path) -> SourceEndpoint:
    """A server of the test's own, of the flavor of the test's ``source``: its binlog holds only
    what the test writes, so replaying all of it stays quick however busy the shared server was."""
    (port,) = free_ports(1)
    server: Service
    if source.flavor == "mariadb":
        server = MariaDB(StackSettings(home=second_home, mariadb_port=port))
    else:
        server = MySQL(StackSettings(home=second_home, mysql_port=port))
    server.up()
    return SourceEndpoint.model_validate(server.endpoint())


@pytest.fixture
def resource_group(source: SourceEndpoint, unique_name: str) -> Iterator[str]:
    """A MySQL resource group at the lowest thread priority, dropped afterwards."""
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE RESOURCE GROUP {unique_name} TYPE = USER THREAD_PRIORITY = 19")
    yield unique_name
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"DROP RESOURCE GROUP {unique_name} FORCE")
