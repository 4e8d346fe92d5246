"""The scheduler's state database unavailable (issue 45, item 3), on a PostgreSQL of the test's
own: a scheduler that starts while it is down waits for it, saying so once, and stops at once
when told; one whose database is killed (SIGKILL) inside a window holds the window until its
end is recorded; a standby waiting for the lock keeps waiting. Each window runs once, and an
outage costs a handful of log lines however many times the scheduler tried meanwhile."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import psycopg2.extensions
import pytest

from bench.polling import wait_until
from bench.workloads.recording_executor import RecordingExecutor
from bench.workloads.shop_schedule import at, consumer_settings, publish, two_table_schedule
from scheduler.outage import StateOutage, StoppedWaiting
from scheduler.service import PipelineRun, run
from scheduler.state import StateMissingError, StateSettings, StateStore, StateUnavailableError
from tests.scheduler.harness import (
    DEADLINE,
    EXPECTED,
    REPORTS,
    all_succeeded,
    run_in_thread,
    serving,
)
from tidemark.metrics import sample
from tidemark.outages import Backoff, Dependency, OutageLog
from tidemark.stack.postgres import Postgres
from tidemark.stack.service import ServiceFailedError
from tidemark.windows import Window

#: attempts the scheduler makes while its database is down, before the test brings it back:
#: enough for a line per attempt to show (the start and a standby back off: 0.5 s, 1 s, 2 s...;
#: a running scheduler tries at each tick besides)
ATTEMPTS = 4
RUNNING_ATTEMPTS = 8
#: the most lines an outage may cost: down, the lock lost, back (and a spare)
HANDFUL = 4


class CountingStore(StateStore):
    """The real store, counting the connections its state database refused: how many times
    the scheduler tried while it was down."""

    def __init__(self, settings: StateSettings) -> None:
        super().__init__(settings)
        self.refused = 0
        self._counting = threading.Lock()

    def _connect(self) -> psycopg2.extensions.connection:
        try:
            return super()._connect()
        except StateUnavailableError:
            with self._counting:
                self.refused += 1
            raise


class KillingExecutor(RecordingExecutor):
    """Takes effect for every window, and inside one, after its effect and before the scheduler
    can record its end, kills the state database (``_kill``)."""

    def __init__(self, state: StateSettings, postgres: Postgres, task: str, end: datetime) -> None:
        super().__init__(state)
        self._postgres = postgres
        self._kill_in = (task, end)
        self.killed = threading.Event()

    def _call(self, task: str, window: Window, up_to_order: int | None, cut: str | None) -> None:
        super()._call(task, window, up_to_order, cut)
        if (task, window.end) == self._kill_in and not self.killed.is_set():
            _kill(self._postgres)
            self.killed.set()


def _kill(postgres: Postgres) -> None:
    """SIGKILL the server, then its backends, as a crashed host: once this returns, no
    connection to it answers. (Backends outlive a killed postmaster for a moment, and a write
    sent then could still commit: the kill would not land where the test puts it.)"""
    pid = postgres.running_pid()
    assert pid is not None
    backends = [p for p in _processes() if _parent(p) == pid]
    os.kill(pid, signal.SIGKILL)
    for backend in backends:
        try:
            os.kill(backend, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_until(
        "the server's processes are gone", lambda: not any(map(_alive, [pid, *backends])), DEADLINE
    )


def _processes() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name; empty once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text.rsplit(")", 1)[1].split()


def _parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z"


def _start_again(postgres: Postgres) -> None:
    """Start the server killed by ``_kill``: its port and files may take a moment to be
    free, and ``up`` refuses to start it meanwhile."""

    def started() -> bool:
        try:
            postgres.up()
        except ServiceFailedError:
            return False
        return True

    wait_until("PostgreSQL runs again", started, DEADLINE)


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the scheduler said of trouble: its WARNING lines and worse, and every line of the
    state database's outages (the one saying it is back is INFO)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "scheduler.outage"
        or (record.name.startswith("scheduler") and record.levelno >= logging.WARNING)
    ]


def _running(errors: list[BaseException], check: Callable[[], bool]) -> Callable[[], bool]:
    """``check``, failing at once if the scheduler ended with an error meanwhile."""

    def checked() -> bool:
        assert not errors, f"the scheduler exited: {errors[0]!r}"
        return check()

    return checked


def _all_done(state: StateSettings, pipeline: str) -> Callable[[], bool]:
    """Every window succeeded, read on a store of the test's own: the first read after a
    restart fails on the connection the restart broke, and the next one reconnects; until
    the scheduler has started, the state has no schema yet."""
    reader = StateStore(state)
    done = all_succeeded(reader, pipeline)

    def check() -> bool:
        try:
            return done()
        except (StateUnavailableError, StateMissingError):
            return False

    return check


def _once_each(executor: RecordingExecutor) -> None:
    calls = sorted((c.task, c.window_end.strftime("%H:%M")) for c in executor.calls())
    assert calls == EXPECTED, "a window ran twice, or not at all"
    assert executor.effects() == EXPECTED


class _Down:
    """A step that fails ``times`` times as a state database that is down would, then
    answers; it moves ``clock`` by ``seconds`` at each call."""

    def __init__(self, times: int, clock: list[float] | None = None, seconds: float = 0) -> None:
        self.times, self.calls = times, 0
        self._clock, self._seconds = clock or [0.0], seconds
        self.tried = threading.Event()

    def __call__(self) -> str:
        self.calls += 1
        self._clock[0] += self._seconds
        self.tried.set()
        if self.calls <= self.times:
            raise StateUnavailableError("the state database at db:5432 did not answer", "refused")
        return "answered"


def _outage(
    stop: threading.Event,
    backoff: Backoff,
    deadline: float | None = None,
    clock: list[float] | None = None,
) -> StateOutage:
    now = clock or [0.0]
    log = OutageLog(
        Dependency.STATE_DATABASE,
        "outage-waits",
        logging.getLogger("scheduler.outage"),
        clock=lambda: now[0],
        wall_clock=lambda: now[0],
    )
    return StateOutage(log, "db:5432", stop, deadline, backoff=backoff, clock=lambda: now[0])


def test_a_step_is_tried_until_the_state_database_answers_and_the_outage_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    step = _Down(times=50)
    caplog.set_level(logging.INFO)

    assert _outage(threading.Event(), Backoff(0, 0)).retry(step, "waiting for it") == "answered"

    assert step.calls == 51
    assert _lines(caplog) == [
        "The scheduler state database is unavailable (refused): waiting for it",
        "The scheduler state database is back after 0 s",
    ]


def test_a_wait_for_the_state_database_ends_at_once_when_the_run_is_told_to_stop() -> None:
    stop = threading.Event()
    step = _Down(times=1_000)
    outage = _outage(stop, Backoff(first=600, most=600))

    def wait() -> None:
        outage.retry(step)

    waiting, errors = run_in_thread(wait)
    assert step.tried.wait(DEADLINE)

    stop.set()
    waiting.join(DEADLINE)

    assert step.calls == 1
    assert [type(error) for error in errors] == [StoppedWaiting]


def test_a_wait_for_the_state_database_ends_at_the_run_s_deadline() -> None:
    clock = [0.0]
    step = _Down(times=1_000, clock=clock, seconds=10)

    with pytest.raises(StoppedWaiting, match=r"^told to stop while the state database was"):
        _outage(threading.Event(), Backoff(0, 0), deadline=25, clock=clock).retry(step)

    assert step.calls == 3  # at 10 s, 20 s and 30 s


def test_a_scheduler_started_while_its_state_database_is_down_waits_for_it_then_runs(
    own_postgres: Postgres,
    own_state: StateSettings,
    store: StateStore,  # the shared server's schema, where the executor records its calls
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = RecordingExecutor(state_settings)
    publish(servers, reports_topic, REPORTS)
    own_postgres.down()
    scheduler = CountingStore(own_state)

    with (
        caplog.at_level(logging.INFO),
        serving(scheduler, executor, servers, reports_topic, unique_name) as errors,
    ):
        tried = _running(errors, lambda: scheduler.refused >= ATTEMPTS)
        wait_until(f"the scheduler tried {ATTEMPTS} times", tried, DEADLINE)
        (waiting,) = _lines(caplog)
        own_postgres.up()
        wait_until(
            "every window done", _running(errors, _all_done(own_state, unique_name)), DEADLINE
        )

    assert waiting.startswith("The scheduler state database is unavailable (connection to server")
    assert waiting.endswith(f"): waiting for it before scheduling pipeline '{unique_name}'")
    assert "Connection refused" in waiting
    (_, back) = _lines(caplog)
    assert back.startswith("The scheduler state database is back after ")
    _once_each(executor)
    labels = {"pipeline": unique_name, "dependency": "state_database"}
    assert sample("tidemark_dependency_outages_total", **labels) == 1
    assert sample("tidemark_dependency_up", **labels) == 1


def test_a_scheduler_waiting_for_its_state_database_stops_at_once_when_told(
    own_postgres: Postgres,
    own_state: StateSettings,
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    pipeline = PipelineRun(
        two_table_schedule(unique_name), consumer_settings(servers, reports_topic, unique_name)
    )
    own_postgres.down()

    # by its stop event (SIGINT and SIGTERM in the CLI)
    scheduler = CountingStore(own_state)
    stop = threading.Event()
    thread, errors = run_in_thread(lambda: run([pipeline], scheduler, executor, stop=stop))
    wait_until(
        "the scheduler tries twice", _running(errors, lambda: scheduler.refused >= 2), DEADLINE
    )
    stop.set()
    thread.join(1.0)  # backoff waits are on the stop event: no attempt or wait runs on
    assert not thread.is_alive(), "the scheduler went on waiting after it was told to stop"
    assert not errors

    # by max_seconds: at 3 s, not after the backoff that began at 3.5 s (0.5 + 1 + 2)
    started = time.monotonic()
    thread, errors = run_in_thread(
        lambda: run([pipeline], CountingStore(own_state), executor, max_seconds=3.0)
    )
    thread.join(DEADLINE)
    assert not errors
    assert time.monotonic() - started < 4.5
    assert executor.calls() == []


def test_a_state_database_killed_inside_a_window_costs_no_rerun_and_a_few_lines(
    own_postgres: Postgres,
    own_state: StateSettings,
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the kill lands after the window's effect, before its end is recorded
    executor = KillingExecutor(state_settings, own_postgres, "mirror:shop.orders", at("10:05"))
    publish(servers, reports_topic, REPORTS)
    scheduler = CountingStore(own_state)
    where = f"{own_state.connection['host']}:{own_state.connection['port']}"

    with (
        caplog.at_level(logging.INFO),
        serving(scheduler, executor, servers, reports_topic, unique_name) as errors,
    ):
        wait_until(
            "the state database killed inside a window",
            _running(errors, executor.killed.is_set),
            DEADLINE,
        )
        refused = scheduler.refused
        tried = _running(errors, lambda: scheduler.refused >= refused + RUNNING_ATTEMPTS)
        wait_until(f"the scheduler tried {RUNNING_ATTEMPTS} times", tried, DEADLINE)
        _start_again(own_postgres)
        wait_until(
            "every window done", _running(errors, _all_done(own_state, unique_name)), DEADLINE
        )

    _once_each(executor)
    lines = _lines(caplog)  # none before the kill
    assert len(lines) <= HANDFUL, lines
    (down,) = [line for line in lines if " is unavailable (" in line]
    assert down.endswith(f"): holding the windows in flight and trying again until {where} answers")
    assert lines[-1].startswith("The scheduler state database is back after "), lines


def test_a_scheduler_stopped_while_a_window_waits_for_its_record_leaves_it_to_the_next_start(
    own_postgres: Postgres,
    own_state: StateSettings,
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = KillingExecutor(state_settings, own_postgres, "mirror:shop.orders", at("10:05"))
    publish(servers, reports_topic, REPORTS)
    pipeline = PipelineRun(
        two_table_schedule(unique_name), consumer_settings(servers, reports_topic, unique_name)
    )
    stop = threading.Event()
    thread, errors = run_in_thread(
        lambda: run([pipeline], StateStore(own_state), executor, stop=stop)
    )
    wait_until("the state database killed inside a window", executor.killed.is_set, DEADLINE)

    stop.set()
    thread.join(5.0)  # the window's wait for its record ends with the stop

    assert not thread.is_alive(), "the scheduler went on waiting after it was told to stop"
    assert not errors
    assert (
        "Scheduler stopping before the state database answered: window "
        "[2026-01-01T10:00:00+00:00, 2026-01-01T10:05:00+00:00) of mirror:shop.orders stays "
        "open, and the next start runs it again (a mirror merge already applied is a no-op)"
    ) in _lines(caplog)
    _start_again(own_postgres)
    with serving(StateStore(own_state), executor, servers, reports_topic, unique_name) as running:
        done = _running(running, _all_done(own_state, unique_name))
        wait_until("every window done", done, DEADLINE)
    calls = Counter((c.task, c.window_end.strftime("%H:%M")) for c in executor.calls())
    # the window killed inside is called again; so is any other window the stop left open
    # (two run at once), each once more at most
    again = calls - Counter(EXPECTED)
    assert sorted(calls) == sorted(EXPECTED)
    assert again[("mirror:shop.orders", "10:05")] == 1
    assert set(again.values()) == {1}
    assert executor.effects() == EXPECTED  # and still one effect each


def test_a_standby_whose_state_database_restarts_keeps_waiting_and_takes_over(
    own_postgres: Postgres,
    own_store: StateStore,
    own_state: StateSettings,
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = RecordingExecutor(state_settings)
    publish(servers, reports_topic, REPORTS)
    scheduler = CountingStore(own_state)

    with (
        caplog.at_level(logging.INFO),
        own_store.pipeline_lock(unique_name),  # another scheduler, active: the kill frees it
        serving(scheduler, executor, servers, reports_topic, unique_name) as errors,
    ):
        standing_by = _running(
            errors, lambda: any("Waiting as a standby" in line for line in _lines(caplog))
        )
        wait_until("the scheduler waits as a standby", standing_by, DEADLINE)
        _kill(own_postgres)
        tried = _running(errors, lambda: scheduler.refused >= ATTEMPTS)
        wait_until(f"the scheduler tried {ATTEMPTS} times", tried, DEADLINE)
        _start_again(own_postgres)
        wait_until(
            "every window done", _running(errors, _all_done(own_state, unique_name)), DEADLINE
        )

    _once_each(executor)
    (standby, down, back) = _lines(caplog)
    assert standby.startswith(f"Waiting as a standby: the scheduler of pipeline '{unique_name}'")
    assert down.endswith(f"): waiting for it to take pipeline '{unique_name}''s lock")
    assert back.startswith("The scheduler state database is back after ")
