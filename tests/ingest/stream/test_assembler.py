"""How binlog events become changelog rows and progress: transactions whole, each change once."""

from __future__ import annotations

import json

import pytest

from ingest.binlog.events import (
    BinlogEvent,
    RowsChanged,
    StatementExecuted,
    TransactionCommitted,
    TransactionStarted,
)
from ingest.changelog.error_table import errors_sink
from ingest.errors import SchemaChangeStopError, UnconvertibleValueError
from ingest.schema.conversion import Conversion
from ingest.schema.structure_changes import Truncation
from ingest.stream.assembler import Binding, ChangeAssembler
from tidemark.contracts.changelog import MetadataColumn, Operation
from tidemark.contracts.progress import LATE_RANGE_KEY, TableProgress
from tidemark.source import BinlogPosition

START = BinlogPosition("bin.000001", 100)
T0 = 1_767_225_600_000  # a whole second


def at(offset: int) -> BinlogPosition:
    return BinlogPosition("bin.000001", offset)


def route(database: str, table: str) -> Binding | None:
    if database == "shop" and table in {"orders", "users"}:
        return Binding(sink=f"lake.{table}", key_columns=("id",))
    return None


def assembler(**progress: TableProgress) -> ChangeAssembler:
    return ChangeAssembler(
        router=route,
        captures=lambda database, table: database == "shop",
        progress={f"lake.{name}": p for name, p in progress.items()},
        start=START,
        source="db:3306",
        initial_watermark_ms=0,
        max_transaction_rows=5,
    )


def transaction(
    offset: int, *rows: tuple[int, str], table: str = "orders", seconds: int = 0
) -> list[BinlogEvent]:
    """A transaction of single-row inserts at ``offset`` .. ``offset + len(rows) + 1``."""
    events: list[BinlogEvent] = [TransactionStarted(f"0-1-{offset}", at(offset))]
    for index, (key, name) in enumerate(rows, start=1):
        events.append(
            RowsChanged(
                "shop",
                table,
                Operation.INSERT,
                ("id", "name"),
                [(None, (key, name))],
                at(offset + index),
                T0 + seconds * 1000,
            )
        )
    events.append(TransactionCommitted(at(offset + len(rows) + 1), T0 + seconds * 1000))
    return events


def feed(assembler: ChangeAssembler, events: list[BinlogEvent]) -> list[int]:
    """Feed events; returns the row counts of any forced flushes."""
    forced = []
    for event in events:
        flush = assembler.on_event(event)
        if flush is not None:
            forced.append(flush.row_count)
    return forced


def keys(rows: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(r[MetadataColumn.OPERATION], r.get("id"), r[MetadataColumn.ORDER_KEY]) for r in rows]


def test_rows_wait_for_their_transaction_to_commit() -> None:
    events = transaction(200, (1, "a"), (2, "b"))
    changes = assembler()

    feed(changes, events[:-1])
    assert changes.pending_rows == 0

    feed(changes, events[-1:])
    flush = changes.flush()

    [orders] = flush.tables
    assert keys(orders.rows) == [("c", 1, 1), ("c", 2, 2)]
    assert orders.progress.position == at(203)
    assert orders.progress.watermark_ms == T0 - 1
    assert orders.progress.partial_rows == 0
    assert orders.rows[0][MetadataColumn.SOURCE_TABLE] == "orders"


def test_tables_not_onboarded_are_ignored_but_move_the_boundary() -> None:
    changes = assembler()

    feed(changes, transaction(200, (1, "a"), table="audit_log"))

    assert changes.pending_rows == 0
    assert changes.boundary == at(202)


def test_order_keys_continue_from_the_tables_progress() -> None:
    changes = assembler(orders=TableProgress(START, 0, last_order=41, source="db:3306"))

    feed(changes, transaction(200, (1, "a")))

    assert keys(changes.flush().tables[0].rows) == [("c", 1, 42)]


