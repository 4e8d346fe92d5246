"""``sink:`` of ``type: iceberg`` or ``type: paimon``, as Flink CDC 3.x's Iceberg and Paimon
pipeline connectors take it.

Iceberg: ``catalog.properties.*`` go to the catalog with Iceberg's Java property names (any type
Iceberg knows is accepted; Tidemark then checks it can write to it with PyIceberg),
``table.properties.*`` to the tables it creates, ``partition.key`` partitions them, and
``include/exclude.schema.changes`` filter the schema changes applied, resolved exactly as
upstream's ``toSinkDef`` does.

Paimon (``PaimonDataSinkFactory``): ``catalog.properties.*`` are Paimon catalog options (the
metastore must be one pypaimon, Tidemark's writer, can use), ``table.properties.*`` Paimon table
options (the ones that would break the table contract of docs/paimon.md are refused),
``partition.key`` names partition columns, ``commit.user-prefix`` starts the commit user; the
schema changes are filtered as for Iceberg.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

from tidemark.catalog import pyiceberg_properties
from tidemark.config.compound import Properties
from tidemark.config.declaration import Option
from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode
from tidemark.config.model import (
    DEFAULT_COMMIT_USER_PREFIX,
    DEFAULT_PAIMON_METASTORE,
    IcebergSink,
    PaimonSink,
    PartitionField,
    PartitionTransform,
    SchemaChangeBehavior,
    SchemaChangeType,
    TablePartitioning,
    TablePartitionKeys,
    reveal,
)
from tidemark.config.options import CheckedOptions, OptionSet, Prefix, check_options, yaml_list
from tidemark.config.patterns import split_table_id
from tidemark.config.values import BadValue, closest, parse_bool, parse_int, whole_number
from tidemark.errors import ConfigError

_NOT_USED = "has no effect in Tidemark"

_COMPACTION = f"{_NOT_USED}: compaction is Tidemark's table maintenance, not the sink's"

#: both sinks' filter of the schema changes applied, resolved as upstream's ``toSinkDef`` does
SCHEMA_CHANGE_OPTIONS = (
    Option(
        "include.schema.changes",
        read=yaml_list,
        doc="the schema changes applied to sink tables (default: all)",
    ),
    Option(
        "exclude.schema.changes",
        read=yaml_list,
        doc="the schema changes not applied (lenient leaves out drop and truncate)",
    ),
)

#: ``IcebergSink``'s values are each derived from several of these, so they are declared here
ICEBERG_OPTIONS = OptionSet(
    what="an iceberg sink",
    handled_elsewhere=frozenset({"type", "name"}),
    options=(
        Option(
            "partition.key",
            doc="partition fields per sink table: db.t1:id,day(ts);db.t2:bucket[16](id)",
        ),
        *SCHEMA_CHANGE_OPTIONS,
        Option("sink.compaction.enabled", parse=parse_bool, no_effect=_COMPACTION),
        Option("sink.compaction.commit.interval", parse=whole_number(), no_effect=_COMPACTION),
        Option("sink.compaction.commit.parallelism", parse=whole_number(), no_effect=_COMPACTION),
        Option("job.id.prefix", no_effect=f"{_NOT_USED}: there is no Flink job to name"),
    ),
    prefixes=(
        Prefix("catalog.properties.", doc="the Iceberg catalog, with Iceberg's property names"),
        Prefix("table.properties.", doc="Iceberg table properties of the tables it creates"),
        Prefix(
            "hadoop.conf.",
            no_effect=f"{_NOT_USED}: neither PyIceberg nor Tidemark's Spark reads Hadoop "
            "settings from the sink",
        ),
    ),
)

#: the catalog types Iceberg's ``CatalogUtil`` knows (``catalog.properties.type``)
ICEBERG_CATALOG_TYPES = ("jdbc", "rest", "hive", "glue", "nessie", "hadoop", "bigquery")
#: the ones Tidemark's ingest can write to through PyIceberg (``tidemark.catalog``)
TIDEMARK_CATALOG_TYPES = ("jdbc", "rest", "hive", "glue")
#: Iceberg types PyIceberg has no catalog for (``hadoop`` gets its own message from
#: ``tidemark.catalog``)
_NOT_IN_PYICEBERG = ("nessie", "bigquery")

_FAMILIES: dict[str, tuple[SchemaChangeType, ...]] = {
    "add": (SchemaChangeType.ADD_COLUMN,),
    "alter": (SchemaChangeType.ALTER_COLUMN_TYPE,),
    "create": (SchemaChangeType.CREATE_TABLE,),
    "drop": (SchemaChangeType.DROP_COLUMN, SchemaChangeType.DROP_TABLE),
    "rename": (SchemaChangeType.RENAME_COLUMN,),
    "table": (
        SchemaChangeType.CREATE_TABLE,
        SchemaChangeType.DROP_TABLE,
        SchemaChangeType.TRUNCATE_TABLE,
        SchemaChangeType.ALTER_TABLE_COMMENT,
    ),
    "column": (
        SchemaChangeType.ADD_COLUMN,
        SchemaChangeType.ALTER_COLUMN_TYPE,
        SchemaChangeType.DROP_COLUMN,
        SchemaChangeType.RENAME_COLUMN,
    ),
    "all": tuple(SchemaChangeType),
}
SCHEMA_CHANGE_TAGS = tuple(_FAMILIES) + tuple(t.value for t in SchemaChangeType)

_TRANSFORM = re.compile(
    r"(?P<name>year|month|day|hour)\((?P<column>.*)\)"
    r"|(?P<wname>bucket|truncate)\[(?P<width>[0-9]+)]\((?P<wcolumn>.*)\)"
)


def read_sink(
    reader: Reader, node: MapNode, path: str, behavior: SchemaChangeBehavior
) -> IcebergSink | PaimonSink | None:
    sink_type = reader.text(node.get("type"), child(path, "type"))
    if node.get("type") is None:
        reader.error(
            node,
            path,
            "sink is missing the required key 'type': add `type: iceberg` or `type: paimon`",
        )
        return None
    if sink_type is None:
        return None
    if sink_type == "paimon":
        return _read_paimon(reader, node, path, behavior)
    if sink_type != "iceberg":
        reader.error(
            node.get("type"),
            child(path, "type"),
            "Tidemark writes Iceberg or Paimon tables (type: iceberg, type: paimon), got: "
            f"{sink_type!r}",
        )
        return None
    name = reader.text(node.get("name"), child(path, "name"))
    options = check_options(reader, node, path, ICEBERG_OPTIONS)
    catalog = options.prefixed.get("catalog.properties.", {})
    catalog_ok = _check_catalog(reader, node, path, options)
    partitioning = _partitioning(reader, node, path, options)
    changes = _schema_changes(reader, node, path, options, behavior)
    if not catalog_ok or partitioning is None or changes is None:
        return None
    fields: dict[str, Any] = {
        "name": name,
        "catalog_properties": catalog,
        "table_properties": options.prefixed.get("table.properties.", {}),
        "hadoop_conf": options.prefixed.get("hadoop.conf.", {}),
        "partitioning": partitioning,
        "schema_changes": changes,
        "options": options.raw,
    }
    return IcebergSink(**fields)


#: ``tidemark.iceberg-catalog``: an Iceberg sink's ``catalog.properties.*`` lines and nothing else
ICEBERG_CATALOG_OPTIONS = OptionSet(
    what="the jobs' Iceberg catalog",
    options=(),
    prefixes=(
        Prefix("catalog.properties.", doc="the Iceberg catalog, with Iceberg's property names"),
    ),
)


def read_iceberg_catalog(reader: Reader, node: MapNode, path: str) -> Properties | None:
    """``catalog.properties.*`` lines (of ``tidemark.iceberg-catalog``), checked as an Iceberg
    sink's are; the properties without the prefix, or None after reporting what is wrong."""
    options = check_options(reader, node, path, ICEBERG_CATALOG_OPTIONS)
    if not _check_catalog(reader, node, path, options, owner=path):
        return None
    return options.prefixed.get("catalog.properties.", {})


