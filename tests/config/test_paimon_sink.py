"""``sink: type: paimon`` as Flink CDC 3.x users write it: read into ``PaimonSink``, each mistake
refused where it is written with its fix, planned, exported back; and the parts of Tidemark that
work on Iceberg tables only refuse it by name where they would open an Iceberg catalog."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from tests.config.examples import PAIMON_SAMPLE
from tidemark.app.cli import main
from tidemark.app.pipeline import Pipeline
from tidemark.config import PaimonSink, PipelineConfig, PipelineConfigError, load_pipeline
from tidemark.config.flink_export import export_flink_cdc
from tidemark.config.inventory import Column, PhysicalTable, UniqueIndex
from tidemark.config.model import SchemaChangeType, TablePartitionKeys
from tidemark.config.plan import Plan, build_plan

WriteFile = Callable[..., Path]

SOURCE = """\
source:
  type: mysql
  hostname: db
  username: cdc
  password: pw
  tables: shop.\\.*
"""
#: lines 7 to 10; what a case adds starts at line 11
SINK = """\
sink:
  type: paimon
  catalog.properties.metastore: filesystem
  catalog.properties.warehouse: /tmp/warehouse
"""

# Flink CDC's Paimon connector page ("How to create Pipeline"), as published.
UPSTREAM = r"""
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
  type: paimon
  name: Paimon Sink
  catalog.properties.metastore: filesystem
  catalog.properties.warehouse: /path/warehouse

pipeline:
  name: MySQL to Paimon Pipeline
  parallelism: 2
