"""How to reach a MySQL or MariaDB source, and where in its binlog we are; shared by all parts."""

from __future__ import annotations

import functools
import re
import ssl
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

import pymysql
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from tidemark.errors import TerminalError


class SslMode(StrEnum):
    """How a connection to the source uses TLS: MySQL's and Connector/J's ``sslMode``."""

    #: no TLS
    DISABLED = "DISABLED"
    #: TLS when the server offers it, verifying nothing (MySQL clients' default)
    PREFERRED = "PREFERRED"
    #: TLS or no connection, verifying nothing
    REQUIRED = "REQUIRED"
    #: TLS, the server's certificate signed by the CA (``ssl_ca``, else the system's)
    VERIFY_CA = "VERIFY_CA"
    #: as VERIFY_CA, and the certificate names the host connected to
    VERIFY_IDENTITY = "VERIFY_IDENTITY"

    @property
    def verifies(self) -> bool:
        return self in (SslMode.VERIFY_CA, SslMode.VERIFY_IDENTITY)


class SourceConnection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = Field(default=3306, gt=0, lt=65536)
    user: str
    password: SecretStr
    server_id: int = Field(description="unique among the source's replicas", gt=0)
    connect_timeout_seconds: float = Field(default=30.0, gt=0)
    ssl_mode: SslMode = SslMode.PREFERRED
    #: the PEM file of the CA that signed the server's certificate (VERIFY_*); None: the system's
    ssl_ca: str | None = None

    def pymysql_settings(self) -> dict[str, Any]:
        """``pymysql.connect``'s arguments; picklable (the reading process gets them)."""
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password.get_secret_value(),
            "charset": "utf8mb4",
            "connect_timeout": self.connect_timeout_seconds,
            **_pymysql_tls(self.ssl_mode, self.ssl_ca),
        }

    def connect(self) -> pymysql.connections.Connection[Any]:
        return open_connection(**self.pymysql_settings(), autocommit=True)


class ServerSession(Protocol):
    """A connection to a source, by PyMySQL (``open_connection``) or by mysqlclient
    (``tidemark.bulk_reads``): what the helpers below use of it."""

    host: str
    port: int

    def cursor(self) -> Any: ...


def open_connection(**settings: Any) -> pymysql.connections.Connection[Any]:
    """``pymysql.connect(**settings)``, the TLS it prefers set up without reading the system's
    CA certificates it never checks (see ``_Connection``). Every connection to a source opens
    here."""
    return _Connection(**settings)


class _Connection(pymysql.connections.Connection):
    """PyMySQL's connection, less 15-30 ms of CPU each time it opens.

    Given no TLS setting, PyMySQL (1.2) asks for TLS when the server offers it and goes on
    without it otherwise, as MySQL clients' PREFERRED mode does. For that it builds a context
    that verifies nothing (no CA, ``CERT_NONE``) but first loads every CA certificate of the
    system into it: 15-30 ms a connection, measured here, for certificates it never reads.
    Ingest opens a connection for the reading process's stream and its control queries,
    and on every idle tick for the server's clock. This context is the same one, without the
    certificates, and made once per process."""

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if isinstance(sslp, dict) and not sslp:  # PyMySQL's PREFERRED: no TLS setting given
            return _unverified_context()
        if isinstance(sslp, dict) and _MODE in sslp:  # ours (_pymysql_tls)
            return _tls_context(SslMode(sslp[_MODE]), sslp.get("ca"))
        context: ssl.SSLContext = super()._create_ssl_ctx(sslp)  # type: ignore[misc]  # untyped
        return context


#: the key of PyMySQL's ``ssl`` dict that carries our mode (``_Connection._create_ssl_ctx``)
_MODE = "tidemark_ssl_mode"


def _pymysql_tls(mode: SslMode, ca: str | None) -> dict[str, Any]:
    """PyMySQL's TLS arguments for ``mode``. Any ``ssl`` makes PyMySQL refuse a server
    without TLS before it sends the password; none makes it use TLS when offered."""
    if mode is SslMode.DISABLED:
        return {"ssl_disabled": True}
    if mode is SslMode.PREFERRED:
        return {}
    return {"ssl": {_MODE: mode.value, "ca": ca}}


@functools.cache
def _tls_context(mode: SslMode, ca: str | None) -> ssl.SSLContext:
    """The context of a connection that requires TLS, made once per mode and CA."""
    if not mode.verifies:
        return _unverified_context()
    context = ssl.create_default_context(cafile=ca)
    # MySQL's own generated certificates fail Python 3.13's strict X.509 checks
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    context.check_hostname = mode is SslMode.VERIFY_IDENTITY
    context.verify_mode = ssl.CERT_REQUIRED
    return context


@functools.cache
def _unverified_context() -> ssl.SSLContext:
    """The context PyMySQL's PREFERRED mode makes (``ssl.create_default_context()`` with
    hostname checks and verification off), less the CA certificates it does not check."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    context.options |= ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3
    return context


class BinlogPosition(NamedTuple):
    """A point in the source's binlog: the file and the byte offset of the next event.

    A named tuple: ingest compares positions for every event, and tuples compare in C."""

    file: str
    offset: int

    def __str__(self) -> str:
        return f"{self.file}:{self.offset}"


def is_mariadb(connection: ServerSession) -> bool:
    """Whether ``connection`` is to a MariaDB server (else MySQL, or a fork of it)."""
    # the handshake's version; typeshed's Connection does not declare it
    return "mariadb" in str(getattr(connection, "server_version", "")).lower()


def binlog_status_statement(server_version: str) -> str:
    """The statement that tells where the binlog ends, for a server's handshake version:
    MySQL 8.2 renamed ``SHOW MASTER STATUS`` and 8.4 removed the old name; MariaDB keeps it.
    (MariaDB's handshake may read ``5.5.5-10.11.6-MariaDB``.)"""
    if "mariadb" in server_version.lower():
        return "SHOW MASTER STATUS"
    match = re.match(r"(\d+)\.(\d+)", server_version)
    if match is not None and (int(match[1]), int(match[2])) >= (8, 2):
        return "SHOW BINARY LOG STATUS"
    return "SHOW MASTER STATUS"


def _binlog_status(conn: ServerSession, cursor: Any) -> Any:
    # the handshake's version; typeshed's Connection does not declare it
    cursor.execute(binlog_status_statement(str(getattr(conn, "server_version", ""))))
    return cursor.fetchone()


def current_position(source: SourceConnection) -> BinlogPosition:
    """Where the source's binlog ends right now."""
    with source.connect() as conn:
        return binlog_end(conn)


def binlog_end(conn: ServerSession) -> BinlogPosition:
    """Where the binlog of the server ``conn`` is connected to ends right now. On MySQL that
    end can be past transactions not yet visible to a read (``ingest.bootstrap.chunk_reads``)."""
    with conn.cursor() as cursor:
        row = _binlog_status(conn, cursor)
    if row is None:
        raise TerminalError(
            f"the binlog is off on {conn.host}:{conn.port}; set log_bin in the server's "
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
        status = _binlog_status(conn, cursor)
    if status is None:
        raise TerminalError(f"the binlog is off on {source.host}:{source.port}")
    return BinlogPosition(str(status[0]), int(status[1])), time_ms
