"""The bootstrap: existing rows land exactly once, lock-free, while writers keep writing.

The check throughout: the changelog, merged (latest change per key by order, deletes applied),
equals the source table, read with the same type mapping.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from bench.polling import wait_until
from ingest.bootstrap.bootstrapper import TableChangedDuringBootstrapError
from ingest.bootstrap.display import LogDisplay
from ingest.bootstrap.load_gate import ThreadsRunning
from ingest.changelog.table import ChangelogTable
from ingest.stream.runner import StopWhen
from tests.ingest.changelog_checks import Workload, changelog, merged, source_rows
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.output.screen import FakeTerminal, screen
from tests.runners import MakeRunner
from tests.server_share import require_alone
from tidemark.app.cli import main
from tidemark.app.output.bootstrap_progress import BootstrapProgress
from tidemark.config import load_pipeline
from tidemark.contracts.bootstrap_state import BootstrapState
from tidemark.errors import TerminalError
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

SMALL_CHUNKS = "scan.incremental.snapshot.chunk.size: 100"
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


def _orders(connection: Connection, rows: int, name: str = "orders") -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {name} (id INT PRIMARY KEY, item VARCHAR(40), qty INT NOT NULL)"
        )
        cursor.executemany(  # one multi-row INSERT: pymysql joins the rows
            f"INSERT INTO {name} VALUES (%(id)s, %(item)s, %(qty)s)", _first_orders(rows)
        )


def _ingest_block(
    flush_rows: int,
    max_rate: int | None = None,
    resource_group: str | None = None,
    max_threads_running: int | None = None,
) -> str:
    options = {
        "flush-rows": flush_rows,
        "snapshot-max-rows-per-second": max_rate,
        "snapshot-resource-group": resource_group,
        "snapshot-max-threads-running": max_threads_running,
    }
    lines = "".join(f"    {key}: {value}\n" for key, value in options.items() if value)
    return f"tidemark:\n  ingest:\n{lines}"


def _pipeline(
    path: Path,
    endpoints: StackEndpoints,
    database: str,
    namespace: str,
    server_id: int,
    *,
    tables: str = "orders",
    source_options: str = SMALL_CHUNKS,
    extra: str = "",
    source: SourceEndpoint | None = None,
    parallelism: int = 1,
) -> Path:
    """The pipeline file of a bootstrap test; on MariaDB unless ``source`` says otherwise."""
    path.write_text(
        local_pipeline(
            source or endpoints.mariadb,
            endpoints.catalog,
            database=database,
            tables=tables,
            namespace=namespace,
            server_id=server_id,
            startup="initial",
            source_options=source_options,
            extra=extra,
            parallelism=parallelism,
        )
    )
    return path


def bootstrap_states(catalog: Catalog, namespace: str, table: str = "orders") -> Iterator[Any]:
    iceberg = catalog.load_table(f"{namespace}.{table}_changelog")
    for snapshot in iceberg.snapshots():
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        yield summary


@pytest.mark.every_source
@pytest.mark.parametrize(
    "incremental",
    [
        "true",
        pytest.param(
            "false",
            marks=pytest.mark.mariadb_only("MySQL gives no consistent snapshot's position"),
        ),
    ],
)
def test_a_snapshot_taken_while_writers_write_then_streamed_equals_the_source(
    incremental: str,
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 3000)
    config = load_pipeline(
        _pipeline(
            tmp_path / "p.yaml",
            endpoints,
            source_database,
            namespace,
            server_id,
            source_options=f"{SMALL_CHUNKS}\nscan.incremental.snapshot.enabled: {incremental}",
            extra=_ingest_block(flush_rows=300, max_rate=2000),
            source=source,
        )
    )

    with Workload(source, source_database, keys=3000, seed=1) as workload:
        runner = make_runner(config)
        during_bootstrap = workload.statements
    run_to_end(runner, source, server_id, max_seconds=120)

    assert during_bootstrap > 20, "the workload must overlap the bootstrap"
    rows = changelog(catalog, namespace)
    snapshot_reads = [row["id"] for row in rows if row["_tm_op"] == "r"]
    assert len(snapshot_reads) == len(set(snapshot_reads)), "a row was read twice"
    assert merged(rows) == source_rows(admin_connection)
    summaries = list(bootstrap_states(catalog, namespace))
    bootstrap_commits = [s for s in summaries if "tidemark.bootstrap" in s]
    assert len(bootstrap_commits) == len(snapshot_reads) // 300 + 1  # every 300 rows, then the rest
    assert {s["tidemark.watermark"] for s in bootstrap_commits} == {"0"}
    assert int(summaries[-1]["tidemark.watermark"]) > 0


@pytest.mark.every_source
@pytest.mark.parametrize("cut_by", ["id", "qty"])
def test_a_bootstrap_killed_mid_way_resumes_after_its_last_commit_and_stays_exact(
    cut_by: str,
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 4000)
    with admin_connection.cursor() as cursor:  # seven values of qty, 571 or 572 rows each
        cursor.execute("CREATE INDEX by_qty ON orders (qty)")
    key_column = f"\nscan.incremental.snapshot.chunk.key-column: {source_database}.orders:qty"
    # two readers: the key ranges they read ahead, some never committed, are read again from
    # the last committed key (the LIMIT paging of one reader resumes in the background-kill test)
    path = _pipeline(
        tmp_path / "p.yaml",
        endpoints,
        source_database,
        namespace,
        server_id,
        source_options=SMALL_CHUNKS + (key_column if cut_by == "qty" else ""),
        extra=_ingest_block(flush_rows=500, max_rate=1000),
        source=source,
        parallelism=2,
    )
    process = _ingest_process(path)
    try:
        committed = _wait_for_bootstrap_rows(catalog, f"{namespace}.orders_changelog", 1000)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    workload = Workload(source, source_database, keys=4000, seed=2)
    for _ in range(300):  # changes in read and unread chunks, before the restart
        workload.step()
    workload.close()
    config = load_pipeline(path)

    runner = make_runner(config)
    run_to_end(runner, source, server_id, max_seconds=120)

    assert not committed.done
    finished = committed.table(f"{source_database}.orders")
    assert finished.key == (cut_by,)
    assert finished.after is not None
    rows = changelog(catalog, namespace)
    snapshot_reads = [row for row in rows if row["_tm_op"] == "r"]
    # nothing was written before the kill: the finished chunks held their first rows, and
    # had they been read again, their keys would be read twice. (A row the workload moved
    # from a finished qty to a later one is read again there, as it stands.)
    reads_of_finished = Counter(
        row[cut_by] for row in snapshot_reads if row[cut_by] <= finished.after[0]
    )
    first_rows = Counter(
        row[cut_by] for row in _first_orders(4000) if row[cut_by] <= finished.after[0]
    )
    assert reads_of_finished == first_rows, "a finished chunk was read again"
    assert merged(rows) == source_rows(admin_connection)


def _first_orders(rows: int) -> list[dict[str, Any]]:
    """The rows ``_orders`` writes."""
    return [{"id": key, "item": f"item-{key}", "qty": key % 7} for key in range(1, rows + 1)]


@pytest.mark.every_source
def test_chunks_read_by_two_readers_while_every_row_of_one_keeps_changing_equal_the_source(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 3000)
    path = _pipeline(
        tmp_path / "p.yaml",
        endpoints,
        source_database,
        namespace,
        server_id,
        extra=_ingest_block(flush_rows=300, max_rate=2000),
        source=source,
        parallelism=2,
    )
    config = load_pipeline(path)

    with _churning(
        source, source_database, "UPDATE orders SET qty = qty + 1 WHERE id BETWEEN 1001 AND 1100"
    ) as rounds:
        runner = make_runner(config)
        during_bootstrap = len(rounds)
    run_to_end(runner, source, server_id, max_seconds=120)

    assert during_bootstrap > 3, "the chunk must change while the bootstrap reads"
    rows = changelog(catalog, namespace)
    snapshot_reads = [row["id"] for row in rows if row["_tm_op"] == "r"]
    assert len(snapshot_reads) == len(set(snapshot_reads)), "a row was read twice"
    assert merged(rows) == source_rows(admin_connection)


@pytest.fixture
def cdc_resource_group(source: SourceEndpoint, resource_group: str) -> Iterator[str]:
    """``resource_group``, which the stack's CDC account may join for the test."""
    account = f"'{source.cdc_user}'@'%'"
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"GRANT RESOURCE_GROUP_USER ON *.* TO {account}")
    yield resource_group
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"REVOKE RESOURCE_GROUP_USER ON *.* FROM {account}")


