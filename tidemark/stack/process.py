"""Starting, finding and stopping the daemons the stack owns.

A daemon is "ours" only if its pid file names a live process whose command line mentions the
stack's home folder and, for a daemon the stack spawned, which started when the pid file says:
``stack up`` never mistakes another process for a service and ``stack down`` never signals a
process it did not start, even when a pid has been reused since (after a crash or a restore of
the machine, pids are handed out again and often land on another of the stack's own daemons).
"""

from __future__ import annotations

import getpass
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tidemark.errors import TransientError

Clock = Callable[[], float]

#: the line ``spawn_daemon`` writes to a daemon's log before it starts it
START_LINE = "=== tidemark stack: started"
#: a log grown past this is moved aside (``<log>.1``, replacing the one before) at the next
#: start: the stack's services run for months, and some log every client error in full
LOG_ROTATE_BYTES = 64 * 1024 * 1024
#: how much of a log's end ``tail_since_start`` reads
_TAIL_BYTES = 256 * 1024


def spawn_daemon(
    argv: Sequence[str],
    *,
    log: Path,
    pid_file: Path,
    cwd: Path,
    user: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session as ``user`` with the environment ``env`` (this
    process's by default), appending its output to ``log``, and record its pid in
    ``pid_file`` with its start time.

    The log gets a start line first (``START_LINE``) so a failure can show only this start's
    output (``tail_since_start``); one past ``LOG_ROTATE_BYTES`` is moved aside first."""
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > LOG_ROTATE_BYTES:
        log.replace(log.with_name(f"{log.name}.1"))
    with log.open("ab") as out:
        out.write(f"{START_LINE} {time.strftime('%Y-%m-%d %H:%M:%S')}: {argv[0]}\n".encode())
        out.flush()
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            user=user,
            env=None if env is None else dict(env),
        )
    pid_file.write_text(f"{process.pid}\n{_start_ticks(process.pid)}\n")
    return process


def owned_pid(pid_file: Path, marker: str) -> int | None:
    """The live process named by ``pid_file`` (its first line) if its command line contains
    ``marker`` and, when the second line holds a start time (``spawn_daemon`` writes one), it
    started then.

    Not for a process started a moment ago: the kernel publishes the new command line a little
    after ``exec`` returns to the parent, so watch a new child through its ``Popen`` instead.
    """
    try:
        lines = pid_file.read_text().splitlines()
        pid = int(lines[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        started = _start_ticks(pid)
    except (FileNotFoundError, ValueError, IndexError, ProcessLookupError):
        return None
    # a daemon's own pid file (PostgreSQL's postmaster.pid) has its data folder there instead
    recorded = lines[1] if len(lines) > 1 and lines[1].isdigit() else None
    if marker not in cmdline or _is_zombie(pid) or recorded not in (None, str(started)):
        return None
    return pid


def terminate(
    pid: int, *, timeout: float, sig: int = signal.SIGTERM, clock: Clock = time.monotonic
) -> None:
    """Send ``sig``, wait for a clean shutdown, then SIGKILL if it did not come."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    if wait_for(lambda: not _alive(pid), timeout=timeout, clock=clock):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_for(lambda: not _alive(pid), timeout=10, clock=clock)


def port_is_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_for(
    condition: Callable[[], bool],
    *,
    timeout: float,
    interval: float = 0.2,
    clock: Clock = time.monotonic,
) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; returns whether it held."""
    deadline = clock() + timeout
    while True:
        if condition():
            return True
        if clock() >= deadline:
            return False
        time.sleep(interval)


def os_user() -> str:
    """Who the stack's database servers run as: the user running the stack (root included:
    MariaDB and MySQL are told so with --user)."""
    return "root" if os.geteuid() == 0 else getpass.getuser()


def run(
    argv: Sequence[str],
    *,
    what: str,
    env: dict[str, str] | None = None,
    user: str | None = None,
    cwd: Path | None = None,
) -> str:
    """Run a set-up command to completion; its output goes into the error if it fails."""
    result = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        env=env,
        user=user,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        tail = "\n".join(output[-30:])
        raise TransientError(f"{what} failed (exit {result.returncode}): {' '.join(argv)}\n{tail}")
    return result.stdout


def tail_since_start(path: Path, lines: int = 25) -> str:
    """The last ``lines`` of ``path`` written since ``spawn_daemon`` last started a daemon
    with it: older runs' lines would pass for this one's."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - _TAIL_BYTES))
            text = log.read().decode(errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    start = text.rfind(START_LINE)
    # no start line in the end read: all of it is this start's (or the log predates them)
    written = text[max(0, start) :].splitlines()
    if start >= 0 and len(written) == 1:
        return f"{written[0]}\n(nothing written since this start)"
    return "\n".join(written[-lines:])


def _start_ticks(pid: int) -> int:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat``, field 22): with
    the pid, it names one process for as long as the machine runs."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[19])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"
