"""`tidemark ingest` against the real stack: rows, metadata and progress land in one commit."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql
import pytest
from confluent_kafka import Consumer
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from ingest.changelog.table import ChangelogTable
from ingest.errors import StartupCheckError
from ingest.settings import IngestSettings
from ingest.stream.runner import StopWhen
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.runners import MakeRunner
from tests.server_share import require_alone
from tidemark.app.cli import main
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.contracts.changelog import SummaryKey
from tidemark.contracts.progress import TableProgress
from tidemark.contracts.reports import CommitReport, read_report
from tidemark.contracts.schema_history import PROPERTY_PREFIX
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline

if TYPE_CHECKING:
    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


def test_changes_land_in_the_changelog_with_their_metadata_and_progress(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    config = load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            source,
            endpoints.catalog,
            database=source_database,
            tables="orders",
            namespace=namespace,
            server_id=server_id,
        )
    )
    runner = make_runner(config)
    with orders.cursor() as cursor:
        cursor.execute("INSERT INTO orders VALUES (1, 'kettle', 1), (2, 'teapot', 2)")
        cursor.execute("UPDATE orders SET qty = 5 WHERE id = 1")
        cursor.execute("UPDATE orders SET id = 3 WHERE id = 2")
        cursor.execute("DELETE FROM orders WHERE id = 1")
    end = current_position(source.cdc_source(server_id))

    summary = runner.run(StopWhen(until_position=end, max_seconds=60))

    assert summary.stopped_because == f"reached {end}"
    table = catalog.load_table(f"{namespace}.orders_changelog")
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["_tm_order"])
    assert [(r["_tm_op"], r["id"], r["item"], r["qty"], r["_tm_order"]) for r in rows] == [
        ("c", 1, "kettle", 1, 1),
        ("c", 2, "teapot", 2, 2),
        ("u", 1, "kettle", 5, 3),
        ("d", 2, "teapot", 2, 4),
        ("c", 3, "teapot", 2, 5),
        ("d", 1, "kettle", 5, 6),
    ]
    assert {(r["_tm_source_db"], r["_tm_source_table"]) for r in rows} == {
        (source_database, "orders")
    }
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    summary_keys = snapshot.summary.additional_properties
    assert '"file":"' + end.file + '"' in summary_keys[SummaryKey.POSITION]
    assert int(summary_keys[SummaryKey.WATERMARK]) > 0
    assert summary_keys[SummaryKey.SOURCE] == f"{source.host}:{source.port}"


def _pipeline(
    tmp_path: Path,
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    database: str,
    namespace: str,
    server_id: int,
    **options: str,
) -> PipelineConfig:
    return load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            source,
            endpoints.catalog,
            database=database,
            tables="orders",
            namespace=namespace,
            server_id=server_id,
            **options,
        )
    )


def test_a_new_table_is_onboarded_in_one_commit_with_its_first_schema_version(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    config = _pipeline(tmp_path, source, endpoints, source_database, namespace, server_id)

    make_runner(config)

    table = catalog.load_table(f"{namespace}.orders_changelog")
    # created with the schema history in its properties, then the start position's commit:
    # at a thousand tables, a commit more each is seconds more before streaming
    assert len(table.metadata.metadata_log) == 1
    assert any(key.startswith(PROPERTY_PREFIX) for key in table.properties)
    assert len(table.snapshots()) == 1


def test_earliest_offset_replays_the_binlog_the_server_still_has(
    private_source: SourceEndpoint,
    endpoints: StackEndpoints,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    tmp_path: Path,
    server_id: int,
) -> None:
    with private_source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute("CREATE DATABASE shop")
        cursor.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, item TEXT, qty INT)")
        cursor.execute("INSERT INTO shop.orders VALUES (1, 'written before the pipeline', 1)")
    config = _pipeline(
        tmp_path,
        private_source,
        endpoints,
        "shop",
        namespace,
        server_id,
        startup="earliest-offset",
    )
    runner = make_runner(config)
    run_to_end(runner, private_source, server_id, max_seconds=120)

    rows = changelog_rows(catalog, namespace)
    assert [(row["_tm_op"], row["id"]) for row in rows] == [("c", 1)]


def test_status_shows_each_tables_watermark_and_position(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _pipeline(tmp_path, source, endpoints, source_database, namespace, server_id)
    runner = make_runner(config)
    with orders.cursor() as cursor:
        cursor.execute("INSERT INTO orders VALUES (1, 'kettle', 1)")
    end = run_to_end(runner, source, server_id, max_seconds=60)

    assert main(["status", str(config.path)]) == 0

    tables, _, processes = capsys.readouterr().out.partition("\n\n")
    assert processes.splitlines()[1].split() == ["ingest", "none"]  # it has stopped
    [header, line] = tables.splitlines()
    assert header.split() == [
        "sink",
        "table",
        "watermark",
        "lag",
        "rows",
        "late",
        "errors",
        "position",
    ]
    assert line.startswith(f"{namespace}.orders ")
    assert line.endswith(f" 1      0       0  {end}")

    assert main(["status", "--json", str(config.path)]) == 0
    document = json.loads(capsys.readouterr().out)
    [table] = document["tables"]
    assert table["sink"] == f"{namespace}.orders"
    assert table["position"] == {"file": end.file, "offset": end.offset}
    assert (table["rows"], table["late_rows"], table["error_rows"]) == (1, 0, 0)
    assert table["watermark"] is not None and table["lag_seconds"] >= 0
    assert document["ingest"] == {"active": None, "standbys": []}


def test_changes_committed_before_a_published_watermark_are_counted_late(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _pipeline(tmp_path, source, endpoints, source_database, namespace, server_id)
    runner = make_runner(config)
    with orders.cursor() as cursor:
        cursor.execute("INSERT INTO orders VALUES (1, 'on time', 1)")
    run_to_end(runner, source, server_id, 60)  # publishes a watermark of about now
    with orders.cursor() as cursor:  # the source's clock steps back an hour for two commits
        cursor.execute("SET timestamp = UNIX_TIMESTAMP() - 3600")
        cursor.execute("INSERT INTO orders VALUES (2, 'late', 1)")
        cursor.execute("UPDATE orders SET qty = 2 WHERE id = 2")
        cursor.execute("SET timestamp = DEFAULT")
        cursor.execute("INSERT INTO orders VALUES (3, 'on time', 1)")

    run_to_end(make_runner(config), source, server_id, 60)

    progress = ChangelogTable(catalog.load_table(f"{namespace}.orders_changelog")).progress()
    assert progress is not None and progress.late_rows == 2
    assert progress.late_range is not None
    first, last = progress.late_range
    hour_ago = (time.time() - 3600) * 1000
    assert first <= last and abs(first - hour_ago) < 120_000 and abs(last - hour_ago) < 120_000
    assert main(["status", str(config.path)]) == 0
    [_, line] = capsys.readouterr().out.partition("\n\n")[0].splitlines()
    assert line.split()[-3] == "2"  # the late column


def test_each_commit_is_reported_to_kafka_in_order(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
    unique_name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    reports_block = (
        "tidemark:\n"
        "  reports:\n"
        f"    topic: {unique_name}\n"
        f"    kafka.bootstrap.servers: {endpoints.kafka.bootstrap_servers}\n"
        "  ingest:\n"
        "    flush-rows: 2\n"
    )
    config = _pipeline(
        tmp_path, source, endpoints, source_database, namespace, server_id, extra=reports_block
    )
    # a first short run fixes the start (latest-offset) before the writes; the second resumes
    assert main(["ingest", str(config.path), "--max-seconds", "0"]) == 0
    with orders.cursor() as cursor:
        for key in range(1, 7):
            cursor.execute(f"INSERT INTO orders VALUES ({key}, 'item', {key})")
    end = current_position(source.cdc_source(server_id))

    assert main(["ingest", str(config.path), "--until-position", str(end)]) == 0

    table = catalog.load_table(f"{namespace}.orders_changelog")
    history = [snapshot.snapshot_id for snapshot in table.snapshots()]
    reports = consume_reports(endpoints, unique_name, count=len(history))
    assert [report.snapshot_id for report in reports] == history
    assert {report.table for report in reports} == {f"{namespace}.orders_changelog"}
    assert sum(report.rows_added for report in reports) == 6
    watermarks = [report.watermark_ms for report in reports]
    assert watermarks == sorted(watermarks)
    assert "ingest stopped (reached" in capsys.readouterr().out


def consume_reports(endpoints: StackEndpoints, topic: str, count: int) -> list[CommitReport]:
    consumer = Consumer(
        {
            "bootstrap.servers": endpoints.kafka.bootstrap_servers,
            "group.id": topic,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    reports: list[CommitReport] = []
    deadline = time.monotonic() + 60
    try:
        while len(reports) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            payload = None if message is None or message.error() else message.value()
            report = None if payload is None else read_report(payload)
            if isinstance(report, CommitReport):
                reports.append(report)
    finally:
        consumer.close()
    return reports


def test_an_idle_tables_watermark_keeps_moving(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    with orders.cursor() as cursor:
        cursor.execute("CREATE TABLE quiet (id INT PRIMARY KEY)")
    config = load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            source,
            endpoints.catalog,
            database=source_database,
            tables="\\.*",
            namespace=namespace,
            server_id=server_id,
        )
    )
    settings = IngestSettings(idle_commit_seconds=0.5, flush_interval_seconds=0.5)
    runner = make_runner(config, settings=settings)
    with orders.cursor() as cursor:
        cursor.execute("INSERT INTO orders VALUES (1, 'kettle', 1)")
    before_run_ms = int(time.time() * 1000)

    def quiet_progress() -> TableProgress | None:
        return TableProgress.from_summary(_summary(catalog, f"{namespace}.quiet_changelog"))

    def quiet_caught_up() -> bool:
        progress = quiet_progress()
        return progress is not None and progress.watermark_ms >= before_run_ms

    stop = threading.Event()
    reader = threading.Thread(target=runner.run, args=(StopWhen(max_seconds=60, requested=stop),))
    reader.start()
    try:
        # nothing happens to `quiet`, yet it becomes complete up to the source's clock: the
        # binlog's seconds, so it may take the next second's event (a heartbeat) to pass the
        # start; on a busy machine that is more than the three seconds this test used to allow
        wait_until("the quiet table's watermark past the run's start", quiet_caught_up, 30)
    finally:
        stop.set()
        reader.join(60)

    quiet = quiet_progress()
    busy = TableProgress.from_summary(_summary(catalog, f"{namespace}.orders_changelog"))
    assert quiet is not None and busy is not None
    # and once the run ends, it is where `orders` is
    assert quiet.watermark_ms >= before_run_ms
    assert quiet.watermark_ms == busy.watermark_ms
    assert quiet.position == busy.position


def test_sharded_tables_routed_together_keep_their_source(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    with orders.cursor() as cursor:
        cursor.execute("CREATE TABLE orders_2 LIKE orders")
    text = local_pipeline(
        source,
        endpoints.catalog,
        database=source_database,
        tables="orders\\.*",
        namespace=namespace,
        server_id=server_id,
    ).replace(
        f"  - source-table: {source_database}.\\.*\n    sink-table: {namespace}.<>\n"
        "    replace-symbol: <>\n",
        f"  - source-table: {source_database}.orders\\.*\n    sink-table: {namespace}.orders\n",
    )
    config = load_pipeline(_write(tmp_path / "sharded.yaml", text))
    runner = make_runner(config)
    with orders.cursor() as cursor:
        cursor.execute("INSERT INTO orders VALUES (1, 'from the first shard', 1)")
        cursor.execute("INSERT INTO orders_2 VALUES (2, 'from the second shard', 2)")
    run_to_end(runner, source, server_id, max_seconds=60)

    rows = changelog_rows(catalog, namespace)
    assert sorted((row["id"], row["_tm_source_table"]) for row in rows) == [
        (1, "orders"),
        (2, "orders_2"),
    ]


def _summary(catalog: Catalog, identifier: str) -> dict[str, str]:
    snapshot = catalog.load_table(identifier).current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return snapshot.summary.additional_properties


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def changelog_rows(catalog: Catalog, namespace: str) -> list[dict[str, Any]]:
    return catalog.load_table(f"{namespace}.orders_changelog").scan().to_arrow().to_pylist()


# it kills every binlog dump thread of the CDC account, other tests' too
@pytest.mark.server_wide
def test_a_replication_connection_the_server_kills_is_resumed_without_loss_or_duplicate(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    orders: Connection,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    config = _pipeline(tmp_path, source, endpoints, source_database, namespace, server_id)
    runner = make_runner(config)
    with orders.cursor() as cursor:
        for key in range(1, 201):
            cursor.execute("INSERT INTO orders VALUES (%s, 'before', 1)", (key,))
    killed: list[int] = []

    require_alone("KILL of every binlog dump thread of the CDC account")

    def kill_the_dump_thread() -> bool:
        with admin_connection.cursor() as cursor:
            cursor.execute(
                "SELECT ID FROM information_schema.PROCESSLIST "
                "WHERE COMMAND LIKE 'Binlog Dump%%' AND USER = %s",
                (source.cdc_user,),
            )
            ids = [row[0] for row in cursor.fetchall()]
            for thread in ids:
                cursor.execute(f"KILL CONNECTION {int(thread)}")
        killed.extend(ids)
        return bool(ids)

    reader = threading.Thread(target=runner.run, args=(StopWhen(max_seconds=10),), daemon=True)
    reader.start()
    wait_until("ingest's binlog dump thread to kill", kill_the_dump_thread, 10, interval=0.05)
    with orders.cursor() as cursor:
        for key in range(201, 401):
            cursor.execute("INSERT INTO orders VALUES (%s, 'after', 1)", (key,))
    reader.join(30)

    rows = changelog_rows(catalog, namespace)
    assert killed
    assert sorted(row["id"] for row in rows) == list(range(1, 401))  # each once


@pytest.mark.parametrize("source", ["mysql"], indirect=True)
def test_a_pipeline_pointed_at_another_mysql_server_is_refused_before_it_reads(
    source: SourceEndpoint,
    private_source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    tmp_path: Path,
    server_id: int,
) -> None:
    """A failover done by hand: the same database on another server, the pipeline's hostname
    changed. Its binlog positions would name other transactions there."""
    with private_source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{source_database}`")
        cursor.execute(f"CREATE TABLE `{source_database}`.orders (id INT PRIMARY KEY)")
        cursor.execute("SELECT @@server_uuid")
        (first_server,) = cursor.fetchone()
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.orders (id INT PRIMARY KEY)")
        cursor.execute("SELECT @@server_uuid")
        (second_server,) = cursor.fetchone()

    def pipeline(name: str, server: SourceEndpoint) -> PipelineConfig:
        return load_pipeline(
            write_pipeline(
                tmp_path / name,
                server,
                endpoints.catalog,
                database=source_database,
                tables="orders",
                namespace=namespace,
                server_id=server_id,
            )
        )

    first = pipeline("a.yaml", private_source)
    run_to_end(
        make_runner(first),
        private_source,
        server_id,
        max_seconds=60,
    )
    table = ChangelogTable(catalog.load_table(f"{namespace}.orders_changelog"))
    recorded = table.progress()
    assert recorded is not None and recorded.server_uuid == first_server

    moved = pipeline("b.yaml", source)
    with pytest.raises(StartupCheckError) as refused:
        make_runner(moved)

    assert (
        f"is in the binlog of the server {first_server} (server_uuid), but this is the server "
        f"{second_server}: binlog files and positions mean nothing on another server"
    ) in str(refused.value)
