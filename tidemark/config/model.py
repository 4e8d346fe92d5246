"""The typed, frozen result of reading a pipeline file: what every other part of Tidemark uses.

Built only by ``tidemark.config.document`` after the file has been checked, so these models hold
values that are already valid. Each field that is an option of the file is also that option's one
declaration (``tidemark.config.declaration.option``): its key, type, default, meaning and how its
text is checked; the readers and docs/configuration.md's reference follow from it. Secrets are
``SecretStr``: their ``repr`` and ``str`` are masked; ``reveal`` is for the one place that connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator

from tidemark.config.compound import (
    Properties,
    read_columns,
    read_properties,
    read_spark_settings,
    read_tables,
    read_variables,
)
from tidemark.config.declaration import option
from tidemark.config.errors import Problem
from tidemark.config.patterns import (
    ChunkKeyColumn,
    PatternError,
    Route,
    RouteMode,
    Selector,
    parse_chunk_key_columns,
    route_table,
    selectors_match,
)
from tidemark.config.values import (
    LONG_RANGE,
    BadValue,
    at_least_one,
    duration_with_unit,
    identifier,
    one_of,
    parse_bool,
    parse_ca_file,
    parse_columns,
    parse_duration,
    parse_float,
    parse_local_zone,
    parse_server_id,
    parse_window,
    parse_zone,
    positive_duration,
    table_id,
    text,
    whole_number,
)
from tidemark.errors import ConfigError
from tidemark.source import SourceConnection, SslMode
from tidemark.windows import TaskKind, WindowTask

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

    @classmethod
    def from_text(cls, text: str) -> ServerIdRange:
        start, end = parse_server_id(text)
        return cls(start=start, end=end)

    @property
    def size(self) -> int:
        return self.end - self.start + 1

    def __str__(self) -> str:
        return str(self.start) if self.start == self.end else f"{self.start}-{self.end}"


#: upstream's LONG options: Java longs
_LONG = whole_number(LONG_RANGE)


class Startup(_Frozen):
    """Where reading starts: the source's ``scan.startup.*`` options."""

    mode: StartupMode = option(
        StartupMode.INITIAL,
        key="scan.startup.mode",
        parse=one_of(tuple(mode.value for mode in StartupMode)),
        doc="initial: bootstrap the existing rows, then stream; snapshot: bootstrap and stop; "
        "or stream from the binlog's end, its start, a position or a time",
    )
    specific_offset_file: str | None = option(
        None,
        key="scan.startup.specific-offset.file",
        parse=text,
        doc="specific-offset: the binlog file to start in",
    )
    specific_offset_pos: int | None = option(
        None,
        key="scan.startup.specific-offset.pos",
        parse=_LONG,
        doc="specific-offset: the position in that file, a transaction's start",
    )
    specific_offset_gtid_set: str | None = option(
        None,
        key="scan.startup.specific-offset.gtid-set",
        parse=text,
        doc="specific-offset: start at the first transaction the set does not cover; wins over "
        "a file and position",
    )
    specific_offset_skip_events: int | None = option(
        None,
        key="scan.startup.specific-offset.skip-events",
        parse=_LONG,
        doc="specific-offset: only 0, as Tidemark starts at transaction boundaries",
    )
    specific_offset_skip_rows: int | None = option(
        None,
        key="scan.startup.specific-offset.skip-rows",
        parse=_LONG,
        doc="specific-offset: only 0, as Tidemark starts at transaction boundaries",
    )
    timestamp_millis: int | None = option(
        None,
        key="scan.startup.timestamp-millis",
        parse=_LONG,
        doc="timestamp: start at the first transaction at or after this time (ms since 1970)",
    )


def _chunk_key_columns(text: str) -> tuple[ChunkKeyColumn, ...]:
    try:
        return parse_chunk_key_columns(text)
    except PatternError as error:
        raise BadValue(str(error)) from None


def _ssl_mode(text: str) -> SslMode:
    return SslMode(one_of([mode.value for mode in SslMode])(text))


