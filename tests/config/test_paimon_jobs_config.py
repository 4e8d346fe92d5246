"""Where a Paimon pipeline's jobs write, and where its scheduler keeps its state:
``tidemark.iceberg-catalog``, the Iceberg catalog of the jobs' outputs, written as an Iceberg
sink's ``catalog.properties.*`` lines and checked as they are; needed only with jobs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import SecretStr

from scheduler.spec import PipelineSchedule
from tests.config.conftest import WriteFile
from tidemark.app.pipeline import Pipeline
from tidemark.config import PipelineConfig, PipelineConfigError, load_pipeline
from tidemark.config.flink_export import export_flink_cdc
from tidemark.config.plan import SinkTable
from tidemark.errors import ConfigError

#: lines 1 to 14; what a case adds starts at line 15
PAIMON = """\
source:
  type: mysql
  hostname: db
  username: cdc
  password: pw
  tables: shop.orders
sink:
  type: paimon
  catalog.properties.metastore: filesystem
  catalog.properties.warehouse: /tmp/warehouse
pipeline:
  name: shop
tidemark:
  reports: {kafka.bootstrap.servers: kafka:9092}
"""
JOBS = """\
  jobs:
    gmv:
      inputs: [shop.orders]
      sql: gmv.sql
"""
ICEBERG_CATALOG = """\
  iceberg-catalog:
    catalog.properties.type: jdbc
    catalog.properties.uri: jdbc:postgresql://db:5432/catalog
    catalog.properties.jdbc.user: tidemark
    catalog.properties.jdbc.password: s3cret
    catalog.properties.warehouse: s3://lake/warehouse
