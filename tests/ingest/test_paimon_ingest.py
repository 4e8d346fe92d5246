"""Ingest into a Paimon sink (docs/paimon.md), through ``tidemark ingest`` on the real source
servers: the primary-key table equals the source row for row, through SIGKILLs at random
moments, and a read at a past watermark returns the source as it was then.

Each change is written once: Paimon merges a key's changes within one commit, so across the
table's commits (read as change rows, commit by commit) no change of the workload may appear
twice, and the merged table must hold each key's newest state.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from bench.workloads.stock import Workload, create_stock, ingest
from ingest.changelog.catalogs import open_sink_catalog
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.ingest.stock_workload import ingest_to_end
from tests.runners import MakeRunner, runner_factory
from tidemark.app.cli import main
from tidemark.config import load_pipeline
from tidemark.lake.paimon import (
    PaimonTable,
    open_paimon_catalog,
    open_table,
    plan_changes,
    read_splits,
)
from tidemark.source import SourceConnection
from tidemark.stack.endpoints import LakeEndpoint, SourceEndpoint
from tidemark.stack.process import wait_for

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

KILLS = 4

pytestmark = pytest.mark.every_source


class PaimonSink:
    """The test's Paimon warehouse and one of its tables."""

    def __init__(self, warehouse: Path, identifier: str) -> None:
        self.warehouse = str(warehouse)
        self.identifier = identifier

    def runners(self) -> MakeRunner:
        """In-process ingest runs into this warehouse, as ``tidemark ingest`` runs."""
        return runner_factory(
            open_sink_catalog("paimon", "tidemark", {"warehouse": self.warehouse})
        )

    def table(self) -> PaimonTable | None:
        return open_paimon_catalog({"warehouse": self.warehouse}).load_table(self.identifier)

    def committed(self) -> bool:
        table = self.table()
        return table is not None and table.has_snapshots()

    def rows(self, at_watermark: int | None = None) -> dict[int, int]:
        """qty by id, as a reader of the table sees it."""
        table = self.table()
        assert table is not None
        read = table.read(["id", "qty"], at_watermark=at_watermark).to_pylist()
        return {row["id"]: row["qty"] for row in read}

    def newest_watermark(self) -> int:
        table = self.table()
        assert table is not None
        newest = next(table.snapshots())
        assert newest.watermark is not None
        return newest.watermark

    def orders_written(self) -> Counter[int]:
        """How often each change (its ``_tm_order``) was written, over every commit."""
        table = open_table({"warehouse": self.warehouse}, self.identifier)
        newest = table.snapshot_manager().get_latest_snapshot().id
        splits = plan_changes(table, self.identifier, 1, newest)
        written: Counter[int] = Counter()
        for batch in read_splits(table, splits, ["_tm_order"]):
            written.update(batch.column("_tm_order").to_pylist())
        return written


def source_rows(source: SourceConnection, database: str) -> dict[int, int]:
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"SELECT id, qty FROM `{database}`.stock")
        return {int(key): int(qty) for key, qty in cursor.fetchall()}


PaimonPipeline = Callable[..., tuple[Path, PaimonSink]]

#: ``extra`` of a pipeline that follows drops and renames (Flink CDC's ``evolve``)
EVOLVE = "  schema.change.behavior: evolve\n"


@pytest.fixture
def paimon_pipeline(
    source: SourceEndpoint,
    lake: LakeEndpoint,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
) -> PaimonPipeline:
    """``paimon_pipeline(table, **options)``: the pipeline file of ``source_database``'s
    ``table`` into the test's Paimon warehouse (``options`` go to ``write_pipeline``), and
    that table's sink."""

    def write(table: str, **options: str) -> tuple[Path, PaimonSink]:
        sink = PaimonSink(tmp_path / "warehouse", f"{namespace}.{table}")
        path = write_pipeline(
            tmp_path / f"{table}.yaml",
            source,
            lake,
            database=source_database,
            tables=table,
            namespace=namespace,
            server_id=server_id,
            paimon_warehouse=sink.warehouse,
            **options,
        )
        return path, sink

    return write