class MySqlSource(_Frozen):
    """``source:`` with ``type: mysql`` (MySQL and MariaDB)."""

    name: str | None = None
    hostname: str = option(parse=text, doc="the server's host name or address")
    port: int = option(3306, parse=whole_number(), doc="the server's port, 1 to 65535")
    username: str = option(parse=text, doc="the account ingest reads with")
    password: SecretStr = option(parse=text, doc="the account's password")
    tables: str = option(
        parse=text, doc="the tables to capture: comma-separated database.table patterns"
    )
    #: ``tables`` as patterns
    table_selectors: tuple[Selector, ...]
    tables_exclude: str | None = option(
        None, key="tables.exclude", parse=text, doc="tables to leave out, as patterns like tables"
    )
    #: ``tables.exclude`` as patterns
    exclude_selectors: tuple[Selector, ...] = ()
    server_id: ServerIdRange | None = option(
        None,
        key="server-id",
        parse=ServerIdRange.from_text,
        default_text=str(DEFAULT_SERVER_ID),
        doc="the replica id to read the binlog with, or a range (Tidemark uses its first)",
    )
    server_time_zone: str | None = option(
        None,
        key="server-time-zone",
        parse=parse_zone,
        default_text="the server's own",
        doc="the zone the server's TIMESTAMP values are read in",
    )
    startup: Startup = Startup()
    incremental_snapshot: bool = option(
        True,
        key="scan.incremental.snapshot.enabled",
        parse=parse_bool,
        doc="bootstrap a chunk at a time, each chunk a short read; false: each table in one "
        "consistent snapshot, which only MariaDB and Percona Server can",
    )
    chunk_key_columns: tuple[ChunkKeyColumn, ...] = option(
        (),
        key="scan.incremental.snapshot.chunk.key-column",
        parse=_chunk_key_columns,
        default_text="each table's primary key",
        doc="the column the incremental snapshot cuts a table's chunks by, as 'db.table:column' "
        "entries separated by ';' (needs no unique values, but an index of its own)",
    )
    snapshot_chunk_size: int = option(
        8096,
        key="scan.incremental.snapshot.chunk.size",
        parse=whole_number(above=1),
        doc="rows in each chunk the bootstrap reads",
    )
    ssl_mode: SslMode = option(
        SslMode.PREFERRED,
        key="jdbc.properties.sslMode",
        parse=_ssl_mode,
        doc="TLS to the server, for every connection (stream, bootstrap, control), as in "
        "Connector/J: DISABLED, PREFERRED (when offered, unverified), REQUIRED, VERIFY_CA "
        "(the certificate signed by the CA), VERIFY_IDENTITY (and naming the host)",
    )
    ssl_ca: str | None = option(
        None,
        key="jdbc.properties.trustCertificateKeyStoreUrl",
        parse=parse_ca_file,
        default_text="the system's CA certificates",
        doc="the CA that signed the server's certificate, for VERIFY_CA and VERIFY_IDENTITY: "
        "an absolute path (or file: URL) of a PEM file",
    )
    even_distribution_upper: float = option(
        1000.0,
        key="chunk-key.even-distribution.factor.upper-bound",
        parse=parse_float,
        doc="an integer key with at most this many values per row (MAX - MIN + 1 over the "
        "rows) is cut into chunks as equal spans of values; a sparser one by its index",
    )
    even_distribution_lower: float = option(
        0.05,
        key="chunk-key.even-distribution.factor.lower-bound",
        parse=parse_float,
        doc="the least values per row for spans of values (fewer: values repeat, and a "
        "chunk key column is cut by its index)",
    )
    snapshot_fetch_size: int = option(
        1024,
        key="scan.snapshot.fetch.size",
        parse=whole_number(above=1),
        doc="upstream's rows per fetch while bootstrapping",
    )
    heartbeat_interval: timedelta = option(
        timedelta(seconds=30),
        key="heartbeat.interval",
        parse=parse_duration,
        doc="upstream's binlog heartbeat (ingest's own follows tidemark.ingest.flush-interval)",
    )
    connect_timeout: timedelta = option(
        timedelta(seconds=30),
        key="connect.timeout",
        parse=parse_duration,
        doc="how long connecting to the server may take",
    )
    connect_max_retries: int = option(
        3,
        key="connect.max-retries",
        parse=whole_number(above=0),
        doc="upstream's connection attempts before failing",
    )
    schema_change_enabled: bool = option(
        True,
        key="schema-change.enabled",
        parse=parse_bool,
        doc="upstream: whether schema changes are sent downstream",
    )
    scan_newly_added_tables: bool = option(
        False,
        key="scan.newly-added-table.enabled",
        parse=parse_bool,
        doc="bootstrap, at the next start, a table added to tables of a running pipeline",
    )
    scan_binlog_newly_added_tables: bool = option(
        False,
        key="scan.binlog.newly-added-table.enabled",
        parse=parse_bool,
        doc="upstream: stream new tables without a bootstrap (not with the option above)",
    )
    parse_online_schema_changes: bool = option(
        False,
        key="scan.parse.online.schema.changes.enabled",
        parse=parse_bool,
        doc="follow gh-ost and pt-online-schema-change migrations at their cut-over",
    )
    treat_tinyint1_as_boolean: bool = option(
        True,
        key="treat-tinyint1-as-boolean.enabled",
        parse=parse_bool,
        doc="TINYINT(1) columns become booleans",
    )
    #: every option as written (after substitution), secrets as SecretStr
    options: Properties = {}

    def chunk_key_column(self, database: str, table: str) -> str | None:
        """The column ``scan.incremental.snapshot.chunk.key-column`` names for a table, if any."""
        for entry in self.chunk_key_columns:
            if selectors_match(entry.tables, database, table):
                return entry.column
        return None

    def captures(self, database: str, table: str) -> bool:
        """Whether ``tables`` minus ``tables.exclude`` selects ``database.table``."""
        return selectors_match(self.table_selectors, database, table) and not selectors_match(
            self.exclude_selectors, database, table
        )

    @cached_property
    def connection(self) -> SourceConnection:
        """How every part of the pipeline connects to the source: built once."""
        server_id = self.server_id.start if self.server_id else DEFAULT_SERVER_ID
        return SourceConnection(
            host=self.hostname,
            port=self.port,
            user=self.username,
            password=self.password,
            server_id=server_id,
            connect_timeout_seconds=self.connect_timeout.total_seconds(),
            ssl_mode=self.ssl_mode,
            ssl_ca=self.ssl_ca,
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
    """``sink:`` with ``type: iceberg``. Its values are derived from several options each, so
    the options are declared in ``tidemark.config.sink.ICEBERG_OPTIONS``."""

    #: the lake format, the sink's ``type:``: what ingest opens its changelog tables with
    #: (``ingest.changelog.catalogs``)
    type: ClassVar[str] = "iceberg"

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

    @property
    def partitioned_tables(self) -> tuple[str, ...]:
        """The sink tables ``partition.key`` names."""
        return tuple(p.table for p in self.partitioning)


#: Paimon's metastore when ``catalog.properties.metastore`` is not given (Paimon's own default;
#: Flink CDC 3.1 defaulted to it, later versions require the key)
DEFAULT_PAIMON_METASTORE = "filesystem"
#: Flink CDC's ``commit.user-prefix`` default (``PaimonDataSinkOptions.COMMIT_USER``)
DEFAULT_COMMIT_USER_PREFIX = "admin"


class TablePartitionKeys(_Frozen):
    """One ``db.table:col1,col2`` entry of a Paimon sink's ``partition.key``."""

    table: str
    columns: tuple[str, ...]


class PaimonSink(_Frozen):
    """``sink:`` with ``type: paimon``: each sink table a Paimon primary-key table (docs/paimon.md).
    Its options are declared in ``tidemark.config.sink.PAIMON_OPTIONS``."""

    #: the lake format, the sink's ``type:``
    type: ClassVar[str] = "paimon"

    name: str | None = None
    #: ``catalog.properties.*`` without the prefix: ``metastore``, ``warehouse``, ``uri`` ...
    catalog_properties: Properties
    #: ``table.properties.*`` without the prefix: Paimon table options (``bucket`` ...)
    table_properties: Properties = {}
    #: ``commit.user-prefix`` (or its older name ``commit.user``)
    commit_user_prefix: str = DEFAULT_COMMIT_USER_PREFIX
    #: ``partition.key``: partition columns per sink table
    partition_keys: tuple[TablePartitionKeys, ...] = ()
    #: the schema changes applied to sink tables, after include/exclude.schema.changes
    schema_changes: frozenset[SchemaChangeType]
    options: Properties = {}

    @property
    def metastore(self) -> str:
        """``catalog.properties.metastore``: ``filesystem`` (the default), ``rest`` or ``jdbc``."""
        return reveal(self.catalog_properties).get("metastore", DEFAULT_PAIMON_METASTORE)

    def partition_keys_for(self, table: str) -> tuple[str, ...]:
        """The partition columns ``partition.key`` gives sink table ``table`` (none: empty)."""
        return next((p.columns for p in self.partition_keys if p.table == table), ())

    @property
    def partitioned_tables(self) -> tuple[str, ...]:
        """The sink tables ``partition.key`` names."""
        return tuple(p.table for p in self.partition_keys)


# --- route, transform, pipeline ------------------------------------------------------------


class RouteRule(_Frozen):
    model_config = ConfigDict(title="a route")

    source_table: str = option(
        parse=text,
        doc="the tables routed: patterns, one regex over database.table, case-sensitive",
    )
    sink_table: str = option(
        parse=text, doc="where they go: database.table, with $1... or the replace-symbol"
    )
    replace_symbol: str | None = option(
        None, parse=text, doc="in sink-table, stands for the source table's name"
    )
    description: str | None = option(None, parse=text, doc="for people")

    @property
    def route(self) -> Route:
        return Route(self.source_table, self.sink_table, self.replace_symbol)


class TransformRule(_Frozen):
    model_config = ConfigDict(title="a transform")

    source_table: str = option(parse=text, doc="the tables transformed, as patterns like tables")
    #: ``source_table`` as patterns
    selectors: tuple[Selector, ...]
    projection: str | None = option(
        None, parse=text, doc="the columns, as a Spark SQL select list (a leading \\* for *)"
    )
    filter: str | None = option(None, parse=text, doc="the rows kept, as a Spark SQL condition")
    primary_keys: tuple[str, ...] = option(
        (), parse=parse_columns, doc="the merge key's columns, comma-separated"
    )
    partition_keys: tuple[str, ...] = option(
        (), parse=parse_columns, doc="upstream's partition columns, comma-separated"
    )
    #: read by the transform's reader, which knows the delimiter
    table_options: dict[str, str] = option(
        {}, doc="key=value pairs for the sink table, separated by the delimiter"
    )
    table_options_delimiter: str = option(
        ",", key="table-options.delimiter", parse=text, doc="separates table-options' pairs"
    )
    description: str | None = option(None, parse=text, doc="for people")
    converter_after_transform: str | None = option(
        None, parse=text, doc="upstream's SOFT_DELETE; the mirror's deletes: keep does it here"
    )

    def matches(self, database: str, table: str) -> bool:
        return selectors_match(self.selectors, database, table)


class SchemaChangeBehavior(StrEnum):
    IGNORE = "ignore"
    LENIENT = "lenient"
    TRY_EVOLVE = "try_evolve"
    EVOLVE = "evolve"
    EXCEPTION = "exception"


class PipelineSettings(_Frozen):
    name: str = option("Flink CDC Pipeline Job", parse=text, doc="the pipeline's name")
    parallelism: int = option(
        1,
        parse=whole_number(above=0),
        doc="the bootstrap's readers: tables, and one table's chunks, read at once",
    )
    schema_change_behavior: SchemaChangeBehavior = option(
        SchemaChangeBehavior.LENIENT,
        key="schema.change.behavior",
        parse=one_of(tuple(behavior.value for behavior in SchemaChangeBehavior)),
        doc="what schema changes do to the sink tables (ingest/schema/evolution.py)",
    )
    local_time_zone: str | None = option(
        None,
        key="local-time-zone",
        parse=parse_local_zone,
        default_text="systemDefault",
        doc="upstream's zone for time functions in transforms",
    )
    route_mode: RouteMode = option(
        RouteMode.ALL_MATCH,
        key="route-mode",
        parse=one_of(tuple(mode.value for mode in RouteMode)),
        doc="ALL_MATCH: every matching route applies; FIRST_MATCH: only the first",
    )
    runtime_mode: Literal["STREAMING", "BATCH"] = option(
        "STREAMING",
        key="execution.runtime-mode",
        parse=one_of(("STREAMING", "BATCH")),
        doc="BATCH: bootstrap and stop (with scan.startup.mode: snapshot)",
    )
    options: Properties = {}


# --- Tidemark's extension ------------------------------------------------------------------


class MirrorOptions(_Frozen):
    """The merged, current-state copy of a sink table, refreshed every window."""

    model_config = ConfigDict(title="mirror options")

    enabled: bool = option(True, parse=parse_bool, doc="`false`: no mirror, only the changelog")
    table: str | None = option(
        None, parse=table_id, default_text="the sink table's name", doc="the mirror table's name"
    )
    window: timedelta | None = option(
        None,
        parse=parse_window,
        default_text="`tidemark.window`",
        doc="how often the mirror is merged: at least 1 min, dividing a day",
    )
    deletes: Literal["apply", "keep"] = option(
        "apply",
        parse=one_of(("apply", "keep")),
        doc="`keep`: rows deleted in the source stay, marked as deleted",
    )
    table_properties: Properties = option(
        {}, read=read_properties, doc="Iceberg table properties of the mirror"
    )


class TableOptions(_Frozen):
    model_config = ConfigDict(title="a table's options")

    unique_key: tuple[str, ...] | None = option(
        None,
        read=read_columns,
        default_text="the primary key",
        doc="the merge key when it is not the primary key: a list, or `a, b`",
    )
    changelog_table: str | None = option(
        None,
        parse=table_id,
        default_text="`<table>_changelog`",
        doc="the append-only changelog table's name",
    )
    mirror: MirrorOptions = option(
        MirrorOptions(),
        shorthand="enabled",
        doc="the mirror: a block of the options below, or `false` for none",
    )


class JobConfig(_Frozen):
    """Spark SQL run for each window ``[start, end)`` once every input is complete to ``end``."""

    model_config = ConfigDict(title="a job")

    #: its key under ``jobs``
    name: str
    inputs: tuple[str, ...] = option(
        read=read_tables, doc="sink tables; the job runs once each is complete to the window's end"
    )
    window: timedelta = option(
        parse=parse_window,
        default_text="`tidemark.window`",
        doc="how often it runs: a multiple of its inputs' mirror windows",
    )
    sql: tuple[Path, ...] = option(
        doc="SQL files run in order, relative to the pipeline file; each must exist"
    )
    variables: Properties = option(
        {},
        read=read_variables,
        doc="`${name}` values for the SQL; names starting with `window_` are Tidemark's",
    )
    spark: Properties = option(
        {},
        read=read_spark_settings,
        doc="Spark settings for its runs, such as `spark.sql.shuffle.partitions`",
    )
    retries: int = option(
        2,
        parse=whole_number((0, 100)),
        doc="a failed window is tried again this many times (0 to 100), then held",
    )
    retry_delay: timedelta = option(
        timedelta(minutes=1),
        parse=duration_with_unit,
        doc="the wait before the first retry, doubled at each",
    )
    coalesce: bool = option(
        False, parse=parse_bool, doc="`true`: when behind, run the missed windows as one"
    )
    rerun_late_windows: bool = option(
        False,
        parse=parse_bool,
        doc="`true`: run a window again when late changes arrive for it",
    )


class ReportsSettings(_Frozen):
    """Where ingest publishes a commit report after each changelog commit."""

    topic: str = option(
        "tidemark.commit-reports", parse=text, doc="the Kafka topic the reports go to"
    )
    #: librdkafka properties, ``kafka.`` prefix removed (``bootstrap.servers`` at least)
    kafka: Properties = option(
        {},
        key="kafka.*",
        doc="librdkafka properties, each after `kafka.`; `kafka.bootstrap.servers` is required",
    )


class IngestOptions(_Frozen):
    """How ingest paces its commits; the defaults keep the lake within seconds of the source."""

    model_config = ConfigDict(title="ingest options")

    flush_interval: timedelta = option(
        timedelta(seconds=2),
        parse=positive_duration,
        doc="a table's changes are committed at most this often, as soon as a commit is free",
    )
    flush_rows: int = option(
        50_000, parse=at_least_one, doc="... and all tables at once when this many rows wait"
    )
    max_transaction_rows: int = option(
        100_000,
        parse=at_least_one,
        doc="a transaction with more rows is committed in parts, so memory stays bounded",
    )
    watermark_report_interval: timedelta = option(
        timedelta(seconds=10),
        parse=positive_duration,
        doc="how often ingest tells the scheduler, in one message on the report topic, how far "
        "the tables without new changes are complete: their watermark moves without a commit",
    )
    idle_commit_interval: timedelta = option(
        timedelta(minutes=10),
        parse=positive_duration,
        doc="tables without changes get an empty commit this often, spread over the interval: "
        "it moves where a restart reads from, and the watermark readers of the table itself "
        "see (without `tidemark.reports`, the only way it moves)",
    )
    commit_threads: int | None = option(
        None,
        parse=at_least_one,
        default_text="4; 16 on a REST catalog",
        doc="changelog commits in flight at once, each of a table of its own: a commit mostly "
        "waits for the catalog and the object store, so a lake whose commits take longer wants "
        "more of them at a time (a REST catalog on S3: 59 commits/s with 4, 72 with 16, here)",
    )
    snapshot_max_rows_per_second: int | None = option(
        None,
        parse=at_least_one,
        default_text="no cap",
        doc="rows per second the bootstrap reads at most, all its readers together, to protect "
        "the source",
    )
    snapshot_max_threads_running: int | None = option(
        None,
        parse=at_least_one,
        default_text="no limit",
        doc="before each chunk the bootstrap waits while the source runs more statements than "
        "this (its `Threads_running`, Tidemark's sampling query left out), as gh-ost's "
        "`--max-load`: full speed on a quiet source, nothing taken from a busy one",
    )
    snapshot_resource_group: str | None = option(
        None,
        parse=identifier,
        default_text="none",
        doc="MySQL 8.0+: the resource group the bootstrap's reads run in, created by the DBA "
        "(`CREATE RESOURCE GROUP tidemark_snapshot TYPE = USER THREAD_PRIORITY = 19`; the "
        "account needs RESOURCE_GROUP_USER). At priority 19 the server gives the reads only "
        "the CPU its own work leaves: full speed on an idle server, out of the way of a busy "
        "one",
    )


class MaintenanceOptions(_Frozen):
    """Table maintenance (compaction, snapshot expiry) run by the scheduler between windows."""

    model_config = ConfigDict(title="maintenance options")

    interval: timedelta = option(
        timedelta(minutes=15),
        parse=positive_duration,
        doc="how often each sink table's changelog and mirror are compacted and their old "
        "snapshots expired",
    )
    enabled: bool = option(
        True, parse=parse_bool, doc="`false`: maintain them some other way (`tidemark maintain`)"
    )


class TidemarkSettings(_Frozen):
    model_config = ConfigDict(title="the tidemark block")

    catalog_name: str = option(
        "tidemark",
        parse=identifier,
        doc="the Iceberg catalog's name on every client (Spark, PyIceberg)",
    )
    window: timedelta = option(
        timedelta(minutes=5),
        parse=parse_window,
        doc="the mirrors' merge window and the jobs' default: at least 1 min, dividing a day "
        "evenly",
    )
    reports: ReportsSettings | None = option(
        None, default_text="none", doc="commit reports to Kafka, which the scheduler follows"
    )
    ingest: IngestOptions = option(IngestOptions(), doc="how ingest paces its Iceberg commits")
    maintenance: MaintenanceOptions = option(
        MaintenanceOptions(), doc="compaction and snapshot expiry, run by the scheduler"
    )
    state_dsn: SecretStr | None = option(
        None,
        parse=text,
        default_text="the JDBC catalog's PostgreSQL database",
        doc="libpq connection string of the PostgreSQL database the scheduler keeps its state "
        "in (`host=... dbname=... user=... password=...` or `postgresql://...`); needed when "
        "the catalog is not a `jdbc:postgresql:` one (a REST catalog); `--state-dsn` "
        "overrides it",
    )
    iceberg_catalog: Properties = option(
        {},
        key="iceberg-catalog",
        default_text="none",
        doc="a Paimon pipeline's jobs: the Iceberg catalog their SQL's tables are in "
        "(`INSERT INTO db.report`), as the `catalog.properties.*` lines of an Iceberg sink "
        "(copy them); its name is `catalog-name`; required with jobs, and the scheduler keeps "
        "its state in it when it is a `jdbc:postgresql:` one. An Iceberg pipeline's jobs use "
        "the sink's catalog",
    )
    tables: dict[str, TableOptions] = option(
        {}, entry="table", doc="options per sink table, named as the route gives it (`shop.orders`)"
    )
    jobs: tuple[JobConfig, ...] = option(
        (), entry="name", doc="scheduled Spark SQL, by job name (letters, digits, `_` and `-`)"
    )

    @model_validator(mode="before")
    @classmethod
    def _jobs_default_to_the_window(cls, data: Any) -> Any:
        """A job read from the file without a window gets the block's: it is known only once
        the whole block is read."""
        if not isinstance(data, dict) or not data.get("jobs"):
            return data
        window = data.get("window", cls.model_fields["window"].default)
        jobs = tuple(
            {"window": window, **job} if isinstance(job, dict) else job for job in data["jobs"]
        )
        return {**data, "jobs": jobs}

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
    sink: IcebergSink | PaimonSink
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

    def iceberg_sink(self, reason: str) -> IcebergSink:
        """The sink, for a part of Tidemark that works on Iceberg tables only; a Paimon sink is
        refused with ``reason`` (what does not work on it yet: "the window jobs do not read
        Paimon tables yet"), where that part would open an Iceberg catalog."""
        if isinstance(self.sink, PaimonSink):
            raise ConfigError(f"{self.path}: sink type paimon: {reason} (issue 43)")
        return self.sink

    @property
    def iceberg_catalog(self) -> Properties | None:
        """The Iceberg catalog (Iceberg's Java property names) the window jobs run on, and the
        scheduler keeps its state in by default: an Iceberg sink's own, or for a Paimon sink
        ``tidemark.iceberg-catalog``; None for a Paimon pipeline without one (it has no jobs)."""
        if isinstance(self.sink, IcebergSink):
            return self.sink.catalog_properties
        return self.tidemark.iceberg_catalog or None

    def window_of(self, task: WindowTask) -> timedelta:
        """The configured window length of a mirror merge or a job."""
        if task.kind == TaskKind.MIRROR:
            return self.tidemark.mirror_window(task.name)
        for job in self.tidemark.jobs:
            if job.name == task.name:
                return job.window
        known = ", ".join(job.name for job in self.tidemark.jobs) or "none"
        raise ConfigError(f"{self.path} has no job {task.name!r} (its jobs: {known})")

    def transform_for(self, database: str, table: str) -> TransformRule | None:
        """The first transform whose source-table matches: upstream applies only that one."""
        return next((t for t in self.transforms if t.matches(database, table)), None)
