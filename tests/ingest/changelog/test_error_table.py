"""Rows the lake cannot hold go to an error table with their payload; nothing is lost.

Counts reconcile: rows in the changelog plus rows in the error table equal the row images the
source wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyiceberg.catalog import Catalog

from ingest.changelog.catalogs import IcebergSinkCatalog
from ingest.changelog.error_table import ErrorTables, errors_sink
from ingest.settings import IngestSettings
from tests.ingest.catalog_calls import recording_load_table
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.runners import MakeRunner
from tidemark.app.cli import main
from tidemark.config import load_pipeline
from tidemark.source import BinlogPosition
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

ALLOW_ZERO_DATES = "SET SESSION sql_mode = 'ALLOW_INVALID_DATES'"

# The tests that bootstrap (scan.startup.mode: initial) run on MariaDB alone: the bootstrap's
# lock-free consistent snapshot needs it.


def _table(connection: Connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE visits (id INT PRIMARY KEY, day DATE NOT NULL, note TEXT)")
        cursor.execute(ALLOW_ZERO_DATES)


@pytest.fixture
def visits_pipeline(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
) -> Callable[..., Path]:
    """``visits_pipeline(**options)``: the test's pipeline file, reading its ``visits`` table
    into its namespace (``options`` go to ``write_pipeline``: other tables, a start mode)."""

    def write(**options: str) -> Path:
        return write_pipeline(
            tmp_path / "p.yaml",
            source,
            endpoints.catalog,
            database=source_database,
            namespace=namespace,
            server_id=server_id,
            **{"tables": "visits", **options},
        )

    return write


def _run(
    statements: list[str],
    connection: Connection,
    config_path: Path,
    make_runner: MakeRunner,
    source: SourceEndpoint,
    server_id: int,
) -> None:
    runner = make_runner(load_pipeline(config_path))
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    run_to_end(runner, source, server_id, max_seconds=60)


def _rows(catalog: Catalog, identifier: str) -> list[dict[str, Any]]:
    rows = catalog.load_table(identifier).scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda row: row["_tm_order"])


@pytest.mark.every_source
def test_an_unconvertible_row_goes_to_the_error_table_and_ingest_goes_on(
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
    visits_pipeline: Callable[..., Path],
) -> None:
    _table(admin_connection)
    path = visits_pipeline()
    first = [
        "INSERT INTO visits VALUES (1, '2024-05-01', 'fine')",
        "INSERT INTO visits VALUES (2, '0000-00-00', 'no such day')",
        "UPDATE visits SET note = 'still fine' WHERE id = 1",
    ]
    second = [  # after a restart: the error row is not written twice
        "UPDATE visits SET day = '2024-05-02' WHERE id = 2",
        "INSERT INTO visits VALUES (3, '0000-00-00', 'again')",
    ]

    _run(first, admin_connection, path, make_runner, source, server_id)
    _run(second, admin_connection, path, make_runner, source, server_id)

    changelog = _rows(catalog, f"{namespace}.visits_changelog")
    errors = _rows(catalog, f"{namespace}.visits_errors")
    assert [(r["_tm_op"], r["id"]) for r in changelog] == [("c", 1), ("u", 1), ("u", 2)]
    assert [(r["_tm_op"], r["column_name"], r["value"]) for r in errors] == [
        ("c", "day", "InvalidTemporal(text='0000-00-00')"),
        ("c", "day", "InvalidTemporal(text='0000-00-00')"),
    ]
    assert "NOT NULL" in errors[0]["reason"]
    assert json.loads(errors[1]["payload"])["note"] == "'again'"
    assert _position(errors[0]) < _position(errors[1])
    assert len(changelog) + len(errors) == len(first) + len(second)  # every image accounted for
    assert main(["status", str(path)]) == 0
    [_, line] = capsys.readouterr().out.partition("\n\n")[0].splitlines()
    assert line.split()[-2] == "2"  # the errors column


@pytest.mark.every_source
def test_a_value_stored_as_null_is_counted_and_recorded_in_the_error_table(
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    server_id: int,
    capsys: pytest.CaptureFixture[str],
    visits_pipeline: Callable[..., Path],
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE visits (id INT PRIMARY KEY, day DATE, seen DATETIME(3), note TEXT)"
        )
        cursor.execute(ALLOW_ZERO_DATES)
    path = visits_pipeline()
    first = [
        "INSERT INTO visits VALUES (1, '2024-05-01', '2024-05-01 10:00:00', 'fine')",
        "INSERT INTO visits VALUES (2, '0000-00-00', '2024-02-30 08:00:00.5', 'two')",
        "UPDATE visits SET note = 'still two' WHERE id = 2",  # before and after: one record
    ]
    second = [  # after a restart: nothing counted or recorded twice
        "INSERT INTO visits VALUES (3, '2024-06-00', NULL, 'three')",
    ]

    _run(first, admin_connection, path, make_runner, source, server_id)
    _run(second, admin_connection, path, make_runner, source, server_id)

    changelog = _rows(catalog, f"{namespace}.visits_changelog")
    assert [(r["_tm_op"], r["id"], r["day"], r["seen"]) for r in changelog][1:] == [
        ("c", 2, None, None),
        ("u", 2, None, None),
        ("c", 3, None, None),
    ]
    errors = _rows(catalog, f"{namespace}.visits_errors")
    assert [(r["_tm_op"], r["column_name"], r["value"]) for r in errors] == [
        ("c", "day", "InvalidTemporal(text='0000-00-00')"),
        ("c", "seen", "InvalidTemporal(text='2024-02-30 08:00:00.500')"),
        ("u", "day", "InvalidTemporal(text='0000-00-00')"),
        ("u", "seen", "InvalidTemporal(text='2024-02-30 08:00:00.500')"),
        ("c", "day", "InvalidTemporal(text='2024-06-00')"),
    ]
    assert errors[0]["reason"] == (
        "stored as NULL: '0000-00-00' is not a real date or time, and Iceberg holds only real ones"
    )
    assert json.loads(errors[4]["payload"])["note"] == "'three'"
    snapshot = catalog.load_table(f"{namespace}.visits_changelog").current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    summary = snapshot.summary.additional_properties
    assert json.loads(summary["tidemark.nulled-values"]) == {"day": 3, "seen": 2}
    assert main(["status", str(path)]) == 0
    _, _, nulled = capsys.readouterr().out.partition("\n\n")
    assert [line.split() for line in nulled.splitlines()[1:3]] == [
        [f"{namespace}.visits.day", "3"],
        [f"{namespace}.visits.seen", "2"],
    ]


def test_a_bootstrap_keeps_unconvertible_rows_in_the_error_table(
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    server_id: int,
    visits_pipeline: Callable[..., Path],
) -> None:
    _table(admin_connection)
    with admin_connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO visits SELECT seq, IF(seq % 50 = 0, '0000-00-00', '2024-01-01'), 'x' "
            "FROM seq_1_to_200"
        )
    path = visits_pipeline(startup="initial")

    _run([], admin_connection, path, make_runner, source, server_id)

    changelog = _rows(catalog, f"{namespace}.visits_changelog")
    errors = _rows(catalog, f"{namespace}.visits_errors")
    assert len(changelog) == 196
    assert sorted(int(json.loads(r["payload"])["id"]) for r in errors) == [50, 100, 150, 200]
    assert {r["_tm_op"] for r in errors} == {"r"}


def test_a_bootstrap_counts_and_records_values_stored_as_null(
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    server_id: int,
    visits_pipeline: Callable[..., Path],
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE visits (id INT PRIMARY KEY, day DATE, note TEXT)")
        cursor.execute(ALLOW_ZERO_DATES)
        cursor.execute(  # a zero date in row 7, an impossible one in row 9
            "INSERT INTO visits SELECT seq, CASE seq WHEN 7 THEN '0000-00-00' "
            "WHEN 9 THEN '2024-02-30' ELSE '2024-01-01' END, 'x' FROM seq_1_to_10"
        )
    path = visits_pipeline(startup="initial")

    _run([], admin_connection, path, make_runner, source, server_id)

    changelog = _rows(catalog, f"{namespace}.visits_changelog")
    assert [r["id"] for r in changelog if r["day"] is None] == [7, 9]
    errors = _rows(catalog, f"{namespace}.visits_errors")
    assert [(r["_tm_op"], r["column_name"], r["value"]) for r in errors] == [
        ("r", "day", "InvalidTemporal(text='0000-00-00')"),
        ("r", "day", "InvalidTemporal(text='2024-02-30')"),
    ]
    assert all(r["reason"].startswith("stored as NULL: ") for r in errors)
    assert [json.loads(r["payload"])["id"] for r in errors] == ["7", "9"]
    snapshot = catalog.load_table(f"{namespace}.visits_changelog").current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.additional_properties["tidemark.nulled-values"] == '{"day":2}'


class _CrashAfterChunks:
    """A progress display through which the bootstrap dies after ``chunks`` chunks were read:
    ``advance`` comes after a chunk's error rows are committed and before the chunk is."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None:
        pass

    def advance(self, table: str, rows: int) -> None:
        self.chunks -= 1
        if self.chunks == 0:
            raise _Crash

    def finish(self, table: str) -> None:
        pass

    def close(self) -> None:
        pass


