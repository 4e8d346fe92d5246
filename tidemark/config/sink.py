"""``sink:`` of ``type: iceberg``, as Flink CDC 3.x's Iceberg pipeline connector takes it.

``catalog.properties.*`` go to the catalog with Iceberg's Java property names (any type Iceberg
knows is accepted; Tidemark then checks it can write to it with PyIceberg), ``table.properties.*``
to the tables it creates, ``partition.key`` partitions them, and ``include/exclude.schema.changes``
filter the schema changes applied, resolved exactly as upstream's ``toSinkDef`` does.
"""

from __future__ import annotations

import re
from typing import Any, cast

from tidemark.catalog import pyiceberg_properties
from tidemark.config.declaration import Option
from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode
from tidemark.config.model import (
    IcebergSink,
    PartitionField,
    PartitionTransform,
    SchemaChangeBehavior,
    SchemaChangeType,
    TablePartitioning,
    reveal,
)
from tidemark.config.options import CheckedOptions, OptionSet, Prefix, check_options, yaml_list
from tidemark.config.patterns import split_table_id
from tidemark.config.values import parse_bool, whole_number
from tidemark.errors import ConfigError

_NOT_USED = "has no effect in Tidemark"

_COMPACTION = f"{_NOT_USED}: compaction is Tidemark's table maintenance, not the sink's"

#: ``IcebergSink``'s values are each derived from several of these, so they are declared here
ICEBERG_OPTIONS = OptionSet(
    what="an iceberg sink",
    handled_elsewhere=frozenset({"type", "name"}),
    options=(
        Option(
            "partition.key",
            doc="partition fields per sink table: db.t1:id,day(ts);db.t2:bucket[16](id)",
        ),
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
) -> IcebergSink | None:
    sink_type = reader.text(node.get("type"), child(path, "type"))
    if node.get("type") is None:
        reader.error(node, path, "sink is missing the required key 'type': add `type: iceberg`")
        return None
    if sink_type is None:
        return None
    if sink_type == "paimon":
        reader.error(
            node.get("type"),
            child(path, "type"),
            "the paimon sink is not supported yet: Tidemark writes Iceberg tables (type: iceberg)",
        )
        return None
    if sink_type != "iceberg":
        reader.error(
            node.get("type"),
            child(path, "type"),
            f"Tidemark writes Iceberg tables only (type: iceberg), got: {sink_type!r}",
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


def _check_catalog(reader: Reader, node: MapNode, path: str, options: CheckedOptions) -> bool:
    catalog = options.prefixed.get("catalog.properties.", {})
    type_key, impl_key = "catalog.properties.type", "catalog.properties.catalog-impl"
    type_node, type_path = node.get(type_key) or node, child(path, type_key)
    catalog_type = reveal(catalog).get("type")
    if catalog_type is None and "catalog-impl" not in catalog:
        reader.error(
            node,
            path,
            f"the sink needs {type_key} (one of {', '.join(TIDEMARK_CATALOG_TYPES)}) or {impl_key}",
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