def test_on_resume_a_table_skips_the_transactions_it_already_holds() -> None:
    # orders holds everything before 202; users only what came before 100 (the resume start)
    changes = assembler(
        orders=TableProgress(at(202), T0 - 1, last_order=2, source="db:3306"),
        users=TableProgress(START, 0, last_order=0, source="db:3306"),
    )
    events = [
        *transaction(100, (1, "a"), (2, "b")),  # 100..103: orders has it
        *transaction(103, (7, "u"), table="users"),  # 103..105: users needs it
        *transaction(200, (3, "c")),  # 200..202: orders has it
        *transaction(202, (4, "d")),  # 202..204: new for orders
    ]

    feed(changes, events)
    flush = {table.sink: table for table in changes.flush().tables}

    assert keys(flush["lake.orders"].rows) == [("c", 4, 3)]
    assert keys(flush["lake.users"].rows) == [("c", 7, 1)]


def test_a_table_ahead_of_the_resume_point_keeps_its_progress_while_the_stream_catches_up() -> None:
    # users was bootstrapped at 300 while orders streams from 100
    users = TableProgress(at(300), T0 - 1, last_order=9, source="db:3306")
    changes = assembler(orders=TableProgress(START, 0, last_order=0, source="db:3306"), users=users)
    feed(changes, transaction(103, (7, "u"), table="users"))

    flush = {table.sink: table for table in changes.flush(idle_tables=True).tables}

    assert flush["lake.users"].rows == []
    assert flush["lake.users"].progress == users


def test_a_bootstrapped_tables_watermark_waits_until_the_stream_passes_its_snapshot() -> None:
    bootstrapped = TableProgress(START, 0, last_order=50, source="db:3306", hold_until=at(250))
    changes = assembler(orders=bootstrapped)

    feed(changes, transaction(200, (1, "a"), seconds=10))
    before = changes.flush(idle_tables=True).tables[0].progress
    feed(changes, transaction(300, (2, "b"), seconds=20))
    after = changes.flush(idle_tables=True).tables[0].progress

    assert (before.watermark_ms, before.hold_until) == (0, at(250))
    assert (after.watermark_ms, after.hold_until) == (T0 + 20_000 - 1, None)


def test_a_transaction_too_large_to_buffer_is_committed_in_parts_that_resume_exactly() -> None:
    rows = [(key, f"r{key}") for key in range(1, 13)]
    events = transaction(200, *rows)
    changes = assembler()

    assert feed(changes, events[:-1]) == [6, 6]
    parts_progress = changes.progress("lake.orders")
    assert parts_progress is not None
    assert parts_progress.position == START  # still the transaction's start
    assert parts_progress.partial_rows == 12

    # A crash now, then a restart from the recorded progress: nothing is read twice.
    resumed = assembler(orders=parts_progress)
    feed(resumed, events)
    [orders] = resumed.flush().tables
    assert orders.rows == []
    assert orders.progress.position == at(213)
    assert orders.progress.partial_rows == 0
    assert orders.progress.last_order == 12


def test_a_crash_between_parts_resumes_after_the_rows_already_committed() -> None:
    rows = [(key, f"r{key}") for key in range(1, 10)]
    events = transaction(200, *rows)
    first = assembler()
    feed(first, events[:7])  # six rows: one part of six committed
    committed = first.progress("lake.orders")
    assert committed is not None and committed.partial_rows == 6

    resumed = assembler(orders=committed)
    feed(resumed, events)
    [orders] = resumed.flush().tables

    assert [row["id"] for row in orders.rows] == [7, 8, 9]
    assert [row[MetadataColumn.ORDER_KEY] for row in orders.rows] == [7, 8, 9]


def test_an_update_that_changes_the_key_is_a_delete_and_an_insert() -> None:
    changes = assembler()
    update = RowsChanged(
        "shop",
        "orders",
        Operation.UPDATE,
        ("id", "name"),
        [((1, "a"), (9, "a")), ((2, "b"), (2, "B"))],
        at(201),
        T0,
    )

    feed(changes, [TransactionStarted(None, at(200)), update, TransactionCommitted(at(202), T0)])

    assert keys(changes.flush().tables[0].rows) == [("d", 1, 1), ("c", 9, 2), ("u", 2, 3)]


def test_the_watermark_never_goes_backwards() -> None:
    changes = assembler()

    feed(changes, transaction(200, (1, "a"), seconds=10))
    feed(changes, transaction(300, (2, "b"), seconds=3))  # started earlier, committed later

    assert changes.flush().tables[0].progress.watermark_ms == T0 + 10_000 - 1