class _Crash(Exception):
    pass


def test_a_bootstrap_that_dies_between_error_rows_and_their_chunk_keeps_each_error_once(
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    server_id: int,
    visits_pipeline: Callable[..., Path],
) -> None:
    _table(admin_connection)
    with admin_connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO visits SELECT seq, IF(seq % 50 = 0, '0000-00-00', '2024-01-01'), 'x' "
            "FROM seq_1_to_200"
        )
    path = visits_pipeline(
        startup="initial", source_options="scan.incremental.snapshot.chunk.size: 50"
    )
    every_chunk = IngestSettings(flush_rows=40)  # each chunk (49 rows kept) is a commit of its own

    with pytest.raises(_Crash):  # chunk 1 committed; chunk 2's error row committed, not chunk 2
        make_runner(load_pipeline(path), settings=every_chunk, display=_CrashAfterChunks(2))
    assert len(_rows(catalog, f"{namespace}.visits_errors")) == 2
    runner = make_runner(load_pipeline(path), settings=every_chunk)
    run_to_end(runner, source, server_id, max_seconds=60)

    changelog = _rows(catalog, f"{namespace}.visits_changelog")
    errors = _rows(catalog, f"{namespace}.visits_errors")
    assert len(changelog) == 196
    assert sorted(int(json.loads(r["payload"])["id"]) for r in errors) == [50, 100, 150, 200]


