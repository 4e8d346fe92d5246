"""Valid pipeline files, including Flink CDC 3.x documentation examples, and what they mean."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tidemark.config import IcebergSink, PipelineConfig, load_pipeline, reveal
from tidemark.config.model import SchemaChangeBehavior, SchemaChangeType, StartupMode
from tidemark.config.patterns import RouteMode
from tidemark.source import SslMode

WriteFile = Callable[..., Path]

# The MySQL source and Iceberg sink of Flink CDC's Iceberg connector page ("AWS Glue Catalog
# Example"), as published.
UPSTREAM_GLUE = r"""
source:
  type: mysql
  name: MySQL Source
  hostname: 127.0.0.1
  port: 3306
  username: admin
  password: pass
  tables: adb.\.*, bdb.user_table_[0-9]+, [app|web].order_\.*
  server-id: 5401-5404

sink:
  type: iceberg
  name: Iceberg Sink
  catalog.properties.type: glue
  catalog.properties.warehouse: s3://my-bucket/warehouse
  catalog.properties.io-impl: org.apache.iceberg.aws.s3.S3FileIO
  catalog.properties.client.region: us-east-1
  catalog.properties.glue.skip-archive: true

pipeline:
  name: MySQL to Iceberg via Glue Pipeline
  parallelism: 2
"""

SINK = """
sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
"""


def source(tables: str = "mydb.\\.*", extra: str = "") -> str:
    return (
        "source:\n  type: mysql\n  hostname: db\n  username: cdc\n  password: pw\n"
        f"  tables: {tables}\n{extra}"
    )


def load(write_file: WriteFile, text: str, env: dict[str, str] | None = None) -> PipelineConfig:
    return load_pipeline(write_file(text), env or {})


def test_upstream_glue_example_is_valid_and_means_what_upstream_says(
    write_file: WriteFile,
) -> None:
    config = load(write_file, UPSTREAM_GLUE)

    assert config.source.hostname == "127.0.0.1"
    assert config.source.password.get_secret_value() == "pass"
    assert str(config.source.server_id) == "5401-5404"
    assert reveal(config.sink.catalog_properties) == {
        "type": "glue",
        "warehouse": "s3://my-bucket/warehouse",
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "client.region": "us-east-1",
        "glue.skip-archive": "true",
    }
    assert config.pipeline.name == "MySQL to Iceberg via Glue Pipeline"
    assert config.has_extension is False
    # a pure ingestion pipeline: every table still gets a mirror, merged every 5 minutes
    assert config.tidemark.window == timedelta(minutes=5)
    assert config.tidemark.mirror_table("adb.orders") == "adb.orders"
    assert config.tidemark.changelog_table("adb.orders") == "adb.orders_changelog"
    assert config.warnings == ()  # pipeline.parallelism: the bootstrap's readers


@pytest.mark.parametrize(
    ("table", "captured"),
    [
        ("adb.anything", True),
        ("ADB.Anything", True),  # whole-name matches, case-insensitive
        ("bdb.user_table_12", True),
        ("bdb.user_table_x", False),
        ("adbx.t", False),
        ("a.order_1", True),  # [app|web] is a character class: one of a p | w e b
        ("app.order_1", False),
    ],
)
def test_upstream_table_list_selects_as_upstream_does(
    write_file: WriteFile, table: str, captured: bool
) -> None:
    config = load(write_file, UPSTREAM_GLUE)
    database, name = table.split(".")
    assert config.source.captures(database, name) is captured


# Flink CDC's route documentation, one example per case: (rules, route-mode, source -> sinks)
ROUTE_EXAMPLES = [
    pytest.param(
        "  - source-table: mydb.web_order\n    sink-table: mydb.ods_web_order\n"
        "    description: sync table to one destination table with given prefix ods_\n",
        "ALL_MATCH",
        {"mydb.web_order": ["mydb.ods_web_order"], "mydb.app_order": ["mydb.app_order"]},
        id="one table to one table",
    ),
    pytest.param(
        "  - source-table: mydb\\.*\n    sink-table: mydb.ods_web_order\n",
        "ALL_MATCH",
        {"mydb.order_1": ["mydb.ods_web_order"], "mydb.order_2": ["mydb.ods_web_order"]},
        id="sharding tables to one table",
    ),
    pytest.param(
        "  - source-table: mydb.orders\n    sink-table: ods_db.ods_orders\n"
        "  - source-table: mydb.shipments\n    sink-table: ods_db.ods_shipments\n",
        "ALL_MATCH",
        {"mydb.orders": ["ods_db.ods_orders"], "mydb.shipments": ["ods_db.ods_shipments"]},
        id="several rules",
    ),
    pytest.param(
        "  - source-table: source_db.\\.*\n    sink-table: sink_db.<>\n    replace-symbol: <>\n",
        "ALL_MATCH",
        {"source_db.XXX": ["sink_db.XXX"]},
        id="replace-symbol",
    ),
    pytest.param(
        "  - source-table: db_(\\.*).(\\.*)_tbl\n    sink-table: sink_db_$1.sink_table_$2\n",
        "ALL_MATCH",
        {"db_foo.bar_tbl": ["sink_db_foo.sink_table_bar"]},
        id="capture groups",
    ),
    pytest.param(
        "  - source-table: mydb.orders_\\.*\n    sink-table: ods.orders\n"
        "  - source-table: mydb\\.*\n    sink-table: ods.everything\n",
        "ALL_MATCH",
        {"mydb.orders_1": ["ods.orders", "ods.everything"]},
        id="all matching rules apply",
    ),
    pytest.param(
        "  - source-table: mydb.orders_\\.*\n    sink-table: ods.orders\n"
        "  - source-table: mydb\\.*\n    sink-table: ods.everything\n",
        "first_match",  # enum values are case-insensitive
        {"mydb.orders_1": ["ods.orders"], "mydb.users": ["ods.everything"]},
        id="first matching rule only",
    ),
    pytest.param(
        "  - source-table: mydb.orders\n    sink-table: ods.orders\n",
        "ALL_MATCH",
        {"MYDB.ORDERS": ["MYDB.ORDERS"], "mydb.orders": ["ods.orders"]},
        id="route matching is case-sensitive",
    ),
]


@pytest.mark.parametrize(("rules", "mode", "expected"), ROUTE_EXAMPLES)
def test_routes_follow_upstream(
    write_file: WriteFile, rules: str, mode: str, expected: dict[str, list[str]]
) -> None:
    text = source() + SINK + "route:\n" + rules + f"pipeline:\n  route-mode: {mode}\n"
    config = load(write_file, text)
    for table_id, sinks in expected.items():
        database, table = table_id.split(".")
        assert config.sink_tables(database, table) == sinks, table_id


def test_transform_examples_from_upstream_documentation(write_file: WriteFile) -> None:
    text = (
        source()
        + SINK
        + r"""
