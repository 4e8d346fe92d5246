"""The gate over a Paimon pipeline: no mirrors, and each job window reads its inputs at the
snapshots fixed when it is first recorded, the first complete to the window's end."""

from __future__ import annotations

from scheduler.gate import (
    ReportRecord,
    RunState,
    TableState,
    TaskSpec,
    TaskState,
    WindowRun,
    cuts_since,
    decide,
    job_task,
    snapshots_in_use,
)
from tests.scheduler.test_gate import FIVE, at, done, ms, window

GMV = job_task("gmv")
SPEC = TaskSpec(GMV, ("shop.orders", "shop.users"), FIVE, pins_snapshots=True)


def reports(*snapshots: tuple[int, str]) -> TableState:
    """A Paimon table from (snapshot id, watermark) reports, in commit order."""
    return TableState.from_reports(
        ReportRecord(snapshot, ms(clock), last_order=snapshot) for snapshot, clock in snapshots
    )


def test_a_job_window_fires_on_its_inputs_watermarks_pinned_at_the_first_complete_snapshots() -> (
    None
):
    tables = {
        # 12 is the first snapshot whose watermark reaches 10:05; 13 has changes after it
        "shop.orders": reports((11, "10:04:58"), (12, "10:05:01"), (13, "10:06")),
        # an idle table: a watermark report took its snapshot 7 past 10:05
        "shop.users": reports((7, "10:07")),
    }

    decision = decide([SPEC], tables, {GMV: done("10:00")}, at("10:08"))

    (due,) = decision.due
    assert (due.task, due.window) == (GMV, window("10:05"))
    assert due.snapshots == {"shop.orders": 12, "shop.users": 7}
    assert due.up_to_order is None


def test_it_waits_while_an_input_has_not_reached_the_end() -> None:
    tables = {
        "shop.orders": reports((12, "10:05:01")),
        "shop.users": reports((7, "10:04:59")),
    }

    decision = decide([SPEC], tables, {GMV: done("10:00")}, at("10:08"))

    assert decision.due == ()
    (waiting,) = decision.waiting
    assert waiting.reason == (
        "waiting for shop.users watermark 2026-01-01 10:04:59 < 2026-01-01 10:05:00"
    )


def test_a_window_run_again_reads_the_snapshots_it_was_first_pinned_to() -> None:
    tables = {
        "shop.orders": reports((12, "10:05:01"), (13, "10:06"), (14, "10:20")),
        "shop.users": reports((7, "10:07"), (8, "10:20")),
    }
    pinned = {"shop.orders": 12, "shop.users": 7}
    for state, retry_at in ((RunState.RUNNING, None), (RunState.FAILED, at("10:09"))):
        run = WindowRun(GMV, window("10:05"), state, 1, None, "boom", retry_at, pinned)
        tasks = {GMV: TaskState(at("10:00"), run)}

        (due,) = decide([SPEC], tables, tasks, at("10:21")).due

        assert (due.window, due.attempt, due.snapshots) == (window("10:05"), 2, pinned)


def test_reports_are_read_from_the_next_window_end_of_a_paimon_job_on() -> None:
    assert cuts_since([SPEC], {GMV: done("10:00")}) == ms("10:05")
    assert cuts_since([SPEC], {}) == 0  # its first window starts at its first watermark


def test_snapshot_expiry_keeps_what_open_and_next_windows_read_and_where_changes_start() -> None:
    tables = {
        "shop.orders": reports((12, "10:05:01"), (13, "10:06"), (14, "10:10:30")),
        "shop.users": reports((7, "10:07"), (8, "10:08")),
    }
    other = TaskSpec(job_task("orders_only"), ("shop.orders",), FIVE, pins_snapshots=True)
    held = WindowRun(other.task, window("10:05"), RunState.FAILED, 3, snapshots={"shop.orders": 12})
    tasks = {GMV: done("10:05"), other.task: TaskState(at("10:00"), held)}

    # gmv's next window ends at 10:10: orders' snapshot 14, users' not reached yet, so its
    # newest (a watermark report may take it past 10:10); the held window keeps orders' 12.
    # Each window's changes start at the first snapshot complete to its start, proven by the
    # one before it: orders' 12 (complete to 10:05, and to the held window's 10:00), users' 7
    assert snapshots_in_use([SPEC, other], tables, tasks) == {"shop.orders": 11, "shop.users": 6}
    assert snapshots_in_use([SPEC], tables, tasks) == {"shop.orders": 11, "shop.users": 6}