def test_a_start_up_looks_up_only_the_error_tables_that_exist(
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    server_id: int,
    monkeypatch: pytest.MonkeyPatch,
    visits_pipeline: Callable[..., Path],
) -> None:
    _table(admin_connection)
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE notes (id INT PRIMARY KEY, note TEXT)")
        cursor.execute("INSERT INTO notes VALUES (1, 'a'), (2, 'b')")
        cursor.execute("INSERT INTO visits VALUES (1, '2024-01-01', 'x'), (2, '0000-00-00', 'y')")
    path = visits_pipeline(tables="visits|notes", startup="initial")
    asked = recording_load_table(catalog, monkeypatch)

    _run([], admin_connection, path, make_runner, source, server_id)  # makes visits_errors
    _run(
        ["INSERT INTO visits VALUES (3, '0000-00-00', 'z')"],
        admin_connection,
        path,
        make_runner,
        source,
        server_id,
    )

    assert f"{namespace}.notes_errors" not in asked
    assert f"{namespace}.visits_errors" in asked
    errors = _rows(catalog, f"{namespace}.visits_errors")
    assert [int(json.loads(row["payload"])["id"]) for row in errors] == [2, 3]


def test_an_error_table_created_in_a_run_is_found_by_it(
    namespace: str, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = f"{namespace}.visits"
    error_tables = ErrorTables(IcebergSinkCatalog(catalog), [sink, f"{namespace}.notes"])
    asked = recording_load_table(catalog, monkeypatch)

    assert error_tables.find(sink) is None
    assert asked == []  # known from the listing
    created = error_tables.open(sink)

    found = error_tables.find(sink)
    assert found is not None and found.identifier == created.identifier
    assert error_tables.existing([sink, f"{namespace}.notes"]).keys() == {errors_sink(sink)}


def _position(row: dict[str, Any]) -> BinlogPosition:
    """A row's ``_tm_position`` as a position: as text, ``:9802681`` sorts after ``:10043657``."""
    file, _, offset = row["_tm_position"].rpartition(":")
    return BinlogPosition(file, int(offset))
