"""A table's freshness as a small line chart: the lag (seconds behind the present) over the
hours the status page shows, laid out here and drawn as SVG by its template."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tidemark.freshness import LagPoint

WIDTH, HEIGHT = 360, 110
#: room for the axis labels: left of the plot, and below it
_LEFT, _BOTTOM, _TOP, _RIGHT = 46, 16, 6, 6
#: the top of the lag axis is the first of these the lag stays under
_SCALES = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
_X_STEPS = tuple(timedelta(minutes=m) for m in (10, 15, 30, 60, 120, 180, 360, 720, 1440))


@dataclass(frozen=True)
class Tick:
    position: float
    label: str
    #: how the label sits on its tick (SVG text-anchor): a label at the right edge ends there
    anchor: str = "middle"


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    #: the plot's box: left, top, right, bottom
    box: tuple[float, float, float, float]
    #: an SVG polyline's ``points``; empty when nothing is known
    points: str
    #: on the lag axis (y) and the time axis (x)
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    #: the highest lag drawn, for the chart's title
    peak: str


def freshness_chart(points: Sequence[LagPoint], since: datetime, now: datetime) -> Chart:
    left, top, right, bottom = _LEFT, _TOP, WIDTH - _RIGHT, HEIGHT - _BOTTOM
    peak = max((point.seconds for point in points), default=0.0)
    scale = next((s for s in _SCALES if peak <= s), _round_up(peak))
    span = (now - since).total_seconds() or 1.0

    def x(at: datetime) -> float:
        return left + (right - left) * (at - since).total_seconds() / span

    def y(seconds: float) -> float:
        return bottom - (bottom - top) * min(seconds, scale) / scale

    drawn = " ".join(f"{x(p.at):.1f},{y(p.seconds):.1f}" for p in points)
    y_ticks = tuple(Tick(y(v), duration(v)) for v in (0, scale / 2, scale))
    step = next((s for s in _X_STEPS if span / s.total_seconds() <= 6), timedelta(days=1))
    first = since + (-(since - datetime.min.replace(tzinfo=since.tzinfo)) % step)
    x_ticks = []
    at = first
    while at <= now:
        near_edge = x(at) > right - 14
        x_ticks.append(Tick(x(at), f"{at:%H:%M}", "end" if near_edge else "middle"))
        at += step
    return Chart(
        WIDTH, HEIGHT, (left, top, right, bottom), drawn, y_ticks, tuple(x_ticks), duration(peak)
    )


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``1.5 h``: a lag as people say it."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min" if seconds % 60 == 0 else f"{seconds / 60:.1f} min"
    hours = seconds / 3600
    return f"{hours:.0f} h" if hours == int(hours) else f"{hours:.1f} h"


def _round_up(seconds: float) -> int:
    day = 86400
    return int(-(-seconds // day) * day)
