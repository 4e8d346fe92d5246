"""A helper process that ends with its parent, however the parent ends.

A process killed with SIGKILL cannot stop its children: they are re-parented and go on, a
binlog reader still holding its server connection, a merge worker its catalog connections.
Each of Tidemark's helper processes watches its parent instead, and ends once it is gone. A
thread that polls the parent's pid works wherever Python does, unlike Linux's
``PR_SET_PDEATHSIG``, which also fires when the *thread* that started the child ends.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

#: how often a helper looks whether its parent is still there, in seconds
CHECK_SECONDS = 0.5


def _exit() -> None:
    os._exit(1)  # nothing of a helper's is worth finishing once its parent is gone


def end_with_parent(
    parent: int | None = None,
    *,
    check_seconds: float = CHECK_SECONDS,
    orphaned: Callable[[], None] = _exit,
) -> threading.Thread:
    """Call ``orphaned`` (by default: end this process at once) when ``parent`` (by default,
    the current parent) is no longer this process's parent. Pass the parent's pid when the
    child is told it: a parent that died before the child got here is caught too."""
    expected = os.getppid() if parent is None else parent

    def watch() -> None:
        stopped = threading.Event()  # never set: a wait that no signal cuts short
        while os.getppid() == expected:
            stopped.wait(check_seconds)
        orphaned()

    watcher = threading.Thread(target=watch, name="parent-watch", daemon=True)
    watcher.start()
    return watcher