transform:
  - source-table: mydb.web_order
    projection: \*, UPPER(product_name) as product_name
    filter: id > 10 AND order_id > 100
    primary-keys: order_id, product_name
    partition-keys: product_name
    table-options: comment=web order
    description: project fields with wildcard character from source table
  - source-table: mydb.app_order
    table-options: sequence.field=gxsj,jjsj;file-index.bloom-filter.columns=jjdbh
    table-options.delimiter: ";"
  - source-table: \.*.\.*
    projection: \*, __data_event_type__ AS op_type
"""
    )
    config = load(write_file, text)

    web, app, every = config.transforms
    assert web.projection == "*, UPPER(product_name) as product_name"
    assert web.primary_keys == ("order_id", "product_name")
    assert web.partition_keys == ("product_name",)
    assert web.table_options == {"comment": "web order"}
    assert app.table_options == {
        "sequence.field": "gxsj,jjsj",
        "file-index.bloom-filter.columns": "jjdbh",
    }
    # only the first matching transform applies (upstream's "classification mapping")
    assert config.transform_for("mydb", "web_order") is web
    assert config.transform_for("MyDB", "WEB_ORDER") is web  # case-insensitive selectors
    assert config.transform_for("other", "t") is every


def test_every_mysql_option_is_accepted_and_the_unused_ones_say_so(write_file: WriteFile) -> None:
    extra = """\
  port: 3307
  tables.exclude: mydb.tmp_\\.*
  schema-change.enabled: true
  server-id: "5400"
  server-time-zone: Asia/Shanghai
  scan.incremental.snapshot.chunk.size: 4096
  scan.snapshot.fetch.size: 512
  scan.startup.mode: Specific-Offset
  scan.startup.specific-offset.file: mysql-bin.000003
  scan.startup.specific-offset.pos: 4
  scan.startup.specific-offset.skip-events: 0
  scan.startup.specific-offset.skip-rows: 0
  heartbeat.interval: 10s
  connect.timeout: 1 min
  connect.max-retries: 5
  connection.pool.size: 4
  scan.newly-added-table.enabled: true
  scan.parse.online.schema.changes.enabled: true
  treat-tinyint1-as-boolean.enabled: false
  metadata.list: op_ts,table_name
  chunk-meta.group.size: 100
  chunk-key.even-distribution.factor.upper-bound: 100.0
  chunk-key.even-distribution.factor.lower-bound: 0.05
  scan.incremental.snapshot.chunk.key-column: mydb.orders:id
  scan.incremental.close-idle-reader.enabled: true
  scan.incremental.snapshot.unbounded-chunk-first.enabled: true
  scan.incremental.snapshot.backfill.skip: false
  include-comments.enabled: true
  use.legacy.json.format: false
  jdbc.properties.useSSL: "false"
  jdbc.properties.characterEncoding: UTF-8
  debezium.snapshot.locking.mode: none
