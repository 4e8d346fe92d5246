"""One active ingest per pipeline (``ingest.lease``): a lease on the source server that a
standby waits for and takes over, on the real server."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.polling import wait_until
from ingest.lease import LeaseTiming, SourceLease, lease_holders, lease_name
from tidemark.contracts.instance import Instance, LeaseHolders, State
from tidemark.source import SourceConnection
from tidemark.stack.endpoints import SourceEndpoint

QUICK = LeaseTiming(check_seconds=1, wait_seconds=1, silent_seconds=2)
DEADLINE_SECONDS = 30

pytestmark = pytest.mark.every_source


@pytest.fixture
def cdc_source(source: SourceEndpoint, server_id: int) -> SourceConnection:
    """The CDC account on the test's source server: the leases' connections."""
    return source.cdc_source(server_id)


@pytest.fixture
def name(unique_name: str) -> str:
    return lease_name(unique_name, "catalog")


@pytest.fixture
def leases(cdc_source: SourceConnection, name: str) -> Iterator[list[SourceLease]]:
    """Leases on one name, each made with ``make()``; all released afterwards."""
    made: list[SourceLease] = []
    yield made
    for lease in made:
        lease.release()


def _lease(source: SourceConnection, name: str, made: list[SourceLease]) -> SourceLease:
    lease = SourceLease(source, name, "orders", QUICK)
    made.append(lease)
    return lease


def _acquire_in_background(lease: SourceLease, stop: threading.Event) -> threading.Thread:
    waiting = threading.Thread(target=lease.acquire, args=(stop,), daemon=True)
    waiting.start()
    return waiting


def test_a_second_process_waits_as_a_standby_naming_the_active_one_and_takes_over(
    cdc_source: SourceConnection,
    name: str,
    leases: list[SourceLease],
    caplog: pytest.LogCaptureFixture,
) -> None:
    active, standby = _lease(cdc_source, name, leases), _lease(cdc_source, name, leases)
    stop = threading.Event()
    assert active.acquire(stop)
    caplog.set_level(logging.WARNING, "ingest.lease")
    waiting = _acquire_in_background(standby, stop)

    holders = wait_until("the standby waits", lambda: _with_standby(cdc_source, name), 10)
    assert holders is not None
    assert isinstance(holders.active, Instance)
    assert holders.active == active.active  # who it is, from its own lease query
    assert [s.state for s in holders.standbys] == [State.STANDBY]
    wait_until("the standby said for whom it waits", lambda: "is active on" in caplog.text, 10)
    assert f"pipeline 'orders' is active {holders.active.describe()}" in caplog.text
    assert waiting.is_alive()  # still waiting

    active.release()
    waiting.join(DEADLINE_SECONDS)
    assert not waiting.is_alive()
    assert standby.active is not None
    assert lease_holders(cdc_source, name).active == standby.active


def _with_standby(source: SourceConnection, name: str) -> LeaseHolders | None:
    holders = lease_holders(source, name)
    return holders if holders.standbys else None


def test_two_processes_asking_at_the_same_moment_never_both_hold_it(
    cdc_source: SourceConnection, name: str, leases: list[SourceLease]
) -> None:
    contenders = [_lease(cdc_source, name, leases) for _ in range(4)]
    start = threading.Barrier(len(contenders))
    stop = threading.Event()

    def contend(lease: SourceLease) -> bool:
        start.wait()
        return lease.acquire(stop, time.monotonic() + 3)  # then it gives up waiting

    with ThreadPoolExecutor(len(contenders)) as pool:
        outcomes = list(pool.map(contend, contenders))
    assert outcomes.count(True) == 1


def test_a_process_told_to_stop_never_takes_the_lease(
    cdc_source: SourceConnection, name: str, leases: list[SourceLease]
) -> None:
    lease = _lease(cdc_source, name, leases)
    stop = threading.Event()
    stop.set()

    assert not lease.acquire(stop)
    assert not lease.acquire(stop, deadline=time.monotonic())  # "asks once at least": not now

    assert lease.active is None
    assert lease_holders(cdc_source, name).active is None


def test_a_standby_told_to_stop_as_the_lease_frees_gives_it_back(
    cdc_source: SourceConnection, name: str, leases: list[SourceLease]
) -> None:
    active, standby = _lease(cdc_source, name, leases), _lease(cdc_source, name, leases)
    assert active.acquire(threading.Event())
    stop = threading.Event()
    outcome: list[bool] = []
    waiting = threading.Thread(target=lambda: outcome.append(standby.acquire(stop)))
    waiting.start()
    wait_until("the standby waits", lambda: _with_standby(cdc_source, name), DEADLINE_SECONDS)

    stop.set()
    active.release()  # most likely while the standby's GET_LOCK waits: it is granted then

    waiting.join(DEADLINE_SECONDS)
    assert outcome == [False]
    assert standby.active is None
    wait_until(
        "the lease free", lambda: lease_holders(cdc_source, name).active is None, DEADLINE_SECONDS
    )


def test_the_active_process_learns_it_lost_the_lease_when_its_connection_is_killed(
    source: SourceEndpoint,
    cdc_source: SourceConnection,
    name: str,
    leases: list[SourceLease],
) -> None:
    active, standby = _lease(cdc_source, name, leases), _lease(cdc_source, name, leases)
    stop = threading.Event()
    assert active.acquire(stop)
    waiting = _acquire_in_background(standby, stop)
    holder = _connection_holding(source, name)

    with source.admin_source().connect() as admin, admin.cursor() as cursor:
        cursor.execute(f"KILL CONNECTION {holder}")  # as a network cut or a server restart does

    assert active.lost.wait(DEADLINE_SECONDS)
    waiting.join(DEADLINE_SECONDS)
    assert standby.active is not None and not standby.lost.is_set()


def _connection_holding(source: SourceEndpoint, name: str) -> int:
    with source.admin_source().connect() as admin, admin.cursor() as cursor:
        cursor.execute("SELECT IS_USED_LOCK(%s)", (name,))
        (holder,) = cursor.fetchone() or (None,)
    assert holder is not None
    return int(holder)


#: a process that holds the lease, says so, and then does nothing
_HOLDER = """
import json, signal, sys, threading
from ingest.lease import LeaseTiming, SourceLease
from tidemark.source import SourceConnection
source = SourceConnection.model_validate(json.loads(sys.argv[1]))
lease = SourceLease(source, sys.argv[2], "orders", LeaseTiming(1, 1, 2))
assert lease.acquire(threading.Event())
print("held", flush=True)
signal.pause()  # until the test kills or freezes it
"""


@pytest.mark.parametrize("how", ["killed", "frozen"])
def test_a_standby_takes_over_from_a_process_killed_or_frozen(
    how: str, cdc_source: SourceConnection, name: str, leases: list[SourceLease]
) -> None:
    settings = {
        **cdc_source.model_dump(mode="json"),
        "password": cdc_source.password.get_secret_value(),
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, json.dumps(settings), name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        standby = _lease(cdc_source, name, leases)
        stop = threading.Event()
        waiting = _acquire_in_background(standby, stop)
        # a frozen process keeps its connection open, but silent: the server drops it after
        # silent_seconds, as it does for a host that vanished
        holder.send_signal(signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        waiting.join(DEADLINE_SECONDS)
        assert standby.active is not None
    finally:
        holder.kill()
        holder.wait()