def _check_catalog(
    reader: Reader, node: MapNode, path: str, options: CheckedOptions, owner: str = "the sink"
) -> bool:
    catalog = options.prefixed.get("catalog.properties.", {})
    type_key, impl_key = "catalog.properties.type", "catalog.properties.catalog-impl"
    type_node, type_path = node.get(type_key) or node, child(path, type_key)
    catalog_type = reveal(catalog).get("type")
    if catalog_type is None and "catalog-impl" not in catalog:
        reader.error(
            node,
            path,
            f"{owner} needs {type_key} (one of {', '.join(TIDEMARK_CATALOG_TYPES)}) or {impl_key}",
        )
        return False
    if catalog_type is None:
        reader.error(
            node.get(impl_key),
            child(path, impl_key),
            "names a Java class, which Tidemark's ingest (PyIceberg) cannot load: set "
            f"{type_key} to one of {', '.join(TIDEMARK_CATALOG_TYPES)} instead",
        )
        return False
    if "catalog-impl" in catalog:
        reader.error(
            node.get(impl_key),
            child(path, impl_key),
            f"cannot be set together with {type_key} (Iceberg refuses both): remove one",
        )
        return False
    lowered = catalog_type.lower()
    if lowered not in ICEBERG_CATALOG_TYPES:
        reader.error(
            type_node,
            type_path,
            f"is not an Iceberg catalog type: use one of {', '.join(TIDEMARK_CATALOG_TYPES)}, "
            f"got: {catalog_type!r}",
        )
        return False
    if lowered in _NOT_IN_PYICEBERG:
        reader.error(
            type_node,
            type_path,
            f"'{catalog_type}' works in Flink CDC, but Tidemark's ingest writes with PyIceberg, "
            f"which cannot use it: use one of {', '.join(TIDEMARK_CATALOG_TYPES)}",
        )
        return False
    if lowered in ("rest", "hive") and "uri" not in catalog:
        reader.error(
            type_node,
            type_path,
            f"a {lowered} catalog needs catalog.properties.uri (the catalog server's address)",
        )
        return False
    try:
        pyiceberg_properties(reveal(catalog))
    except ConfigError as error:
        uri_node = node.get("catalog.properties.uri") or type_node
        reader.error(uri_node, path, reader.problems.redact(str(error)))
        return False
    return True


