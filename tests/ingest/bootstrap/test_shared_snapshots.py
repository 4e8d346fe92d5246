"""Small tables are read in a snapshot lent from one table to the next while it is young.

A table longer than a chunk is read in a snapshot of its own, so that the locks of the tables read
before it are not held through its read.

Each table's rows are the source's state at the position of the snapshot it was read in, and
streaming fills in every change after that position: a row written between two tables' reads is
read by the bootstrap only if the second table got a snapshot of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyiceberg.catalog import Catalog

from ingest.bootstrap.bootstrapper import Bootstrapper, BootstrapSettings, SinkBootstrap
from ingest.bootstrap.snapshot_reader import SnapshotLender
from ingest.changelog.catalogs import IcebergSinkCatalog
from ingest.launch import onboard
from tests.ingest.changelog_checks import changelog, merged, source_rows
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.runners import MakeRunner
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.stack.endpoints import StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

SECOND = "second"
WRITE_BETWEEN = f"INSERT INTO {SECOND} VALUES (100, 'written between')"


class _RunsBeforeSecond:
    """A display through which ``statements`` run just before the bootstrap reads ``second``:
    ``start`` comes before the table's snapshot is opened or lent."""

    def __init__(self, connection: Connection, statements: list[str]) -> None:
        self.connection, self.statements = connection, statements

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None:
        if table.endswith(f".{SECOND}"):
            with self.connection.cursor() as cursor:
                for statement in self.statements:
                    cursor.execute(statement)

    def advance(self, table: str, rows: int) -> None:
        pass

    def finish(self, table: str) -> None:
        pass

    def close(self) -> None:
        pass


def _two_tables(connection: Connection) -> None:
    with connection.cursor() as cursor:
        for name in ("first", SECOND):
            cursor.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, note VARCHAR(20))")
            cursor.execute(f"INSERT INTO {name} SELECT seq, 'before' FROM seq_1_to_10")


def _config(
    path: Path, endpoints: StackEndpoints, database: str, namespace: str, server_id: int
) -> PipelineConfig:
    return load_pipeline(
        write_pipeline(
            path,
            endpoints.mariadb,
            endpoints.catalog,
            database=database,
            tables="first|second",
            namespace=namespace,
            server_id=server_id,
            startup="initial",
        )
    )


def _bootstrap(
    config: PipelineConfig,
    catalog: Catalog,
    connection: Connection,
    clock: Callable[[], float],
    chunk_size: int = 100,
    between: tuple[str, ...] = (WRITE_BETWEEN,),
) -> None:
    """Bootstraps ``first`` then ``second`` with ``clock``, running ``between`` between."""
    onboarding = onboard(config, IcebergSinkCatalog(catalog))
    sinks = [
        SinkBootstrap(
            sink.name,
            onboarding.tables[sink.name],
            [onboarding.sources[(_database_of(name), _table_of(name))] for name in sink.sources],
        )
        for sink in sorted(onboarding.plan.sinks, key=lambda sink: sink.name.endswith(SECOND))
    ]
    source = config.source.connection
    Bootstrapper(
        source,
        f"{source.host}:{source.port}",
        BootstrapSettings(chunk_size=chunk_size, snapshot_max_age=5.0, incremental=False),
        _RunsBeforeSecond(connection, list(between)),
        clock=clock,
    ).run(sinks)


def _database_of(table_id: str) -> str:
    return table_id.split(".", 1)[0]


def _table_of(table_id: str) -> str:
    return table_id.split(".", 1)[1]


def _read_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for row in rows if row["_tm_op"] == "r"]


def _standing_still() -> float:
    return 0.0


@pytest.mark.parametrize(
    ("clock", "chunk_size", "shares"),
    [
        (_standing_still, 100, True),
        # moves 10 s, twice the age limit, at each reading
        (itertools.count(0.0, 10.0).__next__, 100, False),
        (_standing_still, 5, False),  # the second table is two chunks long
    ],
    ids=["young", "aged", "longer-than-a-chunk"],
)
def test_the_next_table_is_read_in_the_last_snapshot_while_young_and_short_and_stays_exact(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
    clock: Callable[[], float],
    chunk_size: int,
    shares: bool,
) -> None:
    _two_tables(admin_connection)
    config = _config(tmp_path / "p.yaml", endpoints, source_database, namespace, server_id)

    _bootstrap(config, catalog, admin_connection, clock, chunk_size)

    first = _read_rows(changelog(catalog, namespace, "first"))
    second = _read_rows(changelog(catalog, namespace, SECOND))
    assert ({row["_tm_position"] for row in second} == {first[0]["_tm_position"]}) is shares
    assert (100 in {row["id"] for row in second}) is not shares  # the row written between
    runner = make_runner(config)
    run_to_end(runner, endpoints.mariadb, server_id, max_seconds=60)
    for table in ("first", SECOND):
        assert merged(changelog(catalog, namespace, table)) == source_rows(admin_connection, table)


def test_a_table_rebuilt_since_the_lent_snapshot_opened_is_read_in_its_own(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    _two_tables(admin_connection)
    config = _config(tmp_path / "p.yaml", endpoints, source_database, namespace, server_id)

    # InnoDB refuses a read view older than the table's rebuild (ER_TABLE_DEF_CHANGED)
    _bootstrap(
        config,
        catalog,
        admin_connection,
        _standing_still,
        between=(WRITE_BETWEEN, f"ALTER TABLE {SECOND} FORCE"),
    )

    first = _read_rows(changelog(catalog, namespace, "first"))
    second = _read_rows(changelog(catalog, namespace, SECOND))
    assert {row["_tm_position"] for row in second} != {first[0]["_tm_position"]}
    assert len(second) == 11  # with the row written between
    runner = make_runner(config)
    run_to_end(runner, endpoints.mariadb, server_id, max_seconds=60)
    assert merged(changelog(catalog, namespace, SECOND)) == source_rows(admin_connection, SECOND)


class _Failed(Exception):
    pass


def test_a_snapshot_whose_borrower_failed_is_closed_not_lent_again(
    endpoints: StackEndpoints, server_id: int
) -> None:
    lender = SnapshotLender(endpoints.mariadb.cdc_source(server_id), 5.0, lambda: 0.0)
    with lender.lend() as kept:
        pass
    with lender.lend() as again:
        assert again is kept  # young and given back: lent again
    with pytest.raises(_Failed), lender.lend() as failed:
        raise _Failed
    with lender.lend() as fresh:
        assert fresh is not failed
    lender.close()
