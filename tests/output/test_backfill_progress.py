"""``tidemark backfill``'s progress, with time injected: a bar on a terminal, log lines
elsewhere."""

from __future__ import annotations

import io
import logging
import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.output.screen import FakeTerminal, screen
from tidemark.app.output.backfill_progress import BackfillProgress
from tidemark.windows import Window

FIRST = Window.ending_at(datetime(2026, 3, 1, 12, 5, tzinfo=UTC), timedelta(minutes=5))


def test_on_a_terminal_a_bar_shows_windows_done_of_the_total_the_last_and_the_time() -> None:
    now = [0.0]
    terminal = FakeTerminal()
    progress = BackfillProgress(3, "job:gmv", terminal, clock=lambda: now[0], width=140)
    [before] = screen(terminal.getvalue())

    now[0] = 42.0
    progress.update(1, FIRST)
    [after] = screen(terminal.getvalue())

    assert re.fullmatch("job:gmv [━ ]+ 0/3 windows +0:00:00 elapsed", before)
    assert re.fullmatch(
        "job:gmv [━╸╺]+ 1/3 windows "
        r"\[2026-03-01T12:00:00\+00:00, 2026-03-01T12:05:00\+00:00\) done 0:00:42 elapsed",
        after,
    )


def test_when_the_run_ends_the_bar_stays_as_it_last_was_and_what_follows_goes_below() -> None:
    terminal = FakeTerminal()
    progress = BackfillProgress(2, "job:gmv", terminal, clock=lambda: 0.0, width=140)

    progress.update(1, FIRST)
    progress.update(2, FIRST.next())
    progress.close()
    terminal.write("backfill of job:gmv: 2 windows done\n")

    [bar, after] = screen(terminal.getvalue())
    assert " 2/2 windows " in bar
    assert after == "backfill of job:gmv: 2 windows done"


def test_elsewhere_it_is_a_log_line_at_most_every_interval_and_one_for_the_last_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    log = io.StringIO()
    progress = BackfillProgress(4, "job:gmv", log, clock=lambda: now[0], interval=10)
    caplog.set_level(logging.INFO, logger="tidemark.app.output.backfill_progress")

    for done, at in enumerate([1.0, 11.0, 12.0, 13.0], start=1):
        now[0] = at
        progress.update(done, FIRST)
    progress.close()

    assert caplog.messages == [
        f"Backfill [2/4] job:gmv {FIRST} done, 11 s elapsed",
        f"Backfill [4/4] job:gmv {FIRST} done, 13 s elapsed",
    ]
    assert log.getvalue() == ""