@pytest.fixture
def paimon_stock(
    source: SourceEndpoint, source_database: str, paimon_pipeline: PaimonPipeline
) -> tuple[Path, PaimonSink]:
    """A pipeline of ``source_database``'s ``stock`` table into a Paimon warehouse; an idle
    table commits its watermark every second."""
    create_stock(source, source_database)
    return paimon_pipeline("stock", extra="tidemark:\n  ingest:\n    idle-commit-interval: 1 s\n")


def server_time_ms(source: SourceConnection) -> int:
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)")
        row = cursor.fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.timeout(900)
def test_sigkill_at_random_moments_into_paimon_loses_and_duplicates_nothing(
    paimon_stock: tuple[Path, PaimonSink],
    source: SourceEndpoint,
    source_database: str,
    server_id: int,
) -> None:
    pipeline, sink = paimon_stock
    first = ingest(pipeline)  # latest-offset: it commits its start before any write
    assert wait_for(sink.committed, timeout=120), first
    workload = Workload(source.admin_source(), source_database, 20261129, (1, 20), 0.0)
    workload.start()
    chance = random.Random(43)
    process = first
    try:
        for _ in range(KILLS):
            with pytest.raises(subprocess.TimeoutExpired):
                process.wait(timeout=chance.uniform(0.5, 4.0))  # killed, never exiting
            process.send_signal(signal.SIGKILL)
            process.wait()
            process = ingest(pipeline)
    finally:
        workload.stop()
    process.send_signal(signal.SIGKILL)
    process.wait()
    ingest_to_end(pipeline, source.cdc_source(server_id))

    assert workload.transactions > 20
    assert sink.rows() == source_rows(source.admin_source(), source_database)
    doubled = {order: times for order, times in sink.orders_written().items() if times > 1}
    assert doubled == {}, "changes written more than once"


def test_a_read_at_a_past_watermark_returns_the_source_as_it_was_then(
    paimon_stock: tuple[Path, PaimonSink],
    source: SourceEndpoint,
    source_database: str,
    server_id: int,
) -> None:
    pipeline, sink = paimon_stock
    admin = source.admin_source()
    running = ingest(pipeline)
    try:
        assert wait_for(sink.committed, timeout=120), "ingest committed its start"
        first = Workload(admin, source_database, 1, (1, 10), 0.0)
        first.start()
        assert wait_for(lambda: first.transactions >= 30, timeout=60)
        first.stop()
        written = server_time_ms(admin)  # nothing is written from here until the ALTER
        assert wait_for(lambda: sink.newest_watermark() >= written, timeout=60)
        then = source_rows(admin, source_database)
        # more changes, and a column added while ingest runs
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"ALTER TABLE `{source_database}`.stock ADD COLUMN note VARCHAR(20)")
            cursor.execute(f"UPDATE `{source_database}`.stock SET note = 'later', qty = qty + 1")
            conn.commit()
    finally:
        running.send_signal(signal.SIGKILL)
        running.wait()
    ingest_to_end(pipeline, source.cdc_source(server_id))

    assert sink.rows(at_watermark=written) == then
    now = source_rows(admin, source_database)
    assert sink.rows() == now != then
    table = sink.table()
    assert table is not None
    assert set(table.read(["note"]).column("note").to_pylist()) == {"later"}


