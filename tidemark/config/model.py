"""The typed, frozen result of reading a pipeline file: what every other part of Tidemark uses.

Built only by ``tidemark.config.document`` after the file has been checked, so these models hold
values that are already valid; they are the contract, not the validator. Secrets are
``SecretStr``: their ``repr`` and ``str`` are masked; ``reveal`` is for the one place that connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from tidemark.config.errors import Problem
from tidemark.config.patterns import Route, RouteMode, Selector, route_table, selectors_match
from tidemark.source import SourceConnection

Properties = dict[str, str | SecretStr]

DEFAULT_WINDOW = timedelta(minutes=5)
DEFAULT_CATALOG_NAME = "tidemark"
#: Flink CDC's default range for ``server-id`` is random in 5400-6400; we pick its start.
DEFAULT_SERVER_ID = 5400


def reveal(properties: Mapping[str, str | SecretStr]) -> dict[str, str]:
    """Plain text of every property, secrets included: only for handing to a client library."""
    return {
        key: value.get_secret_value() if isinstance(value, SecretStr) else value
        for key, value in properties.items()
    }


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- source --------------------------------------------------------------------------------


class StartupMode(StrEnum):
    INITIAL = "initial"
    SNAPSHOT = "snapshot"
    LATEST_OFFSET = "latest-offset"
    EARLIEST_OFFSET = "earliest-offset"
    SPECIFIC_OFFSET = "specific-offset"
    TIMESTAMP = "timestamp"


class ServerIdRange(_Frozen):
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start + 1

    def __str__(self) -> str:
        return str(self.start) if self.start == self.end else f"{self.start}-{self.end}"


class Startup(_Frozen):
    mode: StartupMode = StartupMode.INITIAL
    specific_offset_file: str | None = None
    specific_offset_pos: int | None = None
    specific_offset_gtid_set: str | None = None
    specific_offset_skip_events: int | None = None
    specific_offset_skip_rows: int | None = None
    timestamp_millis: int | None = None


class MySqlSource(_Frozen):
    """``source:`` with ``type: mysql`` (MySQL and MariaDB)."""

    name: str | None = None
    hostname: str
    port: int = 3306
    username: str
    password: SecretStr
    tables: str
    table_selectors: tuple[Selector, ...]
    tables_exclude: str | None = None
    exclude_selectors: tuple[Selector, ...] = ()
    server_id: ServerIdRange | None = None
    server_time_zone: str | None = None
    startup: Startup = Startup()
    snapshot_chunk_size: int = 8096
    snapshot_fetch_size: int = 1024
    heartbeat_interval: timedelta = timedelta(seconds=30)
    connect_timeout: timedelta = timedelta(seconds=30)
    connect_max_retries: int = 3
    schema_change_enabled: bool = True
    scan_newly_added_tables: bool = False
    scan_binlog_newly_added_tables: bool = False
    parse_online_schema_changes: bool = False
    treat_tinyint1_as_boolean: bool = True
    #: every option as written (after substitution), secrets as SecretStr
    options: Properties = {}

    def captures(self, database: str, table: str) -> bool:
        """Whether ``tables`` minus ``tables.exclude`` selects ``database.table``."""
        return selectors_match(self.table_selectors, database, table) and not selectors_match(
            self.exclude_selectors, database, table
        )

    def connection(self) -> SourceConnection:
        server_id = self.server_id.start if self.server_id else DEFAULT_SERVER_ID
        return SourceConnection(
            host=self.hostname,
            port=self.port,
            user=self.username,
            password=self.password,
            server_id=server_id,
            connect_timeout_seconds=self.connect_timeout.total_seconds(),
        )


# --- sink ----------------------------------------------------------------------------------


class SchemaChangeType(StrEnum):
    ADD_COLUMN = "add.column"
    ALTER_COLUMN_TYPE = "alter.column.type"
    CREATE_TABLE = "create.table"
    DROP_COLUMN = "drop.column"
    DROP_TABLE = "drop.table"
    RENAME_COLUMN = "rename.column"
    TRUNCATE_TABLE = "truncate.table"
    ALTER_TABLE_COMMENT = "alter.table.comment"


PartitionTransform = Literal["identity", "year", "month", "day", "hour", "bucket", "truncate"]


class PartitionField(_Frozen):
    transform: PartitionTransform
    column: str
    width: int | None = None

    def __str__(self) -> str:
        if self.transform == "identity":
            return self.column
        width = f"[{self.width}]" if self.width is not None else ""
        return f"{self.transform}{width}({self.column})"


class TablePartitioning(_Frozen):
    table: str
    fields: tuple[PartitionField, ...]


class IcebergSink(_Frozen):
    """``sink:`` with ``type: iceberg``."""

    name: str | None = None
    catalog_properties: Properties
    table_properties: Properties = {}
    hadoop_conf: Properties = {}
    partitioning: tuple[TablePartitioning, ...] = ()
    #: the schema changes applied to sink tables, after include/exclude.schema.changes
    schema_changes: frozenset[SchemaChangeType]
    options: Properties = {}

    def partitioning_for(self, table: str) -> TablePartitioning | None:
        return next((p for p in self.partitioning if p.table == table), None)


# --- route, transform, pipeline ------------------------------------------------------------


class RouteRule(_Frozen):
    source_table: str
    sink_table: str
    replace_symbol: str | None = None
    description: str | None = None

    @property
    def route(self) -> Route:
        return Route(self.source_table, self.sink_table, self.replace_symbol)


class TransformRule(_Frozen):
    source_table: str
    selectors: tuple[Selector, ...]
    projection: str | None = None
    filter: str | None = None
    primary_keys: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    table_options: dict[str, str] = {}
    description: str | None = None
    converter_after_transform: str | None = None

    def matches(self, database: str, table: str) -> bool:
        return selectors_match(self.selectors, database, table)


class SchemaChangeBehavior(StrEnum):
    IGNORE = "ignore"
    LENIENT = "lenient"
    TRY_EVOLVE = "try_evolve"
    EVOLVE = "evolve"
    EXCEPTION = "exception"


class PipelineSettings(_Frozen):
    name: str = "Flink CDC Pipeline Job"
    parallelism: int = 1
    schema_change_behavior: SchemaChangeBehavior = SchemaChangeBehavior.LENIENT
    local_time_zone: str | None = None
    route_mode: RouteMode = RouteMode.ALL_MATCH
    runtime_mode: Literal["STREAMING", "BATCH"] = "STREAMING"
    options: Properties = {}


# --- Tidemark's extension ------------------------------------------------------------------


class MirrorOptions(_Frozen):
    """The merged, current-state copy of a sink table, refreshed every window."""

    enabled: bool = True
    table: str | None = None
    window: timedelta | None = None
    deletes: Literal["apply", "keep"] = "apply"
    table_properties: Properties = {}


class TableOptions(_Frozen):
    unique_key: tuple[str, ...] | None = None
    changelog_table: str | None = None
    mirror: MirrorOptions = MirrorOptions()


class JobConfig(_Frozen):
    """Spark SQL run for each window ``[start, end)`` once every input is complete to ``end``."""

    name: str
    inputs: tuple[str, ...]
    window: timedelta
    sql: tuple[Path, ...]
    variables: Properties = {}
    spark: Properties = {}
    retries: int = 2
    retry_delay: timedelta = timedelta(minutes=1)
    #: when behind, run every complete window missed as one ``[first start, last end)``
    coalesce: bool = False
    #: run earlier windows again when late changes for them arrive (a clock step back)
    rerun_late_windows: bool = False


DEFAULT_REPORTS_TOPIC = "tidemark.commit-reports"


class ReportsSettings(_Frozen):
    """Where ingest publishes a commit report after each changelog commit."""

    topic: str = DEFAULT_REPORTS_TOPIC
    #: librdkafka properties, ``kafka.`` prefix removed (``bootstrap.servers`` at least)
    kafka: Properties = {}


class IngestOptions(_Frozen):
    """How ingest paces its commits; the defaults keep the lake within seconds of the source."""

    flush_interval: timedelta = timedelta(seconds=2)
    flush_rows: int = 50_000
    max_transaction_rows: int = 100_000
    idle_commit_interval: timedelta = timedelta(seconds=10)
    #: caps each bootstrap reader, to protect the source; None: as fast as it goes
    snapshot_max_rows_per_second: int | None = None


class MaintenanceOptions(_Frozen):
    """Table maintenance (compaction, snapshot expiry) run by the scheduler between windows."""

    enabled: bool = True
    #: each sink table's changelog and mirror are maintained this often
    interval: timedelta = timedelta(minutes=15)


class TidemarkSettings(_Frozen):
    catalog_name: str = DEFAULT_CATALOG_NAME
    window: timedelta = DEFAULT_WINDOW
    reports: ReportsSettings | None = None
    ingest: IngestOptions = IngestOptions()
    maintenance: MaintenanceOptions = MaintenanceOptions()
    tables: dict[str, TableOptions] = {}
    jobs: tuple[JobConfig, ...] = ()

    def table(self, sink_table: str) -> TableOptions:
        return self.tables.get(sink_table, TableOptions())

    def mirror_table(self, sink_table: str) -> str | None:
        """The mirror's name (the sink table's own, unless renamed); None when turned off."""
        mirror = self.table(sink_table).mirror
        return (mirror.table or sink_table) if mirror.enabled else None

    def changelog_table(self, sink_table: str) -> str:
        return self.table(sink_table).changelog_table or f"{sink_table}_changelog"

    def mirror_window(self, sink_table: str) -> timedelta:
        return self.table(sink_table).mirror.window or self.window


# --- the file ------------------------------------------------------------------------------


class PipelineConfig(_Frozen):
    path: Path
    source: MySqlSource
    sink: IcebergSink
    routes: tuple[RouteRule, ...] = ()
    transforms: tuple[TransformRule, ...] = ()
    pipeline: PipelineSettings = PipelineSettings()
    tidemark: TidemarkSettings = TidemarkSettings()
    #: whether the file has a ``tidemark:`` block (without one it is pure ingestion)
    has_extension: bool = False
    warnings: tuple[Problem, ...] = ()

    def sink_tables(self, database: str, table: str) -> list[str]:
        """The sink table ids ``database.table`` is routed to (itself when no route matches)."""
        routes = [rule.route for rule in self.routes]
        return route_table(routes, self.pipeline.route_mode, database, table)

    def transform_for(self, database: str, table: str) -> TransformRule | None:
        """The first transform whose source-table matches: upstream applies only that one."""
        return next((t for t in self.transforms if t.matches(database, table)), None)
