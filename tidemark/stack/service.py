"""What every service of the local stack can do, and the shared start-up sequence."""

from __future__ import annotations

import logging
import signal
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from tidemark.errors import TidemarkError
from tidemark.stack.process import (
    owned_pid,
    port_is_open,
    tail_since_start,
    terminate,
    wait_for,
)
from tidemark.stack.settings import StackSettings

logger = logging.getLogger(__name__)


class ServiceFailedError(TidemarkError):
    """A service did not install, start or become healthy; carries what its log says since
    it was last started, and repeats the problem below it (the end is what a CI page shows)."""

    def __init__(self, service: str, problem: str, log: Path | None) -> None:
        detail = (
            f"\n--- last lines of {log} since the service was started ---\n"
            f"{tail_since_start(log)}\n--- end of {log} ---\n{service}: {problem}"
            if log
            else ""
        )
        super().__init__(f"{service}: {problem}{detail}")
        self.service = service


class Service(ABC):
    """One daemon of the stack, started from and owned by the stack's home folder."""

    name: str
    #: how long a clean shutdown may take before SIGKILL
    stop_timeout: float = 60.0
    #: the signal that asks the daemon for a clean, prompt shutdown
    stop_signal: int = signal.SIGTERM

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.data_dir = settings.service_dir(self.name)
        self.log = settings.log_file(self.name)
        self.pid_file = self.data_dir / f"{self.name}.pid"

    @property
    @abstractmethod
    def port(self) -> int: ...

    @property
    def ports(self) -> tuple[int, ...]:
        """Every port the daemon listens on; ``port`` is the one its clients use."""
        return (self.port,)

    @abstractmethod
    def install(self) -> None:
        """Install binaries and initialise the data folder; idempotent."""

    @abstractmethod
    def _launch(self) -> subprocess.Popen[bytes]:
        """Start the daemon, which is known not to be running."""

    @abstractmethod
    def is_healthy(self) -> bool:
        """Whether the service answers a real request right now."""

    def _after_first_health(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Create users, databases and the like once the service answers; idempotent."""

    @abstractmethod
    def endpoint(self) -> dict[str, Any]:
        """Where and how to connect, for ``stack status --json``."""

    def running_pid(self) -> int | None:
        return owned_pid(self.pid_file, str(self.settings.home))

    def up(self) -> None:
        """Install, start and wait until healthy; does nothing to a healthy running service."""
        try:
            self.install()
        except TidemarkError as error:
            raise ServiceFailedError(self.name, f"installation failed: {error}", None) from error
        process = None if self.running_pid() is not None else self._start()

        def alive() -> bool:
            return self.running_pid() is not None if process is None else process.poll() is None

        healthy = wait_for(
            lambda: not alive() or self.is_healthy(), timeout=self.settings.start_timeout_seconds
        )
        if not alive():
            raise ServiceFailedError(self.name, "exited while starting", self.log)
        if not healthy:
            raise ServiceFailedError(
                self.name,
                f"not healthy after {self.settings.start_timeout_seconds:.0f}s of waiting",
                self.log,
            )
        try:
            self._after_first_health()
        except Exception as error:  # any client library's error: report it with the service
            problem = f"set-up after start failed: {error}"
            raise ServiceFailedError(self.name, problem, self.log) from error

    def _start(self) -> subprocess.Popen[bytes]:
        for port in self.ports:
            if port_is_open(self.settings.host, port):
                raise ServiceFailedError(
                    self.name,
                    f"port {port} on {self.settings.host} is taken by a process the stack "
                    f"did not start; stop it or choose another port with "
                    f"TIDEMARK_{self.name.upper()}_PORT",
                    None,
                )
        logger.info("Starting %s on %s:%d", self.name, self.settings.host, self.port)
        return self._launch()

    def down(self) -> bool:
        """Stop the daemon if the stack started it; returns whether there was one to stop."""
        pid = self.running_pid()
        if pid is None:
            return False
        logger.info("Stopping %s (pid %d)", self.name, pid)
        terminate(pid, timeout=self.stop_timeout, sig=self.stop_signal)
        self.pid_file.unlink(missing_ok=True)
        return True
