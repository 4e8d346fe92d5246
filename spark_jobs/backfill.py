"""Run the windows of a past range in order, for a mirror or a job; safe to repeat.

A mirror window the mirror already holds is a no-op, so a repeated or overlapping backfill
only merges what is missing. A job runs its SQL for every window again: its outputs are
idempotent per window (``INSERT OVERWRITE`` of the window's partition, or ``MERGE``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta

from spark_jobs.window_jobs import JobOutcome, MergeOutcome, WindowJobs
from tidemark.errors import TidemarkError
from tidemark.windows import TaskKind, Window, WindowTask

Outcome = MergeOutcome | JobOutcome
OnWindow = Callable[[int, Window, Outcome], None]


def windows_in(start: datetime, end: datetime, length: timedelta) -> Iterator[Window]:
    """The windows of ``length`` (aligned on midnight UTC) that overlap ``[start, end)``."""
    window = Window.containing(start, length)
    while window.start < end:
        yield window
        window = window.next()


def backfill(
    jobs: WindowJobs, task: WindowTask, windows: Sequence[Window], on_window: OnWindow
) -> list[Outcome]:
    """Run ``task`` for each window in order; ``on_window(done, window, outcome)`` after each.

    A failure stops the run and names the window to start again from.
    """
    outcomes: list[Outcome] = []
    for done, window in enumerate(windows, start=1):
        try:
            outcome: Outcome = (
                jobs.merge_mirror(task.name, window)
                if task.kind == TaskKind.MIRROR
                else jobs.run_job(task.name, window)
            )
        except TidemarkError as error:
            raise type(error)(
                f"window {window} of {task} failed: {error} ({done - 1} of {len(windows)} "
                f"windows done; run again with --from {window.start.isoformat()} to go on)"
            ) from error
        outcomes.append(outcome)
        on_window(done, window, outcome)
    return outcomes
