"""``source:`` of ``type: mysql``: upstream's MySQL pipeline connector options, all accepted.

The registry follows Flink CDC 3.x ``MySqlDataSourceOptions`` (and ``MySqlDataSourceFactory``'s
checks). Options that Tidemark's ingest does not use are accepted, so upstream files work
unchanged, with a warning saying why they do nothing here.
"""

from __future__ import annotations

from typing import Any

from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode
from tidemark.config.model import MySqlSource, ServerIdRange, Startup, StartupMode
from tidemark.config.options import CheckedOptions, Kind, Option, OptionSet, Prefix, check_options
from tidemark.config.patterns import PatternError, parse_selectors

SOURCE_TYPES = ("mysql",)

_NOT_USED = "has no effect in Tidemark"
_FLINK_SPLITS = f"{_NOT_USED}: it tunes Flink's parallel snapshot splits, and Tidemark reads "
_SAME_CONNECTION = f"{_NOT_USED}: ingest holds one connection to the source"
_METADATA = (
    f"{_NOT_USED}: every changelog row already carries the source database and table, the "
    "operation and the event time"
)
METADATA_KEYS = ("op_ts", "table_name", "database_name", "row_kind")

MYSQL_OPTIONS = OptionSet(
    what="a mysql source",
    handled_elsewhere=frozenset({"type", "name"}),
    options=(
        Option("hostname", required=True),
        Option("port", Kind.INT),
        Option("username", required=True),
        Option("password", required=True),
        Option("tables", required=True),
        Option("tables.exclude"),
        Option("schema-change.enabled", Kind.BOOL),
        Option("server-id", Kind.SERVER_ID),
        Option("server-time-zone", Kind.ZONE),
        Option("scan.incremental.snapshot.chunk.size", Kind.INT, above=1),
        Option("scan.snapshot.fetch.size", Kind.INT, above=1),
        Option("scan.startup.mode", Kind.CHOICE, choices=tuple(m.value for m in StartupMode)),
        Option("scan.startup.specific-offset.file"),
        Option("scan.startup.specific-offset.pos", Kind.LONG),
        Option("scan.startup.specific-offset.gtid-set"),
        Option("scan.startup.specific-offset.skip-events", Kind.LONG),
        Option("scan.startup.specific-offset.skip-rows", Kind.LONG),
        Option("scan.startup.timestamp-millis", Kind.LONG),
        Option("heartbeat.interval", Kind.DURATION),
        Option("connect.timeout", Kind.DURATION),
        Option("connect.max-retries", Kind.INT, above=0),
        Option("connection.pool.size", Kind.INT, above=1, no_effect=_SAME_CONNECTION),
        Option("scan.newly-added-table.enabled", Kind.BOOL),
        Option("scan.binlog.newly-added-table.enabled", Kind.BOOL),
        Option("scan.parse.online.schema.changes.enabled", Kind.BOOL),
        Option("treat-tinyint1-as-boolean.enabled", Kind.BOOL),
        Option("metadata.list", no_effect=_METADATA),
        Option("chunk-meta.group.size", Kind.INT, above=1, no_effect=_FLINK_SPLITS + "alone"),
        Option(
            "chunk-key.even-distribution.factor.upper-bound",
            Kind.DOUBLE,
            no_effect=_FLINK_SPLITS + "chunks by primary key range",
        ),
        Option(
            "chunk-key.even-distribution.factor.lower-bound",
            Kind.DOUBLE,
            no_effect=_FLINK_SPLITS + "chunks by primary key range",
        ),
        # upstream's older names for the two options above (``withFallbackKeys``)
        Option(
            "split-key.even-distribution.factor.upper-bound",
            Kind.DOUBLE,
            no_effect=_FLINK_SPLITS + "chunks by primary key range",
        ),
        Option(
            "split-key.even-distribution.factor.lower-bound",
            Kind.DOUBLE,
            no_effect=_FLINK_SPLITS + "chunks by primary key range",
        ),
        Option(
            "scan.incremental.snapshot.chunk.key-column",
            no_effect=(
                f"{_NOT_USED}: the snapshot is chunked by each table's primary key (or a "
                "NOT NULL unique key), which keeps every page a key range"
            ),
        ),
        Option(
            "scan.incremental.close-idle-reader.enabled",
            Kind.BOOL,
            no_effect=f"{_NOT_USED}: there are no Flink readers to close",
        ),
        Option(
            "scan.incremental.snapshot.unbounded-chunk-first.enabled",
            Kind.BOOL,
            no_effect=_FLINK_SPLITS + "chunks in key order",
        ),
        Option(
            "scan.incremental.snapshot.backfill.skip",
            Kind.BOOL,
            no_effect=f"{_NOT_USED}: the snapshot is always exact (no backfill to skip)",
        ),
        Option(
            "include-comments.enabled",
            Kind.BOOL,
            no_effect=f"{_NOT_USED}: table and column comments are not copied",
        ),
        Option(
            "use.legacy.json.format",
            Kind.BOOL,
            no_effect=f"{_NOT_USED}: JSON columns keep the text the server returns",
        ),
    ),
    prefixes=(
        Prefix(
            "jdbc.properties.",
            no_effect=f"{_NOT_USED}: they are JDBC driver settings and Tidemark connects "
            "with PyMySQL",
        ),
        Prefix(
            "debezium.",
            no_effect=f"{_NOT_USED}: they are Debezium settings and Tidemark does not run Debezium",
        ),
    ),
)