def _partitioning(
    reader: Reader, node: MapNode, path: str, options: CheckedOptions
) -> tuple[TablePartitioning, ...] | None:
    text = options.get("partition.key")
    if not text:
        return ()
    key_node, key_path = node.get("partition.key"), child(path, "partition.key")
    result = []
    for section in (part.strip() for part in text.split(";")):
        if not section:
            continue
        try:
            result.append(parse_partitioning(section))
        except ValueError as error:
            reader.error(key_node, key_path, str(error))
            return None
    return tuple(result)


_PARTITION_FORMS = (
    "write 'db.table:column,day(ts)' entries separated by ';' (transforms: year, month, day, "
    "hour, bucket[N], truncate[N])"
)


def parse_partitioning(section: str) -> TablePartitioning:
    """One ``db.table:field,field`` section of ``partition.key``, as upstream parses it."""
    parts = section.split(":")
    if len(parts) != 2 or not parts[1]:
        raise ValueError(f"cannot parse {section!r}: {_PARTITION_FORMS}")
    table, fields = parts
    if table != table.strip() or split_table_id(table) is None:
        raise ValueError(
            f"{table!r} in {section!r} is not a database.table name: {_PARTITION_FORMS}"
        )
    parsed = []
    for field in fields.split(","):
        if field != field.strip() or not field:
            raise ValueError(
                f"{section!r} has spaces or an empty field; Flink CDC does not trim partition "
                "fields: write them without spaces, as 'db.table:id,day(ts)'"
            )
        parsed.append(_partition_field(field))
    return TablePartitioning(table=table, fields=tuple(parsed))


