"""``tidemark maintain``'s progress, with time injected: each table's result as it finishes;
on a terminal above a bar of tables done, with the table at work."""

from __future__ import annotations

import io
import re

from spark_jobs.maintenance import FileCounts, TableKind, TableResult
from tests.output.screen import FakeTerminal, screen
from tidemark.app.output.maintenance import render
from tidemark.app.output.maintenance_progress import MaintenanceProgress

ORDERS = TableResult(
    "shop.orders_changelog",
    TableKind.CHANGELOG,
    dry_run=False,
    files_before=FileCounts(8, 0),
    files_after=FileCounts(1, 0),
    snapshots_before=8,
    compact_seconds=1.5,
)
MIRROR = TableResult("shop.orders", TableKind.MIRROR, dry_run=False, exists=False)
TABLES = [ORDERS.table, MIRROR.table]


def test_elsewhere_each_table_s_lines_are_written_as_soon_as_it_is_done() -> None:
    out = io.StringIO()
    progress = MaintenanceProgress(TABLES, out, clock=lambda: 0.0)

    progress.finished(ORDERS)
    after_one = out.getvalue()
    progress.finished(MIRROR)
    progress.close()

    assert after_one == render(ORDERS)
    assert out.getvalue() == render(ORDERS) + render(MIRROR)  # text only, as without progress


def test_on_a_terminal_a_bar_shows_tables_done_of_the_total_the_one_at_work_and_the_time() -> None:
    now = [0.0]
    terminal = FakeTerminal()
    progress = MaintenanceProgress(TABLES, terminal, clock=lambda: now[0], width=120)
    [before] = screen(terminal.getvalue())

    now[0] = 42.0
    progress.finished(ORDERS)
    during = screen(terminal.getvalue())

    assert re.fullmatch("maintain [━ ]+ 0/2 tables shop.orders_changelog +0:00:00 elapsed", before)
    assert during[:-1] == render(ORDERS).splitlines()  # each table's result above the bar
    assert re.fullmatch("maintain [━╸╺]+ 1/2 tables shop.orders +0:00:42 elapsed", during[-1])


def test_when_the_run_ends_the_bar_stays_below_the_results_and_what_follows_goes_below() -> None:
    terminal = FakeTerminal()
    progress = MaintenanceProgress(TABLES, terminal, clock=lambda: 0.0, width=120)

    progress.finished(ORDERS)
    progress.finished(MIRROR)
    progress.close()
    terminal.write("after\n")

    [*results, bar, after] = screen(terminal.getvalue())
    assert results == (render(ORDERS) + render(MIRROR)).splitlines()
    assert " 2/2 tables " in bar and "shop.orders" not in bar
    assert after == "after"
    assert "\x1b[?25h" in terminal.getvalue()  # the cursor is back