def test_changes_committed_before_a_published_watermark_are_counted_late() -> None:
    changes = assembler()
    feed(changes, transaction(200, (1, "a"), seconds=60))
    published = changes.flush().tables[0].progress  # watermark T0 + 60 s - 1 ms
    # the source's clock stepped back a minute; a commit in the same second is not late
    feed(changes, transaction(300, (2, "b"), (3, "c"), seconds=1))
    feed(changes, transaction(400, (4, "d"), seconds=59))

    (orders,) = changes.flush().tables

    assert published.late_rows == 0
    assert orders.progress.late_rows == 2
    # the span of the late commit times tells the scheduler which windows missed them
    assert orders.progress.late_range == (T0 + 1_000, T0 + 1_000)
    assert orders.progress.watermark_ms == published.watermark_ms  # it never goes back
    assert TableProgress.from_summary(orders.progress.summary()) == orders.progress


def test_the_late_range_spans_every_late_commit_of_a_flush_and_only_that_flush() -> None:
    changes = assembler()
    feed(changes, transaction(200, (1, "a"), seconds=60))
    changes.flush()
    feed(changes, transaction(300, (2, "b"), seconds=20))
    feed(changes, transaction(400, (3, "c"), seconds=5))
    feed(changes, transaction(500, (4, "d"), seconds=30))

    late = changes.flush().tables[0].progress
    feed(changes, transaction(600, (5, "e"), seconds=61))
    on_time = changes.flush().tables[0].progress

    assert (late.late_rows, late.late_range) == (3, (T0 + 5_000, T0 + 30_000))
    assert (on_time.late_rows, on_time.late_range) == (3, None)
    assert LATE_RANGE_KEY not in on_time.summary()


def test_a_table_re_read_behind_another_is_not_promised_the_other_tables_watermark() -> None:
    # a crash between two tables' commits of one flush: orders holds the flush, users not
    orders = TableProgress(at(300), T0 + 60_000 - 1, 9, "db:3306")
    users = TableProgress(START, T0 - 1, 4, "db:3306")
    changes = assembler(orders=orders, users=users)

    feed(changes, transaction(200, (7, "g"), table="users", seconds=30))

    flushed = {table.sink: table.progress for table in changes.flush(idle_tables=True).tables}
    # users is complete to the transaction it read (30 s), not to orders' 60 s
    assert flushed["lake.users"].watermark_ms == T0 + 30_000 - 1
    assert flushed["lake.orders"] == orders  # it holds more than was read: unchanged


def test_the_late_count_goes_on_from_the_tables_progress() -> None:
    known = TableProgress(at(100), T0 + 60_000, 7, "db:3306", late_rows=5)
    changes = assembler(orders=known)
    feed(changes, transaction(200, (1, "a"), seconds=1))

    assert changes.flush().tables[0].progress.late_rows == 6


def test_a_caught_up_reader_takes_the_servers_clock_as_watermark() -> None:
    changes = assembler()
    feed(changes, transaction(200, (1, "a")))

    changes.observe_caught_up(at(150), T0 + 60_000)

    assert changes.watermark_ms == T0 + 60_000 - 1


def test_a_reader_behind_the_server_does_not_take_its_clock() -> None:
    changes = assembler()
    feed(changes, transaction(200, (1, "a")))

    changes.observe_caught_up(at(999), T0 + 60_000)

    assert changes.watermark_ms == T0 - 1


def test_idle_tables_are_flushed_on_request_with_empty_rows() -> None:
    changes = assembler(users=TableProgress(START, 0, last_order=5, source="db:3306"))
    feed(changes, transaction(200, (1, "a")))

    flush = {table.sink: table for table in changes.flush(idle_tables=True).tables}

    assert flush["lake.users"].rows == []
    assert flush["lake.users"].progress.position == at(202)
    assert flush["lake.users"].progress.last_order == 5


def test_ddl_on_an_onboarded_table_stops_with_the_statement() -> None:
    changes = assembler()
    feed(changes, transaction(200, (1, "a")))
    alter = StatementExecuted("shop", "ALTER TABLE orders ADD COLUMN x INT", at(210), T0)

    changes.on_event(TransactionStarted("0-1-9", at(205)))
    changes.on_event(alter)

    assert changes.flush().row_count == 1  # everything before the statement still commits
    with pytest.raises(SchemaChangeStopError, match="ALTER TABLE orders ADD COLUMN x INT"):
        changes.on_event(TransactionStarted("0-1-10", at(211)))