def _partition_field(text: str) -> PartitionField:
    match = _TRANSFORM.fullmatch(text)
    if match is None:
        if "(" in text or "[" in text:
            raise ValueError(
                f"unknown partition transform {text!r}: use year(c), month(c), day(c), hour(c), "
                "bucket[N](c) or truncate[N](c)"
            )
        return PartitionField(transform="identity", column=text)
    if match.group("name"):
        name = cast(PartitionTransform, match.group("name"))
        return PartitionField(transform=name, column=match.group("column"))
    width = int(match.group("width"))
    if width <= 0:
        raise ValueError(f"{text!r} needs a width above 0")
    name = cast(PartitionTransform, match.group("wname"))
    return PartitionField(transform=name, column=match.group("wcolumn"), width=width)


def _schema_changes(
    reader: Reader,
    node: MapNode,
    path: str,
    options: CheckedOptions,
    behavior: SchemaChangeBehavior,
) -> frozenset[SchemaChangeType] | None:
    lists: dict[str, tuple[str, ...]] = {}
    ok = True
    for key in ("include.schema.changes", "exclude.schema.changes"):
        tags = options.get(key, ())
        unknown = [tag for tag in tags if tag not in SCHEMA_CHANGE_TAGS]
        if unknown:
            reader.error(
                node.get(key),
                child(path, key),
                f"unknown schema change type {', '.join(map(repr, unknown))}: use "
                f"{', '.join(SCHEMA_CHANGE_TAGS)}",
            )
            ok = False
        lists[key] = tags
    if not ok:
        return None
    return resolve_schema_changes(
        lists["include.schema.changes"],
        lists["exclude.schema.changes"] if options.has("exclude.schema.changes") else None,
        behavior,
    )


def resolve_schema_changes(
    include: tuple[str, ...], exclude: tuple[str, ...] | None, behavior: SchemaChangeBehavior
) -> frozenset[SchemaChangeType]:
    """Upstream's ``toSinkDef``: all types unless included; create.table always unless
    excluded; lenient excludes drop.table and truncate.table unless exclusions are given."""
    included = list(include) or [t.value for t in SchemaChangeType]
    excluded = list(exclude or ())
    if include and SchemaChangeType.CREATE_TABLE not in _resolve(excluded):
        included.append(SchemaChangeType.CREATE_TABLE.value)
    if exclude is None and behavior is SchemaChangeBehavior.LENIENT:
        excluded += [SchemaChangeType.DROP_TABLE.value, SchemaChangeType.TRUNCATE_TABLE.value]
    return frozenset(_resolve(included) - _resolve(excluded))


def _resolve(tags: list[str]) -> set[SchemaChangeType]:
    result: set[SchemaChangeType] = set()
    for tag in tags:
        result.update(_FAMILIES.get(tag, ()) or (SchemaChangeType(tag),))
    return result


# --- paimon --------------------------------------------------------------------------------

_METASTORE_KEY = "catalog.properties.metastore"
_WAREHOUSE_KEY = "catalog.properties.warehouse"
_URI_KEY = "catalog.properties.uri"


def _commit_user(text: str) -> str:
    if not text.strip():
        raise BadValue("must not be empty", "remove it for the default")
    return text


#: every option of Flink CDC 3.x's Paimon sink (``PaimonDataSinkOptions``), plus the sink-level
#: schema change filters; all are honoured
PAIMON_OPTIONS = OptionSet(
    what="a paimon sink",
    handled_elsewhere=frozenset({"type", "name"}),
    options=(
        Option(
            _METASTORE_KEY,
            doc="the Paimon catalog: filesystem (the default), rest or jdbc",
        ),
        Option(
            _WAREHOUSE_KEY,
            doc="required: the warehouse's root path (a rest metastore: its warehouse's name)",
        ),
        Option(_URI_KEY, doc="a rest metastore's address, or a jdbc metastore's JDBC URL"),
        Option(
            "commit.user-prefix",
            parse=_commit_user,
            doc=f"the start of the user Paimon commits are made as (default "
            f"{DEFAULT_COMMIT_USER_PREFIX})",
        ),
        # upstream's name before 3.6 (``withFallbackKeys``)
        Option("commit.user", parse=_commit_user, doc="the older name of commit.user-prefix"),
        Option("partition.key", doc="partition columns per sink table: db.t1:c1,c2;db.t2:c3"),
        *SCHEMA_CHANGE_OPTIONS,
    ),
    prefixes=(
        Prefix("catalog.properties.", doc="the Paimon catalog, with Paimon's option names"),
        Prefix(
            "table.properties.",
            doc="Paimon table options of the tables it creates (docs/paimon.md says which are "
            "refused)",
        ),
    ),
)

