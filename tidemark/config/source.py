"""``source:`` of ``type: mysql``: upstream's MySQL pipeline connector options, all accepted.

The registry follows Flink CDC 3.x ``MySqlDataSourceOptions`` (and ``MySqlDataSourceFactory``'s
checks). The options Tidemark uses are declared on ``MySqlSource`` and ``Startup``, which hold
their values; the others are accepted, so upstream files work unchanged, with a warning saying why
they do nothing here.
"""

from __future__ import annotations

from typing import Any

from tidemark.config.declaration import Option, declared, default_of, options_of
from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode
from tidemark.config.model import MySqlSource, Startup, StartupMode
from tidemark.config.options import CheckedOptions, OptionSet, Prefix, check_options
from tidemark.config.patterns import PatternError, parse_selectors
from tidemark.config.values import one_of, parse_bool, parse_float, whole_number

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
        *options_of(MySqlSource),
        *options_of(Startup),
        Option("connection.pool.size", parse=whole_number(above=1), no_effect=_SAME_CONNECTION),
        Option("metadata.list", no_effect=_METADATA),
        Option(
            "chunk-meta.group.size",
            parse=whole_number(above=1),
            no_effect=_FLINK_SPLITS + "alone",
        ),
        Option(
            "jdbc.properties.trustCertificateKeyStoreType",
            parse=one_of(["PEM", "JKS", "PKCS12"]),
            doc="the kind of trustCertificateKeyStoreUrl: PEM, the one Tidemark reads",
        ),
        # upstream's older names of chunk-key.even-distribution.factor.* (``withFallbackKeys``)
        Option(
            "split-key.even-distribution.factor.upper-bound",
            parse=parse_float,
            doc="the older name of chunk-key.even-distribution.factor.upper-bound",
        ),
        Option(
            "split-key.even-distribution.factor.lower-bound",
            parse=parse_float,
            doc="the older name of chunk-key.even-distribution.factor.lower-bound",
        ),
        Option(
            "scan.incremental.close-idle-reader.enabled",
            parse=parse_bool,
            no_effect=f"{_NOT_USED}: there are no Flink readers to close",
        ),
        Option(
            "scan.incremental.snapshot.unbounded-chunk-first.enabled",
            parse=parse_bool,
            no_effect=_FLINK_SPLITS + "chunks in key order",
        ),
        Option(
            "scan.incremental.snapshot.backfill.skip",
            parse=parse_bool,
            no_effect=f"{_NOT_USED}: the snapshot is always exact (no backfill to skip)",
        ),
        Option(
            "include-comments.enabled",
            parse=parse_bool,
            no_effect=f"{_NOT_USED}: table and column comments are not copied",
        ),
        Option(
            "use.legacy.json.format",
            parse=parse_bool,
            no_effect=f"{_NOT_USED}: JSON columns keep the text the server returns",
        ),
    ),
    prefixes=(
        Prefix(
            "jdbc.properties.",
            no_effect=f"{_NOT_USED}: they are JDBC driver settings, and of them Tidemark "
            "reads sslMode and trustCertificateKeyStoreUrl only",
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


#: upstream's older names of options, by the attribute they set when the new name is absent
_OLD_NAMES = {
    "even_distribution_upper": "split-key.even-distribution.factor.upper-bound",
    "even_distribution_lower": "split-key.even-distribution.factor.lower-bound",
}


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
    fields: dict[str, Any] = {"name": name, **options.given(MySqlSource)}
    for attribute, old_key in _OLD_NAMES.items():
        if attribute not in fields and options.get(old_key) is not None:
            fields[attribute] = options.get(old_key)
    _check_port(reader, node, path, fields)
    fields.update(_selectors(reader, node, path, fields))
    startup = _startup(reader, node, path, options)
    _check_source_rules(reader, node, path, options)
    missing = [o for o in declared(MySqlSource) if o.option.required and o.attribute not in fields]
    if missing or startup is None or "table_selectors" not in fields:
        return None
    return MySqlSource(**fields, startup=startup, options=options.raw)


def _check_port(reader: Reader, node: MapNode, path: str, fields: dict[str, Any]) -> None:
    """A port out of range is reported and dropped; the checks go on with the default."""
    port = fields.get("port")
    if port is not None and not 0 < port < 65536:
        reader.error(node.get("port"), child(path, "port"), f"must be from 1 to 65535, got: {port}")
        del fields["port"]


def _selectors(reader: Reader, node: MapNode, path: str, fields: dict[str, Any]) -> dict[str, Any]:
    """``tables`` and ``tables.exclude`` as patterns; one that does not parse is reported and
    left out."""
    patterns: dict[str, Any] = {}
    for key, text_field, selector_field in (
        ("tables", "tables", "table_selectors"),
        ("tables.exclude", "tables_exclude", "exclude_selectors"),
    ):
        expression = fields.get(text_field)
        if expression is None:
            continue
        try:
            patterns[selector_field] = parse_selectors(expression)
        except PatternError as error:
            reader.error(node.get(key), child(path, key), reader.problems.redact(str(error)))
            patterns[text_field] = None
    return patterns


def _startup(reader: Reader, node: MapNode, path: str, options: CheckedOptions) -> Startup | None:
    mode = StartupMode(options.get("scan.startup.mode", default_of(Startup, "mode")))
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
    return Startup(**options.given(Startup))


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
    store_type = options.get("jdbc.properties.trustCertificateKeyStoreType")
    if store_type not in (None, "PEM"):
        key = "jdbc.properties.trustCertificateKeyStoreType"
        reader.error(
            node.get(key),
            child(path, key),
            f"Tidemark reads a PEM file of CA certificates, not a {store_type} store: export "
            "the CA with keytool -exportcert -rfc -alias <alias> -keystore <store> -file ca.pem, "
            "point trustCertificateKeyStoreUrl at ca.pem and set this to PEM",
        )
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
    key = "scan.incremental.snapshot.chunk.key-column"
    if options.get(key) and options.get("scan.incremental.snapshot.enabled") is False:
        reader.error(
            node.get(key),
            child(path, key),
            "cuts the incremental snapshot's chunks, but scan.incremental.snapshot.enabled is "
            "false: remove one of the two",
        )
