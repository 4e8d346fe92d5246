"""Pipeline files that read from and write to the local stack: for tests, benchmarks, demos."""

from __future__ import annotations

import re

from tidemark.source import BinlogPosition
from tidemark.stack.endpoints import LakeEndpoint, RestCatalogEndpoint, SourceEndpoint


def local_pipeline(
    source: SourceEndpoint,
    catalog: LakeEndpoint,
    *,
    database: str,
    tables: str,
    namespace: str,
    server_id: int,
    startup: str | BinlogPosition = "latest-offset",
    source_options: str = "",
    extra: str = "",
    parallelism: int = 1,
    paimon_warehouse: str | None = None,
) -> str:
    """The YAML of a pipeline from ``database``'s ``tables`` pattern on ``source`` into
    ``namespace``.

    ``startup`` is a ``scan.startup.mode``, or a binlog position to start at.
    ``source_options`` (``key: value`` lines) go into ``source:``; ``extra`` is appended as is
    (a ``tidemark:`` block, say). ``parallelism`` is ``pipeline.parallelism``. With
    ``paimon_warehouse`` the sink is Paimon's, on that warehouse (filesystem metastore).
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
{_sink(catalog, paimon_warehouse)}
route:
  - source-table: {database}.\\.*
    sink-table: {namespace}.<>
    replace-symbol: <>

pipeline:
  name: {namespace}
{_parallelism(parallelism)}{_with_state(catalog, extra)}"""


def _with_state(catalog: LakeEndpoint, extra: str) -> str:
    """``extra``, its ``tidemark:`` block (one made if it has none) naming the scheduler's
    state database when the catalog has none of its own to keep it in."""
    if not isinstance(catalog, RestCatalogEndpoint):
        return extra
    line = f"  state-dsn: {catalog.state_dsn.get_secret_value()}\n"
    block = re.compile(r"^tidemark:\n", re.MULTILINE)
    if block.search(extra):
        return block.sub(lambda match: match.group(0) + line, extra, count=1)
    separator = "\n" if extra and not extra.endswith("\n") else ""
    return f"{extra}{separator}tidemark:\n{line}"


def _sink(catalog: LakeEndpoint, paimon_warehouse: str | None) -> str:
    if paimon_warehouse is not None:
        return (
            "sink:\n  type: paimon\n  catalog.properties.metastore: filesystem\n"
            f"  catalog.properties.warehouse: {paimon_warehouse}\n"
        )
    return f"sink:\n  type: iceberg\n{_catalog_properties(catalog)}"


def _catalog_properties(catalog: LakeEndpoint) -> str:
    return "".join(
        f"  catalog.properties.{key}: {value}\n" for key, value in catalog.properties().items()
    )


def _parallelism(readers: int) -> str:
    return f"  parallelism: {readers}\n" if readers > 1 else ""


def _indented(lines: str) -> str:
    return "".join(f"  {line.strip()}\n" for line in lines.splitlines() if line.strip())
