"""The shared source servers, shared between the tests of concurrent workers (``pytest -n``).

Every test that reaches a service holds this stack's lock shared for its duration; a test
marked ``server_wide``, which changes or depends on what every client of a shared server sees
(a global variable, its TLS certificate, the binlog readers connected), holds it alone: no
other test runs meanwhile. The helpers that make such a change or reading (``SET GLOBAL``,
the TLS certificate, killing every dump thread of an account, ``Threads_running``) call
``require_alone``, which fails a test without the marker; a new kind of change must call it
too.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_held_alone = False


def turnstile_of(lock_file: Path) -> Path:
    """The lock a test that waits to run alone holds while it waits (``shared_servers``)."""
    return lock_file.with_name(lock_file.name + ".turnstile")


@contextmanager
def shared_servers(lock_file: Path, alone: bool) -> Iterator[None]:
    """Hold ``lock_file`` for the block: alone (exclusive) or beside other tests (shared).

    A test waiting to run alone holds a second lock, the turnstile, which every test passes
    through before it takes its share: no new test starts while one waits to run alone, so
    it waits only for the tests already running, however many workers keep starting more
    (``flock`` alone would let their shares overlap for ever)."""
    global _held_alone
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle, turnstile_of(lock_file).open("a") as gate:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        _held_alone = alone
        try:
            yield
        finally:
            _held_alone = False
            fcntl.flock(handle, fcntl.LOCK_UN)


def require_alone(what: str) -> None:
    """Refuse ``what`` (a change to a shared server) unless the test runs alone."""
    if not _held_alone:
        raise AssertionError(
            f"{what} changes a shared server for every test running beside this one: "
            "mark the test @pytest.mark.server_wide"
        )
