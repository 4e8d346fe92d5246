"""Fixtures shared by the ingest tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]


@pytest.fixture
def orders(admin_connection: Connection) -> Connection:
    """The test's database with an ``orders (id, item, qty)`` table; its admin connection."""
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(40), qty INT)")
    return admin_connection
