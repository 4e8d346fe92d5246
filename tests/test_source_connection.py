"""Connections to the source: PyMySQL's TLS modes, without its cost on every connection."""

from __future__ import annotations

import ssl
from typing import Any

import pytest

from tidemark.source import binlog_status_statement, open_connection
from tidemark.stack.endpoints import SourceEndpoint

pytestmark = pytest.mark.every_source


def test_a_connection_given_no_tls_setting_prefers_tls_without_loading_ca_certificates(
    source: SourceEndpoint, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    with cdc_source.connect() as first, cdc_source.connect() as second:
        for connection in (first, second):
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                assert cursor.fetchone() == (1,)
        # TLS if the server offers it (the stack's MySQL does, its MariaDB not), nothing
        # verified, as PyMySQL's own PREFERRED context; but made once, and without the system's
        # CA certificates
        wanted, required, context = tls_of(first)
        assert wanted and not required
        assert tls_of(second)[2] is context
        assert context.verify_mode is ssl.CERT_NONE
        assert not context.check_hostname
        assert context.cert_store_stats()["x509_ca"] == 0


def test_explicit_tls_settings_keep_pymysqls_own_context(
    source: SourceEndpoint, server_id: int
) -> None:
    settings = source.cdc_source(server_id).pymysql_settings()
    _, required, context = tls_of(
        open_connection(**settings, ssl_verify_cert=True, defer_connect=True)
    )
    assert required
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.cert_store_stats()["x509_ca"] > 0


def tls_of(connection: Any) -> tuple[bool, bool, ssl.SSLContext]:
    """What PyMySQL set up for TLS: whether it asks for it, whether it insists, the context."""
    return connection.ssl, connection._ssl_required, connection.ctx


@pytest.mark.parametrize(
    ("handshake", "statement"),
    [
        ("5.5.5-10.11.19-MariaDB-0+deb12u1-log", "SHOW MASTER STATUS"),
        ("11.8.2-MariaDB", "SHOW MASTER STATUS"),
        ("8.0.36-0ubuntu0.22.04.1", "SHOW MASTER STATUS"),
        ("8.2.0", "SHOW BINARY LOG STATUS"),
        ("8.4.3", "SHOW BINARY LOG STATUS"),
        ("9.7.4-2", "SHOW BINARY LOG STATUS"),
    ],
)
def test_where_the_binlog_ends_is_asked_in_each_servers_words(
    handshake: str, statement: str
) -> None:
    # MySQL 8.2 renamed SHOW MASTER STATUS and 8.4 removed it; MariaDB keeps it
    assert binlog_status_statement(handshake) == statement
