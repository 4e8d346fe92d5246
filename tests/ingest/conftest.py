"""Fixtures shared by the ingest tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.ingest.source_rows import SourceBinlog
from tests.stack_helpers import free_ports, second_stack_home
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints
from tidemark.stack.mariadb import MariaDB
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
    endpoints: StackEndpoints, admin_connection: Connection, source_database: str, server_id: int
) -> SourceBinlog:
    """Statements run in the test's database, and the row changes the binlog carries for them."""
    return SourceBinlog(endpoints, admin_connection, source_database, server_id)


@pytest.fixture
def private_mariadb(
    endpoints: StackEndpoints, stack_settings: StackSettings, unique_name: str
) -> Iterator[StackEndpoints]:
    """The stack's endpoints, but with a MariaDB of the test's own: its binlog holds only what
    the test writes, so replaying all of it stays quick however busy the shared server was."""
    with second_stack_home(stack_settings, unique_name) as home:
        (port,) = free_ports(1)
        mariadb = MariaDB(StackSettings(home=home, mariadb_port=port))
        mariadb.up()
        own = SourceEndpoint.model_validate(mariadb.endpoint())
        yield endpoints.model_copy(update={"mariadb": own})
