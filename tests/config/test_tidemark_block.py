"""The ``tidemark:`` block: mirrors, merge keys and scheduled jobs, with their defaults."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tidemark.config import PipelineConfigError, load_pipeline, reveal

WriteFile = Callable[..., Path]

BASE = """\
source:
  type: mysql
  hostname: db
  username: cdc
  password: pw
  tables: shop.\\.*
sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
"""


def test_without_the_block_every_table_gets_a_five_minute_mirror(write_file: WriteFile) -> None:
    config = load_pipeline(write_file(BASE), {})
    settings = config.tidemark
    assert config.has_extension is False
    assert settings.catalog_name == "tidemark"
    assert settings.window == timedelta(minutes=5)
    assert settings.mirror_table("shop.orders") == "shop.orders"
    assert settings.mirror_window("shop.orders") == timedelta(minutes=5)
    assert settings.changelog_table("shop.orders") == "shop.orders_changelog"
    assert settings.table("shop.orders").unique_key is None
    assert settings.jobs == ()
    assert (settings.maintenance.interval, settings.maintenance.enabled) == (
        timedelta(minutes=15),
        True,
    )


def test_a_full_block(write_file: WriteFile, tmp_path: Path) -> None:
    write_file("SELECT * FROM t WHERE ts >= '${window_start}' AND r = '${region}'", "sql/a.sql")
    write_file("SELECT 2", "sql/b.sql")
    text = (
        BASE
        + """\
tidemark:
  catalog-name: lake
  window: 15 min
  maintenance:
    interval: 1 h
    enabled: false
  tables:
    shop.orders:
      unique-key: [order_no, region]
      changelog-table: raw.orders_log
      mirror:
        table: ods.orders
        window: 5 min
        deletes: keep
        table-properties:
          write.target-file-size-bytes: "134217728"
    shop.audit: {mirror: false}
  jobs:
    per_quarter:
      inputs: shop.orders, shop.items
      sql: [sql/a.sql, sql/b.sql]
      variables: {region: eu}
      spark: {spark.sql.shuffle.partitions: "8"}
      retries: 5
      retry-delay: 30 s
      coalesce: true
      rerun-late-windows: true
    daily:
      inputs: [shop.orders]
      window: 1 d
      sql: sql/b.sql
