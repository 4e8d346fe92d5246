"""A table's freshness curve, from samples of the watermark it had reached: the lag at each
sample, growing one second a second through a gap, and never helped by a watermark going back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tidemark.freshness import FreshnessSample, LagPoint, lag_curve, per_minute

T0 = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)


def _at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _sample(minutes: float, lag_seconds: float) -> FreshnessSample:
    """A sample at ``minutes`` past T0 whose watermark was ``lag_seconds`` behind it."""
    at = _at(minutes)
    return FreshnessSample(at, int((at.timestamp() - lag_seconds) * 1000))


def _lags(points: tuple[LagPoint, ...]) -> list[tuple[float, float]]:
    return [((p.at - T0).total_seconds() / 60, round(p.seconds, 3)) for p in points]


def test_each_sample_is_a_point_at_its_lag_and_the_present_ends_the_curve() -> None:
    samples = [_sample(1, 5), _sample(2, 3), _sample(3, 4)]
    now = _at(3.5)

    curve = lag_curve(samples, since=_at(0), now=now, watermark_ms=samples[-1].watermark_ms)

    assert _lags(curve) == [(1, 5), (2, 3), (3, 4), (3.5, 34)]


def test_a_gap_in_the_samples_shows_the_lag_growing_until_the_next_one() -> None:
    # ingest stopped between minutes 2 and 12: the watermark of minute 2 stood for 10 minutes
    samples = [_sample(1, 5), _sample(2, 5), _sample(12, 6)]

    curve = lag_curve(samples, since=_at(0), now=_at(12), watermark_ms=None)

    assert _lags(curve) == [(1, 5), (2, 5), (12, 605), (12, 6)]


def test_the_curve_starts_at_the_range_from_the_newest_sample_before_it() -> None:
    samples = [_sample(-30, 2), _sample(-5, 1), _sample(3, 1)]

    curve = lag_curve(samples, since=_at(0), now=_at(3), watermark_ms=None)

    # at the range's start the watermark of minute -5 was 5 minutes and a second old
    assert _lags(curve) == [(0, 301), (3, 481), (3, 1)]


def test_a_watermark_that_goes_back_changes_nothing() -> None:
    # a commit whose watermark a watermark report had already passed
    ahead, behind = _sample(1, 2), _sample(1.5, 60)

    curve = lag_curve([ahead, behind], since=_at(0), now=_at(2), watermark_ms=None)

    assert _lags(curve) == [(1, 2), (1.5, 32)]


def test_a_watermark_ahead_of_the_clock_is_no_lag_rather_than_a_negative_one() -> None:
    assert _lags(lag_curve([_sample(1, -3)], _at(0), _at(1), None)) == [(1, 0)]


def test_nothing_known_is_no_curve() -> None:
    assert lag_curve([], _at(0), _at(60), None) == ()


def test_per_minute_keeps_the_furthest_watermark_of_each_minute() -> None:
    commits = [_sample(0.1, 9), _sample(0.5, 1), _sample(0.9, 3), _sample(1.2, 4)]

    assert per_minute(commits) == (commits[2], commits[3])


def test_a_sample_from_a_clock_ahead_of_this_one_is_drawn_at_the_present_not_past_it() -> None:
    ahead = _sample(5, 2)  # recorded "five minutes from now" by a host whose clock is ahead

    curve = lag_curve([ahead], since=_at(0), now=_at(1), watermark_ms=None)

    assert [point.at for point in curve] == [_at(1)]
