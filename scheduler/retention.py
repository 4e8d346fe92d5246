"""What snapshot expiry of a Paimon pipeline's tables must keep: the snapshots its windows read.

A job over Paimon tables reads each input at a snapshot pinned when its window is recorded
(``scheduler.gate``), and a re-run of the window reads the same one; the window's changes
(``db.`t$changes` ``) start at the snapshot the window before read. So a maintenance pass that
expires snapshots asks first::

    keep = snapshots_needed(schedule, store)   # {"shop.orders": 41, ...}
    # expire only snapshots older than keep[table]; a table not in it has no such reader

A table no Paimon job reads is not in the result: nothing the scheduler runs reads its history.
"""

from __future__ import annotations

from datetime import timedelta

from scheduler.gate import snapshots_in_use
from scheduler.spec import PipelineSchedule
from scheduler.state import StateStore
from tidemark.windows import EPOCH


def snapshots_needed(schedule: PipelineSchedule, store: StateStore) -> dict[str, int]:
    """Per sink table a Paimon job of ``schedule`` reads, the oldest snapshot id a window that
    is pending, running, waiting for a retry or not recorded yet may still read, its changes
    included."""
    tasks = store.task_states(schedule.pipeline)
    # the reports from each job's last window end on: the next window's pin is among them, or
    # (not reached yet) at or after the newest of them, which reached that end at least
    ends = [
        tasks[spec.task].done_end if spec.task in tasks else None
        for spec in schedule.tasks
        if spec.pins_snapshots
    ]
    since = min((end for end in ends if end is not None), default=None)
    since_ms = 0 if since is None or None in ends else (since - EPOCH) // timedelta(milliseconds=1)
    tables = store.table_states(schedule.changelogs, since_ms)
    needed = snapshots_in_use(schedule.tasks, tables, tasks)
    for spec in schedule.tasks:
        done_end = tasks[spec.task].done_end if spec.task in tasks else None
        if not spec.pins_snapshots or done_end is None:
            continue
        # the last window that succeeded: the next window's changes start after what it read
        previous = store.window_run(schedule.pipeline, spec.task, done_end)
        for table, snapshot in (previous.snapshots if previous else {}).items():
            needed[table] = min(snapshot, needed.get(table, snapshot))
    return needed
