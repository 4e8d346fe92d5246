"""What ``tidemark``'s exit code says, for scripts, service managers and ``tidemark run``.

A failure that will repeat until someone changes something (1, 2) is told apart from one that
may not (70, 75, a signal): ``tidemark run`` starts its ingest child again after the second
kind and stops after the first (``tidemark.app.ingest_child``); a systemd unit can say the same
with ``RestartPreventExitStatus=1 2``. 70 and 75 are sysexits.h's ``EX_SOFTWARE`` and
``EX_TEMPFAIL``.
"""

from __future__ import annotations

import signal
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    #: a terminal error (``TerminalError``): the same command fails the same way until
    #: something is changed; the message says what
    FAILURE = 1
    #: a configuration error (``ConfigError``), or arguments argparse refused
    CONFIG = 2
    #: an unexpected exception, a bug or an error not classified yet: its traceback is shown
    CRASH = 70
    #: a transient error (``TransientError``): the same command may succeed later
    TRANSIENT = 75
    #: Ctrl-C (128 + SIGINT)
    INTERRUPTED = 130


def describe(code: int) -> str:
    """``exit code 75, a transient error``; ``killed by SIGKILL`` for a negative
    ``subprocess`` return code."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    meaning = _MEANINGS.get(code)
    return f"exit code {code}" if meaning is None else f"exit code {code}, {meaning}"


_MEANINGS: dict[int, str] = {
    ExitCode.OK: "finished",
    ExitCode.FAILURE: "a terminal error",
    ExitCode.CONFIG: "a configuration error",
    ExitCode.CRASH: "an unexpected error",
    ExitCode.TRANSIENT: "a transient error",
    ExitCode.INTERRUPTED: "interrupted",
}