"""


def load(write_file: WriteFile, text: str) -> PipelineConfig:
    return load_pipeline(write_file(text), {})


def paimon(config: PipelineConfig) -> PaimonSink:
    assert isinstance(config.sink, PaimonSink)
    return config.sink


def problems(write_file: WriteFile, text: str) -> list[str]:
    path = write_file(text)
    with pytest.raises(PipelineConfigError) as caught:
        load_pipeline(path, {})
    return [str(p).replace(str(path), "FILE") for p in caught.value.problems]


# --- valid files -------------------------------------------------------------------------


def test_upstream_example_is_valid_and_means_what_upstream_says(write_file: WriteFile) -> None:
    config = load(write_file, UPSTREAM)
    sink = paimon(config)
    assert sink.type == "paimon"
    assert sink.name == "Paimon Sink"
    assert sink.metastore == "filesystem"
    assert sink.catalog_properties == {"metastore": "filesystem", "warehouse": "/path/warehouse"}
    assert sink.table_properties == {}
    assert sink.commit_user_prefix == "admin"  # Flink CDC's default
    assert sink.partition_keys == ()
    assert sink.partition_keys_for("adb.orders") == ()
    # lenient, the default behaviour, leaves out drop.table and truncate.table, as upstream
    assert sink.schema_changes == set(SchemaChangeType) - {
        SchemaChangeType.DROP_TABLE,
        SchemaChangeType.TRUNCATE_TABLE,
    }
    assert config.warnings == ()


def test_every_option_of_the_paimon_sink_is_read_into_the_model(write_file: WriteFile) -> None:
    text = SOURCE + (
        "sink:\n"
        "  type: paimon\n"
        "  name: Lake\n"
        "  catalog.properties.metastore: jdbc\n"
        "  catalog.properties.warehouse: s3://lake/warehouse\n"
        "  catalog.properties.uri: jdbc:postgresql://pg:5432/paimon\n"
        "  catalog.properties.jdbc.user: paimon\n"
        "  catalog.properties.jdbc.password: s3cret\n"
        "  catalog.properties.s3.endpoint: http://minio:9000\n"
        "  table.properties.bucket: -1\n"
        "  table.properties.changelog-producer: input\n"
        "  table.properties.file.format: orc\n"
        "  commit.user-prefix: shop\n"
        "  partition.key: shop.orders:region,id;shop.lines:order_id\n"
        "  include.schema.changes: [column]\n"
        "  exclude.schema.changes: [drop.column]\n"
    )
    sink = paimon(load(write_file, text))
    assert sink.metastore == "jdbc"
    assert sink.catalog_properties == {
        "metastore": "jdbc",
        "warehouse": "s3://lake/warehouse",
        "uri": "jdbc:postgresql://pg:5432/paimon",
        "jdbc.user": "paimon",
        "jdbc.password": SecretStr("s3cret"),
        "s3.endpoint": "http://minio:9000",
    }
    assert isinstance(sink.catalog_properties["jdbc.password"], SecretStr)
    assert sink.table_properties == {
        "bucket": "-1",
        "changelog-producer": "input",
        "file.format": "orc",
    }
    assert sink.commit_user_prefix == "shop"
    assert sink.partition_keys == (
        TablePartitionKeys(table="shop.orders", columns=("region", "id")),
        TablePartitionKeys(table="shop.lines", columns=("order_id",)),
    )
    assert sink.partition_keys_for("shop.orders") == ("region", "id")
    assert sink.partition_keys_for("shop.customers") == ()
    assert sink.partitioned_tables == ("shop.orders", "shop.lines")
    # include lists add create.table, as upstream's toSinkDef does
    assert sink.schema_changes == {
        SchemaChangeType.ADD_COLUMN,
        SchemaChangeType.ALTER_COLUMN_TYPE,
        SchemaChangeType.RENAME_COLUMN,
        SchemaChangeType.CREATE_TABLE,
    }
    assert sink.options["commit.user-prefix"] == "shop"
    assert "s3cret" not in repr(sink)


def test_the_sample_pipeline_is_valid() -> None:
    config = load_pipeline(PAIMON_SAMPLE, {})
    sink = paimon(config)
    assert (sink.metastore, sink.commit_user_prefix) == ("filesystem", "shop")
    assert sink.partition_keys_for("shop.order_lines") == ("order_id",)
    assert config.warnings == ()


def test_without_a_metastore_paimon_s_default_is_used_with_a_warning(
    write_file: WriteFile,
) -> None:
    text = SOURCE + "sink:\n  type: paimon\n  catalog.properties.warehouse: /tmp/warehouse\n"
    config = load(write_file, text)
    assert paimon(config).metastore == "filesystem"
    assert "metastore" not in paimon(config).catalog_properties
    assert [str(w).split(": ", 1)[1] for w in config.warnings] == [
        "sink: catalog.properties.metastore is missing: Tidemark uses filesystem (Paimon's "
        "default), but Flink CDC 3.2 and later require the key: add "
        "`catalog.properties.metastore: filesystem`"
    ]


def test_commit_user_is_the_older_name_of_commit_user_prefix(write_file: WriteFile) -> None:
    older = load(write_file, SOURCE + SINK + "  commit.user: shop\n")
    assert paimon(older).commit_user_prefix == "shop"
    assert older.warnings == ()

    both = load(write_file, SOURCE + SINK + "  commit.user: old\n  commit.user-prefix: new\n")
    assert paimon(both).commit_user_prefix == "new"
    assert [str(w).split(": ", 1)[1] for w in both.warnings] == [
        "sink.commit.user: is ignored: commit.user-prefix, its newer name, is given too; remove one"
    ]


@pytest.mark.parametrize(
    "option",
    [
        "bucket: 8",
        "bucket: -1",  # dynamic buckets: pypaimon 2.1 writes them
        "bucket: '3'",
        "bucket-key: id",
        "changelog-producer: none",
        "changelog-producer: input",  # pypaimon writes it with each commit
        "merge-engine: Deduplicate",
        "file.format: avro",
        "write-only: true",
        "deletion-vectors.enabled: false",
        "ignore-delete: false",
        "sequence.field.sort-order: ascending",
        "snapshot.num-retained.max: 50",
    ],
)
def test_table_options_the_writer_honours_are_accepted(write_file: WriteFile, option: str) -> None:
    config = load(write_file, SOURCE + SINK + f"  table.properties.{option}\n")
    key, value = option.split(": ")
    assert paimon(config).table_properties == {key: value.strip("'")}


# --- refusals, each where it is written ------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            "  table.properties.bucket: -2\n",
            "FILE:11: sink.table.properties.bucket: cannot be -2: a postpone-bucket table hides "
            "new rows from readers until a compaction gives them buckets, so no row would be "
            "readable at the watermark of the snapshot that wrote it; give a number of buckets "
            "(about one per GB of the table), or -1 for dynamic buckets",
        ),
        (
            "  table.properties.bucket: 0\n",
            "FILE:11: sink.table.properties.bucket: must be a number of buckets above 0, or -1 "
            "for dynamic buckets, got: 0",
        ),
        (
            "  table.properties.bucket: four\n",
            "FILE:11: sink.table.properties.bucket: must be a whole number of buckets (or -1), "
            "got: 'four'",
        ),
        (
            "  table.properties.bucket: -1\n  table.properties.bucket-key: id\n",
            "FILE:12: sink.table.properties.bucket-key: cannot be set with bucket: -1 (Paimon "
            "refuses it): remove it, or give a number of buckets",
        ),
        (
            "  table.properties.deletion-vectors.enabled: 'TRUE'\n",
            "FILE:11: sink.table.properties.deletion-vectors.enabled: cannot be used: pypaimon "
            "2.1 writes only level-0 files, which a deletion-vector table hides from readers "
            "until a compaction, so no row would be readable at the watermark of the snapshot "
            "that wrote it; remove it",
        ),
        (
            "  table.properties.merge-engine: partial-update\n",
            "FILE:11: sink.table.properties.merge-engine: must be deduplicate (the default): "
            "each sink table mirrors its source, so a key's newest change replaces its row; "
            "pypaimon 2.1 cannot write the deletes of a partial-update or aggregation table, "
            "and first-row would keep a key's first change; remove it",
        ),
        (
            "  table.properties.changelog-producer: lookup\n",
            "FILE:11: sink.table.properties.changelog-producer: cannot be lookup: Paimon makes "
            "that changelog while compacting, and pypaimon, Tidemark's writer, never compacts "
            "(the tables are write-only): use none, or input (pypaimon writes the changelog "
            "with each commit)",
        ),
        (
            "  table.properties.changelog-producer: always\n",
            "FILE:11: sink.table.properties.changelog-producer: must be one of none, input, "
            "lookup, full-compaction, got: 'always'",
        ),
        (
            "  table.properties.deduplicate.ignore-delete: true\n",
            "FILE:11: sink.table.properties.deduplicate.ignore-delete: would drop the source's "
            "deletes, keeping deleted rows as if they were live: to keep them marked as "
            "deleted, set tidemark.tables.<table>.mirror.deletes: keep instead; remove it",
        ),
        (
            "  table.properties.sequence.field.sort-order: descending\n",
            "FILE:11: sink.table.properties.sequence.field.sort-order: must be ascending: "
            "Tidemark's sequence.field grows with the binlog, and any other order would keep a "
            "key's oldest change instead of its newest; remove it",
        ),
        (
            "  table.properties.write-only: false\n",
            "FILE:11: sink.table.properties.write-only: must be true: Tidemark writes the "
            "tables write-only and compacts them in its table maintenance, never while "
            "writing; remove it",
        ),
        (
            "  table.properties.row-tracking.enabled: true\n",
            "FILE:11: sink.table.properties.row-tracking.enabled: cannot be used: Paimon allows "
            "it on tables without a primary key only, and each sink table is a primary-key "
            "table; remove it",
        ),
        (
            "  table.properties.sequence.field: updated_at\n",
            "FILE:11: sink.table.properties.sequence.field: cannot be set: Tidemark sets it to "
            "_tm_order, the binlog order of the changes, so the newest change of a key wins; "
            "remove it",
        ),
        (
            "  table.properties.rowkind.field: op\n",
            "FILE:11: sink.table.properties.rowkind.field: cannot be set: Tidemark sets it to "
            "_tm_row_kind, each row's change (+I, +U, -D); remove it",
        ),
        (
            "  table.properties.primary-key: id\n",
            "FILE:11: sink.table.properties.primary-key: cannot be set: a sink table's key is "
            "its source's primary key, or tidemark.tables.<table>.unique-key; remove it",
        ),
        (
            "  table.properties.partition: dt\n",
            "FILE:11: sink.table.properties.partition: cannot be set: a sink table's partitions "
            "come from partition.key ('db.table:column'); remove it",
        ),
    ],
    ids=lambda v: v.strip().split(":")[0] if v.startswith("  ") else "",
)
def test_table_options_that_would_break_the_table_contract_are_refused(
    write_file: WriteFile, lines: str, expected: str
) -> None:
    assert problems(write_file, SOURCE + SINK + lines) == [expected]


def test_every_refused_table_option_is_reported_at_once(write_file: WriteFile) -> None:
    lines = "  table.properties.bucket: -2\n  table.properties.merge-engine: first-row\n"
    assert [p.split(":")[1] for p in problems(write_file, SOURCE + SINK + lines)] == ["11", "12"]


@pytest.mark.parametrize(
    ("sink", "expected"),
    [
        (
            "  catalog.properties.metastore: rest\n  catalog.properties.warehouse: lake\n",
            "FILE:9: sink.catalog.properties.metastore: a rest metastore needs "
            "catalog.properties.uri (the catalog server's address)",
        ),
        (
            "  catalog.properties.metastore: jdbc\n  catalog.properties.warehouse: /tmp/wh\n",
            "FILE:9: sink.catalog.properties.metastore: a jdbc metastore needs "
            "catalog.properties.uri (its JDBC URL)",
        ),
        (
            "  catalog.properties.metastore: jdbc\n  catalog.properties.warehouse: /tmp/wh\n"
            "  catalog.properties.uri: jdbc:oracle:thin:@db:1521/paimon\n",
            "FILE:11: sink.catalog.properties.uri: pypaimon's jdbc metastore connects to "
            "PostgreSQL, MySQL or SQLite only: write a URL starting with jdbc:postgresql:, "
            "jdbc:mysql: or jdbc:sqlite:",
        ),
        (
            "  catalog.properties.metastore: dlf\n  catalog.properties.warehouse: /tmp/wh\n",
            "FILE:9: sink.catalog.properties.metastore: is not a Paimon metastore: use one of "
            "filesystem, rest, jdbc, got: 'dlf'",
        ),
        (
            "  catalog.properties.warehouse: /tmp/wh\n  hadoop.conf.fs.defaultFS: hdfs://nn\n",
            "FILE:10: sink.hadoop.conf.fs.defaultFS: unknown key in a paimon sink; did you "
            "mean 'catalog.properties.fs.defaultFS'?",
        ),
        (
            "  catalog.properties.metastore: filesystem\n  catalog.properties.warehouse: /tmp/w\n"
            "  commit.user-prefx: shop\n",
            "FILE:11: sink.commit.user-prefx: unknown key in a paimon sink; did you mean "
            "'commit.user-prefix'?",
        ),
    ],
    ids=["rest without uri", "jdbc without uri", "jdbc oracle", "unknown", "hadoop", "typo"],
)
def test_catalog_mistakes_are_refused_with_the_fix(
    write_file: WriteFile, sink: str, expected: str
) -> None:
    text = SOURCE + "sink:\n  type: paimon\n" + sink
    assert expected in problems(write_file, text)


def test_an_empty_commit_user_prefix_is_refused(write_file: WriteFile) -> None:
    assert problems(write_file, SOURCE + SINK + "  commit.user-prefix: ''\n") == [
        "FILE:11: sink.commit.user-prefix: must not be empty, got: ''; remove it for the default"
    ]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            "shop.orders",
            "cannot parse 'shop.orders': write 'db.table:column,column' entries separated by "
            "';' (Paimon partitions by columns as they are, without transforms)",
        ),
        (
            "orders:dt",
            "'orders' in 'orders:dt' is not a database.table name: write 'db.table:column,"
            "column' entries separated by ';' (Paimon partitions by columns as they are, "
            "without transforms)",
        ),
        (
            "'shop.orders:dt, region'",
            "'shop.orders:dt, region' has spaces or an empty column; Flink CDC does not trim "
            "partition columns: write them without spaces, as 'db.table:dt,region'",
        ),
        (
            "shop.orders:dt;shop.orders:region",
            "names shop.orders twice: give each table's partition columns once, as "
            "'shop.orders:c1,c2'",
        ),
        (
            "shop.orders:bucket[4](id)",
            "'bucket[4](id)' in 'shop.orders:bucket[4](id)' is not a column: Paimon partitions "
            "by columns as they are, without transforms such as day(ts); compute one with a "
            "transform projection and partition by it",
        ),
    ],
)
def test_partition_key_mistakes_are_refused(write_file: WriteFile, key: str, expected: str) -> None:
    text = SOURCE + SINK + f"  partition.key: {key}\n"
    assert problems(write_file, text) == [f"FILE:11: sink.partition.key: {expected}"]


def test_a_partition_key_for_a_table_the_pipeline_does_not_make_is_a_warning(
    write_file: WriteFile,
) -> None:
    config = load(write_file, SOURCE + SINK + "  partition.key: crm.customers:region\n")
    assert [str(w).split(": ", 1)[1] for w in config.warnings] == [
        "sink.partition.key: crm.customers is neither a table source.tables captures nor a "
        "route's sink-table: check the name"
    ]


# --- plan --------------------------------------------------------------------------------


def table(name: str, *columns: str, key: tuple[str, ...] = ("id",)) -> PhysicalTable:
    return PhysicalTable(
        "shop", name, tuple(Column(c, "int", "int") for c in ("id", *columns)), key
    )


def plan_of(write_file: WriteFile, extra: str, *tables: PhysicalTable) -> Plan:
    return build_plan(load(write_file, SOURCE + SINK + extra), tables)


def test_plan_onboards_a_table_partitioned_by_key_columns(write_file: WriteFile) -> None:
    lines = table("lines", "order_id", key=("order_id", "id"))
    plan = plan_of(write_file, "  partition.key: shop.lines:order_id\n", lines)
    assert plan.ok
    assert [(s.name, s.key) for s in plan.sinks] == [("shop.lines", ("order_id", "id"))]


def test_plan_refuses_partition_columns_outside_the_key_with_the_fix(
    write_file: WriteFile,
) -> None:
    plan = plan_of(write_file, "  partition.key: shop.orders:Region\n", table("orders", "region"))
    assert not plan.ok
    assert [(r.table, r.reason) for r in plan.refused] == [
        (
            "shop.orders",
            "sink.partition.key partitions shop.orders by Region, not in its key (id): a "
            "Paimon primary-key table's partition columns must be in its key (Paimon moves a "
            "row between partitions only in a dynamic-bucket table without sequence.field, "
            'which Tidemark orders changes by); set tidemark.tables."shop.orders".unique-key '
            "to id, Region, or partition shop.orders by key columns only",
        )
    ]


def test_a_unique_key_with_the_partition_column_onboards_the_table(write_file: WriteFile) -> None:
    extra = (
        "  partition.key: shop.orders:region\n"
        'tidemark:\n  tables:\n    "shop.orders":\n      unique-key: id, region\n'
    )
    plan = plan_of(write_file, extra, table("orders", "region"))
    assert plan.ok
    assert plan.sinks[0].key == ("id", "region")


def test_plan_refuses_partition_columns_the_table_does_not_have(write_file: WriteFile) -> None:
    plan = plan_of(write_file, "  partition.key: shop.orders:dt\n", table("orders"))
    assert [r.reason for r in plan.refused] == [
        "sink.partition.key partitions shop.orders by dt, which shop.orders does not have"
    ]


def test_plan_refuses_a_keyless_table_naming_unique_key(write_file: WriteFile) -> None:
    keyless = PhysicalTable(
        "shop",
        "events",
        (Column("id", "int", "int"), Column("at", "int", "int")),
        (),
        (UniqueIndex("by_id", ("id",)),),
    )
    plan = plan_of(write_file, "", keyless)
    assert [r.reason for r in plan.refused] == [
        "no primary key, and no unique key given (a Paimon sink table is a primary-key "
        'table): set tidemark.tables."shop.events".unique-key (its unique index by_id has id), '
        "or primary-keys in a transform"
    ]


def test_partitions_follow_the_sink_table_a_route_gives(write_file: WriteFile) -> None:
    extra = (
        "  partition.key: shop.orders:shard\n"
        "route:\n  - source-table: shop.orders_\\.*\n    sink-table: shop.orders\n"
        'tidemark:\n  tables:\n    "shop.orders":\n      unique-key: id, shard\n'
    )
    shards = [table(f"orders_{n}", "shard") for n in (1, 2)]
    plan = plan_of(write_file, extra, *shards)
    assert plan.ok
    assert [(s.name, s.sources) for s in plan.sinks] == [
        ("shop.orders", ("shop.orders_1", "shop.orders_2"))
    ]


# --- validate and export-flink-cdc -----------------------------------------------------------


def test_validate_names_the_paimon_metastore(
    write_file: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_file(SOURCE + SINK)
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == (
        f"{path}: valid (mysql cdc@db:3306, paimon filesystem metastore, 1 table pattern, "
        "0 routes, 0 transforms, each table its own mirror, 0 jobs)\n"
    )


def test_export_keeps_the_paimon_sink_as_written(write_file: WriteFile) -> None:
    sink = SINK + "  table.properties.bucket: 4  # one per GB\n  partition.key: shop.lines:dt\n"
    text = SOURCE + sink + "tidemark:\n  window: 10 min\n"
    exported = export_flink_cdc(text, Path("p.yaml"), {})
    assert exported == SOURCE + sink
    again = load(write_file, exported)
    assert again.sink == load(write_file, text).sink
    assert again.has_extension is False


def test_export_writes_in_the_metastore_flink_cdc_requires(write_file: WriteFile) -> None:
    text = SOURCE + "sink:\n  type: paimon\n  catalog.properties.warehouse: /tmp/wh\n"
    exported = export_flink_cdc(text, Path("p.yaml"), {})
    assert exported == SOURCE + (
        "sink:\n"
        "  type: paimon\n"
        "  catalog.properties.metastore: filesystem  # Flink CDC 3.2+ wants it written\n"
        "  catalog.properties.warehouse: /tmp/wh\n"
    )
    config = load(write_file, exported)
    assert config.warnings == ()
    assert paimon(config).catalog_properties == {"metastore": "filesystem", "warehouse": "/tmp/wh"}


def test_export_with_resolve_writes_the_metastore_too(write_file: WriteFile) -> None:
    text = (
        SOURCE
        + "tidemark:\n  window: 10 min\n"
        + "sink:\n  type: paimon\n  catalog.properties.warehouse: ${WAREHOUSE}\n"
    )
    exported = export_flink_cdc(text, Path("p.yaml"), {"WAREHOUSE": "/data/wh"}, resolve=True)
    assert yaml.safe_load(exported)["sink"] == {
        "type": "paimon",
        "catalog.properties.metastore": "filesystem",
        "catalog.properties.warehouse": "/data/wh",
    }
    assert load(write_file, exported).warnings == ()


# --- which catalog each format opens ---------------------------------------------------------


def test_the_paimon_sink_catalog_is_opened_for_ingest(write_file: WriteFile) -> None:
    assert Pipeline(load(write_file, SOURCE + SINK)).sink_catalog.format == "paimon"


def test_an_iceberg_sink_passes(write_file: WriteFile) -> None:
    text = SOURCE + (
        "sink:\n  type: iceberg\n  catalog.properties.type: rest\n"
        "  catalog.properties.uri: http://catalog:8181\n"
    )
    config = load(write_file, text)
    assert config.iceberg_sink("never shown") is config.sink