class Follower:
    """Records the structure statements it is told about; stops on DROP when told to."""

    def __init__(self, stop_on_drop: bool) -> None:
        self.altered_tables: list[str] = []
        self._stop_on_drop = stop_on_drop

    def altered(self, database: str, table: str, statement: str) -> None:
        self.altered_tables.append(f"{database}.{table}")

    def dropped(self, database: str, table: str) -> bool:
        return self._stop_on_drop

    def created(self, database: str, table: str) -> bool:
        return False

    def truncated(self, database: str, table: str) -> Truncation:
        return self.truncation

    truncation = Truncation.MARK


def truncating(truncation: Truncation, **progress: TableProgress) -> ChangeAssembler:
    follower = Follower(stop_on_drop=False)
    follower.truncation = truncation
    return ChangeAssembler(
        router=route,
        captures=lambda database, table: database == "shop",
        progress={f"lake.{name}": p for name, p in progress.items()},
        start=START,
        source="db:3306",
        initial_watermark_ms=0,
        structure=follower,
    )


def test_a_truncate_becomes_a_marker_after_the_rows_it_empties() -> None:
    changes = truncating(Truncation.MARK)
    feed(changes, transaction(200, (1, "kettle"), (2, "teapot")))

    changes.on_event(TransactionStarted("0-1-30", at(300)))
    changes.on_event(StatementExecuted("shop", "TRUNCATE TABLE orders", at(310), T0 + 2000))
    flush = changes.flush()

    (orders,) = flush.tables
    assert keys(orders.rows) == [("c", 1, 1), ("c", 2, 2), ("t", None, 3)]
    marker = orders.rows[-1]
    assert marker[MetadataColumn.SOURCE_DATABASE] == "shop"
    assert marker[MetadataColumn.SOURCE_TABLE] == "orders"
    assert marker[MetadataColumn.POSITION] == str(at(310))
    assert orders.progress.position == at(310)
    assert changes.stop_error() is None


def test_a_truncate_already_committed_is_not_marked_again_on_resume() -> None:
    committed = TableProgress(position=at(310), watermark_ms=T0, last_order=3, source="db:3306")
    changes = truncating(Truncation.MARK, orders=committed)

    changes.on_event(TransactionStarted("0-1-30", at(300)))
    changes.on_event(StatementExecuted("shop", "TRUNCATE TABLE orders", at(310), T0))
    changes.on_event(TransactionStarted("0-1-31", at(320)))
    changes.on_event(StatementExecuted("shop", "TRUNCATE TABLE orders", at(330), T0))

    (orders,) = changes.flush().tables
    assert keys(orders.rows) == [("t", None, 4)]  # only the second, with the next order


@pytest.mark.parametrize(
    ("truncation", "stops", "marked"),
    [(Truncation.STOP, True, False), (Truncation.KEEP_ROWS, False, False)],
)
def test_a_truncate_stops_or_is_left_out_as_the_sink_says(
    truncation: Truncation, stops: bool, marked: bool
) -> None:
    changes = truncating(truncation)

    changes.on_event(StatementExecuted("shop", "TRUNCATE orders", at(310), T0))

    assert (changes.stop_error() is not None) is stops
    assert (changes.pending_rows > 0) is marked
    if stops:
        assert "try_evolve" in str(changes.stop_error())


def test_a_truncate_of_a_table_not_onboarded_is_nobodys_business() -> None:
    changes = truncating(Truncation.STOP)

    changes.on_event(StatementExecuted("shop", "TRUNCATE TABLE audit_log", at(310), T0))

    assert changes.stop_error() is None
    assert changes.boundary == at(310)


