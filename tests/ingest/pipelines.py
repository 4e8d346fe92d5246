"""Pipeline files for ingest tests, pointed at the local stack and the test's own names."""

from __future__ import annotations

from pathlib import Path

from tidemark.stack.endpoints import StackEndpoints


def write_pipeline(
    path: Path,
    endpoints: StackEndpoints,
    *,
    database: str,
    tables: str,
    namespace: str,
    server_id: int,
    startup: str = "latest-offset",
    extra: str = "",
) -> Path:
    """A pipeline reading ``database``'s ``tables`` pattern into ``namespace``."""
    mariadb, catalog = endpoints.mariadb, endpoints.catalog
    path.write_text(
        f"""\
source:
  type: mysql
  hostname: {mariadb.host}
  port: {mariadb.port}
  username: {mariadb.cdc_user}
  password: {mariadb.cdc_password.get_secret_value()}
  tables: {database}.{tables}
  server-id: {server_id}
  server-time-zone: UTC
  scan.startup.mode: {startup}

sink:
  type: iceberg
  catalog.properties.type: jdbc
  catalog.properties.uri: {catalog.uri}
  catalog.properties.jdbc.user: {catalog.user}
  catalog.properties.jdbc.password: {catalog.password.get_secret_value()}
  catalog.properties.warehouse: {catalog.warehouse}

route:
  - source-table: {database}.\\.*
    sink-table: {namespace}.<>
    replace-symbol: <>

pipeline:
  name: test pipeline {namespace}
{extra}"""
    )
    return path