_OFFSET_KEYS = (
    "scan.startup.specific-offset.file",
    "scan.startup.specific-offset.pos",
    "scan.startup.specific-offset.gtid-set",
    "scan.startup.specific-offset.skip-events",
    "scan.startup.specific-offset.skip-rows",
)


def read_source(reader: Reader, node: MapNode, path: str) -> MySqlSource | None:
    source_type = reader.text(node.get("type"), child(path, "type"))
    if node.get("type") is None:
        reader.error(node, path, "source is missing the required key 'type': add `type: mysql`")
    elif source_type is not None and source_type not in SOURCE_TYPES:
        reader.error(
            node.get("type"),
            child(path, "type"),
            f"Tidemark reads MySQL and MariaDB sources only (type: mysql), got: {source_type!r}",
        )
        return None
    name = reader.text(node.get("name"), child(path, "name"))
    options = check_options(reader, node, path, MYSQL_OPTIONS)
    fields: dict[str, Any] = {"name": name}
    fields.update(_connection(reader, node, path, options))
    fields.update(_tables(reader, node, path, options))
    fields["startup"] = _startup(reader, node, path, options)
    _check_source_rules(reader, node, path, options)
    fields.update(
        {
            attribute: options.get(key)
            for attribute, key in _PLAIN_FIELDS.items()
            if options.get(key) is not None
        }
    )
    fields["options"] = options.raw
    if any(fields.get(key) is None for key in ("hostname", "username", "password", "tables")):
        return None
    if fields["startup"] is None or "table_selectors" not in fields:
        return None
    return MySqlSource(**fields)


_PLAIN_FIELDS = {
    "server_time_zone": "server-time-zone",
    "snapshot_chunk_size": "scan.incremental.snapshot.chunk.size",
    "snapshot_fetch_size": "scan.snapshot.fetch.size",
    "heartbeat_interval": "heartbeat.interval",
    "connect_timeout": "connect.timeout",
    "connect_max_retries": "connect.max-retries",
    "schema_change_enabled": "schema-change.enabled",
    "scan_newly_added_tables": "scan.newly-added-table.enabled",
    "scan_binlog_newly_added_tables": "scan.binlog.newly-added-table.enabled",
    "parse_online_schema_changes": "scan.parse.online.schema.changes.enabled",
    "treat_tinyint1_as_boolean": "treat-tinyint1-as-boolean.enabled",
}


def _connection(
    reader: Reader, node: MapNode, path: str, options: CheckedOptions
) -> dict[str, Any]:
    port = options.get("port")
    if port is not None and not 0 < port < 65536:
        reader.error(node.get("port"), child(path, "port"), f"must be from 1 to 65535, got: {port}")
        port = None
    server_id = options.get("server-id")
    return {
        "hostname": options.get("hostname"),
        "port": port if port is not None else 3306,
        "username": options.get("username"),
        "password": options.get("password"),
        "server_id": ServerIdRange(start=server_id[0], end=server_id[1]) if server_id else None,
    }


def _tables(reader: Reader, node: MapNode, path: str, options: CheckedOptions) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, text_field, selector_field in (
        ("tables", "tables", "table_selectors"),
        ("tables.exclude", "tables_exclude", "exclude_selectors"),
    ):
        expression = options.get(key)
        if expression is None:
            continue
        try:
            fields[selector_field] = parse_selectors(expression)
            fields[text_field] = expression
        except PatternError as error:
            reader.error(node.get(key), child(path, key), reader.problems.redact(str(error)))
    return fields


