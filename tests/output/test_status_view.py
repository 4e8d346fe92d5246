"""``tidemark status``'s view, from statuses made by hand: plain text keeps the columns scripts
split on; a terminal gets the same table, styled."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ingest.changelog.status import TableStatus
from scheduler.status import TaskCondition, TaskStatus
from tests.output.screen import screen
from tidemark.app.output.console import console_for, plain_text
from tidemark.app.output.status import status_view
from tidemark.app.pipeline import PipelineStatus
from tidemark.contracts.bootstrap_state import BootstrapState, SourceTableBootstrap
from tidemark.contracts.progress import TableProgress
from tidemark.source import BinlogPosition
from tidemark.windows import TaskKind, Window, WindowTask

NOW = datetime(2026, 11, 22, 15, 48, tzinfo=UTC)
WATERMARK = datetime(2026, 11, 22, 15, 47, 1, tzinfo=UTC)
POSITION = BinlogPosition("mariadb-bin.000002", 12345)


def _streaming(sink: str, rows: int, late: int = 0, errors: int = 0) -> TableStatus:
    progress = TableProgress(POSITION, int(WATERMARK.timestamp() * 1000), 7, "shop", late_rows=late)
    return TableStatus(
        sink, f"{sink}_changelog", True, progress, 1, NOW, total_rows=rows, errors=errors
    )


def test_each_table_shows_its_watermark_lag_rows_late_changes_errors_and_position() -> None:
    status = PipelineStatus([_streaming("shop.orders", 1234, late=2, errors=3)], False, None)

    assert plain_text(status_view(status, NOW)).splitlines() == [
        "sink table                       watermark                           lag       rows"
        "   late  errors  position",
        "shop.orders                      2026-11-22T15:47:01.000+00:00    59.0 s       1234"
        "      2       3  mariadb-bin.000002:12345",
    ]


def test_a_table_without_a_watermark_says_why_in_its_place() -> None:
    bootstrapping = TableStatus(
        "shop.users",
        "shop.users_changelog",
        True,
        _streaming("x", 0).progress,
        bootstrap=BootstrapState({"shop.users": SourceTableBootstrap(rows=5000)}),
    )
    status = PipelineStatus(
        [
            TableStatus("shop.orders", "shop.orders_changelog", exists=False),
            TableStatus("shop.payments", "shop.payments_changelog", exists=True),
            bootstrapping,
        ],
        False,
        None,
    )

    lines = plain_text(status_view(status, NOW)).splitlines()[1:]

    assert [line.split(None, 1) for line in lines] == [
        ["shop.orders", "no changelog table yet"],
        ["shop.payments", "no commits yet"],
        ["shop.users", "bootstrapping: 5,000 rows read"],
    ]


def _held(sink: str) -> TableStatus:
    """Bootstrapped, its watermark held until the stream reaches the last snapshot's position."""
    streaming = _streaming(sink, 0).progress
    assert streaming is not None
    progress = replace(streaming, hold_until=BinlogPosition("mariadb-bin.000002", 99999))
    return TableStatus(sink, f"{sink}_changelog", True, progress, total_rows=3)


def _mixed() -> PipelineStatus:
    bootstrapping = TableStatus(
        "shop.users",
        "shop.users_changelog",
        True,
        _streaming("x", 0).progress,
        bootstrap=BootstrapState({"shop.users": SourceTableBootstrap(rows=5000)}),
    )
    return PipelineStatus(
        [_streaming("shop.orders", 1234, late=2, errors=3), bootstrapping, _held("shop.items")],
        False,
        None,
    )


def test_why_a_table_has_no_watermark_leaves_the_columns_of_the_others_where_they_are() -> None:
    """As before rich: such a row is the sink table, a space, and the reason, however long."""
    assert plain_text(status_view(_mixed(), NOW)).splitlines() == [
        "sink table                       watermark                           lag       rows"
        "   late  errors  position",
        "shop.orders                      2026-11-22T15:47:01.000+00:00    59.0 s       1234"
        "      2       3  mariadb-bin.000002:12345",
        "shop.users                       bootstrapping: 5,000 rows read",
        "shop.items                       bootstrapped; streaming up to mariadb-bin.000002:99999"
        " to be consistent",
    ]


def test_on_a_terminal_the_reason_runs_on_past_the_watermark_column_without_widening_it() -> None:
    alone = PipelineStatus([_streaming("shop.orders", 1234, late=2, errors=3)], False, None)
    terminal, before = io.StringIO(), io.StringIO()

    console_for(before, terminal=True, width=140).print(status_view(alone, NOW))
    console_for(terminal, terminal=True, width=140).print(status_view(_mixed(), NOW))

    [header, orders, users, items] = screen(terminal.getvalue())
    assert [header, orders] == screen(before.getvalue())
    assert users == "shop.users                       bootstrapping: 5,000 rows read"
    assert items == (
        "shop.items                       bootstrapped; streaming up to mariadb-bin.000002:99999"
        " to be consistent"
    )


