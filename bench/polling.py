"""Waiting for a condition in tests and benchmarks: poll it until a deadline, never sleep a
fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(what: str, check: Callable[[], T], seconds: float, interval: float = 0.2) -> T:
    """``check()``'s first truthy result; fails naming ``what`` when ``seconds`` pass first.
    ``check`` may itself assert, to fail fast when waiting can no longer succeed."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} within {seconds:g} s")
        time.sleep(interval)  # between two polls of the condition