#: the metastores Paimon knows (``catalog.properties.metastore``)
PAIMON_METASTORES = ("filesystem", "hive", "jdbc", "rest")
#: the ones pypaimon, Tidemark's writer, has a catalog for
TIDEMARK_METASTORES = ("filesystem", "rest", "jdbc")
#: the JDBC URLs pypaimon's JDBC catalog connects to (through Python DB-API drivers)
_PYPAIMON_JDBC_URLS = ("jdbc:postgresql:", "jdbc:mysql:", "jdbc:sqlite:")


def _read_paimon(
    reader: Reader, node: MapNode, path: str, behavior: SchemaChangeBehavior
) -> PaimonSink | None:
    name = reader.text(node.get("name"), child(path, "name"))
    options = check_options(reader, node, path, PAIMON_OPTIONS)
    catalog: Properties = dict(options.prefixed.get("catalog.properties.", {}))
    for key in (_METASTORE_KEY, _WAREHOUSE_KEY, _URI_KEY):
        if options.has(key):
            catalog[key.removeprefix("catalog.properties.")] = options.raw[key]
    table_properties = options.prefixed.get("table.properties.", {})
    catalog_ok = _check_paimon_catalog(reader, node, path, catalog)
    table_ok = _check_paimon_table_properties(reader, node, path, reveal(table_properties))
    partition_keys = _paimon_partition_keys(reader, node, path, options)
    changes = _schema_changes(reader, node, path, options, behavior)
    if not (catalog_ok and table_ok) or partition_keys is None or changes is None:
        return None
    return PaimonSink(
        name=name,
        catalog_properties=catalog,
        table_properties=table_properties,
        commit_user_prefix=_commit_user_prefix(reader, node, path, options),
        partition_keys=partition_keys,
        schema_changes=changes,
        options=options.raw,
    )


def _commit_user_prefix(reader: Reader, node: MapNode, path: str, options: CheckedOptions) -> str:
    prefix, older = options.get("commit.user-prefix"), options.get("commit.user")
    if prefix is not None and older is not None:
        reader.warning(
            node.get("commit.user"),
            child(path, "commit.user"),
            "is ignored: commit.user-prefix, its newer name, is given too; remove one",
        )
    return str(prefix or older or DEFAULT_COMMIT_USER_PREFIX)


def _check_paimon_catalog(reader: Reader, node: MapNode, path: str, catalog: Properties) -> bool:
    plain = reveal(catalog)
    metastore_node, metastore_path = node.get(_METASTORE_KEY), child(path, _METASTORE_KEY)
    metastore = plain.get("metastore")
    usable = ", ".join(TIDEMARK_METASTORES)
    if metastore is None:
        reader.warning(
            node,
            path,
            f"{_METASTORE_KEY} is missing: Tidemark uses {DEFAULT_PAIMON_METASTORE} (Paimon's "
            f"default), but Flink CDC 3.2 and later require the key: add "
            f"`{_METASTORE_KEY}: {DEFAULT_PAIMON_METASTORE}`",
        )
        metastore = DEFAULT_PAIMON_METASTORE
    elif metastore == "hive":
        reader.error(
            metastore_node,
            metastore_path,
            "'hive' works in Flink CDC, but Tidemark writes Paimon tables with pypaimon, which "
            f"has no Hive metastore client: use one of {usable}",
        )
        return False
    elif metastore not in PAIMON_METASTORES:
        guess = closest(metastore.lower(), PAIMON_METASTORES)
        hint = f"; did you mean '{guess}'? (Paimon's names are lower case)" if guess else ""
        reader.error(
            metastore_node,
            metastore_path,
            f"is not a Paimon metastore: use one of {usable}, got: {metastore!r}{hint}",
        )
        return False
    ok = True
    if not plain.get("warehouse"):
        reader.error(
            node,
            path,
            f"the sink needs {_WAREHOUSE_KEY}: the root path Paimon keeps the tables under "
            "(/data/warehouse, s3://bucket/warehouse), or a rest metastore's warehouse name",
        )
        ok = False
    uri = plain.get("uri")
    if metastore in ("rest", "jdbc") and not uri:
        what = "the catalog server's address" if metastore == "rest" else "its JDBC URL"
        reader.error(
            metastore_node, metastore_path, f"a {metastore} metastore needs {_URI_KEY} ({what})"
        )
        ok = False
    elif metastore == "jdbc" and uri and not uri.startswith(_PYPAIMON_JDBC_URLS):
        reader.error(
            node.get(_URI_KEY),
            child(path, _URI_KEY),
            "pypaimon's jdbc metastore connects to PostgreSQL, MySQL or SQLite only: write a "
            "URL starting with jdbc:postgresql:, jdbc:mysql: or jdbc:sqlite:",
        )
        ok = False
    return ok


