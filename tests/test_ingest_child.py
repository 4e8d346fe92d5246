"""``tidemark run``'s ingest child (``tidemark.app.ingest_child``), with real child processes
that end as ingest can: killed, crashed, failing transiently or terminally, finished. Time is
the test's: the waits between starts are recorded, not slept."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

import pytest

from bench.polling import wait_until
from tidemark.app.exit_codes import ExitCode
from tidemark.app.ingest_child import ChildSettings, IngestChild, Verdict, verdict
from tidemark.outages import Backoff

KILLED = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
#: a child that runs until it is signalled
RUNNING = "import signal; signal.pause()"
DEFAULT_BACKOFF = ChildSettings().backoff
#: how long the real children may take to start and end, on a busy machine
DEADLINE_SECONDS = 30


def _exits(code: int) -> str:
    return f"import sys; sys.exit({code})"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (-signal.SIGKILL, Verdict.RESTART),  # the out-of-memory killer, an operator
        (-signal.SIGSEGV, Verdict.RESTART),
        (ExitCode.CRASH, Verdict.RESTART),
        (ExitCode.TRANSIENT, Verdict.RESTART),
        (ExitCode.FAILURE, Verdict.TERMINAL),
        (ExitCode.CONFIG, Verdict.TERMINAL),
        (ExitCode.OK, Verdict.STOP),
        (-signal.SIGTERM, Verdict.STOP),
        (-signal.SIGINT, Verdict.STOP),
        (ExitCode.INTERRUPTED, Verdict.STOP),
        (3, Verdict.RESTART),  # not known to repeat: worth another start
    ],
)
def test_what_an_exit_means_for_the_run(code: int, expected: Verdict) -> None:
    assert verdict(code) == expected


class Children:
    """The programs of the children, in turn, as the child's ``command``; and the test's
    clock, which moves on ``runs_for`` seconds at each reading: from a child's start to its
    end, it lived that long."""

    def __init__(self, programs: Sequence[str], runs_for: float = 0.0) -> None:
        self._programs: Iterator[str] = iter(programs)
        self._runs_for = runs_for
        self.now = 0.0
        self.started = 0
        self.pauses: list[float] = []
        self.terminal: list[int] = []

    def command(self) -> list[str] | None:
        program = next(self._programs, None)
        if program is None:
            return None
        self.started += 1
        return [sys.executable, "-c", program]

    def clock(self) -> float:
        self.now += self._runs_for
        return self.now

    def supervise(self, stop: threading.Event, backoff: Backoff = DEFAULT_BACKOFF) -> IngestChild:
        def pause(seconds: float) -> bool:
            self.pauses.append(seconds)
            return stop.is_set()

        child = IngestChild(
            self.command,
            stop,
            self.terminal.append,
            ChildSettings(backoff=backoff, settled_seconds=60.0, poll_seconds=0.05),
            clock=self.clock,
            pause=pause,
        )
        child.start()
        return child


def test_a_child_that_keeps_dying_at_once_waits_longer_each_time_up_to_the_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "tidemark.app.ingest_child")
    children = Children(
        [KILLED, _exits(ExitCode.TRANSIENT), _exits(ExitCode.CRASH), KILLED, KILLED, _exits(1)]
    )
    stop = threading.Event()

    child = children.supervise(stop, Backoff(first=1.0, most=4.0))

    assert stop.wait(DEADLINE_SECONDS), "the terminal exit stops the run"
    child.stop()
    assert children.pauses == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert (children.started, child.restarts, children.terminal) == (6, 5, [1])
    restarts = [r.getMessage() for r in caplog.records if "starting it again" in r.getMessage()]
    assert restarts == [
        "Ingest stopped (killed by SIGKILL): starting it again in 1 s (restart 1)",
        "Ingest stopped (exit code 75, a transient error): starting it again in 2 s (restart 2)",
        "Ingest stopped (exit code 70, an unexpected error): starting it again in 4 s (restart 3)",
        "Ingest stopped (killed by SIGKILL): starting it again in 4 s (restart 4)",
        "Ingest stopped (killed by SIGKILL): starting it again in 4 s (restart 5)",
    ]


def test_a_child_that_ran_a_while_before_it_died_starts_again_after_the_first_delay() -> None:
    children = Children([KILLED, KILLED, KILLED, _exits(ExitCode.CONFIG)], runs_for=120.0)
    stop = threading.Event()

    child = children.supervise(stop)

    assert stop.wait(DEADLINE_SECONDS)
    child.stop()
    assert children.pauses == [1.0, 1.0, 1.0]
    assert children.terminal == [ExitCode.CONFIG]


@pytest.mark.parametrize("program", [_exits(0), "import os; os.kill(os.getpid(), 15)"])
def test_a_child_that_finished_or_was_asked_to_stop_stops_the_run(program: str) -> None:
    children = Children([program, KILLED])
    stop = threading.Event()

    child = children.supervise(stop)

    assert stop.wait(DEADLINE_SECONDS), "the run stops with its child"
    child.stop()
    assert (children.started, children.pauses, children.terminal) == (1, [], [])


def test_a_stop_ends_the_running_child_and_starts_no_other() -> None:
    children = Children([RUNNING, RUNNING])
    stop = threading.Event()
    child = children.supervise(stop)
    process = wait_until("the child started", lambda: child.process, DEADLINE_SECONDS)
    assert process is not None

    child.stop()  # returns once the child ended

    assert process.returncode == -signal.SIGTERM
    assert (children.started, child.restarts, children.terminal) == (1, 0, [])


def test_a_run_told_to_stop_before_its_child_started_starts_none() -> None:
    children = Children([RUNNING])
    stop = threading.Event()
    stop.set()

    children.supervise(stop).stop()

    assert children.started == 0


def test_a_failure_to_supervise_stops_the_run_rather_than_leave_it_without_ingest() -> None:
    def command() -> list[str]:
        raise RuntimeError("a bug")

    stop = threading.Event()
    child = IngestChild(command, stop, on_terminal=lambda code: None)
    child.start()

    assert stop.wait(DEADLINE_SECONDS)
    child.stop()
    assert child.failed