def test_a_quiet_table_whose_hold_a_watermark_report_passed_shows_that_watermark() -> None:
    """Bootstrapped, then no change: its newest commit still holds, but the scheduler recorded
    a watermark report, which marks a table only once the stream passed its hold."""
    held = _held("shop.items")
    assert held.progress is not None
    reported = replace(held, recorded_watermark_ms=held.progress.watermark_ms + 30_000)

    [row] = plain_text(status_view(PipelineStatus([reported], False, None), NOW)).splitlines()[1:]

    assert row.split()[:3] == ["shop.items", "2026-11-22T15:47:31.000+00:00", "29.0"]


def test_a_table_whose_stream_has_seen_no_event_yet_says_so_instead_of_1970() -> None:
    streaming = _streaming("shop.orders", 2)
    assert streaming.progress is not None
    unseen = replace(streaming, progress=replace(streaming.progress, watermark_ms=0))

    [row] = plain_text(status_view(PipelineStatus([unseen], False, None), NOW)).splitlines()[1:]

    assert row.split(None, 1) == ["shop.orders", "waiting for the stream's first binlog event"]


def test_a_table_held_at_its_first_watermark_says_where_its_stream_must_reach() -> None:
    """A bootstrap's first commit holds watermark 0 until the stream passes the hold."""
    held = _held("shop.items")
    assert held.progress is not None
    at_zero = replace(held, progress=replace(held.progress, watermark_ms=0))

    [row] = plain_text(status_view(PipelineStatus([at_zero], False, None), NOW)).splitlines()[1:]

    assert row.split(None, 1) == [
        "shop.items",
        "bootstrapped; streaming up to mariadb-bin.000002:99999 to be consistent",
    ]


def test_a_long_sink_table_name_widens_its_column_for_every_row() -> None:
    status = PipelineStatus(
        [_streaming("shop.orders", 1), _streaming("shop.a_sink_table_name_of_40_characters", 2)],
        False,
        None,
    )

    lines = plain_text(status_view(status, NOW)).splitlines()

    assert {line.index("2026-11-22") for line in lines[1:]} == {lines[0].index("watermark")}


def test_a_scheduled_pipeline_shows_each_task_s_windows_below_the_tables() -> None:
    window = Window.ending_at(datetime(2026, 11, 22, 15, 45, tzinfo=UTC), timedelta(minutes=5))
    task = TaskStatus(
        "shop",
        WindowTask(TaskKind.MIRROR, "shop.orders"),
        window,
        window.next(),
        TaskCondition.WAITING,
        "for shop.orders watermark 15:47:01 < 15:50:00",
    )
    status = PipelineStatus([_streaming("shop.orders", 1)], True, [task])

    assert plain_text(status_view(status, NOW)).splitlines()[2:] == [
        "",
        "task                                     last window done       next window            "
        "state",
        "mirror:shop.orders                       2026-11-22 15:45       2026-11-22 15:50       "
        "waiting: for shop.orders watermark 15:47:01 < 15:50:00",
    ]


def test_before_any_scheduler_ran_the_windows_section_says_so() -> None:
    status = PipelineStatus([_streaming("shop.orders", 1)], True, None)

    assert plain_text(status_view(status, NOW)).splitlines()[-1] == (
        "windows: no scheduler has run for this pipeline yet (tidemark schedule FILE)"
    )


def test_on_a_narrow_terminal_long_values_fold_within_their_column_instead_of_being_cut() -> None:
    status = PipelineStatus([_streaming("shop.orders", 1234, late=2, errors=3)], False, None)
    terminal = io.StringIO()

    console_for(terminal, terminal=True, width=80).print(status_view(status, NOW))

    [header, *rows] = screen(terminal.getvalue())
    assert len(rows) > 1 and max(len(line) for line in [header, *rows]) <= 80
    assert "…" not in terminal.getvalue()
    column = header.index("position")
    assert "".join(row[column:] for row in rows) == "mariadb-bin.000002:12345"
    assert "\x1b[1m" in terminal.getvalue()  # bold headers


def test_values_stored_as_null_are_counted_per_table_and_column_after_the_tables() -> None:
    orders = _streaming("shop.orders", 10, errors=3)
    assert orders.progress is not None
    nulled = replace(orders.progress, nulled=(("paid_at", 1), ("shipped_on", 2)))
    status = PipelineStatus([replace(orders, progress=nulled)], False, None)

    tables, _, rest = plain_text(status_view(status, NOW)).partition("\n\n")

    assert rest.splitlines() == [
        "stored as NULL (see the error table)     values",
        "shop.orders.paid_at                           1",
        "shop.orders.shipped_on                        2",
    ]
