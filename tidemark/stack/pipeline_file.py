"""Pipeline files that read from and write to the local stack: for tests, benchmarks, demos."""

from __future__ import annotations

from tidemark.source import BinlogPosition
from tidemark.stack.endpoints import CatalogEndpoint, SourceEndpoint


def local_pipeline(
    source: SourceEndpoint,
    catalog: CatalogEndpoint,
    *,
    database: str,
    tables: str,
    namespace: str,
    server_id: int,
    startup: str | BinlogPosition = "latest-offset",
    source_options: str = "",
    extra: str = "",
    parallelism: int = 1,
) -> str:
    """The YAML of a pipeline from ``database``'s ``tables`` pattern on ``source`` into
    ``namespace``.

    ``startup`` is a ``scan.startup.mode``, or a binlog position to start at.
    ``source_options`` (``key: value`` lines) go into ``source:``; ``extra`` is appended as is
    (a ``tidemark:`` block, say). ``parallelism`` is ``pipeline.parallelism``.
    """
    if isinstance(startup, BinlogPosition):
        start = (
            "  scan.startup.mode: specific-offset\n"
            f"  scan.startup.specific-offset.file: {startup.file}\n"
            f"  scan.startup.specific-offset.pos: {startup.offset}\n"
        )
    else:
        start = f"  scan.startup.mode: {startup}\n"
    return f"""\
source:
  type: mysql
  hostname: {source.host}
  port: {source.port}
  username: {source.cdc_user}
  password: {source.cdc_password.get_secret_value()}
  tables: {database}.{tables}
  server-id: {server_id}
  server-time-zone: UTC
{start}{_indented(source_options)}
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
  name: {namespace}
{_parallelism(parallelism)}{extra}"""


def _parallelism(readers: int) -> str:
    return f"  parallelism: {readers}\n" if readers > 1 else ""


def _indented(lines: str) -> str:
    return "".join(f"  {line.strip()}\n" for line in lines.splitlines() if line.strip())
