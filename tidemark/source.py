"""How to reach a MySQL or MariaDB source, and where in its binlog we are; shared by all parts."""

from __future__ import annotations

from typing import Any, NamedTuple

import pymysql
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from tidemark.errors import TerminalError


class SourceConnection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = Field(default=3306, gt=0, lt=65536)
    user: str
    password: SecretStr
    server_id: int = Field(description="unique among the source's replicas", gt=0)
    connect_timeout_seconds: float = Field(default=30.0, gt=0)

    def pymysql_settings(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password.get_secret_value(),
            "charset": "utf8mb4",
            "connect_timeout": self.connect_timeout_seconds,
        }

    def connect(self) -> pymysql.connections.Connection[Any]:
        return pymysql.connect(**self.pymysql_settings(), autocommit=True)


class BinlogPosition(NamedTuple):
    """A point in the source's binlog: the file and the byte offset of the next event.

    A named tuple: ingest compares positions for every event, and tuples compare in C."""

    file: str
    offset: int

    def __str__(self) -> str:
        return f"{self.file}:{self.offset}"


def current_position(source: SourceConnection) -> BinlogPosition:
    """Where the source's binlog ends right now."""
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SHOW MASTER STATUS")
        row = cursor.fetchone()
    if row is None:
        raise TerminalError(
            f"the binlog is off on {source.host}:{source.port}; set log_bin in the server's "
            "configuration and restart it"
        )
    return BinlogPosition(str(row[0]), int(row[1]))


def server_clock(source: SourceConnection) -> tuple[BinlogPosition, int]:
    """The server's time (epoch ms) and then where its binlog ends, in that order: everything
    committed before that time is before that position."""
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED)")
        row = cursor.fetchone()
        assert row is not None
        time_ms = int(row[0])
        cursor.execute("SHOW MASTER STATUS")
        status = cursor.fetchone()
    if status is None:
        raise TerminalError(f"the binlog is off on {source.host}:{source.port}")
    return BinlogPosition(str(status[0]), int(status[1])), time_ms
