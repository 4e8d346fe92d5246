"""TLS to the source, as ``jdbc.properties.sslMode`` asks, on every kind of connection: the
control connections and the binlog stream (PyMySQL), and the bootstrap's row reads
(mysqlclient). The stack's MariaDB offers no TLS; its MySQL serves certificates a test makes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ingest.binlog.reader import transaction_marks
from tests.server_share import require_alone
from tests.tls_certificates import Authority, ServerFiles
from tidemark.bulk_reads import open_bulk_connection
from tidemark.config.inventory import read_tables
from tidemark.errors import TerminalError
from tidemark.source import SourceConnection, SslMode, current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints


def _control(source: SourceConnection) -> Any:
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
        return cursor.fetchone()


def _row_reads(source: SourceConnection) -> Any:
    conn = open_bulk_connection(source, autocommit=True)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
            return cursor.fetchone()
    finally:
        conn.close()


def _binlog(source: SourceConnection) -> Any:
    # the position through a connection of the default mode: the stream's own is tried
    here = current_position(source.model_copy(update={"ssl_mode": SslMode.PREFERRED}))
    return list(transaction_marks(source, here))


CONNECTIONS: dict[str, Callable[[SourceConnection], Any]] = {
    "control": _control,
    "row reads": _row_reads,
    "binlog": _binlog,
}
every_connection = pytest.mark.parametrize("connect", CONNECTIONS.values(), ids=CONNECTIONS)


def _with(source: SourceConnection, mode: SslMode, ca: Path | None = None) -> SourceConnection:
    return source.model_copy(update={"ssl_mode": mode, "ssl_ca": str(ca) if ca else None})


@pytest.fixture
def authority(tmp_path: Path) -> Authority:
    return Authority(tmp_path, "ours")


@pytest.fixture
def mysql(endpoints: StackEndpoints) -> SourceEndpoint:
    return endpoints.source("mysql")


@contextmanager
def serving(mysql: SourceEndpoint, files: ServerFiles) -> Iterator[None]:
    """The stack's MySQL serving ``files`` until the block ends, then its own again."""
    variables = ("ssl_ca", "ssl_cert", "ssl_key")
    require_alone("A TLS certificate of the stack's MySQL")
    with mysql.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.ssl_ca, @@GLOBAL.ssl_cert, @@GLOBAL.ssl_key")
        before = cursor.fetchone()
        assert before is not None
        try:
            for name, path in zip(variables, (files.ca, files.cert, files.key), strict=True):
                cursor.execute(f"SET GLOBAL {name} = %s", (str(path),))
            cursor.execute("ALTER INSTANCE RELOAD TLS")
            yield
        finally:
            for name, value in zip(variables, before, strict=True):
                cursor.execute(f"SET GLOBAL {name} = %s", (value,))
            cursor.execute("ALTER INSTANCE RELOAD TLS")


@every_connection
@pytest.mark.parametrize("mode", [SslMode.REQUIRED, SslMode.VERIFY_CA, SslMode.VERIFY_IDENTITY])
def test_a_mode_that_requires_tls_refuses_a_server_without_it(
    mode: SslMode,
    connect: Callable[[SourceConnection], Any],
    endpoints: StackEndpoints,
    authority: Authority,
    server_id: int,
) -> None:
    mariadb = endpoints.source("mariadb").cdc_source(server_id)  # offers no TLS

    with pytest.raises(Exception) as refused:
        connect(_with(mariadb, mode, authority.ca_file))

    assert re.search(r"SSL is required, but the server|doesn't support it", _chain(refused.value))
    connect(_with(mariadb, SslMode.PREFERRED))  # the same server, without the demand
    connect(_with(mariadb, SslMode.DISABLED))


@pytest.mark.server_wide
@every_connection
def test_verify_ca_accepts_the_servers_ca_and_refuses_another(
    connect: Callable[[SourceConnection], Any],
    mysql: SourceEndpoint,
    authority: Authority,
    tmp_path: Path,
    server_id: int,
) -> None:
    stranger = Authority(tmp_path, "theirs")
    source = mysql.cdc_source(server_id)

    with serving(mysql, authority.server("db.internal.example")):
        # no host name check: the certificate names another host, and is accepted
        connect(_with(source, SslMode.VERIFY_CA, authority.ca_file))
        with pytest.raises(Exception) as refused:
            connect(_with(source, SslMode.VERIFY_CA, stranger.ca_file))

    assert "certificate" in _chain(refused.value).lower()


@pytest.mark.server_wide
@every_connection
def test_verify_identity_refuses_a_certificate_for_another_host(
    connect: Callable[[SourceConnection], Any],
    mysql: SourceEndpoint,
    authority: Authority,
    server_id: int,
) -> None:
    source = _with(mysql.cdc_source(server_id), SslMode.VERIFY_IDENTITY, authority.ca_file)

    with serving(mysql, authority.server("db.internal.example")):
        with pytest.raises(Exception) as refused:
            connect(source)
    with serving(mysql, authority.server("localhost", mysql.host)):
        connect(source)

    # PyMySQL names the mismatch; libmariadb says only that the validation failed
    assert re.search(r"match|certificate", _chain(refused.value), re.IGNORECASE)


@pytest.mark.parametrize(
    "connect", [_control, _row_reads], ids=["control", "row reads"]
)  # a binlog stream's connection runs no statement to ask with
def test_required_and_disabled_use_tls_or_not_as_told(
    connect: Callable[[SourceConnection], Any], mysql: SourceEndpoint, server_id: int
) -> None:
    source = mysql.cdc_source(server_id)

    required = connect(_with(source, SslMode.REQUIRED))
    disabled = connect(_with(source, SslMode.DISABLED))

    assert required[1].startswith("TLSv1.")
    assert disabled[1] == ""


def _chain(error: BaseException | None) -> str:
    """Every message of ``error`` and of its causes: drivers wrap the TLS library's error."""
    messages = []
    while error is not None:
        messages.append(f"{type(error).__name__}: {error}")
        error = error.__cause__ or error.__context__
    return " / ".join(messages)


@pytest.mark.server_wide
@pytest.mark.parametrize(
    ("mode", "serves", "says"),
    [
        (SslMode.REQUIRED, None, "the server offers no TLS"),
        (SslMode.VERIFY_CA, "theirs", "the server's certificate is not signed by"),
        (SslMode.VERIFY_IDENTITY, "db.internal.example", "does not name 127.0.0.1"),
    ],
)
def test_a_pipeline_refused_by_tls_says_why_and_what_to_change(
    mode: SslMode,
    serves: str | None,
    says: str,
    endpoints: StackEndpoints,
    mysql: SourceEndpoint,
    authority: Authority,
    tmp_path: Path,
    server_id: int,
) -> None:
    if serves is None:  # MariaDB offers no TLS
        source = _with(endpoints.source("mariadb").cdc_source(server_id), mode)
        with pytest.raises(TerminalError) as refused:
            read_tables(source, lambda database, table: True)
    else:
        signer = Authority(tmp_path, "theirs") if serves == "theirs" else authority
        source = _with(mysql.cdc_source(server_id), mode, authority.ca_file)
        with serving(mysql, signer.server("db.internal.example")):
            with pytest.raises(TerminalError) as refused:
                read_tables(source, lambda database, table: True)

    assert says in str(refused.value)
    assert f"jdbc.properties.sslMode is {mode.value}" in str(refused.value)
