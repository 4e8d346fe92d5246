"""Start modes that name a point in time or a GTID set, against a source server of the test's own.

Each test writes orders one transaction at a time into several binlog files, then starts a
pipeline in the mode under test and reads to the end: the changelog holds exactly the orders
from the named point on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from ingest.startup.gtid import parse_gtid_set
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.runners import MakeRunner
from tidemark.config import load_pipeline
from tidemark.errors import ConfigError
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Cursor = pymysql.cursors.Cursor

#: binlog timestamps the test sets itself: a day ahead, after anything the server wrote on its own
DAY_AHEAD = int(time.time()) + 86_400


OrderedIds = Callable[[tuple[str, str]], list[int]]


@pytest.fixture
def ordered_ids(
    private_source: SourceEndpoint,
    endpoints: StackEndpoints,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    tmp_path: Path,
    server_id: int,
) -> OrderedIds:
    """``ordered_ids(start)``: start a pipeline over shop.orders at ``start`` (a mode and its
    option line) and read to the end; the ids the changelog received, in order."""

    def read(start: tuple[str, str]) -> list[int]:
        mode, option = start
        path = write_pipeline(
            tmp_path / "p.yaml",
            private_source,
            endpoints.catalog,
            database="shop",
            tables="orders",
            namespace=namespace,
            server_id=server_id,
            startup=mode,
            source_options=option,
        )
        config = load_pipeline(path)
        runner = make_runner(config)
        run_to_end(runner, private_source, server_id, max_seconds=120)
        table = catalog.load_table(f"{namespace}.orders_changelog")
        rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["_tm_order"])
        return [row["id"] for row in rows]

    return read


@dataclass(frozen=True)
class Shop:
    """shop.orders on the test's own server, written through an admin connection's cursor."""

    source: SourceEndpoint
    cursor: Cursor

    def order(self, order_id: int) -> str:
        """Insert one order in a transaction of its own; its GTID. (Nothing else writes to the
        server, so on MySQL it is the last one executed.)"""
        self.cursor.execute("INSERT INTO shop.orders VALUES (%s, 'kettle')", (order_id,))
        if self.source.flavor == "mariadb":
            self.cursor.execute("SELECT @@last_gtid")
            (gtid,) = self.cursor.fetchone() or ("",)
            return str(gtid)
        self.cursor.execute("SELECT @@global.gtid_executed")
        (executed,) = self.cursor.fetchone() or ("",)
        uuid, _, intervals = str(executed).partition(":")  # uuid:1-7, one server's
        return f"{uuid}:{intervals.rpartition('-')[2]}"

    def up_to(self, gtid: str) -> str:
        """The GTID set of ``gtid`` and every transaction before it: MariaDB's GTID is one by
        itself; MySQL's set lists them all."""
        if self.source.flavor == "mariadb":
            return gtid
        uuid, _, number = gtid.rpartition(":")
        return f"{uuid}:1-{number}"


@pytest.fixture
def shop(private_source: SourceEndpoint) -> Iterator[Shop]:
    """An empty shop.orders on the test's own server."""
    with private_source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute("CREATE DATABASE shop")
        cursor.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, item TEXT)")
        yield Shop(private_source, cursor)


@pytest.fixture
def orders_at_times(shop: Shop) -> None:
    """Orders 1..6 with binlog timestamps 100 s apart, two per binlog file."""
    for order_id in range(1, 7):
        shop.cursor.execute("SET timestamp = %s", (DAY_AHEAD + 100 * order_id,))
        shop.order(order_id)
        if order_id % 2 == 0:
            shop.cursor.execute("FLUSH BINARY LOGS")


def _timestamp(seconds: int) -> tuple[str, str]:
    return "timestamp", f"  scan.startup.timestamp-millis: {seconds * 1000}\n"


@pytest.mark.every_source
@pytest.mark.usefixtures("orders_at_times")
def test_timestamp_starts_at_the_first_transaction_at_or_after_it(ordered_ids: OrderedIds) -> None:
    ids = ordered_ids(_timestamp(DAY_AHEAD + 300))

    assert ids == [3, 4, 5, 6]