def _startup(reader: Reader, node: MapNode, path: str, options: CheckedOptions) -> Startup | None:
    mode = StartupMode(options.get("scan.startup.mode", StartupMode.INITIAL.value))
    mode_node = node.get("scan.startup.mode") or node
    mode_path = child(path, "scan.startup.mode")
    ok = True
    if mode is StartupMode.SPECIFIC_OFFSET and not (
        options.has("scan.startup.specific-offset.gtid-set")
        or (
            options.has("scan.startup.specific-offset.file")
            and options.has("scan.startup.specific-offset.pos")
        )
    ):
        reader.error(
            mode_node,
            mode_path,
            "specific-offset needs scan.startup.specific-offset.gtid-set, or both "
            "scan.startup.specific-offset.file and scan.startup.specific-offset.pos",
        )
        ok = False
    for key in (
        "scan.startup.specific-offset.skip-events",
        "scan.startup.specific-offset.skip-rows",
    ):
        if mode is StartupMode.SPECIFIC_OFFSET and options.get(key):
            reader.error(
                node.get(key),
                child(path, key),
                "Tidemark starts only at transaction boundaries, so it cannot skip part of a "
                "transaction: give the position of the transaction's start (its GTID event) "
                "with skip-events and skip-rows 0, or a GTID set",
            )
            ok = False
    if mode is StartupMode.TIMESTAMP and not options.has("scan.startup.timestamp-millis"):
        reader.error(mode_node, mode_path, "timestamp needs scan.startup.timestamp-millis")
        ok = False
    companions = dict.fromkeys(_OFFSET_KEYS, StartupMode.SPECIFIC_OFFSET)
    companions["scan.startup.timestamp-millis"] = StartupMode.TIMESTAMP
    for key, needs in companions.items():
        if options.has(key) and mode is not needs:
            reader.warning(
                node.get(key),
                child(path, key),
                f"has no effect unless scan.startup.mode is {needs.value} (it is {mode.value})",
            )
    if not ok:
        return None
    return Startup(
        mode=mode,
        specific_offset_file=options.get("scan.startup.specific-offset.file"),
        specific_offset_pos=options.get("scan.startup.specific-offset.pos"),
        specific_offset_gtid_set=options.get("scan.startup.specific-offset.gtid-set"),
        specific_offset_skip_events=options.get("scan.startup.specific-offset.skip-events"),
        specific_offset_skip_rows=options.get("scan.startup.specific-offset.skip-rows"),
        timestamp_millis=options.get("scan.startup.timestamp-millis"),
    )


def _check_source_rules(reader: Reader, node: MapNode, path: str, options: CheckedOptions) -> None:
    if options.get("scan.newly-added-table.enabled") and options.get(
        "scan.binlog.newly-added-table.enabled"
    ):
        key = "scan.binlog.newly-added-table.enabled"
        reader.error(
            node.get(key),
            child(path, key),
            "cannot be true together with scan.newly-added-table.enabled (rows of new tables "
            "would be read twice after a restore): turn one off",
        )
    for key, low, high in (
        ("chunk-key.even-distribution.factor.upper-bound", 1.0, None),
        ("split-key.even-distribution.factor.upper-bound", 1.0, None),
        ("chunk-key.even-distribution.factor.lower-bound", 0.0, 1.0),
        ("split-key.even-distribution.factor.lower-bound", 0.0, 1.0),
    ):
        value = options.get(key)
        if value is None:
            continue
        if value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
            reader.error(node.get(key), child(path, key), f"must be {bounds}, got: {value}")
    metadata = options.get("metadata.list")
    if metadata is not None:
        unknown = [m.strip() for m in metadata.split(",") if m.strip() not in METADATA_KEYS]
        if unknown:
            reader.error(
                node.get("metadata.list"),
                child(path, "metadata.list"),
                f"unknown metadata {', '.join(unknown)}: the MySQL source offers "
                f"{', '.join(METADATA_KEYS)}",
            )
    chunk_keys = options.get("scan.incremental.snapshot.chunk.key-column")
    if chunk_keys is not None:
        key = "scan.incremental.snapshot.chunk.key-column"
        for part in chunk_keys.split(";"):
            if part.strip() and len(part.split(":")) != 2:
                reader.error(
                    node.get(key),
                    child(path, key),
                    f"cannot parse {part!r}: write 'db.table:column' entries separated by ';'",
                )
