"""``tidemark plan`` against the real MariaDB and MySQL of the local stack: which tables go
where, and why some cannot."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql
import pytest

from tidemark.app.cli import main
from tidemark.app.exit_codes import ExitCode
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.config.inventory import read_tables
from tidemark.config.plan import Plan, build_plan
from tidemark.stack.endpoints import SourceEndpoint

WriteFile = Callable[..., Path]
if TYPE_CHECKING:
    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


@pytest.fixture
def env(source: SourceEndpoint) -> dict[str, str]:
    return {"PLAN_MYSQL_PASSWORD": source.cdc_password.get_secret_value()}


@pytest.fixture
def second_database(source: SourceEndpoint, source_database: str) -> Iterator[str]:
    name = f"{source_database}_b"
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{name}`")
    yield name
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")


def execute(conn: Connection, *statements: str) -> None:
    with conn.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def pipeline(source: SourceEndpoint, tables: str, rest: str = "") -> str:
    return f"""\
source:
  type: mysql
  hostname: {source.host}
  port: {source.port}
  username: {source.cdc_user}
  password: ${{PLAN_MYSQL_PASSWORD}}
  tables: {tables}
sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
{rest}"""


def plan_of(config: PipelineConfig) -> Plan:
    return build_plan(config, read_tables(config.source.connection, config.source.captures))


def test_plan_onboards_tables_with_keys_and_says_why_it_cannot_others(
    source: SourceEndpoint,
    admin_connection: Connection,
    source_database: str,
    write_file: WriteFile,
    env: dict[str, str],
) -> None:
    db = source_database
    execute(
        admin_connection,
        "CREATE TABLE orders (id INT PRIMARY KEY, amount DECIMAL(10,2), created_at DATETIME)",
        "CREATE TABLE audit_log (at DATETIME, message TEXT)",
        "CREATE TABLE contacts (email VARCHAR(100) NOT NULL, name TEXT, "
        "UNIQUE KEY uk_email (email))",
        "CREATE TABLE places (id INT PRIMARY KEY, location POINT NOT NULL)",
        "CREATE TABLE events (event_id BIGINT NOT NULL, kind VARCHAR(10))",
        "CREATE TABLE tmp_scratch (id INT PRIMARY KEY)",
        "CREATE TABLE _orders_gho (id INT PRIMARY KEY, amount DECIMAL(10,2), created_at DATETIME)",
        "CREATE VIEW big_orders AS SELECT * FROM orders WHERE amount > 100",
    )
    text = pipeline(
        source,
        f"{db}.\\.*",
        f"transform:\n  - source-table: {db}.events\n    primary-keys: event_id\n",
    ).replace("  tables:", f"  tables.exclude: {db}.tmp_\\.*\n  tables:")
    plan = plan_of(load_pipeline(write_file(text), env))

    assert {(m.source, m.sink, m.key, m.key_origin) for m in plan.onboarded} == {
        (f"{db}.orders", f"{db}.orders", ("id",), "primary key"),
        (f"{db}.events", f"{db}.events", ("event_id",), "transform[0].primary-keys"),
        (f"{db}.places", f"{db}.places", ("id",), "primary key"),  # POINT lands as WKB bytes
    }
    assert {(r.table, r.reason) for r in plan.refused} == {
        (
            f"{db}.audit_log",
            f'no primary key, and no unique key given: set tidemark.tables."{db}.audit_log"'
            ".unique-key, or primary-keys in a transform",
        ),
        (
            f"{db}.contacts",
            f'no primary key, and no unique key given: set tidemark.tables."{db}.contacts"'
            ".unique-key (its unique index uk_email has email), or primary-keys in a transform",
        ),
    }
    assert [(s.table, s.reason.split(":")[0]) for s in plan.skipped] == [
        (f"{db}._orders_gho", f"gh-ost helper table of {db}.orders")
    ]
    assert not plan.ok


def test_a_unique_key_onboards_a_table_without_a_primary_key(
    source: SourceEndpoint,
    admin_connection: Connection,
    source_database: str,
    write_file: WriteFile,
    env: dict[str, str],
) -> None:
    db = source_database
    execute(admin_connection, "CREATE TABLE contacts (email VARCHAR(100) NOT NULL, name TEXT)")
    rest = f'tidemark:\n  tables:\n    "{db}.contacts":\n      unique-key: email\n'
    plan = plan_of(load_pipeline(write_file(pipeline(source, f"{db}.contacts", rest)), env))
    (mapping,) = plan.onboarded
    assert (mapping.key, mapping.key_origin) == (
        ("email",),
        f'tidemark.tables."{db}.contacts".unique-key',
    )
    assert plan.ok


def test_keys_must_name_columns_the_table_has(
    source: SourceEndpoint,
    admin_connection: Connection,
    source_database: str,
    write_file: WriteFile,
    env: dict[str, str],
) -> None:
    db = source_database
    execute(
        admin_connection,
        "CREATE TABLE events (event_id BIGINT NOT NULL)",
        "CREATE TABLE contacts (email VARCHAR(100) NOT NULL)",
    )
    rest = (
        f"transform:\n  - source-table: {db}.events\n    primary-keys: id\n"
        f'tidemark:\n  tables:\n    "{db}.contacts":\n      unique-key: mail\n'
    )
    plan = plan_of(load_pipeline(write_file(pipeline(source, f"{db}.\\.*", rest)), env))
    assert sorted((r.table, r.reason) for r in plan.refused) == [
        (
            f"{db}.contacts",
            f'tidemark.tables."{db}.contacts".unique-key names mail, which {db}.contacts does '
            "not have",
        ),
        (f"{db}.events", f"transform[0].primary-keys names id, which {db}.events does not have"),
    ]


def test_sharded_tables_in_two_databases_merge_by_route(
    source: SourceEndpoint,
    admin_connection: Connection,
    source_database: str,
    second_database: str,
    write_file: WriteFile,
    env: dict[str, str],
) -> None:
    db, db_b = source_database, second_database
    for database in (db, db_b):
        for shard in (0, 1):
            execute(
                admin_connection,
                f"CREATE TABLE `{database}`.orders_{shard} (id BIGINT PRIMARY KEY, amount INT)",
            )
    execute(admin_connection, f"CREATE TABLE `{db}`.users (id INT PRIMARY KEY)")
    route = (
        f"route:\n  - source-table: {db}(_b)?.orders_[0-9]+\n    sink-table: lake.orders\n"
        f"  - source-table: {db}.\\.*\n    sink-table: lake.<>\n    replace-symbol: <>\n"
        "pipeline:\n  route-mode: FIRST_MATCH\n"
    )
    text = pipeline(source, f"{db}(_b)?.\\.*", route)
    plan = plan_of(load_pipeline(write_file(text), env))

    assert sorted((m.source, m.sink) for m in plan.onboarded) == [
        (f"{db}.orders_0", "lake.orders"),
        (f"{db}.orders_1", "lake.orders"),
        (f"{db}.users", "lake.users"),
        (f"{db_b}.orders_0", "lake.orders"),
        (f"{db_b}.orders_1", "lake.orders"),
    ]
    orders = next(s for s in plan.sinks if s.name == "lake.orders")
    assert (orders.key, len(orders.sources), orders.mirror) == (("id",), 4, "lake.orders")
    assert orders.changelog == "lake.orders_changelog"
    assert (
        "4 tables merge into lake.orders on (id): rows with equal keys in different tables "
        "overwrite each other unless the key is unique across all of them"
    ) in plan.notes
    assert plan.ok

    # a shard whose key differs cannot be merged with the others
    execute(
        admin_connection,
        f"CREATE TABLE `{db_b}`.orders_9 (id BIGINT, region CHAR(2), PRIMARY KEY (id, region))",
    )
    plan = plan_of(load_pipeline(write_file(text), env))
    (refusal,) = plan.refused
    assert refusal.table == "lake.orders"
    assert refusal.reason.startswith("the tables routed here have different keys: ")
    assert f"{db_b}.orders_9 (id, region)" in refusal.reason
    assert refusal.reason.endswith('give one with tidemark.tables."lake.orders".unique-key')


def test_plan_command(
    source: SourceEndpoint,
    admin_connection: Connection,
    source_database: str,
    write_file: WriteFile,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = source_database
    monkeypatch.setenv("PLAN_MYSQL_PASSWORD", env["PLAN_MYSQL_PASSWORD"])
    execute(
        admin_connection,
        "CREATE TABLE orders (id INT PRIMARY KEY)",
        "CREATE TABLE audit_log (message TEXT)",
    )
    write_file("SELECT 1", "report.sql")
    jobs = "tidemark:\n  jobs:\n    report:\n      inputs: [other.orders]\n      sql: report.sql\n"
    path = write_file(pipeline(source, f"{db}.\\.*, nothing.here", jobs))

    assert main(["plan", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"plan for {path} (mysql {source.cdc_user}@{source.host}:{source.port})",
        "",
        "onboard: 1 table -> 1 Iceberg table",
        f"  {db}.orders  -> {db}.orders  key (id)  from primary key",
        "",
        "Iceberg tables:",
        f"  {db}.orders: key (id), 1 source table, mirror {db}.orders every 5 min, "
        f"changelog {db}.orders_changelog",
        "",
        "cannot onboard: 1 table",
        f'  {db}.audit_log  no primary key, and no unique key given: set tidemark.tables."'
        f'{db}.audit_log".unique-key, or primary-keys in a transform',
        "",
        "blocking problems:",
        "  job report reads other.orders, which this pipeline does not produce",
        "",
        "notes:",
        "  source.tables pattern 'nothing.here' matches no table",
        "",
        "jobs:",
        "  report: every 5 min after other.orders; runs report.sql",
    ]

    assert main(["plan", "--json", str(path)]) == 1
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert (report["version"], report["ok"]) == (1, False)
    assert report["onboarded"] == [
        {
            "source": f"{db}.orders",
            "sink": f"{db}.orders",
            "key": ["id"],
            "key_origin": "primary key",
        }
    ]


def test_plan_when_everything_can_be_onboarded_exits_0(
    source: SourceEndpoint,
    admin_connection: Connection,
    source_database: str,
    write_file: WriteFile,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PLAN_MYSQL_PASSWORD", env["PLAN_MYSQL_PASSWORD"])
    execute(admin_connection, "CREATE TABLE orders (id INT PRIMARY KEY)")
    path = write_file(pipeline(source, f"{source_database}.orders"))
    assert main(["plan", str(path)]) == 0
    assert "cannot onboard" not in capsys.readouterr().out


def test_plan_of_a_pattern_that_matches_nothing(
    source: SourceEndpoint, source_database: str, write_file: WriteFile, env: dict[str, str]
) -> None:
    plan = plan_of(load_pipeline(write_file(pipeline(source, f"{source_database}.x")), env))
    assert plan.blockers == (f"source.tables ({source_database}.x) matches no table on the server",)


def test_plan_with_a_wrong_password_says_so_without_the_password(
    source: SourceEndpoint,
    write_file: WriteFile,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PLAN_MYSQL_PASSWORD", "Wrong-Passw0rd-xyz")
    path = write_file(pipeline(source, "shop.orders"))
    assert main(["plan", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"tidemark plan: error: MySQL at {source.cdc_user}@{source.host}:"
        f"{source.port} refused the account: Access denied"
    )
    assert "Wrong-Passw0rd-xyz" not in err


def test_plan_when_nothing_listens_says_where_it_tried(
    source: SourceEndpoint,
    write_file: WriteFile,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PLAN_MYSQL_PASSWORD", "pw")
    text = pipeline(source, "shop.orders").replace(f"port: {source.port}", "port: 1")
    assert main(["plan", str(write_file(text))]) == ExitCode.TRANSIENT  # may work later
    err = capsys.readouterr().err
    assert err.startswith(
        f"tidemark plan: error: cannot connect to MySQL at {source.cdc_user}@{source.host}:1: "
    )
    assert err.rstrip().endswith(
        "check source.hostname and source.port, and that the server is running"
    )