@pytest.mark.parametrize(("stop_on_drop", "stops"), [(False, False), (True, True)])
def test_a_followed_alter_goes_on_and_a_drop_stops_only_when_the_behavior_says(
    stop_on_drop: bool, stops: bool
) -> None:
    follower = Follower(stop_on_drop)
    changes = ChangeAssembler(
        router=route,
        captures=lambda database, table: database == "shop",
        progress={},
        start=START,
        source="db:3306",
        initial_watermark_ms=0,
        structure=follower,
    )

    changes.on_event(StatementExecuted("shop", "ALTER TABLE orders ADD x INT", at(210), T0))
    changes.on_event(StatementExecuted("shop", "DROP TABLE users", at(220), T0))

    assert follower.altered_tables == ["shop.orders"]
    assert (changes.stop_error() is not None) is stops
    if not stops:
        assert changes.boundary == at(220)


def _follower_assembler(follower: Follower) -> ChangeAssembler:
    return ChangeAssembler(
        router=route,
        captures=lambda database, table: database == "shop",
        progress={},
        start=START,
        source="db:3306",
        initial_watermark_ms=0,
        structure=follower,
    )


@pytest.mark.parametrize(("stop_on_drop", "stops"), [(False, False), (True, True)])
def test_a_table_renamed_out_of_the_selection_leaves_like_a_dropped_one(
    stop_on_drop: bool, stops: bool
) -> None:
    changes = _follower_assembler(Follower(stop_on_drop))

    changes.on_event(
        StatementExecuted("shop", "RENAME TABLE orders TO archive.orders_2025", at(210), T0)
    )

    stopped = changes.stop_error()
    assert (stopped is not None) is stops
    if stopped is not None:
        assert "onboarded table shop.orders was renamed to archive.orders_2025" in str(stopped)
    else:
        assert changes.boundary == at(210)


def test_a_table_renamed_to_a_name_the_patterns_select_stops_for_a_bootstrap() -> None:
    changes = _follower_assembler(Follower(stop_on_drop=False))

    changes.on_event(StatementExecuted("shop", "RENAME TABLE orders TO orders_2025", at(210), T0))

    assert str(changes.stop_error()) == (
        "onboarded table shop.orders was renamed to shop.orders_2025, which 'tables' selects: "
        "its rows were never read under that name at bin.000001:210: 'RENAME TABLE orders TO "
        "orders_2025'. Ingest stopped before it, with everything earlier committed. Start "
        "ingest again with scan.newly-added-table.enabled: true: it bootstraps "
        "shop.orders_2025, losing nothing; the changelog of shop.orders keeps its history"
    )


def test_a_table_renamed_into_the_selection_stops_for_a_bootstrap_rather_than_go_unread() -> None:
    changes = _follower_assembler(Follower(stop_on_drop=False))

    changes.on_event(StatementExecuted("staging", "RENAME TABLE items TO shop.items", at(210), T0))

    stopped = changes.stop_error()
    assert stopped is not None
    assert str(stopped).startswith(
        "staging.items was renamed to shop.items, which 'tables' selects"
    )


def test_a_table_renamed_outside_the_selection_changes_nothing() -> None:
    changes = _follower_assembler(Follower(stop_on_drop=True))

    changes.on_event(StatementExecuted("staging", "RENAME TABLE a TO b", at(210), T0))

    assert changes.stop_error() is None
    assert changes.boundary == at(210)


def test_ddl_on_other_tables_moves_the_boundary() -> None:
    changes = assembler()

    changes.on_event(TransactionStarted("0-1-9", at(205)))
    changes.on_event(StatementExecuted("shop", "CREATE INDEX i ON audit_log (x)", at(210), T0))

    assert changes.boundary == at(210)


def test_a_new_table_the_patterns_select_stops_ingest_to_be_onboarded() -> None:
    changes = assembler()
    create = StatementExecuted("shop", "CREATE TABLE payments (id INT PRIMARY KEY)", at(210), T0)

    changes.on_event(TransactionStarted("0-1-9", at(205)))
    changes.on_event(create)

    error = changes.stop_error()
    assert error is not None
    assert str(error).startswith("new table shop.payments matches 'tables' at bin.000001:210")
    assert str(error).endswith("it onboards the table and reads it from this point, losing nothing")
    assert changes.boundary == START  # restarting reads the CREATE and the rows again


def test_the_creation_of_an_onboarded_table_is_history() -> None:
    changes = assembler()
    create = StatementExecuted("shop", "CREATE TABLE orders (id INT PRIMARY KEY)", at(210), T0)

    changes.on_event(TransactionStarted("0-1-9", at(205)))
    changes.on_event(create)

    assert changes.stop_error() is None
    assert changes.boundary == at(210)


