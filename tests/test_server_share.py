"""The lock that lets the tests of concurrent workers share the stack's servers."""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path

import pytest

from bench.polling import wait_until
from tests.server_share import require_alone, shared_servers, turnstile_of


class _Holder:
    """A thread holding the lock, shared or alone, until told to let go."""

    def __init__(self, lock_file: Path, alone: bool, entered: list[str], name: str) -> None:
        self.release = threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(lock_file, alone, entered, name))
        self._thread.start()

    def _hold(self, lock_file: Path, alone: bool, entered: list[str], name: str) -> None:
        with shared_servers(lock_file, alone):
            entered.append(name)
            self.release.wait(30)

    def join(self) -> None:
        self.release.set()
        self._thread.join(30)


def _held_by_another(path: Path) -> bool:
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _entered(entered: list[str], *names: str) -> bool:
    return entered == list(names)


def test_tests_share_the_servers_and_one_that_runs_alone_waits_for_them(tmp_path: Path) -> None:
    lock = tmp_path / "servers.lock"
    entered: list[str] = []
    first, second = (_Holder(lock, False, entered, name) for name in ("first", "second"))
    wait_until("both shares taken", lambda: len(entered) == 2, 10, interval=0.01)
    alone = _Holder(lock, True, entered, "alone")
    wait_until(
        "the test that runs alone waiting",
        lambda: _held_by_another(turnstile_of(lock)),
        10,
        interval=0.01,
    )
    first.join()
    assert "alone" not in entered, "it ran beside a test still running"
    second.join()
    wait_until("the test that runs alone", lambda: "alone" in entered, 10, interval=0.01)
    alone.join()


def test_no_test_starts_while_one_waits_to_run_alone(tmp_path: Path) -> None:
    """Without the turnstile, workers that keep starting tests would hold their shares
    overlapping for ever, and a test waiting to run alone would wait with them (seen: 366 s)."""
    lock = tmp_path / "servers.lock"
    entered: list[str] = []
    running = _Holder(lock, False, entered, "running")
    wait_until("a test running", lambda: _entered(entered, "running"), 10, interval=0.01)
    alone = _Holder(lock, True, entered, "alone")
    wait_until(
        "the test that runs alone waiting",
        lambda: _held_by_another(turnstile_of(lock)),
        10,
        interval=0.01,
    )
    following = _Holder(lock, False, entered, "next")
    with pytest.raises(AssertionError):  # the time "next" would need to start beside "running"
        wait_until("the next test starting", lambda: "next" in entered, 1, interval=0.01)
    running.join()
    wait_until("the test that runs alone", lambda: "alone" in entered, 10, interval=0.01)
    alone.join()
    wait_until("the next test", lambda: "next" in entered, 10, interval=0.01)
    following.join()
    assert entered == ["running", "alone", "next"]


def test_a_change_to_a_shared_server_is_refused_unless_the_test_runs_alone(
    tmp_path: Path,
) -> None:
    with shared_servers(tmp_path / "servers.lock", alone=False):
        with pytest.raises(AssertionError, match="mark the test @pytest.mark.server_wide"):
            require_alone("SET GLOBAL binlog_format")
    with shared_servers(tmp_path / "servers.lock", alone=True):
        require_alone("SET GLOBAL binlog_format")