@pytest.mark.every_source
@pytest.mark.usefixtures("orders_at_times")
def test_timestamp_between_transactions_starts_at_the_next_one(ordered_ids: OrderedIds) -> None:
    ids = ordered_ids(_timestamp(DAY_AHEAD + 450))

    assert ids == [5, 6]


@pytest.mark.every_source
@pytest.mark.usefixtures("orders_at_times")
def test_timestamp_after_every_transaction_starts_at_the_end(ordered_ids: OrderedIds) -> None:
    ids = ordered_ids(_timestamp(DAY_AHEAD + 900))

    assert ids == []


def _gtid_set(text: str) -> tuple[str, str]:
    return "specific-offset", f"  scan.startup.specific-offset.gtid-set: {text}\n"


@pytest.mark.every_source
def test_a_gtid_set_starts_right_after_the_transactions_it_names(
    shop: Shop, ordered_ids: OrderedIds
) -> None:
    gtids = []
    for order_id in range(1, 6):
        gtids.append(shop.order(order_id))
        shop.cursor.execute("FLUSH BINARY LOGS")

    ids = ordered_ids(_gtid_set(shop.up_to(gtids[2])))

    assert ids == [4, 5]


# MariaDB only: MySQL has no replication domains
def test_a_gtid_set_over_two_domains_covers_each_domain_up_to_its_own_sequence(
    shop: Shop, ordered_ids: OrderedIds
) -> None:
    first = shop.order(1)
    shop.cursor.execute("SET gtid_domain_id = 7")
    second = shop.order(2)
    shop.cursor.execute("SET gtid_domain_id = 0")
    shop.order(3)
    shop.cursor.execute("SET gtid_domain_id = 7")
    shop.order(4)

    ids = ordered_ids(_gtid_set(f"{first},{second}"))

    assert ids == [3, 4]


# MariaDB only: MySQL has no replication domains
def test_a_gtid_set_with_a_hole_is_refused_with_the_file_and_position_alternative(
    shop: Shop, ordered_ids: OrderedIds
) -> None:
    shop.order(1)
    shop.cursor.execute("SET gtid_domain_id = 7")
    hole = shop.order(2)
    shop.cursor.execute("SET gtid_domain_id = 0")
    later = shop.order(3)

    with pytest.raises(ConfigError) as refused:
        ordered_ids(_gtid_set(later))

    assert str(refused.value) == (
        f"scan.startup.specific-offset.gtid-set '{later}' does not name one point in the "
        f"binlog: {later} is in the set but comes after {hole}, which is not. Tidemark starts "
        "at one position and reads everything after it: give "
        "scan.startup.specific-offset.file and .pos instead"
    )


@pytest.mark.every_source
def test_a_gtid_set_whose_next_transaction_was_purged_says_to_re_bootstrap(
    private_source: SourceEndpoint, shop: Shop, ordered_ids: OrderedIds
) -> None:
    applied = shop.up_to(shop.order(1))
    shop.order(2)
    shop.cursor.execute("FLUSH BINARY LOGS")
    oldest_left = shop.order(3)
    current_file = current_position(private_source.admin_source()).file
    wait_until(
        f"the binlog before {current_file} purged",
        lambda: _purged_to(shop.cursor, current_file),
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


@pytest.mark.every_source
def test_a_gtid_set_of_the_other_servers_form_is_refused_naming_this_servers_form(
    private_source: SourceEndpoint, shop: Shop, ordered_ids: OrderedIds
) -> None:
    gtid = shop.order(1)
    other_form = {
        "mariadb": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5",
        "mysql": "0-1-5",
    }[private_source.flavor]

    with pytest.raises(ConfigError) as refused:
        ordered_ids(_gtid_set(other_form))

    # the GTID the message shows is of this server's form: ours less its sequence number
    assert f"its binlog has GTIDs like {gtid.rstrip('0123456789')}" in str(refused.value)
    assert "@@gtid_binlog_pos on MariaDB, @@gtid_executed on MySQL" in str(refused.value)


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