#: table options Tidemark sets itself (docs/paimon.md, "The table contract"), with why
_SET_BY_TIDEMARK = {
    "rowkind.field": "Tidemark sets it to _tm_row_kind, each row's change (+I, +U, -D)",
    "sequence.field": "Tidemark sets it to _tm_order, the binlog order of the changes, so the "
    "newest change of a key wins",
    "primary-key": "a sink table's key is its source's primary key, or "
    "tidemark.tables.<table>.unique-key",
    "partition": "a sink table's partitions come from partition.key ('db.table:column')",
}
#: Paimon's ``ignore-delete`` and its older names
_IGNORE_DELETE = (
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)
_CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")


def _check_paimon_table_properties(
    reader: Reader, node: MapNode, path: str, properties: dict[str, str]
) -> bool:
    """Refuse the Paimon table options pypaimon 2.1 cannot honour, or that would break the
    table contract of docs/paimon.md without a word (each measured with pypaimon 2.1.0)."""
    problems: list[tuple[str, str]] = []

    def refuse(key: str, message: str) -> None:
        problems.append((key, message))

    def enabled(key: str) -> bool:
        return properties.get(key, "").strip().lower() == "true"

    for key, why in _SET_BY_TIDEMARK.items():
        if key in properties:
            refuse(key, f"cannot be set: {why}; remove it")
    order = properties.get("sequence.field.sort-order", "ascending").strip().lower()
    if order != "ascending":
        refuse(
            "sequence.field.sort-order",
            "must be ascending: Tidemark's sequence.field grows with the binlog, and any other "
            "order would keep a key's oldest change instead of its newest; remove it",
        )
    engine = properties.get("merge-engine", "deduplicate").strip().lower()
    if engine != "deduplicate":
        refuse(
            "merge-engine",
            "must be deduplicate (the default): each sink table mirrors its source, so a key's "
            "newest change replaces its row; pypaimon 2.1 cannot write the deletes of a "
            "partial-update or aggregation table, and first-row would keep a key's first "
            "change; remove it",
        )
    for key in _IGNORE_DELETE:
        if enabled(key):
            refuse(
                key,
                "would drop the source's deletes, keeping deleted rows as if they were live: to "
                "keep them marked as deleted, set tidemark.tables.<table>.mirror.deletes: keep "
                "instead; remove it",
            )
    if enabled("deletion-vectors.enabled"):
        refuse(
            "deletion-vectors.enabled",
            "cannot be used: pypaimon 2.1 writes only level-0 files, which a deletion-vector "
            "table hides from readers until a compaction, so no row would be readable at the "
            "watermark of the snapshot that wrote it; remove it",
        )
    for key in ("row-tracking.enabled", "data-evolution.enabled"):
        if enabled(key):
            refuse(
                key,
                "cannot be used: Paimon allows it on tables without a primary key only, and "
                "each sink table is a primary-key table; remove it",
            )
    if properties.get("write-only", "true").strip().lower() != "true":
        refuse(
            "write-only",
            "must be true: Tidemark writes the tables write-only and compacts them in its "
            "table maintenance, never while writing; remove it",
        )
    producer = properties.get("changelog-producer", "none").strip().lower()
    if producer not in _CHANGELOG_PRODUCERS:
        refuse(
            "changelog-producer",
            f"must be one of {', '.join(_CHANGELOG_PRODUCERS)}, got: {producer!r}",
        )
    elif producer in ("lookup", "full-compaction"):
        refuse(
            "changelog-producer",
            f"cannot be {producer}: Paimon makes that changelog while compacting, and pypaimon, "
            "Tidemark's writer, never compacts (the tables are write-only): use none, or input "
            "(pypaimon writes the changelog with each commit)",
        )
    _check_bucket(properties, refuse)
    for key, message in problems:
        full = f"table.properties.{key}"
        reader.error(node.get(full), child(path, full), message)
    return not problems