def test_unconvertible_rows_go_to_a_paimon_error_table_and_status_counts_them(
    source: SourceEndpoint,
    namespace: str,
    admin_connection: Connection,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
    paimon_pipeline: PaimonPipeline,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE visits (id INT PRIMARY KEY, day DATE NOT NULL, note TEXT)")
        cursor.execute("SET SESSION sql_mode = 'ALLOW_INVALID_DATES'")
    path, sink = paimon_pipeline("visits")
    make_runner = sink.runners()
    statements = [
        ["INSERT INTO visits VALUES (1, '2024-05-01', 'fine')"],
        ["INSERT INTO visits VALUES (2, '0000-00-00', 'no such day')"],
        ["UPDATE visits SET day = '2024-05-02' WHERE id = 2"],  # after a restart
        ["INSERT INTO visits VALUES (3, '0000-00-00', 'again')"],
    ]
    for batch in statements:
        runner = make_runner(load_pipeline(path))
        with admin_connection.cursor() as cursor:
            for statement in batch:
                cursor.execute(statement)
        run_to_end(runner, source, server_id, max_seconds=60)

    paimon = open_paimon_catalog({"warehouse": sink.warehouse})
    visits, errors = (
        paimon.load_table(f"{namespace}.visits"),
        paimon.load_table(f"{namespace}.visits_errors"),
    )
    assert visits is not None and errors is not None
    assert sorted(visits.read(["id"]).column("id").to_pylist()) == [1, 2]
    error_rows = sorted(errors.read().to_pylist(), key=lambda row: row["_tm_order"])
    assert [(row["column_name"], row["value"]) for row in error_rows] == [
        ("day", "InvalidTemporal(text='0000-00-00')"),
        ("day", "InvalidTemporal(text='0000-00-00')"),
    ]
    assert json.loads(error_rows[1]["payload"])["note"] == "'again'"
    assert main(["status", str(path)]) == 0
    [_, line] = capsys.readouterr().out.partition("\n\n")[0].splitlines()
    assert line.split()[-2] == "2"  # the errors column


def test_a_bootstrap_and_the_stream_fill_the_paimon_table_as_the_source_has_it(
    source: SourceEndpoint,
    source_database: str,
    admin_connection: Connection,
    server_id: int,
    paimon_pipeline: PaimonPipeline,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE stock (id INT PRIMARY KEY, qty INT)")
        existing = [(key, key % 97) for key in range(100_001, 102_001)]  # the workload: 1 on
        cursor.executemany("INSERT INTO stock VALUES (%s, %s)", existing)
    pipeline, sink = paimon_pipeline(
        "stock", startup="initial", source_options="scan.incremental.snapshot.chunk.size: 300"
    )
    running = ingest(pipeline)
    workload = Workload(source.admin_source(), source_database, 7, (1, 5), 0.01)
    try:
        workload.start()  # while the bootstrap reads
        assert wait_for(lambda: workload.transactions >= 50, timeout=60)
    finally:
        workload.stop()
        running.send_signal(signal.SIGKILL)
        running.wait()
    ingest_to_end(pipeline, source.cdc_source(server_id))

    assert sink.rows() == source_rows(source.admin_source(), source_database)


def test_verify_passes_an_equal_paimon_table_and_finds_rows_changed_behind_its_back(
    source: SourceEndpoint,
    namespace: str,
    admin_connection: Connection,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
    paimon_pipeline: PaimonPipeline,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(40), qty INT)")
    path, sink = paimon_pipeline("orders")
    runner = sink.runners()(load_pipeline(path))
    with admin_connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO orders VALUES (%s, %s, %s)",
            [(key, f"item-{key}", key) for key in range(1, 251)],
        )
        cursor.execute("DELETE FROM orders WHERE id = 250")
    run_to_end(runner, source, server_id, max_seconds=60)

    assert main(["verify", str(path), "--page-rows", "100"]) == 0
    assert f"{namespace}.orders: OK, 249 source rows" in capsys.readouterr().out

    with admin_connection.cursor() as cursor:
        cursor.execute("SET SESSION sql_log_bin = 0")  # behind the pipeline's back:
        cursor.execute("UPDATE orders SET item = 'changed' WHERE id = 42")
        cursor.execute("DELETE FROM orders WHERE id = 43")
        cursor.execute("SET SESSION sql_log_bin = 1")

    assert main(["verify", str(path), "--page-rows", "100"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH, 248 source rows, 0 missing, 1 extra, 1 different, 0 in flight" in out
    assert "  different: 42\n" in out
    assert "  extra: 43\n" in out


def test_a_widened_column_widens_in_the_paimon_table_and_keeps_its_rows(
    source: SourceEndpoint,
    admin_connection: Connection,
    server_id: int,
    paimon_pipeline: PaimonPipeline,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE stock (id INT PRIMARY KEY, qty INT)")
    path, sink = paimon_pipeline("stock")
    runner = sink.runners()(load_pipeline(path))
    with admin_connection.cursor() as cursor:
        cursor.execute("INSERT INTO stock VALUES (1, 10), (2, 20)")
        cursor.execute("ALTER TABLE stock MODIFY qty BIGINT")
        cursor.execute("INSERT INTO stock VALUES (3, 5000000000)")
    run_to_end(runner, source, server_id, max_seconds=60)

    assert sink.rows() == {1: 10, 2: 20, 3: 5_000_000_000}
    table = sink.table()
    assert table is not None
    assert table.arrow_schema().field("qty").type == pa.int64()


def test_a_renamed_column_is_renamed_in_the_paimon_table_keeping_its_values(
    source: SourceEndpoint,
    admin_connection: Connection,
    server_id: int,
    paimon_pipeline: PaimonPipeline,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE stock (id INT PRIMARY KEY, qty INT)")
    path, sink = paimon_pipeline("stock", extra=EVOLVE)
    runner = sink.runners()(load_pipeline(path))
    with admin_connection.cursor() as cursor:  # rows before and after it, in one flush
        cursor.execute("INSERT INTO stock VALUES (1, 10), (2, 20)")
        cursor.execute("ALTER TABLE stock RENAME COLUMN qty TO amount")
        cursor.execute("INSERT INTO stock VALUES (3, 30)")
        cursor.execute("UPDATE stock SET amount = 11 WHERE id = 1")
    run_to_end(runner, source, server_id, max_seconds=60)
    # while ingest is stopped: it finds the new structure at start, then reads the ALTER
    with admin_connection.cursor() as cursor:
        cursor.execute("UPDATE stock SET amount = 21 WHERE id = 2")
        cursor.execute("ALTER TABLE stock CHANGE amount units BIGINT")
        cursor.execute("INSERT INTO stock VALUES (4, 5000000000)")
    run_to_end(sink.runners()(load_pipeline(path)), source, server_id, max_seconds=60)

    table = sink.table()
    assert table is not None
    schema = table.arrow_schema()
    assert "qty" not in schema.names and "amount" not in schema.names
    assert schema.field("units").type == pa.int64()
    rows = {row["id"]: row["units"] for row in table.read(["id", "units"]).to_pylist()}
    assert rows == {1: 11, 2: 21, 3: 30, 4: 5_000_000_000}


def test_a_dropped_column_is_dropped_from_the_paimon_table(
    source: SourceEndpoint,
    admin_connection: Connection,
    server_id: int,
    paimon_pipeline: PaimonPipeline,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE stock (id INT PRIMARY KEY, qty INT, note TEXT)")
    path, sink = paimon_pipeline("stock", extra=EVOLVE)
    runner = sink.runners()(load_pipeline(path))
    with admin_connection.cursor() as cursor:
        cursor.execute("INSERT INTO stock VALUES (1, 10, 'first')")
        cursor.execute("ALTER TABLE stock DROP COLUMN note")
        cursor.execute("INSERT INTO stock VALUES (2, 20)")
    run_to_end(runner, source, server_id, max_seconds=60)

    table = sink.table()
    assert table is not None
    assert "note" not in table.arrow_schema().names
    assert sink.rows() == {1: 10, 2: 20}


def test_columns_added_while_ingest_was_stopped_stay_when_it_reads_the_rows_between(
    source: SourceEndpoint,
    admin_connection: Connection,
    server_id: int,
    paimon_pipeline: PaimonPipeline,
) -> None:
    """The rows between two ALTERs made while ingest was stopped have a structure between
    them (told by their table map): not a drop of what the second ALTER added."""
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE stock (id INT PRIMARY KEY, qty INT)")
    path, sink = paimon_pipeline("stock", extra=EVOLVE)
    run_to_end(sink.runners()(load_pipeline(path)), source, server_id, max_seconds=60)
    with admin_connection.cursor() as cursor:
        cursor.execute("ALTER TABLE stock ADD COLUMN b INT")
        cursor.execute("INSERT INTO stock VALUES (1, 10, 100)")
        cursor.execute("ALTER TABLE stock ADD COLUMN c INT")
        cursor.execute("INSERT INTO stock VALUES (2, 20, 200, 2000)")

    run_to_end(sink.runners()(load_pipeline(path)), source, server_id, max_seconds=60)

    table = sink.table()
    assert table is not None
    read = table.read(["id", "qty", "b", "c"]).to_pylist()
    assert sorted(tuple(row.values()) for row in read) == [(1, 10, 100, None), (2, 20, 200, 2000)]


def test_under_lenient_a_renamed_or_dropped_column_stays_beside_the_new_one(
    source: SourceEndpoint,
    admin_connection: Connection,
    server_id: int,
    paimon_pipeline: PaimonPipeline,
) -> None:
    """Flink CDC's ``lenient`` (the default): the table keeps every column it had."""
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE stock (id INT PRIMARY KEY, qty INT, note TEXT)")
    path, sink = paimon_pipeline("stock")
    runner = sink.runners()(load_pipeline(path))
    with admin_connection.cursor() as cursor:
        cursor.execute("INSERT INTO stock VALUES (1, 10, 'first')")
        cursor.execute("ALTER TABLE stock RENAME COLUMN qty TO amount, DROP COLUMN note")
        cursor.execute("INSERT INTO stock VALUES (2, 20)")
    run_to_end(runner, source, server_id, max_seconds=60)

    table = sink.table()
    assert table is not None
    read = table.read(["id", "qty", "amount", "note"]).to_pylist()
    assert sorted(tuple(row.values()) for row in read) == [
        (1, 10, None, "first"),
        (2, None, 20, None),
    ]


@pytest.mark.parametrize("tool", ["gh-ost", "pt-osc"])
def test_an_online_schema_change_reaches_the_paimon_table_at_the_swap(
    tool: str,
    source: SourceEndpoint,
    admin_connection: Connection,
    server_id: int,
    paimon_pipeline: PaimonPipeline,
) -> None:
    helper, retired = {
        "gh-ost": ("_stock_gho", "_stock_del"),
        "pt-osc": ("_stock_new", "_stock_old"),
    }[tool]
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE stock (id INT PRIMARY KEY, qty INT)")
    path, sink = paimon_pipeline(
        "stock", source_options="scan.parse.online.schema.changes.enabled: true"
    )
    runner = sink.runners()(load_pipeline(path))
    with admin_connection.cursor() as cursor:  # what the tool does, step by step
        cursor.execute("INSERT INTO stock VALUES (1, 10)")
        cursor.execute(f"CREATE TABLE {helper} LIKE stock")
        cursor.execute(f"ALTER TABLE {helper} ADD COLUMN note TEXT, MODIFY qty BIGINT")
        cursor.execute(f"INSERT INTO {helper} (id, qty) SELECT id, qty FROM stock")
        cursor.execute("UPDATE stock SET qty = 11 WHERE id = 1")  # during the copy
        cursor.execute(f"REPLACE INTO {helper} (id, qty) VALUES (1, 11)")  # the tool's copy
        cursor.execute(f"RENAME TABLE stock TO {retired}, {helper} TO stock")
        cursor.execute(f"DROP TABLE {retired}")
        cursor.execute("INSERT INTO stock VALUES (2, 5000000000, 'after the swap')")
    run_to_end(runner, source, server_id, max_seconds=60)

    table = sink.table()
    assert table is not None
    assert table.arrow_schema().field("qty").type == pa.int64()
    rows = table.read(["id", "qty", "note", "_tm_source_table"]).to_pylist()
    assert sorted((r["id"], r["qty"], r["note"], r["_tm_source_table"]) for r in rows) == [
        (1, 11, None, "stock"),
        (2, 5_000_000_000, "after the swap", "stock"),
    ]
    catalog = open_paimon_catalog({"warehouse": sink.warehouse})
    assert catalog.list_tables(sink.identifier.split(".")[0]) == [sink.identifier]
