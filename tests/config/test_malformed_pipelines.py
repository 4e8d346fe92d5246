"""Every kind of mistake in a pipeline file, and the exact message a person gets for it.

Each case is a whole file; FILE stands for its path. All problems of a file come at once, sorted by
line, each naming the line, the key path, what is wrong and the fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tidemark.config import PipelineConfigError, load_pipeline

ENV = {"CATALOG_TOKEN": "t0ken-for-tests"}

SINK = """\
sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
"""

SOURCE = """\
source:
  type: mysql
  hostname: db.example
  username: cdc
  password: pw-for-tests
  tables: shop.orders
"""


@dataclass(frozen=True)
class Case:
    kind: str
    text: str
    problems: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)


def case(kind: str, text: str, *problems: str, files: dict[str, str] | None = None) -> Case:
    return Case(kind, text, problems, files or {})


CASES = [
    # --- the file as a whole -------------------------------------------------------------
    case(
        "empty file",
        "",
        "FILE:1: the file is empty: a pipeline needs at least a `source` and a `sink` block",
    ),
    case(
        "only comments",
        "# source: later\n",
        "FILE:1: the file is empty: a pipeline needs at least a `source` and a `sink` block",
    ),
    case(
        "key without a colon",
        "source:\n  type: mysql\n  hostname db.example\n  username: cdc\n" + SINK,
        "FILE:4:3: YAML syntax error: could not find expected ':' (while scanning a simple key "
        "that starts at line 3); a key needs ': ' after it",
    ),
    case(
        "bad indentation",
        "source:\n  type: mysql\n hostname: db.example\n" + SINK,
        "FILE:3:2: YAML syntax error: expected <block end>, but found '<block mapping start>' "
        "(while parsing a block mapping that starts at line 1); check the indentation",
    ),
    case(
        "unclosed flow list",
        SOURCE + "  tables.exclude: [shop.tmp\n" + SINK,
        "FILE:8:5: YAML syntax error: expected ',' or ']', but got ':' (while parsing a flow "
        "sequence that starts at line 7)",
    ),
    case(
        "tab indentation",
        "source:\n\ttype: mysql\n" + SINK,
        "FILE:2:1: YAML syntax error: found character '\\t' that cannot start any token "
        "(while scanning for the next token); indent with spaces, not tabs",
    ),
    case(
        "value with an unquoted colon",
        SOURCE + "  server-time-zone: UTC: +0\n" + SINK,
        "FILE:7:24: YAML syntax error: mapping values are not allowed here; a value containing "
        "': ' must be quoted, or the indentation is off",
    ),
    case(
        "two documents",
        SOURCE + "---\n" + SINK,
        "FILE:8: the file holds more than one YAML document (`---`): put one pipeline per file",
    ),
    case(
        "top level is a list",
        "- source: {}\n- sink: {}\n",
        "FILE:1: the top level must be a mapping with `source`, `sink` and the other blocks, "
        "got a list",
    ),
    case(
        "unknown top-level key",
        SOURCE + SINK + "sinks: {}\n",
        "FILE:11: sinks: unknown key in the top level; did you mean 'sink'?",
    ),
    case(
        "missing sink",
        SOURCE,
        "FILE:1: the top level is missing the required key 'sink'",
    ),
    case(
        "YAML merge key",
        "defaults: &db\n  hostname: db\n"
        + SOURCE.replace("source:\n", "source:\n  <<: *db\n")
        + SINK,
        "FILE:1: defaults: unknown key in the top level; the allowed keys are: source, sink, "
        "route, transform, pipeline, tidemark",
        "FILE:4: source.<<: YAML merge keys (<<) are not supported by Flink CDC: write the keys "
        "out",
    ),
    case(
        "duplicate key",
        SOURCE + "  hostname: db2.example\n" + SINK,
        "FILE:7: source.hostname: duplicate key (first at line 3); Flink CDC would silently keep "
        "the last value: keep one",
    ),
    # --- source --------------------------------------------------------------------------
    case(
        "unknown source option",
        SOURCE + "  hostnmae: db.example\n" + SINK,
        "FILE:7: source.hostnmae: unknown key in a mysql source; did you mean 'hostname'?",
    ),
    case(
        "misspelt prefix option",
        SOURCE + "  jdbc.propertes.useSSL: 'false'\n" + SINK,
        "FILE:7: source.jdbc.propertes.useSSL: unknown key in a mysql source; did you mean "
        "'jdbc.properties.useSSL'?",
    ),
    case(
        "source type not mysql",
        "source:\n  type: postgres\n  hostname: db\n" + SINK,
        "FILE:2: source.type: Tidemark reads MySQL and MariaDB sources only (type: mysql), "
        "got: 'postgres'",
    ),
    case(
        "missing required source option",
        "source:\n  type: mysql\n  hostname: db\n  username: cdc\n  tables: shop.orders\n" + SINK,
        "FILE:1: source: a mysql source is missing the required key 'password'",
    ),
    case(
        "value missing",
        SOURCE + "  server-time-zone:\n" + SINK,
        "FILE:7: source.server-time-zone: has no value: give one, or remove the key",
    ),
    case(
        "list where one value is wanted",
        SOURCE + "  server-time-zone: [UTC, CET]\n" + SINK,
        "FILE:7: source.server-time-zone: must be a single value, got a list",
    ),
    case(
        "not a number",
        SOURCE + "  port: 33o6\n" + SINK,
        "FILE:7: source.port: must be a whole number, got: '33o6'",
    ),
    case(
        "number out of range",
        SOURCE + "  port: 70000\n" + SINK,
        "FILE:7: source.port: must be from 1 to 65535, got: 70000",
    ),
    case(
        "TLS mode not one of Connector/J's",
        SOURCE + "  jdbc.properties.sslMode: verify-ca\n" + SINK,
        "FILE:7: source.jdbc.properties.sslMode: must be one of DISABLED, PREFERRED, REQUIRED, "
        "VERIFY_CA, VERIFY_IDENTITY, got: 'verify-ca'; did you mean 'VERIFY_CA'?",
    ),
    case(
        "CA file not absolute, missing, or a Java store",
        SOURCE
        + "  jdbc.properties.trustCertificateKeyStoreUrl: certs/ca.pem\n"
        + "  jdbc.properties.trustCertificateKeyStoreType: JKS\n"
        + SINK,
        "FILE:7: source.jdbc.properties.trustCertificateKeyStoreUrl: must be an absolute path "
        "(or file: URL) of a PEM file, got: 'certs/ca.pem'",
        "FILE:8: source.jdbc.properties.trustCertificateKeyStoreType: Tidemark reads a PEM file "
        "of CA certificates, not a JKS store: export the CA with keytool -exportcert -rfc "
        "-alias <alias> -keystore <store> -file ca.pem, point trustCertificateKeyStoreUrl at "
        "ca.pem and set this to PEM",
    ),
    case(
        "CA file that cannot be read",
        SOURCE + "  jdbc.properties.trustCertificateKeyStoreUrl: file:/nonexistent/ca.pem\n" + SINK,
        "FILE:7: source.jdbc.properties.trustCertificateKeyStoreUrl: must be a file Tidemark "
        "can read (No such file or directory), got: 'file:/nonexistent/ca.pem'",
    ),
    case(
        "number at or below upstream's minimum",
        SOURCE + "  scan.incremental.snapshot.chunk.size: 1\n" + SINK,
        "FILE:7: source.scan.incremental.snapshot.chunk.size: must be greater than 1, got: '1'",
    ),
    case(
        "chunk key column without a table",
        SOURCE + "  scan.incremental.snapshot.chunk.key-column: created_at\n" + SINK,
        "FILE:7: source.scan.incremental.snapshot.chunk.key-column: cannot parse 'created_at': "
        "write 'db.table:column' entries separated by ';', got: 'created_at'",
    ),
    case(
        "chunk key column for one snapshot per table",
        SOURCE
        + "  scan.incremental.snapshot.chunk.key-column: shop.orders:created_at\n"
        + "  scan.incremental.snapshot.enabled: false\n"
        + SINK,
        "FILE:7: source.scan.incremental.snapshot.chunk.key-column: cuts the incremental "
        "snapshot's chunks, but scan.incremental.snapshot.enabled is false: remove one of the two",
    ),
    case(
        "YAML 1.1 boolean",
        SOURCE + "  scan.parse.online.schema.changes.enabled: yes\n" + SINK,
        "FILE:7: source.scan.parse.online.schema.changes.enabled: must be true or false, "
        "got: 'yes'; Flink CDC reads only true and false, not YAML 1.1's yes/no/on/off",
    ),
    case(
        "value outside the allowed set",
        SOURCE + "  scan.startup.mode: latest\n" + SINK,
        "FILE:7: source.scan.startup.mode: must be one of initial, snapshot, latest-offset, "
        "earliest-offset, specific-offset, timestamp, got: 'latest'; did you mean 'latest-offset'?",
    ),
    case(
        "specific offset without a position",
        SOURCE
        + "  scan.startup.mode: specific-offset\n  scan.startup.specific-offset.file: b.01\n"
        + SINK,
        "FILE:7: source.scan.startup.mode: specific-offset needs "
        "scan.startup.specific-offset.gtid-set, or both scan.startup.specific-offset.file and "
        "scan.startup.specific-offset.pos",
    ),
    case(
        "specific offset inside a transaction",
        SOURCE
        + "  scan.startup.mode: specific-offset\n  scan.startup.specific-offset.file: b.01\n"
        + "  scan.startup.specific-offset.pos: 4\n  scan.startup.specific-offset.skip-events: 2\n"
        + SINK,
        "FILE:10: source.scan.startup.specific-offset.skip-events: Tidemark starts only at "
        "transaction boundaries, so it cannot skip part of a transaction: give the position of "
        "the transaction's start (its GTID event) with skip-events and skip-rows 0, or a GTID set",
    ),
    case(
        "timestamp start without the timestamp",
        SOURCE + "  scan.startup.mode: timestamp\n" + SINK,
        "FILE:7: source.scan.startup.mode: timestamp needs scan.startup.timestamp-millis",
    ),
    case(
        "both newly-added-table options",
        SOURCE
        + "  scan.newly-added-table.enabled: true\n"
        + "  scan.binlog.newly-added-table.enabled: true\n"
        + SINK,
        "FILE:8: source.scan.binlog.newly-added-table.enabled: cannot be true together with "
        "scan.newly-added-table.enabled (rows of new tables would be read twice after a "
        "restore): turn one off",
    ),
    case(
        "bad server-id",
        SOURCE + "  server-id: 5400-5410-5420\n" + SINK,
        "FILE:7: source.server-id: must be a replica id such as 5400, or a range such as "
        "5400-5408, got: '5400-5410-5420'",
    ),
    case(
        "duration with an unknown unit",
        SOURCE + "  heartbeat.interval: 30 secondz\n" + SINK,
        "FILE:7: source.heartbeat.interval: has an unknown time unit 'secondz': use d, h, min, "
        "s or ms, got: '30 secondz'",
    ),
    case(
        "unknown time zone",
        SOURCE + "  server-time-zone: Europe/Atlantis\n" + SINK,
        "FILE:7: source.server-time-zone: must be a time zone id such as 'UTC', "
        "'Asia/Shanghai' or '+08:00', got: 'Europe/Atlantis'",
    ),
    case(
        "unknown metadata",
        SOURCE + "  metadata.list: op_ts,op_type\n" + SINK,
        "FILE:7: source.metadata.list: unknown metadata op_type: the MySQL source offers "
        "op_ts, table_name, database_name, row_kind",
    ),
    case(
        "table pattern without a database",
        SOURCE.replace("shop.orders", "orders") + SINK,
        "FILE:6: source.tables: pattern 'orders' has no database part, so it matches no MySQL "
        "table: write '<database>.orders', or '\\.*.orders' for every database",
    ),
    case(
        "table pattern with three parts",
        SOURCE.replace("shop.orders", "shop.orders.v2") + SINK,
        "FILE:6: source.tables: pattern 'shop.orders.v2' has 3 parts; MySQL tables are "
        "database.table (an unescaped '.' separates them; write '\\.' for the regex 'any "
        "character')",
    ),
    case(
        "bad regular expression",
        SOURCE.replace("shop.orders", "shop.orders_[0-9") + SINK,
        "FILE:6: source.tables: pattern 'shop.orders_[0-9' is not a valid regular expression: "
        "unterminated character set at position 7 of its table part 'orders_[0-9'",
    ),
    case(
        "bad regular expression with a backslash",
        SOURCE.replace("shop.orders", "shop.orders_\\d+(") + SINK,
        "FILE:6: source.tables: pattern 'shop.orders_\\d+(' is not a valid regular expression: "
        "missing ), unterminated subpattern at position 10 of its table part 'orders_\\d+('",
    ),
    case(
        "bad regular expression in excluded tables",
        SOURCE + "  tables.exclude: shop_[.tmp\\.*\n" + SINK,
        "FILE:7: source.tables.exclude: pattern 'shop_[.tmp\\.*' is not a valid regular "
        "expression: unterminated character set at position 5 of its database part 'shop_['",
    ),
    # --- sink ----------------------------------------------------------------------------
    case(
        "other sink",
        SOURCE + "sink:\n  type: doris\n",
        "FILE:8: sink.type: Tidemark writes Iceberg or Paimon tables (type: iceberg, type: "
        "paimon), got: 'doris'",
    ),
    case(
        "sink without a type",
        SOURCE + "sink:\n  catalog.properties.warehouse: /tmp/warehouse\n",
        "FILE:7: sink: sink is missing the required key 'type': add `type: iceberg` or "
        "`type: paimon`",
    ),
    case(
        "paimon sink without a warehouse",
        SOURCE + "sink:\n  type: paimon\n  catalog.properties.metastore: filesystem\n",
        "FILE:7: sink: the sink needs catalog.properties.warehouse: the root path Paimon keeps "
        "the tables under (/data/warehouse, s3://bucket/warehouse), or a rest metastore's "
        "warehouse name",
    ),
    case(
        "paimon sink on a hive metastore",
        SOURCE
        + "sink:\n  type: paimon\n  catalog.properties.metastore: hive\n"
        + "  catalog.properties.uri: thrift://metastore:9083\n"
        + "  catalog.properties.warehouse: hdfs:///warehouse\n",
        "FILE:9: sink.catalog.properties.metastore: 'hive' works in Flink CDC, but Tidemark "
        "writes Paimon tables with pypaimon, which has no Hive metastore client: use one of "
        "filesystem, rest, jdbc",
    ),
    case(
        "paimon metastore Paimon does not know",
        SOURCE
        + "sink:\n  type: paimon\n  catalog.properties.metastore: FileSystem\n"
        + "  catalog.properties.warehouse: /tmp/warehouse\n",
        "FILE:9: sink.catalog.properties.metastore: is not a Paimon metastore: use one of "
        "filesystem, rest, jdbc, got: 'FileSystem'; did you mean 'filesystem'? (Paimon's names "
        "are lower case)",
    ),
    case(
        "paimon table option that breaks the table contract",
        SOURCE
        + "sink:\n  type: paimon\n  catalog.properties.warehouse: /tmp/warehouse\n"
        + "  catalog.properties.metastore: filesystem\n  table.properties.bucket: -2\n",
        "FILE:11: sink.table.properties.bucket: cannot be -2: a postpone-bucket table hides new "
        "rows from readers until a compaction gives them buckets, so no row would be readable "
        "at the watermark of the snapshot that wrote it; give a number of buckets (about one "
        "per GB of the table), or -1 for dynamic buckets",
    ),
    case(
        "paimon partition key with a transform",
        SOURCE
        + "sink:\n  type: paimon\n  catalog.properties.warehouse: /tmp/warehouse\n"
        + "  catalog.properties.metastore: filesystem\n"
        + "  partition.key: shop.orders:day(created_at)\n",
        "FILE:11: sink.partition.key: 'day(created_at)' in 'shop.orders:day(created_at)' is not "
        "a column: Paimon partitions by columns as they are, without transforms such as "
        "day(ts); compute one with a transform projection and partition by it",
    ),
    case(
        "nested map where Flink CDC wants dotted keys",
        SOURCE
        + "sink:\n  type: iceberg\n  catalog:\n    properties:\n      type: rest\n"
        + "      uri: http://catalog:8181\n",
        "FILE:7: sink: the sink needs catalog.properties.type (one of jdbc, rest, hive, glue) or "
        "catalog.properties.catalog-impl",
        "FILE:9: sink.catalog: nested mappings are not Flink CDC options: write dotted keys at "
        "this level, as `catalog.properties.type: ...` (and 1 more)",
    ),
    case(
        "catalog type Iceberg does not know",
        SOURCE + "sink:\n  type: iceberg\n  catalog.properties.type: mongo\n",
        "FILE:9: sink.catalog.properties.type: is not an Iceberg catalog type: use one of jdbc, "
        "rest, hive, glue, got: 'mongo'",
    ),
    case(
        "catalog type PyIceberg cannot write",
        SOURCE + "sink:\n  type: iceberg\n  catalog.properties.type: nessie\n",
        "FILE:9: sink.catalog.properties.type: 'nessie' works in Flink CDC, but Tidemark's ingest "
        "writes with PyIceberg, which cannot use it: use one of jdbc, rest, hive, glue",
    ),
    case(
        "hadoop catalog",
        SOURCE
        + "sink:\n  type: iceberg\n  catalog.properties.type: hadoop\n"
        + "  catalog.properties.warehouse: /tmp/warehouse\n",
        "FILE:9: sink: catalog.properties.type 'hadoop' cannot be shared with PyIceberg, which "
        "ingest uses: use a jdbc catalog (PostgreSQL) or a rest catalog",
    ),
    case(
        "rest catalog without its address",
        SOURCE + "sink:\n  type: iceberg\n  catalog.properties.type: rest\n",
        "FILE:9: sink.catalog.properties.type: a rest catalog needs catalog.properties.uri (the "
        "catalog server's address)",
    ),
    case(
        "jdbc catalog without a JDBC URL",
        SOURCE
        + "sink:\n  type: iceberg\n  catalog.properties.type: jdbc\n"
        + "  catalog.properties.uri: postgresql://catalog/db\n",
        "FILE:10: sink: catalog.properties.uri of a jdbc catalog must be a JDBC URL such as "
        "jdbc:postgresql://host:5432/catalog, got: postgresql://catalog/db",
    ),
    case(
        "bad partition transform",
        SOURCE + SINK + "  partition.key: shop.orders:days(created_at)\n",
        "FILE:11: sink.partition.key: unknown partition transform 'days(created_at)': use "
        "year(c), month(c), day(c), hour(c), bucket[N](c) or truncate[N](c)",
    ),
    case(
        "partition key without a table",
        SOURCE + SINK + "  partition.key: day(created_at)\n",
        "FILE:11: sink.partition.key: cannot parse 'day(created_at)': write "
        "'db.table:column,day(ts)' entries separated by ';' (transforms: year, month, day, hour, "
        "bucket[N], truncate[N])",
    ),
    case(
        "schema changes as one value",
        SOURCE + SINK + "  include.schema.changes: add.column\n",
        "FILE:11: sink.include.schema.changes: must be a YAML list such as [add.column, "
        "drop.column], got a single value; Flink CDC ignores a single value here",
    ),
    case(
        "unknown schema change type",
        SOURCE + SINK + "  exclude.schema.changes: [drop.columns]\n",
        "FILE:11: sink.exclude.schema.changes: unknown schema change type 'drop.columns': use "
        "add, alter, create, drop, rename, table, column, all, add.column, alter.column.type, "
        "create.table, drop.column, drop.table, rename.column, truncate.table, "
        "alter.table.comment",
    ),
    # --- route and transform -------------------------------------------------------------
    case(
        "route not a list",
        SOURCE + SINK + "route:\n  source-table: shop.orders_\\.*\n  sink-table: shop.orders\n",
        "FILE:11: route: must be a list (each entry starting with '- '), got a mapping; write "
        "`- source-table: ...` entries",
    ),
    case(
        "unknown route key",
        SOURCE
        + SINK
        + "route:\n  - source-table: shop.orders_\\.*\n    sink-table: shop.orders\n"
        + "    sink_table: shop.orders\n",
        "FILE:14: route[0].sink_table: unknown key in a route; did you mean 'sink-table'?",
    ),
    case(
        "route without a sink table",
        SOURCE + SINK + "route:\n  - source-table: shop.orders_\\.*\n",
        "FILE:12: route[0]: a route is missing the required key 'sink-table'",
    ),
    case(
        "route with a bad regular expression",
        SOURCE + SINK + "route:\n  - source-table: shop.(orders\n    sink-table: shop.orders\n",
        "FILE:12: route[0].source-table: 'shop.(orders' is not a valid regular expression: "
        "missing ), unterminated subpattern at position 6 of 'shop\\.(orders', the regex it "
        "becomes; in a route, '.' separates database and table: write '\\.' for the regex "
        "'any character'",
    ),
    case(
        "route group that does not exist",
        SOURCE + SINK + "route:\n  - source-table: shop.orders_(\\.*)\n    sink-table: shop.o_$2\n",
        "FILE:13: route[0].sink-table: refers to group $2 but source-table has 1 capturing group",
    ),
    case(
        "route sink without a database",
        SOURCE + SINK + "route:\n  - source-table: shop.orders\n    sink-table: orders\n",
        "FILE:13: route[0].sink-table: must be database.table (an Iceberg namespace and table "
        "name), got: 'orders'",
    ),
    case(
        "unknown transform key",
        SOURCE + SINK + "transform:\n  - source-table: shop.orders\n    projections: id\n",
        "FILE:13: transform[0].projections: unknown key in a transform; did you mean 'projection'?",
    ),
    case(
        "transform with a bad regular expression",
        SOURCE + SINK + "transform:\n  - source-table: shop.orders_\\d+)\n    projection: \\*\n",
        "FILE:12: transform[0].source-table: pattern 'shop.orders_\\d+)' is not a valid regular "
        "expression: unbalanced parenthesis at position 10 of its table part 'orders_\\d+)'",
    ),
    case(
        "transform primary keys that are not columns",
        SOURCE + SINK + "transform:\n  - source-table: shop.orders\n    primary-keys: id;region\n",
        "FILE:13: transform[0].primary-keys: must be column names separated by commas; "
        "'id;region' is not a column name, got: 'id;region'",
    ),
    case(
        "transform table options without '='",
        SOURCE + SINK + "transform:\n  - source-table: shop.orders\n    table-options: comment\n",
        "FILE:13: transform[0].table-options: cannot parse 'comment': write key1=value1,"
        "key2=value2, or set table-options.delimiter",
    ),
    # --- pipeline ------------------------------------------------------------------------
    case(
        "typo under pipeline, which upstream ignores",
        SOURCE + SINK + "pipeline:\n  schema.change.behaviour: evolve\n",
        "FILE:12: pipeline.schema.change.behaviour: unknown key in the pipeline block; did you "
        "mean 'schema.change.behavior'?",
    ),
    case(
        "unknown schema change behavior",
        SOURCE + SINK + "pipeline:\n  schema.change.behavior: try-evolve\n",
        "FILE:12: pipeline.schema.change.behavior: must be one of ignore, lenient, try_evolve, "
        "evolve, exception, got: 'try-evolve'; did you mean 'try_evolve'?",
    ),
    case(
        "batch mode without a snapshot start",
        SOURCE + SINK + "pipeline:\n  execution.runtime-mode: batch\n",
        "FILE:12: pipeline.execution.runtime-mode: BATCH needs source.scan.startup.mode: "
        "snapshot (Flink CDC refuses other modes), got: initial",
    ),
    case(
        "Flink UDFs",
        SOURCE
        + SINK
        + "pipeline:\n  user-defined-function:\n    - name: addone\n"
        + "      classpath: org.example.AddOne\n",
        "FILE:12: pipeline.user-defined-function: is not supported: Tidemark evaluates "
        "transforms with Spark SQL and cannot load Flink UDF classes; remove it and use Spark "
        "SQL functions in projection and filter",
    ),
    # --- variables -----------------------------------------------------------------------
    case(
        "unset variable without a default",
        SOURCE.replace("db.example", "${MYSQL_HOST}") + SINK,
        "FILE:3: source.hostname: environment variable MYSQL_HOST is not set and has no "
        "default: set it, or write ${MYSQL_HOST:-default}",
    ),
    case(
        "variable reference with a bad form",
        SOURCE.replace("db.example", "${MYSQL_HOST:db.example}") + SINK,
        "FILE:3: source.hostname: '${MYSQL_HOST:db.example}' is not a variable reference: "
        "write ${NAME} or ${NAME:-default} (NAME: letters, digits and _), or $${ for a "
        "literal ${",
    ),
    # --- the tidemark block --------------------------------------------------------------
    case(
        "unknown key in the tidemark block",
        SOURCE + SINK + "tidemark:\n  windows: 5 min\n",
        "FILE:12: tidemark.windows: unknown key in the tidemark block; did you mean 'window'?",
    ),
    case(
        "window that does not divide a day",
        SOURCE + SINK + "tidemark:\n  window: 7 min\n",
        "FILE:12: tidemark.window: must divide a day evenly, so windows line up with midnight, "
        "got: '7 min'; use for example 1 min, 5 min, 10 min, 15 min, 30 min, 1 h, 2 h, 6 h or 1 d",
    ),
    case(
        "window without a unit",
        SOURCE + SINK + "tidemark:\n  window: 5\n",
        "FILE:12: tidemark.window: must be a duration with a unit: a number and a unit such as "
        "'30 s', '5 min', '1 h' or '1 d', got: '5'",
    ),
    case(
        "table options for a name that is not database.table",
        SOURCE + SINK + "tidemark:\n  tables:\n    orders:\n      unique-key: order_no\n",
        "FILE:13: tidemark.tables.orders: must be a sink table's database.table name, as the "
        "route gives it",
    ),
    case(
        "mirror named like another table's changelog",
        SOURCE
        + SINK
        + "tidemark:\n  tables:\n    shop.orders: {}\n"
        + "    shop.archive:\n      mirror: {table: shop.orders_changelog}\n",
        'FILE:14: tidemark.tables."shop.archive": the mirror of shop.archive is named '
        "shop.orders_changelog, like the changelog of shop.orders: give one another name",
    ),
    case(
        "job SQL file that does not exist",
        SOURCE + SINK + "tidemark:\n  jobs:\n    hourly:\n      inputs: [shop.orders]\n"
        "      sql: sql/hourly.sql\n",
        "FILE:15: tidemark.jobs.hourly.sql: SQL file 'sql/hourly.sql' does not exist (relative to "
        "the pipeline file's folder: DIR/sql/hourly.sql)",
    ),
    case(
        "job without inputs",
        SOURCE + SINK + "tidemark:\n  jobs:\n    hourly:\n      sql: report.sql\n",
        "FILE:13: tidemark.jobs.hourly: a job is missing the required key 'inputs'",
        files={"report.sql": "SELECT 1"},
    ),
    case(
        "job reading a table without a mirror",
        SOURCE
        + SINK
        + "tidemark:\n  tables:\n    shop.orders:\n      mirror: false\n"
        + "  jobs:\n    hourly:\n      inputs: [shop.orders]\n      sql: report.sql\n",
        "FILE:16: tidemark.jobs.hourly.inputs: shop.orders has its mirror turned off, and jobs run "
        'after the mirror merge: turn it on under tidemark.tables."shop.orders".mirror',
        files={"report.sql": "SELECT 1"},
    ),
    case(
        "job window not a multiple of its input's mirror window",
        SOURCE
        + SINK
        + "tidemark:\n  tables:\n    shop.orders:\n      mirror: {window: 15 min}\n"
        + "  jobs:\n    ten:\n      inputs: [shop.orders]\n      window: 10 min\n"
        + "      sql: report.sql\n",
        "FILE:16: tidemark.jobs.ten.window: (10 min) must be a multiple of the mirror window of "
        "its input shop.orders (15 min)",
        files={"report.sql": "SELECT 1"},
    ),
    case(
        "job rerun-late-windows not a boolean",
        SOURCE
        + SINK
        + "tidemark:\n  jobs:\n    hourly:\n      inputs: [shop.orders]\n"
        + "      sql: report.sql\n      rerun-late-windows: always\n",
        "FILE:16: tidemark.jobs.hourly.rerun-late-windows: must be true or false, got: 'always'",
        files={"report.sql": "SELECT 1"},
    ),
    case(
        "job variable named like a built-in",
        SOURCE
        + SINK
        + "tidemark:\n  jobs:\n    hourly:\n      inputs: [shop.orders]\n"
        + "      sql: report.sql\n      variables: {window_size: 5}\n",
        "FILE:16: tidemark.jobs.hourly.variables.window_size: is set by Tidemark for every window "
        "(window_start, window_end, window_start_ms, window_end_ms, dt, hour, job_name): "
        "choose another name",
        files={"report.sql": "SELECT 1"},
    ),
    case(
        "job Spark setting that is not Spark's",
        SOURCE
        + SINK
        + "tidemark:\n  jobs:\n    hourly:\n      inputs: [shop.orders]\n"
        + "      sql: report.sql\n      spark:\n        executor.memory: 2g\n",
        "FILE:17: tidemark.jobs.hourly.spark.executor.memory: is not a Spark setting: Spark "
        "settings start with 'spark.'",
        files={"report.sql": "SELECT 1"},
    ),
    case(
        "many mistakes at once, in line order",
        "source:\n  type: mysql\n  hostname: db\n  port: x\n  username: cdc\n"
        + "  password: pw-for-tests\n  tables: shop.orders\n"
        + "sink:\n  type: iceberg\n  catalog.properties.type: rest\n"
        + "  catalog.properties.uri: http://catalog:8181\n"
        + "pipeline:\n  parallelsm: 2\n",
        "FILE:4: source.port: must be a whole number, got: 'x'",
        "FILE:13: pipeline.parallelsm: unknown key in the pipeline block; did you mean "
        "'parallelism'?",
    ),
]


def test_there_are_at_least_25_kinds_of_mistake() -> None:
    assert len({c.kind for c in CASES}) == len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.kind)
def test_malformed_file_gets_exact_messages(case: Case, write_file: Callable[..., Path]) -> None:
    path = write_file(case.text)
    for name, content in case.files.items():
        write_file(content, name)
    with pytest.raises(PipelineConfigError) as caught:
        load_pipeline(path, ENV)
    shown = [
        str(problem).replace(str(path), "FILE").replace(str(path.parent), "DIR")
        for problem in caught.value.problems
    ]
    assert shown == list(case.problems)
    assert str(caught.value) == "\n".join(str(p) for p in caught.value.problems)
