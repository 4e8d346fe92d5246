"""Start modes that name a point in time or a GTID set, against a MariaDB of the test's own.

Each test writes orders one transaction at a time into several binlog files, then starts a
pipeline in the mode under test and reads to the end: the changelog holds exactly the orders
from the named point on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog

from ingest.launch import build_runner
from ingest.settings import IngestSettings
from ingest.startup.gtid import parse_gtid_set
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.polling import wait_until
from tidemark.config import load_pipeline
from tidemark.errors import ConfigError
from tidemark.stack.endpoints import StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Cursor = pymysql.cursors.Cursor

#: binlog timestamps the test sets itself: a day ahead, after anything the server wrote on its own
DAY_AHEAD = int(time.time()) + 86_400


OrderedIds = Callable[[tuple[str, str]], list[int]]


@pytest.fixture
def ordered_ids(
    private_mariadb: StackEndpoints,
    namespace: str,
    catalog: Catalog,
    tmp_path: Path,
    server_id: int,
) -> OrderedIds:
    """``ordered_ids(start)``: start a pipeline over shop.orders at ``start`` (a mode and its
    option line) and read to the end; the ids the changelog received, in order."""

    def read(start: tuple[str, str]) -> list[int]:
        mode, option = start
        path = write_pipeline(
            tmp_path / "p.yaml",
            private_mariadb,
            database="shop",
            tables="orders",
            namespace=namespace,
            server_id=server_id,
            startup=mode,
            source_options=option,
        )
        config = load_pipeline(path)
        runner = build_runner(config, catalog, reports=None, settings=IngestSettings())
        run_to_end(runner, private_mariadb, server_id, max_seconds=120)
        table = catalog.load_table(f"{namespace}.orders_changelog")
        rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["_tm_order"])
        return [row["id"] for row in rows]

    return read


def _shop(private_mariadb: StackEndpoints) -> pymysql.connections.Connection[Cursor]:
    conn = private_mariadb.mariadb.admin_source().connect()
    with conn.cursor() as cursor:
        cursor.execute("CREATE DATABASE shop")
        cursor.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, item TEXT)")
    return conn


def _order(cursor: Cursor, order_id: int) -> str:
    """Insert one order in a transaction of its own; its GTID."""
    cursor.execute("INSERT INTO shop.orders VALUES (%s, 'kettle')", (order_id,))
    cursor.execute("SELECT @@last_gtid")
    (gtid,) = cursor.fetchone() or ("",)
    return str(gtid)


@pytest.fixture
def orders_at_times(private_mariadb: StackEndpoints) -> None:
    """Orders 1..6 with binlog timestamps 100 s apart, two per binlog file."""
    with _shop(private_mariadb) as conn, conn.cursor() as cursor:
        for order_id in range(1, 7):
            cursor.execute("SET timestamp = %s", (DAY_AHEAD + 100 * order_id,))
            _order(cursor, order_id)
            if order_id % 2 == 0:
                cursor.execute("FLUSH BINARY LOGS")


def _timestamp(seconds: int) -> tuple[str, str]:
    return "timestamp", f"  scan.startup.timestamp-millis: {seconds * 1000}\n"


@pytest.mark.usefixtures("orders_at_times")
def test_timestamp_starts_at_the_first_transaction_at_or_after_it(ordered_ids: OrderedIds) -> None:
    ids = ordered_ids(_timestamp(DAY_AHEAD + 300))

    assert ids == [3, 4, 5, 6]


@pytest.mark.usefixtures("orders_at_times")
def test_timestamp_between_transactions_starts_at_the_next_one(ordered_ids: OrderedIds) -> None:
    ids = ordered_ids(_timestamp(DAY_AHEAD + 450))

    assert ids == [5, 6]


@pytest.mark.usefixtures("orders_at_times")
def test_timestamp_after_every_transaction_starts_at_the_end(ordered_ids: OrderedIds) -> None:
    ids = ordered_ids(_timestamp(DAY_AHEAD + 900))

    assert ids == []


def _gtid_set(text: str) -> tuple[str, str]:
    return "specific-offset", f"  scan.startup.specific-offset.gtid-set: {text}\n"


def test_a_gtid_set_starts_right_after_the_transactions_it_names(
    private_mariadb: StackEndpoints, ordered_ids: OrderedIds
) -> None:
    with _shop(private_mariadb) as conn, conn.cursor() as cursor:
        gtids = []
        for order_id in range(1, 6):
            gtids.append(_order(cursor, order_id))
            cursor.execute("FLUSH BINARY LOGS")

    ids = ordered_ids(_gtid_set(gtids[2]))

    assert ids == [4, 5]


def test_a_gtid_set_over_two_domains_covers_each_domain_up_to_its_own_sequence(
    private_mariadb: StackEndpoints, ordered_ids: OrderedIds
) -> None:
    with _shop(private_mariadb) as conn, conn.cursor() as cursor:
        first = _order(cursor, 1)
        cursor.execute("SET gtid_domain_id = 7")
        second = _order(cursor, 2)
        cursor.execute("SET gtid_domain_id = 0")
        _order(cursor, 3)
        cursor.execute("SET gtid_domain_id = 7")
        _order(cursor, 4)

    ids = ordered_ids(_gtid_set(f"{first},{second}"))

    assert ids == [3, 4]


def test_a_gtid_set_with_a_hole_is_refused_with_the_file_and_position_alternative(
    private_mariadb: StackEndpoints, ordered_ids: OrderedIds
) -> None:
    with _shop(private_mariadb) as conn, conn.cursor() as cursor:
        _order(cursor, 1)
        cursor.execute("SET gtid_domain_id = 7")
        hole = _order(cursor, 2)
        cursor.execute("SET gtid_domain_id = 0")
        later = _order(cursor, 3)

    with pytest.raises(ConfigError) as refused:
        ordered_ids(_gtid_set(later))

    assert str(refused.value) == (
        f"scan.startup.specific-offset.gtid-set '{later}' does not name one point in the "
        f"binlog: {later} is in the set but comes after {hole}, which is not. Tidemark starts "
        "at one position and reads everything after it: give "
        "scan.startup.specific-offset.file and .pos instead"
    )


def test_a_gtid_set_whose_next_transaction_was_purged_says_to_re_bootstrap(
    private_mariadb: StackEndpoints, ordered_ids: OrderedIds
) -> None:
    with _shop(private_mariadb) as conn, conn.cursor() as cursor:
        applied = _order(cursor, 1)
        _order(cursor, 2)
        cursor.execute("FLUSH BINARY LOGS")
        oldest_left = _order(cursor, 3)
        cursor.execute("SHOW MASTER STATUS")
        (current_file, *_) = cursor.fetchone() or ("",)
        wait_until(
            f"the binlog before {current_file} purged",
            lambda: _purged_to(cursor, current_file),
            seconds=30,
        )

    with pytest.raises(ConfigError) as refused:
        ordered_ids(_gtid_set(applied))

    assert str(refused.value) == (
        f"the transactions right after scan.startup.specific-offset.gtid-set '{applied}' were "
        f"purged from the binlog (the oldest left is {oldest_left}, in {current_file}): "
        "re-bootstrap the tables with scan.startup.mode: initial"
    )


def _purged_to(cursor: Cursor, file: str) -> bool:
    """Purge the binlog before ``file``; MariaDB keeps a file until its binlog checkpoint has
    passed it, so this may take a few tries."""
    cursor.execute(f"PURGE BINARY LOGS TO '{file}'")
    cursor.execute("SHOW BINARY LOGS")
    (oldest, *_) = cursor.fetchone() or ("",)
    return bool(oldest == file)


def test_a_mysql_gtid_set_on_mariadb_is_refused_naming_the_servers_form(
    private_mariadb: StackEndpoints, ordered_ids: OrderedIds
) -> None:
    with _shop(private_mariadb) as conn, conn.cursor() as cursor:
        gtid = _order(cursor, 1)
    mysql_set = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"

    with pytest.raises(ConfigError) as refused:
        ordered_ids(_gtid_set(mysql_set))

    assert f"its binlog has GTIDs like {gtid.split('-')[0]}-" in str(refused.value)
    assert "@@gtid_binlog_pos on MariaDB" in str(refused.value)


# --- GTID sets as text ---------------------------------------------------------------------


def test_a_mariadb_gtid_set_covers_each_domain_up_to_its_sequence() -> None:
    gtids = parse_gtid_set("0-1-10, 3-2-5")

    assert gtids.covers("0-9-10") and gtids.covers("3-2-1")
    assert not gtids.covers("0-1-11") and not gtids.covers("4-1-1")


def test_a_mysql_gtid_set_covers_exactly_its_intervals() -> None:
    gtids = parse_gtid_set("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7")

    assert gtids.covers("3e11fa47-71ca-11e1-9e33-c80aa9429562:5")
    assert gtids.covers("3e11fa47-71ca-11e1-9e33-c80aa9429562:7")
    assert not gtids.covers("3e11fa47-71ca-11e1-9e33-c80aa9429562:6")
    assert not gtids.covers("4e11fa47-71ca-11e1-9e33-c80aa9429562:1")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "it is empty"),
        ("0-1-5,0-2-9", "domain 0 appears twice"),
        ("0-1", "'0-1' is neither domain-server-sequence nor uuid:1-5"),
        (
            "3e11fa47-71ca-11e1-9e33-c80aa9429562:5-1",
            "'5-1' in '3e11fa47-71ca-11e1-9e33-c80aa9429562:5-1' is not a number or a range "
            "low-high",
        ),
    ],
)
def test_a_malformed_gtid_set_is_refused_with_both_accepted_forms(text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_gtid_set(text)

    assert str(refused.value) == (
        f"scan.startup.specific-offset.gtid-set '{text}' is not a GTID set: {reason}. Write "
        "MariaDB's form, the last transaction per domain as in @@gtid_binlog_pos "
        "('0-1-1042,1-2-7'), or MySQL's, as in @@gtid_executed ('<server uuid>:1-1042')"
    )