"""


def load(write_file: WriteFile, text: str) -> PipelineConfig:
    write_file("SELECT 1", name="gmv.sql")
    return load_pipeline(write_file(text), {})


def problems(write_file: WriteFile, text: str) -> list[tuple[int | None, str, str]]:
    with pytest.raises(PipelineConfigError) as caught:
        load(write_file, text)
    return [(p.line, p.key, p.message) for p in caught.value.problems]


def test_a_paimon_pipelines_jobs_write_to_the_iceberg_catalog_it_names(
    write_file: WriteFile,
) -> None:
    config = load(write_file, PAIMON + JOBS + ICEBERG_CATALOG)

    assert config.warnings == ()
    assert config.tidemark.iceberg_catalog == config.iceberg_catalog
    assert config.iceberg_catalog == {
        "type": "jdbc",
        "uri": "jdbc:postgresql://db:5432/catalog",
        "jdbc.user": "tidemark",
        "jdbc.password": SecretStr("s3cret"),
        "warehouse": "s3://lake/warehouse",
    }
    # the state goes to that catalog's database, as an Iceberg sink's does
    settings = Pipeline(config).state_settings()
    assert dict(settings.connection) == {
        "host": "db",
        "port": "5432",
        "dbname": "catalog",
        "user": "tidemark",
        "password": "s3cret",
    }


def test_jobs_without_it_are_refused_with_the_fix(write_file: WriteFile) -> None:
    assert problems(write_file, PAIMON + JOBS) == [
        (
            15,
            "tidemark.jobs",
            "a Paimon pipeline's jobs read the Paimon tables but write Iceberg tables (their "
            "SQL's INSERT INTO db.table), in a catalog the Paimon sink does not name: add "
            "tidemark.iceberg-catalog with that catalog's catalog.properties.* lines, as an "
            "Iceberg sink has them (catalog.properties.type: jdbc, catalog.properties.uri: ...)",
        )
    ]


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (
            "    catalog.properties.type: jdbcc\n",
            (
                16,
                "tidemark.iceberg-catalog.catalog.properties.type",
                "is not an Iceberg catalog type: use one of jdbc, rest, hive, glue, got: 'jdbcc'",
            ),
        ),
        (
            "    catalog.properties.uri: http://catalog:8181\n",
            (
                15,
                "tidemark.iceberg-catalog",
                "tidemark.iceberg-catalog needs catalog.properties.type (one of jdbc, rest, "
                "hive, glue) or catalog.properties.catalog-impl",
            ),
        ),
        (
            "    catalog.properties.type: rest\n",
            (
                16,
                "tidemark.iceberg-catalog.catalog.properties.type",
                "a rest catalog needs catalog.properties.uri (the catalog server's address)",
            ),
        ),
        (
            "    catalog.propertes.type: rest\n",
            (
                16,
                "tidemark.iceberg-catalog.catalog.propertes.type",
                "unknown key in the jobs' Iceberg catalog; did you mean 'catalog.properties.type'?",
            ),
        ),
    ],
)
def test_its_lines_are_checked_as_an_iceberg_sinks_are(
    write_file: WriteFile, lines: str, problem: tuple[int, str, str]
) -> None:
    found = problems(write_file, PAIMON + "  iceberg-catalog:\n" + lines + JOBS)
    assert problem in found


def test_an_iceberg_pipeline_uses_its_sinks_catalog_and_ignores_another(
    write_file: WriteFile,
) -> None:
    iceberg = PAIMON.replace(
        "  type: paimon\n  catalog.properties.metastore: filesystem\n"
        "  catalog.properties.warehouse: /tmp/warehouse\n",
        "  type: iceberg\n  catalog.properties.type: rest\n"
        "  catalog.properties.uri: http://catalog:8181\n",
    )
    config = load(write_file, iceberg + "  state-dsn: host=db\n" + ICEBERG_CATALOG)

    assert config.iceberg_catalog == config.sink.catalog_properties
    assert [(w.line, w.key, w.message) for w in config.warnings] == [
        (
            16,
            "tidemark.iceberg-catalog",
            "is ignored: it is for a Paimon pipeline's jobs, and an Iceberg pipeline's jobs use "
            "the sink's catalog; remove it",
        )
    ]


def test_a_paimon_pipeline_without_jobs_needs_none_but_a_state_database(
    write_file: WriteFile,
) -> None:
    config = load(write_file, PAIMON)

    assert config.iceberg_catalog is None
    assert [(w.line, w.key) for w in config.warnings] == [(14, "tidemark.reports")]
    assert "a Paimon pipeline's state goes to tidemark.iceberg-catalog's database only when" in (
        config.warnings[0].message
    )
    with pytest.raises(ConfigError, match="add tidemark.state-dsn"):
        Pipeline(config).state_settings()
    with_dsn = load(write_file, PAIMON + "  state-dsn: host=state dbname=tidemark\n")
    assert with_dsn.warnings == ()
    assert Pipeline(with_dsn).state_settings().connection["host"] == "state"


def test_export_flink_cdc_leaves_it_out_with_the_rest_of_the_block(
    write_file: WriteFile,
) -> None:
    text = PAIMON + JOBS + ICEBERG_CATALOG
    path = write_file(text)
    exported = export_flink_cdc(text, path, {})
    assert "tidemark:" not in exported and "iceberg-catalog" not in exported


def test_the_schedule_of_a_paimon_pipeline_has_its_jobs_pinning_snapshots_and_no_mirrors(
    write_file: WriteFile,
) -> None:
    config = load(write_file, PAIMON + JOBS + ICEBERG_CATALOG)
    orders = SinkTable(
        name="shop.orders",
        key=("id",),
        key_origin="primary key",
        sources=("shop.orders",),
        mirror=None,  # a Paimon sink table is its own mirror (tidemark.config.plan)
        mirror_window=timedelta(minutes=5),
        changelog="shop.orders",
    )

    schedule = PipelineSchedule.from_config(config, [orders])

    assert [(str(spec.task), spec.inputs, spec.pins_snapshots) for spec in schedule.tasks] == [
        ("job:gmv", ("shop.orders",), True)
    ]
    assert schedule.changelogs == {"shop.orders": "shop.orders"}
    # maintained as Iceberg tables are, every interval (by Paimon's own pass)
    assert schedule.maintenance_interval == timedelta(minutes=15)