class _ResourceGroupWatch(LogDisplay):
    """A bootstrap display that, at each chunk, notes the server threads in ``group``: their
    connection ids and accounts."""

    def __init__(self, source: SourceEndpoint, group: str) -> None:
        super().__init__()
        self.threads: set[tuple[int, str]] = set()
        self._group = group
        self._query_lock = threading.Lock()  # the base class has a _lock of its own
        self._conn = source.admin_source().connect()

    def advance(self, table: str, rows: int) -> None:
        super().advance(table, rows)
        with self._query_lock, self._conn.cursor() as cursor:
            cursor.execute(
                "SELECT PROCESSLIST_ID, PROCESSLIST_USER FROM performance_schema.threads "
                "WHERE RESOURCE_GROUP = %s",
                (self._group,),
            )
            self.threads.update((int(id_), str(user)) for id_, user in cursor.fetchall())

    def close(self) -> None:
        super().close()
        self._conn.close()


@pytest.mark.every_source
@pytest.mark.mysql_only("resource groups are MySQL's")
def test_every_connection_the_bootstrap_reads_with_runs_in_the_resource_group_it_is_given(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
    cdc_resource_group: str,
) -> None:
    _orders(admin_connection, 3000)
    path = _pipeline(
        tmp_path / "p.yaml",
        endpoints,
        source_database,
        namespace,
        server_id,
        extra=_ingest_block(flush_rows=300, max_rate=2000, resource_group=cdc_resource_group),
        source=source,
        parallelism=2,
    )
    config = load_pipeline(path)
    watch = _ResourceGroupWatch(source, cdc_resource_group)

    runner = make_runner(config, display=watch)
    run_to_end(runner, source, server_id, max_seconds=120)

    # the table's own connection and one per reader (30 chunks at 2,000 rows/s: both readers
    # have read by the second chunk), each the CDC account's
    assert len(watch.threads) == 3
    assert {user for _, user in watch.threads} == {source.cdc_user}
    assert merged(changelog(catalog, namespace)) == source_rows(admin_connection)


