"""A hot standby for the scheduler (issue 28): two scheduler processes of one pipeline, the
active one killed with SIGKILL at random moments while windows run, the standby taking over
each time and a new standby started. Every window takes effect once; a window that finished
runs again only when its scheduler was killed between the window's work and recording it
succeeded (docs/scheduler.md, "Exactly once": the work is idempotent per window); and two
schedulers never run windows at the same time."""

from __future__ import annotations

import functools
import json
import random
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bench.polling import wait_until
from bench.workloads.recording_executor import dumps_state
from bench.workloads.shop_schedule import ORDERS, USERS, at, publish, report
from bench.workloads.standby_scheduler import TimedExecutor
from scheduler.gate import RunState
from scheduler.state import StateSettings, StateStore
from tidemark.contracts.instance import Instance
from tidemark.contracts.reports import CommitReport

KILLS = 10
DEADLINE_SECONDS = 120
#: windows ending 10:05 ... 12:00, each with both mirrors and the job
WINDOW_ENDS = [at("10:00") + timedelta(minutes=5 * n) for n in range(1, 25)]
TASKS = ("mirror:shop.orders", "mirror:shop.users", "job:gmv")
WINDOWS = {(task, end) for task in TASKS for end in WINDOW_ENDS}


def _reports() -> list[CommitReport]:
    """Both tables complete to 30 s past each window end, from 10:00:30 on (a table's windows
    start with the first one its first report completes)."""
    reports: list[CommitReport] = []
    for n, end in enumerate([at("10:00"), *WINDOW_ENDS], 1):
        clock = (end + timedelta(seconds=30)).strftime("%H:%M:%S")
        reports += [report(ORDERS, n, clock, 10 * n), report(USERS, n, clock, 5 * n)]
    return reports


class Schedulers:
    """Scheduler processes of the test, each logging to a file of its own in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, args: dict[str, str]) -> subprocess.Popen[bytes]:
        log = self._folder / f"scheduler-{len(self.processes)}.log"
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "bench.workloads.standby_scheduler", json.dumps(args)],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        self.processes.append(process)
        return process


@pytest.fixture
def schedulers(tmp_path: Path) -> Iterator[Schedulers]:
    started = Schedulers(tmp_path)
    yield started
    for process in started.processes:
        process.kill()
        process.wait()


def _active(store: StateStore, pipeline: str, among: list[subprocess.Popen[bytes]]) -> int:
    def holder() -> list[int]:
        active = store.holders(pipeline).active
        pids = [process.pid for process in among]
        if isinstance(active, Instance) and active.pid in pids:
            return [pids.index(active.pid)]
        return []

    return wait_until("one scheduler is active", holder, DEADLINE_SECONDS)[0]


def _all_done(store: StateStore, pipeline: str) -> bool:
    done = {
        (str(run.task), run.window.end)
        for run in store.runs(pipeline)
        if run.state is RunState.SUCCEEDED
    }
    return done >= WINDOWS


def _calls_by(state: StateSettings, pid: int) -> int:
    store = StateStore(state)
    try:
        with store._transaction() as cursor:
            cursor.execute(
                f"SELECT count(*) FROM {state.schema}.timed_calls WHERE pid = %s", (pid,)
            )
            (count,) = cursor.fetchone() or (0,)
    finally:
        store.close()
    return int(count)


@pytest.mark.timeout(600)
def test_killing_the_active_scheduler_hands_over_to_the_standby_and_runs_each_window_once(
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
    schedulers: Schedulers,
) -> None:
    publish(servers, reports_topic, _reports())
    TimedExecutor(state_settings)  # its tables, before two processes race to create them
    args = {
        "state": dumps_state(state_settings),
        "servers": servers,
        "topic": reports_topic,
        "pipeline": unique_name,
    }
    running = [schedulers.start(args), schedulers.start(args)]
    chance = random.Random(28)
    kills = 0
    killed: set[int] = set()
    while kills < KILLS and not _all_done(store, unique_name):
        active = _active(store, unique_name, running)
        # at a random moment of its term, once it runs windows
        runs = functools.partial(_calls_by, state_settings, running[active].pid)
        wait_until("the active one runs windows", runs, DEADLINE_SECONDS)
        with pytest.raises(subprocess.TimeoutExpired):
            running[active].wait(timeout=chance.uniform(0.0, 1.0))
        running[active].send_signal(signal.SIGKILL)
        killed.add(running[active].pid)
        running[active].wait()
        running[active] = schedulers.start(args)
        kills += 1
    wait_until("every window done", lambda: _all_done(store, unique_name), DEADLINE_SECONDS)
    assert all(process.poll() is None for process in running), "a standby waits, it never exits"

    assert kills == KILLS, "the windows were done before the kills: give them more work"
    with store._transaction() as cursor:
        cursor.execute(
            f"SELECT pid, task, window_end, finished FROM {state_settings.schema}.timed_calls "
            "ORDER BY seq"
        )
        calls = cursor.fetchall()
        cursor.execute(f"SELECT task, window_end FROM {state_settings.schema}.effects")
        effects = cursor.fetchall()
    assert {(task, end) for task, end in effects} == WINDOWS
    finished = Counter((task, end) for _, task, end, done in calls if done)
    assert set(finished) == WINDOWS
    last_call = {pid: index for index, (pid, *_) in enumerate(calls)}
    for window in [window for window, times in finished.items() if times > 1]:
        finishes = [(i, pid) for i, (pid, *call) in enumerate(calls) if call == [*window, True]]
        (first, pid), *again = finishes
        assert len(again) == 1, f"{window} finished {len(finishes)} times"
        assert pid in killed and last_call[pid] == first, (
            f"{window} ran again though the scheduler that finished it was not killed before "
            "recording it"
        )
    pids = [pid for pid, *_ in calls]
    stretches = [pid for i, pid in enumerate(pids) if i == 0 or pids[i - 1] != pid]
    assert len(stretches) == len(set(stretches)), "two schedulers ran windows in turns"
    assert len(stretches) > KILLS / 2  # standbys took over
