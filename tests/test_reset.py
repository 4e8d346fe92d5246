"""``tidemark reset FILE``: a pipeline started over drops what it made (its lake tables, the
scheduler's windows, its consumer group and report topic) and bootstraps again; never while it
runs, never without being sure."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from pyiceberg.catalog import Catalog

from scheduler.gate import mirror_task
from scheduler.reports_consumer import GROUP_PREFIX
from scheduler.state import PipelineLock
from tests.ingest.changelog_checks import changelog
from tests.ingest.pipelines import orders_pipeline, reports_block, run_to_end, write_pipeline
from tests.kafka_groups import commit_offset, consumer_groups
from tests.runners import MakeRunner, runner_factory
from tidemark.app.cli import main
from tidemark.app.pipeline import Pipeline
from tidemark.errors import TerminalError
from tidemark.lake.paimon import open_paimon_catalog
from tidemark.stack.endpoints import LakeEndpoint, SourceEndpoint, StackEndpoints
from tidemark.windows import Window

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]


class _Terminal(io.StringIO):
    """A terminal whose person types ``text``."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def pipeline(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    lake: LakeEndpoint,
    admin_connection: Connection,
    source_database: str,
    namespace: str,
    reports_topic: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    tmp_path: Path,
    server_id: int,
) -> Pipeline:
    """A pipeline that has bootstrapped three rows, has a mirror, a window run recorded and a
    consumer group on its report topic: all that a reset drops."""
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(20))")
        cursor.execute("INSERT INTO orders VALUES (1, 'kettle'), (2, 'mug'), (3, 'tray')")
    kafka = endpoints.kafka.bootstrap_servers
    path = orders_pipeline(
        tmp_path,
        source,
        lake,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
        extra=reports_block(reports_topic, {"bootstrap.servers": kafka}),
    )
    opened = Pipeline.open(path)
    runner = make_runner(opened.config)
    run_to_end(runner, source, server_id, max_seconds=60)
    catalog.create_table(f"{namespace}.orders", pa.schema([pa.field("id", pa.int32())]))
    store = opened.state_store()
    store.create()
    window = Window.ending_at(datetime(2026, 11, 27, 10, 0, tzinfo=UTC), timedelta(minutes=5))
    store.mark_pending(opened.name, mirror_task(f"{namespace}.orders"), window, None, window.end)
    store.close()
    commit_offset(kafka, GROUP_PREFIX + opened.name, reports_topic)
    return opened


@pytest.mark.every_storage
def test_a_reset_drops_what_the_pipeline_made_and_its_next_run_bootstraps_again(
    pipeline: Pipeline,
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    namespace: str,
    reports_topic: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["reset", "--yes", str(pipeline.path)]) == 0

    said = capsys.readouterr().out
    assert f"  table {namespace}.orders_changelog\n  table {namespace}.orders\n" in said
    assert "dropped 2 table(s)" in said
    assert not catalog.table_exists(f"{namespace}.orders_changelog")
    assert not catalog.table_exists(f"{namespace}.orders")
    store = pipeline.state_store()
    assert store.runs(pipeline.name) == []
    store.close()
    admin = AdminClient({"bootstrap.servers": endpoints.kafka.bootstrap_servers})
    assert GROUP_PREFIX + pipeline.name not in consumer_groups(admin)
    assert reports_topic not in admin.list_topics(timeout=10).topics

    again = Pipeline.open(pipeline.path)
    runner = make_runner(again.config)
    run_to_end(runner, source, server_id, max_seconds=60)
    reads = sorted(row["id"] for row in changelog(catalog, namespace) if row["_tm_op"] == "r")
    assert reads == [1, 2, 3]


def test_a_paimon_pipeline_is_reset_and_its_next_run_bootstraps_again(
    source: SourceEndpoint,
    lake: LakeEndpoint,
    admin_connection: Connection,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(20))")
        cursor.execute("INSERT INTO orders VALUES (1, 'kettle'), (2, 'mug'), (3, 'tray')")
    path = write_pipeline(
        tmp_path / "p.yaml",
        source,
        lake,
        database=source_database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
        startup="initial",
        paimon_warehouse=str(tmp_path / "warehouse"),
    )
    first = Pipeline.open(path)
    run_to_end(runner_factory(first.sink_catalog)(first.config), source, server_id, 60)
    table_folder = tmp_path / "warehouse" / f"{namespace}.db" / "orders"
    assert table_folder.is_dir()
    with admin_connection.cursor() as cursor:  # a run that resumed would stream it ("c")
        cursor.execute("INSERT INTO orders VALUES (4, 'lid')")

    assert main(["reset", "--yes", str(path)]) == 0

    said = capsys.readouterr().out
    assert f"  table {namespace}.orders\n" in said
    assert "scheduler" not in said  # no tidemark.reports: no scheduler, no state to forget
    assert not table_folder.exists()
    again = Pipeline.open(path)
    run_to_end(runner_factory(again.sink_catalog)(again.config), source, server_id, 60)
    table = open_paimon_catalog({"warehouse": str(tmp_path / "warehouse")}).load_table(
        f"{namespace}.orders"
    )
    assert table is not None
    read = table.read(["id", "_tm_op"]).to_pylist()
    assert sorted((row["id"], row["_tm_op"]) for row in read) == [
        (1, "r"),
        (2, "r"),
        (3, "r"),
        (4, "r"),
    ]