class _ChunkTimes(LogDisplay):
    """A bootstrap display that notes when each chunk was read."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def advance(self, table: str, rows: int) -> None:
        super().advance(table, rows)
        self.times.append(time.monotonic())


def _threads_running(source: SourceEndpoint) -> int:
    """The source's ``Threads_running``, this statement included: every client's statements
    count, so the test that reads it must run alone."""
    require_alone("Threads_running (every client's statements)")
    reading = ThreadsRunning(source.admin_source())
    try:
        return reading()
    finally:
        reading.close()


@contextlib.contextmanager
def _busy(source: SourceEndpoint, statements: int, seconds: int) -> Iterator[list[float]]:
    """``statements`` connections each running ``SELECT SLEEP(seconds)``, all of them running
    when the block starts; yields the list of the times they end."""
    returned: list[float] = []

    def sleep() -> None:
        with source.admin_source().connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"SELECT SLEEP({seconds})")
            returned.append(time.monotonic())

    threads = [threading.Thread(target=sleep) for _ in range(statements)]
    for thread in threads:
        thread.start()
    try:
        wait_until("the sleeps running", lambda: _threads_running(source) > statements, 10)
        yield returned
    finally:
        for thread in threads:
            thread.join()


@pytest.mark.every_source
@pytest.mark.server_wide  # Threads_running counts every client's statements
def test_a_bootstrap_reads_nothing_while_the_source_runs_more_than_its_limit_then_is_exact(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 1000)
    path = _pipeline(
        tmp_path / "p.yaml",
        endpoints,
        source_database,
        namespace,
        server_id,
        extra=_ingest_block(flush_rows=300, max_threads_running=2),
        source=source,
    )
    config = load_pipeline(path)
    chunks = _ChunkTimes()
    assert _threads_running(source) - 1 <= 2, "the quiet source is under the limit"

    with _busy(source, statements=4, seconds=5) as returned:
        runner = make_runner(config, display=chunks)
    run_to_end(runner, source, server_id, max_seconds=120)

    assert chunks.times, "the bootstrap read its chunks"
    # at most 2 besides the gate's sample once 2 of the 4 have ended; a sleep's end is noted
    # a moment after the server ends it (its thread needs the interpreter lock), so half a
    # second of slack, against the 5 s the sleeps hold the gate
    gate_may_open = sorted(returned)[1] - 0.5
    assert min(chunks.times) >= gate_may_open, "a chunk was read while the source was busy"
    assert merged(changelog(catalog, namespace)) == source_rows(admin_connection)


@contextlib.contextmanager
def _churning(source: SourceEndpoint, database: str, statement: str) -> Iterator[list[float]]:
    """``statement`` run over and over in a thread for the block, twenty times a second (a
    load, not a flood the stream then needs minutes for); yields the list that grows by one
    each time it is done."""
    done: list[float] = []
    stop = threading.Event()

    def churn() -> None:
        with source.admin_source().connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"USE `{database}`")
            while not stop.wait(0.05):
                cursor.execute(statement)
                conn.commit()
                done.append(time.monotonic())

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    try:
        yield done
    finally:
        stop.set()
        thread.join(timeout=30)


@pytest.mark.every_source
def test_a_table_keyed_by_a_string_and_a_number_bootstraps_exactly_under_writes(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE stock (region VARCHAR(10), id INT, qty INT NOT NULL, "
            "PRIMARY KEY (region, id))"
        )
        cursor.executemany(
            "INSERT INTO stock VALUES (%s, %s, 0)",
            [(region, key) for region in ("Eu", "eu-west", "uk", "US") for key in range(400)],
        )
    config = load_pipeline(
        _pipeline(
            tmp_path / "p.yaml",
            endpoints,
            source_database,
            namespace,
            server_id,
            tables="stock",
            extra=_ingest_block(flush_rows=300, max_rate=1000),
            source=source,
            parallelism=2,
        )
    )

    with _churning(
        source,
        source_database,
        "UPDATE stock SET qty = qty + 1 WHERE id % 50 = 7",  # rows in every chunk
    ) as rounds:
        runner = make_runner(config)
        during_bootstrap = len(rounds)
    run_to_end(runner, source, server_id, max_seconds=120)

    assert during_bootstrap > 3, "the writes must overlap the bootstrap"
    rows = changelog(catalog, namespace, "stock")
    reads = [(row["region"], row["id"]) for row in rows if row["_tm_op"] == "r"]
    assert len(reads) == len(set(reads)) == 1600
    assert merged(rows, ("region", "id")) == source_rows(
        admin_connection, "stock", ("region", "id")
    )


@pytest.mark.every_source
def test_chunks_cut_by_a_column_that_is_not_unique_bootstrap_exactly(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 3000)
    with admin_connection.cursor() as cursor:  # seven values of qty, 428 or 429 rows each
        cursor.execute("CREATE INDEX by_qty ON orders (qty)")
    config = load_pipeline(
        _pipeline(
            tmp_path / "p.yaml",
            endpoints,
            source_database,
            namespace,
            server_id,
            source_options=f"{SMALL_CHUNKS}\n"
            f"scan.incremental.snapshot.chunk.key-column: {source_database}.orders:qty",
            extra=_ingest_block(flush_rows=300, max_rate=2000),
            source=source,
        )
    )

    with Workload(source, source_database, keys=3000, seed=3) as workload:
        runner = make_runner(config)
        during_bootstrap = workload.statements
    run_to_end(runner, source, server_id, max_seconds=120)

    assert during_bootstrap > 20, "the workload must overlap the bootstrap"
    rows = changelog(catalog, namespace)
    # a row whose qty changed can be read in two chunks, each time as it stood; the change is
    # replayed after both reads, so the merge is exact all the same
    assert merged(rows) == source_rows(admin_connection)
    states = [
        BootstrapState.from_summary(summary) for summary in bootstrap_states(catalog, namespace)
    ]
    keys = {table.key for state in states if state is not None for table in state.tables.values()}
    assert keys == {("qty",)}


@pytest.mark.every_source
@pytest.mark.parametrize(
    ("alter", "restarts"),
    [
        # a column the reads name is gone: the run stops, the next one reads on without it
        ("ALTER TABLE orders DROP COLUMN item", True),
        ("ALTER TABLE orders MODIFY qty BIGINT NOT NULL", False),
        ("ALTER TABLE orders ADD COLUMN note VARCHAR(10) NULL", False),
    ],
)
def test_a_table_altered_between_its_chunks_bootstraps_exactly(
    alter: str,
    restarts: bool,
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 2000)
    config = load_pipeline(
        _pipeline(
            tmp_path / "p.yaml",
            endpoints,
            source_database,
            namespace,
            server_id,
            extra=_ingest_block(flush_rows=200, max_rate=1000),
            source=source,
        )
    )
    identifier = f"{namespace}.orders_changelog"
    after_alter: list[BootstrapState | None] = []

    def alter_once_rows_are_committed() -> None:
        _wait_for_bootstrap_rows(catalog, identifier, 200)
        with admin_connection.cursor() as cursor:
            cursor.execute(alter)
        after_alter.append(ChangelogTable(catalog.load_table(identifier)).bootstrap())

    altering = threading.Thread(target=alter_once_rows_are_committed)
    altering.start()
    try:
        if restarts:
            with pytest.raises(
                TableChangedDuringBootstrapError,
                match=f"the structure of {source_database}.orders changed while it was being "
                r"bootstrapped \(Unknown column 'item'.*\): start ingest again",
            ):
                make_runner(config)
        runner = make_runner(config)
    finally:
        altering.join()
    run_to_end(runner, source, server_id, max_seconds=120)

    assert after_alter and after_alter[0] is not None and not after_alter[0].done
    now = source_rows(admin_connection)
    columns = next(iter(now.values())).keys()
    lake = {
        key: {c: row.get(c) for c in columns}
        for key, row in merged(changelog(catalog, namespace)).items()
    }
    assert lake == now


def test_a_bootstrap_cut_by_one_key_is_not_resumed_by_another(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 2000)
    path = _pipeline(
        tmp_path / "p.yaml",
        endpoints,
        source_database,
        namespace,
        server_id,
        extra=_ingest_block(flush_rows=200, max_rate=500),
    )
    process = _ingest_process(path)
    try:
        _wait_for_bootstrap_rows(catalog, f"{namespace}.orders_changelog", 200)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    path.write_text(
        path.read_text().replace(
            "  scan.incremental.snapshot.chunk.size: 100\n",
            "  scan.incremental.snapshot.chunk.size: 100\n"
            f"  scan.incremental.snapshot.chunk.key-column: {source_database}.orders:qty\n",
        )
    )
    config = load_pipeline(path)
    assert config.source.chunk_key_column(source_database, "orders") == "qty"

    with pytest.raises(
        TerminalError, match="was cut into chunks by id, and would now be cut by qty"
    ):
        make_runner(config)


def _ingest_process(path: Path) -> subprocess.Popen[bytes]:
    """``tidemark ingest`` of the pipeline file, in a process a test can kill."""
    return subprocess.Popen(
        [sys.executable, "-m", "tidemark.app.cli", "ingest", str(path)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for_bootstrap_rows(catalog: Catalog, identifier: str, rows: int) -> BootstrapState:
    def committed() -> BootstrapState | None:
        try:
            state = ChangelogTable(catalog.load_table(identifier)).bootstrap()
        except NoSuchTableError:
            return None
        return state if state is not None and state.rows >= rows else None

    state = wait_until(f"{identifier} committing {rows} bootstrap rows", committed, 90)
    assert state is not None
    return state


ADD_TABLES = f"{SMALL_CHUNKS}\nscan.newly-added-table.enabled: true"


def _orders_streaming_then_users_added(
    tmp_path: Path,
    endpoints: StackEndpoints,
    database: str,
    namespace: str,
    make_runner: MakeRunner,
    server_id: int,
    extra: str = "",
    source: SourceEndpoint | None = None,
) -> Path:
    """Runs a pipeline of orders alone to the end; returns the same pipeline with users added.
    On MariaDB unless ``source`` says otherwise."""
    source = source or endpoints.mariadb
    first = load_pipeline(
        _pipeline(
            tmp_path / "a.yaml",
            endpoints,
            database,
            namespace,
            server_id,
            source_options=ADD_TABLES,
            source=source,
        )
    )
    run_to_end(make_runner(first), source, server_id, 60)
    return _pipeline(
        tmp_path / "b.yaml",
        endpoints,
        database,
        namespace,
        server_id,
        tables=f"orders,{database}.users",
        source_options=ADD_TABLES,
        extra=extra,
        source=source,
    )


@pytest.mark.every_source
def test_a_table_added_to_a_running_pipeline_bootstraps_while_the_others_stream(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 300)
    _orders(admin_connection, 1_000, name="users")
    # users joins; its bootstrap is held to 100 rows a second: ten seconds
    second = load_pipeline(
        _orders_streaming_then_users_added(
            tmp_path,
            endpoints,
            source_database,
            namespace,
            make_runner,
            server_id,
            extra=_ingest_block(flush_rows=100, max_rate=100),
            source=source,
        )
    )
    runner = make_runner(second)
    stop = threading.Event()
    summaries: list[Any] = []
    ingest = threading.Thread(
        target=lambda: summaries.append(runner.run(StopWhen(max_seconds=180, requested=stop)))
    )
    ingest.start()
    try:

        def users_state() -> BootstrapState | None:
            assert ingest.is_alive()
            return ChangelogTable(catalog.load_table(f"{namespace}.users_changelog")).bootstrap()

        wait_until("the users bootstrap under way", users_state, 60)
        with admin_connection.cursor() as cursor:  # during it: in chunks read and chunks not
            cursor.execute("UPDATE users SET qty = 100 WHERE id IN (1, 999)")
            cursor.execute("DELETE FROM users WHERE id = 500")
            cursor.execute("INSERT INTO users VALUES (5000, 'new', 1)")
            cursor.execute("INSERT INTO orders VALUES (9999, 'meanwhile', 1)")

        def orders_streamed() -> bool:
            return any(row["id"] == 9999 for row in changelog(catalog, namespace))

        wait_until("orders streaming on", orders_streamed, 60)
        state = users_state()
        assert state is not None and not state.done  # orders did not wait for users

        def both_equal_the_source() -> bool:
            return merged(changelog(catalog, namespace)) == source_rows(
                admin_connection
            ) and merged(changelog(catalog, namespace, "users")) == source_rows(
                admin_connection, "users"
            )

        wait_until(
            "users handed over and both tables equal to the source", both_equal_the_source, 120
        )
    finally:
        stop.set()
        ingest.join(60)
    assert not ingest.is_alive() and summaries[0].stopped_because == "asked to stop"
    users = changelog(catalog, namespace, "users")
    assert sum(1 for r in users if r["_tm_op"] == "r") == 1_000  # read once
    assert sum(1 for r in changelog(catalog, namespace) if r["_tm_op"] == "r") == 300


def test_a_run_stopped_during_a_background_bootstrap_stops_it_and_the_next_run_resumes(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 100)
    _orders(admin_connection, 1_000, name="users")
    path = _orders_streaming_then_users_added(
        tmp_path,
        endpoints,
        source_database,
        namespace,
        make_runner,
        server_id,
        extra=_ingest_block(flush_rows=100, max_rate=100),
    )
    config = load_pipeline(path)
    runner = make_runner(config)
    stop = threading.Event()
    ingest = threading.Thread(target=lambda: runner.run(StopWhen(max_seconds=180, requested=stop)))
    ingest.start()
    _wait_for_bootstrap_rows(catalog, f"{namespace}.users_changelog", 200)

    stop.set()
    ingest.join(60)

    assert not ingest.is_alive()
    stopped = _wait_for_bootstrap_rows(catalog, f"{namespace}.users_changelog", 200)
    assert not stopped.done  # it did not read the table to the end first
    with admin_connection.cursor() as cursor:
        cursor.execute("UPDATE users SET qty = 9 WHERE id IN (5, 950)")
    run_to_end(make_runner(config), endpoints.mariadb, server_id, 120)
    users = changelog(catalog, namespace, "users")
    snapshot_reads = [row["id"] for row in users if row["_tm_op"] == "r"]
    assert len(snapshot_reads) == len(set(snapshot_reads)) == 1_000
    assert merged(users) == source_rows(admin_connection, "users")


def test_an_added_table_whose_background_bootstrap_is_killed_resumes_and_stays_exact(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 200)
    _orders(admin_connection, 4000, name="users")
    path = _orders_streaming_then_users_added(
        tmp_path,
        endpoints,
        source_database,
        namespace,
        make_runner,
        server_id,
        extra=_ingest_block(flush_rows=500, max_rate=1000),
    )
    process = _ingest_process(path)
    try:
        committed = _wait_for_bootstrap_rows(catalog, f"{namespace}.users_changelog", 1000)
        with admin_connection.cursor() as cursor:  # streamed by the killed run, or the next
            cursor.execute("UPDATE orders SET qty = 50 WHERE id <= 20")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    with admin_connection.cursor() as cursor:  # in read and in unread chunks of users
        cursor.execute("UPDATE users SET qty = 77 WHERE id IN (3, 3000)")
        cursor.execute("DELETE FROM users WHERE id IN (10, 3500)")
        cursor.execute("INSERT INTO users VALUES (9000, 'new', 1)")
        cursor.execute("DELETE FROM orders WHERE id = 7")
    config = load_pipeline(path)

    run_to_end(make_runner(config), endpoints.mariadb, server_id, 120)

    assert not committed.done
    users = changelog(catalog, namespace, "users")
    snapshot_reads = [row["id"] for row in users if row["_tm_op"] == "r"]
    assert len(snapshot_reads) == len(set(snapshot_reads)), "a finished chunk was read again"
    assert merged(users) == source_rows(admin_connection, "users")
    assert merged(changelog(catalog, namespace)) == source_rows(admin_connection)


def test_a_table_added_to_a_running_pipeline_is_bootstrapped_alone(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 500)
    _orders(admin_connection, 700, name="users")
    path = _orders_streaming_then_users_added(
        tmp_path, endpoints, source_database, namespace, make_runner, server_id
    )
    with admin_connection.cursor() as cursor:
        cursor.execute("UPDATE orders SET qty = 100 WHERE id <= 10")
        cursor.execute("UPDATE users SET qty = 100 WHERE id <= 10")  # before users is onboarded
    orders_before = len(changelog(catalog, namespace))
    second = load_pipeline(path)

    runner = make_runner(second)
    with admin_connection.cursor() as cursor:
        cursor.execute("DELETE FROM users WHERE id = 1")
        cursor.execute("INSERT INTO orders VALUES (9999, 'late', 1)")
    run_to_end(runner, endpoints.mariadb, server_id, max_seconds=60)

    orders = changelog(catalog, namespace)
    users = changelog(catalog, namespace, "users")
    assert len(orders) == orders_before + 10 + 1  # the streamed changes, no snapshot read
    assert sum(1 for r in orders if r["_tm_op"] == "r") == 500  # not read again
    # users' bootstrap starts with the run, after the delete
    assert sum(1 for r in users if r["_tm_op"] == "r") == 699
    assert merged(orders) == source_rows(admin_connection)
    assert merged(users) == source_rows(admin_connection, "users")


@pytest.mark.every_source
def test_a_table_without_a_key_to_page_by_is_read_whole_with_a_warning(
    endpoints: StackEndpoints,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE events (id INT, note VARCHAR(20))")
        cursor.executemany("INSERT INTO events VALUES (%s, 'x')", [(key,) for key in range(1, 251)])
    config = load_pipeline(
        _pipeline(
            tmp_path / "p.yaml",
            endpoints,
            source_database,
            namespace,
            server_id,
            tables="events",
            extra=f"tidemark:\n  tables:\n    {namespace}.events:\n      unique-key: id\n",
            source=source,
        )
    )

    runner = make_runner(config)
    run_to_end(runner, source, server_id, max_seconds=60)

    assert "has no primary key or NOT NULL unique key" in caplog.text
    rows = changelog(catalog, namespace, "events")
    assert sorted(row["id"] for row in rows if row["_tm_op"] == "r") == list(range(1, 251))


def test_snapshot_mode_reads_the_existing_rows_and_stops(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 300)
    path = write_pipeline(
        tmp_path / "p.yaml",
        endpoints.mariadb,
        endpoints.catalog,
        database=source_database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
        startup="snapshot",
    )

    result = subprocess.run(
        [sys.executable, "-m", "tidemark.app.cli", "ingest", str(path)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert merged(changelog(catalog, namespace)) == source_rows(admin_connection)


class _InterruptedAfterChunks:
    """A display through which Ctrl-C reaches the bootstrap while it reads: ``advance`` draws
    the chunk on ``display``, then raises KeyboardInterrupt after ``chunks`` chunks."""

    def __init__(self, display: BootstrapProgress, chunks: int) -> None:
        self.display, self.chunks = display, chunks

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None:
        self.display.start(table, rows_done, estimated_rows)

    def advance(self, table: str, rows: int) -> None:
        self.display.advance(table, rows)
        self.chunks -= 1
        if self.chunks == 0:
            raise KeyboardInterrupt

    def finish(self, table: str) -> None:
        self.display.finish(table)

    def close(self) -> None:
        self.display.close()


def test_a_bootstrap_interrupted_on_a_terminal_takes_its_bars_down_and_shows_the_cursor(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 500)
    config = load_pipeline(
        _pipeline(tmp_path / "p.yaml", endpoints, source_database, namespace, server_id)
    )
    terminal = FakeTerminal()
    bars = BootstrapProgress(terminal, width=100, clock=iter(range(10_000)).__next__)

    with pytest.raises(KeyboardInterrupt):
        make_runner(config, display=_InterruptedAfterChunks(bars, chunks=2))

    shown = terminal.getvalue()
    assert f"{source_database}.orders: 200 rows" in shown  # the bar was up
    assert screen(shown) == []  # and went
    assert shown.rindex(SHOW_CURSOR) > shown.rindex(HIDE_CURSOR)


@pytest.mark.parametrize("on_a_terminal", [True, False])
def test_tidemark_ingest_shows_the_bootstrap_as_bars_on_a_terminal_and_log_lines_elsewhere(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    on_a_terminal: bool,
) -> None:
    _orders(admin_connection, 300)
    path = write_pipeline(
        tmp_path / "p.yaml",
        endpoints.mariadb,
        endpoints.catalog,
        database=source_database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
        startup="snapshot",
        source_options=SMALL_CHUNKS,
    )
    stderr = FakeTerminal() if on_a_terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    caplog.set_level(logging.INFO, logger="ingest.bootstrap.display")

    assert main(["ingest", str(path), "--max-seconds", "60"]) == 0

    drawn = stderr.getvalue()
    assert (f"{source_database}.orders: " in drawn and " rows/s" in drawn) is on_a_terminal
    assert screen(drawn) == []  # the bars went with the bootstrap, or there were none
    assert f"Bootstrapped {source_database}.orders: 300 rows" in caplog.text


def test_sharded_and_separate_tables_bootstrap_in_parallel_with_a_live_progress_line(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _orders(admin_connection, 400, name="orders_1")
    _orders(admin_connection, 300, name="orders_2")
    _orders(admin_connection, 500, name="users")
    with admin_connection.cursor() as cursor:
        cursor.execute("UPDATE orders_2 SET id = id + 1000")
    text = local_pipeline(
        endpoints.mariadb,
        endpoints.catalog,
        database=source_database,
        tables=f"orders_\\d,{source_database}.users",
        namespace=namespace,
        server_id=server_id,
        startup="initial",
        source_options=SMALL_CHUNKS,
        parallelism=2,
    )
    text = text.replace(
        f"  - source-table: {source_database}.\\.*\n    sink-table: {namespace}.<>\n"
        "    replace-symbol: <>\n",
        f"  - source-table: {source_database}.orders_\\.*\n    sink-table: {namespace}.orders\n"
        f"  - source-table: {source_database}.users\n    sink-table: {namespace}.users\n",
    )
    path = tmp_path / "p.yaml"
    path.write_text(text)
    config = load_pipeline(path)
    terminal = io.StringIO()
    display = BootstrapProgress(terminal, terminal=True, clock=iter(range(10_000)).__next__)

    runner = make_runner(config, display=display)
    run_to_end(runner, endpoints.mariadb, server_id, max_seconds=60)

    orders = changelog(catalog, namespace)
    shards = {
        **source_rows(admin_connection, "orders_1"),
        **source_rows(admin_connection, "orders_2"),
    }
    assert merged(orders) == shards
    assert {(row["_tm_source_table"], row["_tm_op"]) for row in orders} == {
        ("orders_1", "r"),
        ("orders_2", "r"),
    }
    assert merged(changelog(catalog, namespace, "users")) == source_rows(admin_connection, "users")
    # drawn part way: two readers of one table may both finish a chunk before one of them
    # redraws, so which count is drawn first depends on the threads (seen: 200, not 100)
    assert re.search(rf"{source_database}\.orders_1: [123]00 rows", terminal.getvalue())
    assert "rows/s" in terminal.getvalue()
