"""Windows: the half-open time ranges ``[start, end)`` that mirrors merge and jobs run for.

Shared by the scheduler (which decides when a window may run) and ``spark_jobs`` (which runs
it). Windows line up with midnight UTC: a window length divides a day (``parse_window``), so the
window holding an instant is found by flooring, with no state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TaskKind(StrEnum):
    """What runs for a window: the merge of one sink table into its mirror, or a declared job."""

    MIRROR = "mirror"
    JOB = "job"


@dataclass(frozen=True, order=True)
class WindowTask:
    """One schedulable unit: ``mirror`` + sink table name, or ``job`` + job name."""

    kind: TaskKind
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True, order=True)
class Window:
    """``[start, end)`` in UTC."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError(f"window bounds must be timezone-aware: {self.start}, {self.end}")
        if self.end <= self.start:
            raise ValueError(f"window end {self.end} is not after its start {self.start}")

    @classmethod
    def ending_at(cls, end: datetime, length: timedelta) -> Window:
        return cls(end - length, end)

    @classmethod
    def containing(cls, instant: datetime, length: timedelta) -> Window:
        """The window of ``length`` that holds ``instant``."""
        start = EPOCH + ((instant - EPOCH) // length) * length
        return cls(start, start + length)

    @property
    def length(self) -> timedelta:
        return self.end - self.start

    @property
    def start_ms(self) -> int:
        return _epoch_ms(self.start)

    @property
    def end_ms(self) -> int:
        return _epoch_ms(self.end)

    def next(self) -> Window:
        return Window(self.end, self.end + self.length)

    def variables(self, job_name: str) -> dict[str, str]:
        """The built-in SQL variables of this window (``tidemark.config.extension``)."""
        return {
            "window_start": _sql_timestamp(self.start),
            "window_end": _sql_timestamp(self.end),
            "window_start_ms": str(self.start_ms),
            "window_end_ms": str(self.end_ms),
            # the day and hour the window belongs to: a T+1 query's dt='${dt}' partition
            "dt": self.start.astimezone(UTC).strftime("%Y-%m-%d"),
            "hour": self.start.astimezone(UTC).strftime("%H"),
            "job_name": job_name,
        }

    def __str__(self) -> str:
        return f"[{self.start.isoformat()}, {self.end.isoformat()})"


def windows_between(first_end: datetime, last_end: datetime, length: timedelta) -> Iterator[Window]:
    """The windows of ``length`` whose ends run from ``first_end`` to ``last_end``, inclusive."""
    end = first_end
    while end <= last_end:
        yield Window.ending_at(end, length)
        end += length


def from_epoch_ms(value: int) -> datetime:
    return EPOCH + timedelta(milliseconds=value)


def _epoch_ms(instant: datetime) -> int:
    return (instant - EPOCH) // timedelta(milliseconds=1)


def _sql_timestamp(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