def test_a_report_topic_another_pipeline_reads_is_kept_and_its_old_reports_skipped(
    pipeline: Pipeline,
    endpoints: StackEndpoints,
    reports_topic: str,
    unique_name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kafka = endpoints.kafka.bootstrap_servers
    other = f"{GROUP_PREFIX}other-{unique_name}"
    commit_offset(kafka, other, reports_topic)
    producer = Producer({"bootstrap.servers": kafka})
    for _ in range(3):  # reports of the tables about to be dropped
        producer.produce(reports_topic, b"an old report")
    assert producer.flush(30) == 0

    assert main(["reset", "--yes", str(pipeline.path)]) == 0

    admin = AdminClient({"bootstrap.servers": kafka})
    assert reports_topic in admin.list_topics(timeout=10).topics
    assert f"Kept topic {reports_topic}: consumer groups {other} read it too" in (
        capsys.readouterr().out
    )
    # the pipeline's scheduler starts after them, not from the topic's start
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": GROUP_PREFIX + pipeline.name})
    [committed] = consumer.committed([TopicPartition(reports_topic, 0)], timeout=30)
    consumer.close()
    assert committed.offset == 3


def test_a_running_scheduler_is_not_reset_under_it(
    pipeline: Pipeline, namespace: str, catalog: Catalog
) -> None:
    store = pipeline.state_store()
    lock = PipelineLock(store, pipeline.name)
    lock.acquire()
    try:
        with pytest.raises(TerminalError, match="the scheduler of pipeline .* is running"):
            pipeline.reset_targets()
    finally:
        lock.release()
        store.close()

    assert catalog.table_exists(f"{namespace}.orders_changelog")


def test_an_ingest_started_after_the_check_stops_the_reset_before_it_drops_anything(
    pipeline: Pipeline, source: SourceEndpoint, namespace: str, catalog: Catalog
) -> None:
    targets = pipeline.reset_targets()
    with source.admin_source().connect() as holder, holder.cursor() as cursor:
        cursor.execute("SELECT GET_LOCK(%s, 0)", (pipeline.ingest_lease,))

        with pytest.raises(TerminalError, match="started since the check: stop it"):
            pipeline.reset(targets)

    assert catalog.table_exists(f"{namespace}.orders_changelog")


def test_a_running_ingest_is_not_reset_under_it(
    pipeline: Pipeline, source: SourceEndpoint, namespace: str, catalog: Catalog
) -> None:
    with source.admin_source().connect() as holder, holder.cursor() as cursor:
        cursor.execute("SELECT GET_LOCK(%s, 0)", (pipeline.ingest_lease,))

        with pytest.raises(TerminalError, match="the ingest of pipeline .* is running .*: stop"):
            Pipeline.open(pipeline.path).reset_targets()

    assert catalog.table_exists(f"{namespace}.orders_changelog")


@pytest.mark.parametrize(
    ("stdin", "refusal"),
    [
        (io.StringIO(""), "no terminal to confirm on; pass --yes"),
        (_Terminal("shop\n"), "the name typed is not the pipeline's"),
    ],
    ids=["no terminal", "another name typed"],
)
def test_a_reset_not_confirmed_drops_nothing(
    stdin: io.StringIO,
    refusal: str,
    pipeline: Pipeline,
    namespace: str,
    catalog: Catalog,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("sys.stdin", stdin)

    assert main(["reset", str(pipeline.path)]) == 1

    assert f"tidemark reset: error: not resetting: {refusal}" in capsys.readouterr().err
    assert catalog.table_exists(f"{namespace}.orders_changelog")


def test_a_reset_confirmed_with_the_pipelines_name_goes_on(
    pipeline: Pipeline, namespace: str, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal(f"{pipeline.name}\n"))

    assert main(["reset", str(pipeline.path)]) == 0

    assert not catalog.table_exists(f"{namespace}.orders_changelog")
