"""A table's freshness over time: how far behind the present its watermark was, at each moment.

Freshness is known only at samples: a moment and the watermark the table had reached by then (a
commit of the changelog, or a report the scheduler recorded). Between two samples the watermark
stood still as far as anyone knows, so the lag grew one second a second: a gap in the samples (an
ingest that stopped) shows as a rising line, never as a straight one between two good points.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

#: one sample a minute is what a chart over hours can show
SAMPLE_PERIOD = timedelta(minutes=1)
#: samples further apart than this have a gap between them, drawn as the lag growing
_GAP = SAMPLE_PERIOD * 1.5


@dataclass(frozen=True, order=True)
class FreshnessSample:
    at: datetime
    watermark_ms: int

    def lag_seconds(self, at: datetime | None = None) -> float:
        """The lag at ``at`` (by default the sample's moment) if the watermark stayed here."""
        return (at or self.at).timestamp() - self.watermark_ms / 1000


@dataclass(frozen=True)
class LagPoint:
    at: datetime
    seconds: float


def per_minute(samples: Iterable[FreshnessSample]) -> tuple[FreshnessSample, ...]:
    """Per minute, the sample with the furthest watermark, oldest first: a changelog that
    commits every second has 3,600 commits an hour, and a chart needs 60."""
    furthest: dict[datetime, FreshnessSample] = {}
    for sample in samples:
        minute = sample.at.replace(second=0, microsecond=0)
        kept = furthest.get(minute)
        if kept is None or (sample.watermark_ms, sample.at) > (kept.watermark_ms, kept.at):
            furthest[minute] = sample
    return tuple(furthest[minute] for minute in sorted(furthest))


def lag_curve(
    samples: Iterable[FreshnessSample], since: datetime, now: datetime, watermark_ms: int | None
) -> tuple[LagPoint, ...]:
    """The lag from ``since`` to ``now`` as points to join with straight lines; ``samples``
    may start before ``since`` (the newest of those says where the curve starts) and
    ``watermark_ms`` is the watermark at ``now``. Empty when nothing is known.

    A watermark never goes back: a sample behind an earlier one (a commit that a watermark
    report had already passed) changes nothing."""
    # a clock ahead of this one (ingest's host, the scheduler's) must not draw past the present
    ordered = sorted(s if s.at <= now else FreshnessSample(now, s.watermark_ms) for s in samples)
    if watermark_ms is not None:
        ordered.append(FreshnessSample(now, watermark_ms))
    points: list[LagPoint] = []
    previous: FreshnessSample | None = None
    for sample in ordered:
        if previous is not None and sample.watermark_ms < previous.watermark_ms:
            sample = FreshnessSample(sample.at, previous.watermark_ms)
        if sample.at < since:
            previous = sample
            continue
        if previous is not None and not points:  # the curve starts where the range does
            points.append(_point(since, previous))
        if previous is not None and sample.at - previous.at > _GAP:
            # nothing was heard in between: the lag grew until this sample
            points.append(_point(sample.at, previous))
        points.append(_point(sample.at, sample))
        previous = sample
    return tuple(points)


def _point(at: datetime, sample: FreshnessSample) -> LagPoint:
    # a watermark a little ahead of this clock is fresh, not negatively late
    return LagPoint(at, max(0.0, sample.lag_seconds(at)))