def test_a_stream_break_after_a_committed_part_rereads_without_duplicates() -> None:
    rows = [(key, f"r{key}") for key in range(1, 10)]
    events = transaction(200, *rows)
    changes = assembler()
    assert feed(changes, events[:7]) == [6]  # one part of six rows committed

    changes.abandon_transaction()  # the connection broke; the reader restarts at the boundary
    feed(changes, events)
    [orders] = changes.flush().tables

    assert [row["id"] for row in orders.rows] == [7, 8, 9]
    assert orders.progress.last_order == 9


def test_a_row_the_lake_cannot_hold_goes_to_the_error_sink_and_the_rest_of_its_event_stays() -> (
    None
):
    def conversion(columns: tuple[str, ...]) -> Conversion:
        def convert(values: tuple[object, ...]) -> tuple[object, ...]:
            if values[1] == "bad":
                raise UnconvertibleValueError("shop.orders", "name", "'bad'", "not allowed")
            return values

        return Conversion(convert, schema_version=3)

    changes = ChangeAssembler(
        router=lambda database, table: Binding("lake.orders", ("id",), conversion=conversion),
        captures=lambda database, table: True,
        progress={},
        start=START,
        source="db:3306",
        initial_watermark_ms=0,
    )
    inserts = RowsChanged(
        "shop",
        "orders",
        Operation.INSERT,
        ("id", "name"),
        [(None, (1, "a")), (None, (2, "bad")), (None, (3, "c"))],
        at(201),
        T0,
    )

    feed(changes, [TransactionStarted(None, at(200)), inserts, TransactionCommitted(at(202), T0)])

    flush = {table.sink: table for table in changes.flush().tables}
    assert [
        (row["id"], row[MetadataColumn.SCHEMA_VERSION], row[MetadataColumn.ORDER_KEY])
        for row in flush["lake.orders"].rows
    ] == [(1, 3, 1), (3, 3, 2)]
    [error] = flush[errors_sink("lake.orders")].rows
    assert (error["column_name"], error["value"], error[MetadataColumn.OPERATION]) == (
        "name",
        "'bad'",
        "c",
    )
    assert json.loads(error["payload"]) == {"id": "2", "name": "'bad'"}
    assert error[MetadataColumn.ORDER_KEY] == 1


def test_a_watermark_report_names_the_tables_complete_to_the_watermark() -> None:
    bootstrapped = TableProgress(START, 0, last_order=50, source="db:3306", hold_until=at(900))
    changes = assembler(users=bootstrapped)
    feed(changes, transaction(200, (1, "a"), seconds=10))
    changes.flush()  # orders holds row 1
    feed(changes, transaction(300, (2, "b"), seconds=20))  # ... and row 2 waits for a flush

    waiting = changes.complete_tables()
    changes.flush()
    flushed = changes.complete_tables()
    feed(changes, transaction(900, (3, "c"), table="users", seconds=30))
    changes.flush()

    # orders only once its rows are committed; users only past its bootstrap's hold
    assert waiting == {}
    assert flushed == {"lake.orders": 2}
    assert changes.complete_tables() == {"lake.orders": 2, "lake.users": 51}


def test_a_table_with_part_of_a_transaction_committed_is_not_complete() -> None:
    changes = assembler()
    feed(changes, transaction(100, (9, "z"), seconds=5))
    changes.flush()
    events = transaction(200, *[(key, f"r{key}") for key in range(1, 13)], seconds=10)

    feed(changes, events[:-1])  # two parts of six committed, the transaction still open

    assert changes.complete_tables() == {}


def test_changes_committed_before_a_watermark_a_report_promised_are_counted_late() -> None:
    changes = assembler()
    feed(changes, transaction(200, (1, "a"), seconds=1))
    changes.flush()  # orders' own commit says T0 + 1 s
    changes.marked({"lake.orders"}, T0 + 60_000)  # a watermark report said T0 + 60 s

    feed(changes, transaction(300, (2, "b"), seconds=30))

    assert changes.flush().tables[0].progress.late_rows == 1
