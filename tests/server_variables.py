"""A source server's global variables changed for a block of a test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymysql

from tests.server_share import require_alone


@contextmanager
def global_variables(admin: pymysql.connections.Connection[Any], **values: str) -> Iterator[None]:
    """Set global variables for the block and put the previous values back; the test must be
    marked ``server_wide``."""
    require_alone(f"SET GLOBAL {', '.join(values)}")
    with admin.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"@@GLOBAL.{name}" for name in values))
        row = cursor.fetchone()
        assert row is not None
        before = dict(zip(values, row, strict=True))
        try:
            for name, value in values.items():
                cursor.execute(f"SET GLOBAL {name} = {value}")
            yield
        finally:
            for name, value in before.items():
                cursor.execute(f"SET GLOBAL {name} = %s", (value,))