"""
    )
    config = load_pipeline(write_file(text), {})
    settings = config.tidemark

    assert settings.catalog_name == "lake"
    assert (settings.maintenance.interval, settings.maintenance.enabled) == (
        timedelta(hours=1),
        False,
    )
    orders = settings.table("shop.orders")
    assert orders.unique_key == ("order_no", "region")
    assert settings.changelog_table("shop.orders") == "raw.orders_log"
    assert settings.mirror_table("shop.orders") == "ods.orders"
    assert settings.mirror_window("shop.orders") == timedelta(minutes=5)
    assert orders.mirror.deletes == "keep"
    assert reveal(orders.mirror.table_properties) == {"write.target-file-size-bytes": "134217728"}
    assert settings.mirror_table("shop.audit") is None
    assert settings.mirror_window("shop.items") == timedelta(minutes=15)  # the block's window

    quarter, daily = settings.jobs
    assert quarter.inputs == ("shop.orders", "shop.items")
    assert quarter.window == timedelta(minutes=15)  # inherited
    assert quarter.sql == (tmp_path / "sql/a.sql", tmp_path / "sql/b.sql")
    assert reveal(quarter.variables) == {"region": "eu"}
    assert reveal(quarter.spark) == {"spark.sql.shuffle.partitions": "8"}
    assert (
        quarter.retries,
        quarter.retry_delay,
        quarter.coalesce,
        quarter.rerun_late_windows,
    ) == (5, timedelta(seconds=30), True, True)
    assert (
        daily.window,
        daily.retries,
        daily.retry_delay,
        daily.coalesce,
        daily.rerun_late_windows,
    ) == (timedelta(days=1), 2, timedelta(minutes=1), False, False)
    assert config.warnings == ()


def test_sql_paths_are_relative_to_the_pipeline_file_not_the_working_folder(
    write_file: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_file("SELECT 1", "team/sql/report.sql")
    text = BASE + "tidemark:\n  jobs:\n    r:\n      inputs: [shop.o]\n      sql: sql/report.sql\n"
    path = write_file(text, "team/pipeline.yaml")
    monkeypatch.chdir(tmp_path.parent)
    (job,) = load_pipeline(path, {}).tidemark.jobs
    assert job.sql == ((tmp_path / "team/sql/report.sql").resolve(),)


@pytest.mark.parametrize(
    ("window", "minutes"),
    [("1 min", 1), ("5 min", 5), ("5min", 5), ("90 s", 1.5), ("15 minutes", 15), ("6 h", 360)]
    + [("1 d", 1440), ("1440 min", 1440)],
)
def test_windows_that_divide_a_day(write_file: WriteFile, window: str, minutes: float) -> None:
    config = load_pipeline(write_file(BASE + f"tidemark:\n  window: {window}\n"), {})
    assert config.tidemark.window == timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ("7 min", "must divide a day evenly"),
        ("2 d", "must divide a day evenly"),
        ("61 s", "must divide a day evenly"),
        ("30 s", "must be at least 1 min: each window is a Spark job"),
        ("300", "must be a duration with a unit"),
        ("five minutes", "must be a duration"),
    ],
)
def test_windows_that_do_not(write_file: WriteFile, window: str, message: str) -> None:
    with pytest.raises(PipelineConfigError) as caught:
        load_pipeline(write_file(BASE + f"tidemark:\n  window: '{window}'\n"), {})
    (problem,) = caught.value.problems
    assert problem.key == "tidemark.window"
    assert problem.message.startswith(message)


def test_names_the_pipeline_cannot_produce_are_warnings(write_file: WriteFile) -> None:
    text = BASE + (
        "  partition.key: shop.orders:id;shpo.orders:id\n"
        "route:\n  - source-table: shop.users_\\.*\n    sink-table: crm.users\n"
        "tidemark:\n  tables:\n    shop.orders: {}\n    crm.users: {}\n    shop.users_1: {}\n"
    )
    config = load_pipeline(write_file(text), {})
    assert [(w.line, w.key, w.message) for w in config.warnings] == [
        (
            11,
            "sink.partition.key",
            "shpo.orders is neither a table source.tables captures nor a route's sink-table: "
            "check the name",
        ),
        (
            19,
            'tidemark.tables."shop.users_1"',
            "shop.users_1 is neither a table source.tables captures nor a route's sink-table: "
            "check the name",
        ),
    ]


def test_sql_that_uses_an_undefined_variable_is_a_warning(write_file: WriteFile) -> None:
    write_file("SELECT '${window_start}', '${regoin}', '${region}'", "r.sql")
    text = (
        BASE + "tidemark:\n  jobs:\n    r:\n      inputs: [shop.o]\n      sql: r.sql\n"
        "      variables: {region: eu}\n"
    )
    config = load_pipeline(write_file(text), {})
    (warning,) = config.warnings
    assert (warning.line, warning.key) == (15, "tidemark.jobs.r.sql")
    assert warning.message == (
        "r.sql uses ${regoin}, which this job does not define under variables (Tidemark sets "
        "window_start, window_end, window_start_ms, window_end_ms, dt, hour, job_name)"
    )


def test_a_literal_dollar_brace_in_yaml_is_written_with_two_dollars(write_file: WriteFile) -> None:
    write_file("SELECT '${since}'", "r.sql")
    text = (
        BASE + "tidemark:\n  jobs:\n    r:\n      inputs: [shop.o]\n      sql: r.sql\n"
        '      variables: {since: "$${window_start}"}\n'
    )
    (job,) = load_pipeline(write_file(text), {}).tidemark.jobs
    assert reveal(job.variables) == {"since": "${window_start}"}


def test_reports_and_ingest_pacing(write_file: WriteFile) -> None:
    text = BASE + (
        "tidemark:\n"
        "  reports:\n"
        "    kafka.bootstrap.servers: k1:9092,k2:9092\n"
        "    kafka.sasl.password: hunter2\n"
        "  ingest:\n"
        "    flush-interval: 500 ms\n"
        "    flush-rows: 1000\n"
    )

    settings = load_pipeline(write_file(text), {}).tidemark

    assert settings.reports is not None
    assert settings.reports.topic == "tidemark.commit-reports"
    assert reveal(settings.reports.kafka) == {
        "bootstrap.servers": "k1:9092,k2:9092",
        "sasl.password": "hunter2",
    }
    assert "hunter2" not in repr(settings.reports)
    assert settings.ingest.flush_interval == timedelta(milliseconds=500)
    assert settings.ingest.flush_rows == 1000
    assert settings.ingest.max_transaction_rows == 100_000  # the default


def test_without_reports_nothing_is_published(write_file: WriteFile) -> None:
    assert load_pipeline(write_file(BASE), {}).tidemark.reports is None


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            "  reports:\n    topic: t\n",
            ":12: tidemark.reports: the reports block is missing the required key "
            "'kafka.bootstrap.servers' (where Kafka is, e.g. kafka.bootstrap.servers: kafka:9092)",
        ),
        (
            "  reports:\n    bootstrap.servers: k:9092\n",
            ":12: tidemark.reports.bootstrap.servers: is not a reports option: use 'topic', or "
            "'kafka.' followed by a librdkafka property such as kafka.bootstrap.servers",
        ),
        (
            "  ingest:\n    flush-rows: 0\n",
            ":13: tidemark.ingest.flush-rows: must be at least 1, got: '0'",
        ),
    ],
)
def test_bad_reports_and_ingest_options_are_named(
    write_file: WriteFile, block: str, message: str
) -> None:
    with pytest.raises(PipelineConfigError) as error:
        load_pipeline(write_file(BASE + "tidemark:\n" + block), {})

    assert message in str(error.value)


@pytest.mark.parametrize(
    ("block", "warned"),
    [
        ("  reports: {topic: r, kafka.bootstrap.servers: k:9092}\n", True),
        ("  reports: {topic: r, kafka.bootstrap.servers: k:9092}\n  state-dsn: host=pg\n", False),
        ("  window: 5 min\n", False),
    ],
    ids=["reports without a state database", "with one", "no scheduler"],
)
def test_a_rest_catalog_the_scheduler_follows_needs_a_state_database(
    write_file: WriteFile, block: str, warned: bool
) -> None:
    config = load_pipeline(write_file(BASE + "tidemark:\n" + block), {})

    assert [(w.key, w.message) for w in config.warnings] == (
        [
            (
                "tidemark.reports",
                "the scheduler keeps its state in a PostgreSQL database, and this catalog is not "
                "a jdbc:postgresql: one: add tidemark.state-dsn (a libpq connection string), or "
                "give --state-dsn to tidemark schedule, run, status, ui and reset",
            )
        ]
        if warned
        else []
    )