def _check_bucket(properties: dict[str, str], refuse: Callable[[str, str], None]) -> None:
    text = properties.get("bucket")
    if text is None:
        return
    try:
        bucket = parse_int(text)
    except BadValue:
        refuse("bucket", f"must be a whole number of buckets (or -1), got: {text!r}")
        return
    if bucket == -2:
        refuse(
            "bucket",
            "cannot be -2: a postpone-bucket table hides new rows from readers until a "
            "compaction gives them buckets, so no row would be readable at the watermark of "
            "the snapshot that wrote it; give a number of buckets (about one per GB of the "
            "table), or -1 for dynamic buckets",
        )
    elif bucket == 0 or bucket < -2:
        refuse(
            "bucket",
            f"must be a number of buckets above 0, or -1 for dynamic buckets, got: {bucket}",
        )
    elif bucket == -1 and "bucket-key" in properties:
        refuse(
            "bucket-key",
            "cannot be set with bucket: -1 (Paimon refuses it): remove it, or give a number "
            "of buckets",
        )


def _paimon_partition_keys(
    reader: Reader, node: MapNode, path: str, options: CheckedOptions
) -> tuple[TablePartitionKeys, ...] | None:
    text = options.get("partition.key")
    if not text:
        return ()
    key_node, key_path = node.get("partition.key"), child(path, "partition.key")
    result: list[TablePartitionKeys] = []
    for section in (part.strip() for part in text.split(";")):
        if not section:
            continue
        try:
            entry = parse_partition_keys(section)
        except ValueError as error:
            reader.error(key_node, key_path, str(error))
            return None
        if any(known.table == entry.table for known in result):
            reader.error(
                key_node,
                key_path,
                f"names {entry.table} twice: give each table's partition columns once, as "
                f"'{entry.table}:c1,c2'",
            )
            return None
        result.append(entry)
    return tuple(result)


_PAIMON_PARTITION_FORM = (
    "write 'db.table:column,column' entries separated by ';' (Paimon partitions by columns as "
    "they are, without transforms)"
)


def parse_partition_keys(section: str) -> TablePartitionKeys:
    """One ``db.table:col1,col2`` section of a Paimon sink's ``partition.key``, as upstream's
    ``PaimonDataSinkFactory`` parses it."""
    parts = section.split(":")
    if len(parts) != 2 or not parts[1]:
        raise ValueError(f"cannot parse {section!r}: {_PAIMON_PARTITION_FORM}")
    table, columns = parts
    if table != table.strip() or split_table_id(table) is None:
        raise ValueError(
            f"{table!r} in {section!r} is not a database.table name: {_PAIMON_PARTITION_FORM}"
        )
    parsed = columns.split(",")
    for column in parsed:
        if column != column.strip() or not column:
            raise ValueError(
                f"{section!r} has spaces or an empty column; Flink CDC does not trim partition "
                "columns: write them without spaces, as 'db.table:dt,region'"
            )
        if any(mark in column for mark in "()[]"):
            raise ValueError(
                f"{column!r} in {section!r} is not a column: Paimon partitions by columns as "
                "they are, without transforms such as day(ts); compute one with a transform "
                "projection and partition by it"
            )
    return TablePartitionKeys(table=table, columns=tuple(parsed))