"""
    config = load(write_file, source(extra=extra) + SINK)
    src = config.source

    assert src.port == 3307
    assert src.server_time_zone == "Asia/Shanghai"
    assert src.startup.mode is StartupMode.SPECIFIC_OFFSET
    assert (src.startup.specific_offset_file, src.startup.specific_offset_pos) == (
        "mysql-bin.000003",
        4,
    )
    assert src.heartbeat_interval == timedelta(seconds=10)
    assert src.connect_timeout == timedelta(minutes=1)
    assert src.treat_tinyint1_as_boolean is False
    assert src.parse_online_schema_changes is True
    assert src.captures("mydb", "orders") and not src.captures("mydb", "tmp_orders")
    assert src.options["jdbc.properties.useSSL"] == "false"
    assert (src.even_distribution_lower, src.even_distribution_upper) == (0.05, 100.0)
    assert (src.chunk_key_column("mydb", "orders"), src.chunk_key_column("mydb", "items")) == (
        "id",
        None,
    )
    unused = {w.key.removeprefix("source.") for w in config.warnings}
    assert unused == {
        "connection.pool.size",
        "metadata.list",
        "chunk-meta.group.size",
        "scan.incremental.close-idle-reader.enabled",
        "scan.incremental.snapshot.unbounded-chunk-first.enabled",
        "scan.incremental.snapshot.backfill.skip",
        "include-comments.enabled",
        "use.legacy.json.format",
        "jdbc.properties.useSSL",  # one warning for the whole prefix
        "debezium.snapshot.locking.mode",
    }


def test_tls_to_the_source_is_read_from_connector_j_properties(
    write_file: WriteFile, tmp_path: Path
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    extra = (
        "  jdbc.properties.sslMode: verify_identity\n"
        f"  jdbc.properties.trustCertificateKeyStoreUrl: file:{ca}\n"
        "  jdbc.properties.trustCertificateKeyStoreType: PEM\n"
        "  jdbc.properties.useSSL: 'true'\n"
    )
    config = load(write_file, source(extra=extra) + SINK)
    connection = config.source.connection

    assert (connection.ssl_mode, connection.ssl_ca) == (SslMode.VERIFY_IDENTITY, str(ca))
    warned = {w.key.removeprefix("source.") for w in config.warnings}
    assert warned == {"jdbc.properties.useSSL"}, "only the other JDBC properties do nothing"
    assert load(write_file, source() + SINK).source.connection.ssl_mode is SslMode.PREFERRED


def test_the_older_names_of_the_even_distribution_bounds_set_them(write_file: WriteFile) -> None:
    extra = (
        "  split-key.even-distribution.factor.upper-bound: 20\n"
        "  split-key.even-distribution.factor.lower-bound: 0.5\n"
    )
    src = load(write_file, source(extra=extra) + SINK).source

    assert (src.even_distribution_lower, src.even_distribution_upper) == (0.5, 20.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("  heartbeat.interval: 30000\n", 30),  # no unit: milliseconds, as in Flink
        ("  heartbeat.interval: 30 s\n", 30),
        ("  heartbeat.interval: 2min\n", 120),
        ("  heartbeat.interval: 1 h\n", 3600),
    ],
)
def test_durations_read_as_flink_reads_them(
    write_file: WriteFile, text: str, expected: int
) -> None:
    config = load(write_file, source(extra=text) + SINK)
    assert config.source.heartbeat_interval == timedelta(seconds=expected or 30)


def test_numbers_are_decimal_and_never_yaml_octal(write_file: WriteFile) -> None:
    config = load(write_file, source(extra="  port: 03306\n  server-id: 0123\n") + SINK)
    assert config.source.port == 3306
    assert str(config.source.server_id) == "123"


@pytest.mark.parametrize(
    ("sink_extra", "behavior", "expected"),
    [
        ("", "lenient", set(SchemaChangeType) - {"drop.table", "truncate.table"}),
        ("", "evolve", set(SchemaChangeType)),
        ("  include.schema.changes: [add.column]\n", "evolve", {"add.column", "create.table"}),
        (
            "  include.schema.changes: [column]\n  exclude.schema.changes: [drop]\n",
            "LENIENT",
            {"add.column", "alter.column.type", "rename.column", "create.table"},
        ),
        (
            "  include.schema.changes: [table]\n  exclude.schema.changes: [create.table]\n",
            "lenient",
            {"drop.table", "truncate.table", "alter.table.comment"},
        ),
    ],
)
def test_schema_change_filters_resolve_as_upstream(
    write_file: WriteFile, sink_extra: str, behavior: str, expected: set[str]
) -> None:
    text = source() + SINK + sink_extra + f"pipeline:\n  schema.change.behavior: {behavior}\n"
    config = load(write_file, text)
    assert config.pipeline.schema_change_behavior is SchemaChangeBehavior(behavior.lower())
    assert config.sink.schema_changes == {SchemaChangeType(t) for t in expected}


def test_partition_keys_with_every_transform(write_file: WriteFile) -> None:
    key = (
        "testdb.table1:truncate[10](id);testdb.table2:hour(create_time);"
        "testdb.table3:day(create_time),region;testdb.table6:bucket[10](create_time)"
    )
    config = load(write_file, source() + SINK + f"  partition.key: {key}\n")
    assert isinstance(config.sink, IcebergSink)
    shown = {p.table: [str(f) for f in p.fields] for p in config.sink.partitioning}
    assert shown == {
        "testdb.table1": ["truncate[10](id)"],
        "testdb.table2": ["hour(create_time)"],
        "testdb.table3": ["day(create_time)", "region"],
        "testdb.table6": ["bucket[10](create_time)"],
    }


@pytest.mark.parametrize(
    "catalog",
    [
        "  catalog.properties.type: jdbc\n"
        "  catalog.properties.uri: jdbc:postgresql://pg:5432/catalog\n"
        "  catalog.properties.jdbc.user: tidemark\n"
        "  catalog.properties.jdbc.password: secret-pw\n"
        "  catalog.properties.warehouse: s3://lake/warehouse\n",
        "  catalog.properties.type: REST\n  catalog.properties.uri: http://catalog:8181\n"
        "  catalog.properties.credential: client:secret\n",
        "  catalog.properties.type: hive\n  catalog.properties.uri: thrift://metastore:9083\n",
        "  catalog.properties.type: glue\n  catalog.properties.warehouse: s3://lake/\n",
    ],
    ids=["jdbc", "rest", "hive", "glue"],
)
def test_catalog_types_tidemark_can_write(write_file: WriteFile, catalog: str) -> None:
    config = load(write_file, source() + "sink:\n  type: iceberg\n" + catalog)
    catalog_type = reveal(config.sink.catalog_properties)["type"]
    assert catalog_type.lower() in {"jdbc", "rest", "hive", "glue"}


def test_empty_pipeline_and_tidemark_blocks_mean_defaults(write_file: WriteFile) -> None:
    config = load(write_file, source() + SINK + "pipeline:\ntidemark:\n")
    assert config.pipeline.route_mode is RouteMode.ALL_MATCH
    assert config.pipeline.schema_change_behavior is SchemaChangeBehavior.LENIENT
    assert config.has_extension is True
    assert config.tidemark.jobs == ()


def test_quoted_and_flow_style_values(write_file: WriteFile) -> None:
    text = (
        'source: {type: mysql, hostname: "db", username: cdc, password: "p: w", '
        "tables: 'mydb.orders'}\n" + SINK
    )
    config = load(write_file, text)
    assert config.source.password.get_secret_value() == "p: w"
