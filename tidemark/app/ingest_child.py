"""``tidemark run``'s ingest child: started, watched, and started again when it dies.

``tidemark run`` runs ingest as a child process (``tidemark ingest FILE --parent-pid``), so a
crash of ingest leaves the scheduler's state intact and the other way round. ``IngestChild``
watches it in a thread of its own; what its exit says (``verdict``, from
``tidemark.app.exit_codes``) decides what follows:

- **start it again**: killed by a signal other than a request to stop (SIGKILL from the
  out-of-memory killer or an operator, a segfault), an unexpected error (70) or a transient one
  (75). After a capped exponential backoff (``tidemark.outages.Backoff``), one log line each
  time saying how it ended and when it starts again; a child that ran ``settled_seconds``
  before it died starts again after the first delay, one that keeps dying at once waits
  longer each time, up to ``backoff.most``. A new child resumes from the tables' own progress,
  as any ingest does, and waits as a standby while another process holds the pipeline's lease.
- **terminal**: a terminal error (1) or a configuration error (2) would end the next child the
  same way: ``on_terminal`` is called (``tidemark run`` then ends at once, see
  ``tidemark.app.commands.run``).
- **stop**: the child finished (0: its ``--max-seconds``, or a snapshot startup done) or was
  asked to stop (SIGTERM, SIGINT, 130: a service manager or a terminal that signals the whole
  group): ``stop`` is set, and the run stops as if told to.

Once ``stop`` is set, by the run or by the above, no child is started, and the one running is
stopped (SIGTERM: it ends at once, and the source server frees its lease with its connection).
A run killed with SIGKILL cannot stop it: the child watches its parent (``tidemark.lifeline``).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from tidemark.app.exit_codes import ExitCode, describe
from tidemark.outages import Backoff

logger = logging.getLogger(__name__)


class Verdict(StrEnum):
    """What a child's exit means for the run."""

    RESTART = "restart"
    TERMINAL = "terminal"
    STOP = "stop"


_VERDICTS: dict[int, Verdict] = {
    ExitCode.OK: Verdict.STOP,
    ExitCode.INTERRUPTED: Verdict.STOP,
    -signal.SIGINT: Verdict.STOP,
    -signal.SIGTERM: Verdict.STOP,
    ExitCode.FAILURE: Verdict.TERMINAL,
    ExitCode.CONFIG: Verdict.TERMINAL,
}


def verdict(code: int) -> Verdict:
    """What the exit ``code`` of ``tidemark ingest`` (a ``subprocess`` return code: negative
    for a signal) means: anything not known to stop or to repeat is worth another start."""
    return _VERDICTS.get(code, Verdict.RESTART)


@dataclass(frozen=True)
class ChildSettings:
    #: the wait before each start again: ``first`` after a child that ran a while, doubled
    #: for each child in a row that died sooner, up to ``most``
    backoff: Backoff = field(default_factory=lambda: Backoff(first=1.0, most=30.0))
    #: a child that ran this long before it died counts as the first failure again
    settled_seconds: float = 60.0
    #: how often the watcher looks whether the run was told to stop
    poll_seconds: float = 0.5
    #: how long a child told to stop (SIGTERM) may take before it is killed
    terminate_seconds: float = 10.0

    def __post_init__(self) -> None:
        for name in ("settled_seconds", "poll_seconds", "terminate_seconds"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got: {getattr(self, name)}")


#: the command of the next child; None when none is to start (the run's time is up)
ChildCommand = Callable[[], Sequence[str] | None]


class IngestChild:
    """Runs ``command``'s process until ``stop`` is set, starting it again when it dies
    (the module's description). ``pause(seconds)`` waits before a start again and returns
    True when the wait was cut short by a stop (by default ``stop.wait``); ``clock`` is
    monotonic. Tests inject both."""

    def __init__(
        self,
        command: ChildCommand,
        stop: threading.Event,
        on_terminal: Callable[[int], None],
        settings: ChildSettings = ChildSettings(),  # noqa: B008 - frozen
        *,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], bool] | None = None,
    ) -> None:
        self._command = command
        self._stop = stop
        self._on_terminal = on_terminal
        self._settings = settings
        self._clock = clock
        self._pause = pause or stop.wait
        self._thread: threading.Thread | None = None
        #: the child running now, if one is
        self.process: subprocess.Popen[bytes] | None = None
        #: how many times a child was started again
        self.restarts = 0
        #: supervising failed (a bug): the run was stopped
        self.failed = False

    def start(self) -> None:
        """Start the first child, and watch it in a thread of its own."""
        self._thread = threading.Thread(target=self._supervise, name="ingest-child", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Set ``stop`` and return once the child running, if any, has ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _supervise(self) -> None:
        try:
            self._restarting()
        except Exception:  # a bug: the run stops, rather than go on without ingest
            logger.exception("Supervising ingest failed: stopping the run")
            self.failed = True
            if self.process is not None and self.process.poll() is None:
                self.process.kill()
            self._stop.set()

    def _restarting(self) -> None:
        failures = 0  # deaths in a row of children that had not settled
        while not self._stop.is_set():
            command = self._command()
            if command is None:  # the run's time is up
                self._stop.set()
                return
            started = self._clock()
            self.process = subprocess.Popen(command)
            code = self._wait(self.process)  # None: stopped, as the run was told to
            if code is None or self._ends_the_run(code):
                return
            settled = self._clock() - started >= self._settings.settled_seconds
            failures = 1 if settled else failures + 1
            delay = self._settings.backoff.delay(failures)
            logger.warning(
                "Ingest stopped (%s): starting it again in %g s (restart %d)",
                describe(code),
                delay,
                self.restarts + 1,
            )
            if self._pause(delay):
                return
            self.restarts += 1

    def _ends_the_run(self, code: int) -> bool:
        """Whether the child's exit ``code`` ends the run; if so, it is told (``stop``)."""
        judged = verdict(code)
        if judged is Verdict.RESTART:
            return False
        if judged is Verdict.TERMINAL:
            self._on_terminal(code)
        else:  # finished (its --max-seconds, a snapshot startup done), or asked to stop
            level = logging.INFO if code == ExitCode.OK else logging.WARNING
            logger.log(level, "Ingest stopped (%s): stopping the scheduler", describe(code))
        self._stop.set()
        return True

    def _wait(self, process: subprocess.Popen[bytes]) -> int | None:
        """``process``'s exit code; None once ``stop`` was set, after stopping it."""
        while True:
            try:
                return process.wait(timeout=self._settings.poll_seconds)
            except subprocess.TimeoutExpired:
                if self._stop.is_set():
                    break
        process.terminate()
        try:
            process.wait(timeout=self._settings.terminate_seconds)
        except subprocess.TimeoutExpired:
            logger.warning(
                "Ingest did not stop within %g s of SIGTERM: killing it",
                self._settings.terminate_seconds,
            )
            process.kill()
            process.wait()
        return None
