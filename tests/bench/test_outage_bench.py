"""The outage benchmark's pure parts: a recovery read from the commits, ingest's log lines, and
its figures."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from bench import outage_bench
from bench.outage_bench import (
    QUICK,
    LogLine,
    OutageRecord,
    OutageResult,
    Recovery,
    changes_at,
    parse_log,
    recovery,
    said,
    warnings_between,
)

#: the return, epoch seconds
R = 1_000.0


def _outage(written: dict[str, int], returned: float = R) -> OutageRecord:
    return OutageRecord(10.0, returned - 10.0, returned, written)


def test_a_table_holds_its_newest_commits_changes_at_an_instant() -> None:
    commits = [(1_000, 5), (2_000, 9)]

    assert changes_at(commits, 999) == 0
    assert changes_at(commits, 1_000) == 5
    assert changes_at(commits, 1_999.5) == 5
    assert changes_at(commits, 5_000) == 9


def test_caught_up_is_when_the_last_table_holds_what_was_written_by_the_return() -> None:
    commits = {
        "a": [(990_000, 100), (1_002_000, 150), (1_004_000, 220)],
        "b": [(995_000, 80), (1_003_000, 120), (1_006_000, 200)],
    }

    found = recovery(_outage({"a": 140, "b": 110}), commits)

    assert found.first_commit_s == 2.0  # a's commit at 1,002 s
    assert found.backlog == (140 - 100) + (110 - 80)
    assert found.caught_up_s == 3.0  # a at 1,002 s, b at 1,003 s
    # committed from the return until caught up: a 100 → 150, b 80 → 120, over 3 s
    assert found.drained_per_s == (50 + 40) / 3
    assert found.drained_from_first_per_s == (50 + 40) / 1  # from 1,002 s to 1,003 s


def test_a_table_that_never_caught_up_leaves_caught_up_and_the_drain_unmeasured() -> None:
    commits = {"a": [(990_000, 100), (1_002_000, 150)], "b": [(995_000, 80)]}

    found = recovery(_outage({"a": 140, "b": 110}), commits)

    assert found.first_commit_s == 2.0
    assert found.backlog == 70
    assert math.isnan(found.caught_up_s)
    assert math.isnan(found.drained_per_s)


def test_no_commit_after_the_return_is_not_measured() -> None:
    found = recovery(_outage({"a": 100}), {"a": [(990_000, 100)]})

    assert math.isnan(found.first_commit_s)
    assert (found.backlog, found.caught_up_s) == (0, 0.0)


def test_ingests_log_lines_carry_their_time_and_level() -> None:
    text = (
        "2026-11-29 03:33:19,314 WARNING ingest.service: The catalog is unavailable (refused): "
        "ingest pauses and retries\n"
        "  a continuation line\n"
        "2026-11-29 03:33:34,344 INFO ingest.service: The catalog is back after 15 s\n"
    )

    lines = parse_log(text)

    at = datetime(2026, 11, 29, 3, 33, 19, 314_000).timestamp()  # local time, as logged
    assert lines[0] == LogLine(at, "WARNING", lines[0].message)
    assert lines[0].message.startswith("The catalog is unavailable (refused)")
    assert [line.level for line in lines] == ["WARNING", "INFO"]
    assert lines[1].at - lines[0].at == pytest.approx(15.03)


def test_an_outage_is_noticed_and_over_at_the_first_such_line_after_an_instant() -> None:
    lines = [
        LogLine(10.0, "WARNING", "The catalog is unavailable (x): ingest pauses"),
        LogLine(20.0, "INFO", "The catalog is back after 10 s"),
        LogLine(30.0, "WARNING", "Still waiting for the catalog, unavailable for 60 s (x)"),
        LogLine(40.0, "WARNING", "The catalog is unavailable (y): ingest pauses"),
        LogLine(50.0, "INFO", "The catalog is back after 10 s"),
    ]

    assert said(lines, "unavailable", 15.0) == 40.0
    assert said(lines, "back", 15.0) == 20.0
    assert said(lines, "back", 51.0) is None
    assert warnings_between(lines, 10.0, 40.0) == 2


def test_figures_take_the_short_outages_apart_from_the_long_one() -> None:
    result = OutageResult(QUICK)
    for number, first in enumerate([4.0, 6.0, 3.0]):
        returned = R + 100 * number
        result.outages.append(_outage({"a": 1}, returned))
        result.recoveries.append(Recovery(500 * (number + 1), first, first + 2, 1_000.0, 2_500.0))
        result.log.append(LogLine(returned + 1.5, "INFO", "The catalog is back after 12 s"))

    by_name = {f.name: f for f in outage_bench.figures(result)}

    short = "20 tables at 500 tx/s, catalog down 10 s"
    assert by_name[f"{short}: outages measured"].value == 2
    assert by_name[f"{short}: return → first commit, p50"].value == 4.0
    assert by_name[f"{short}: return → first commit, p95"].value == 6.0
    assert by_name[f"{short}: return → ingest's probe answers, p95"].value == 1.5
    long = "20 tables at 500 tx/s, catalog down 20 s"
    assert by_name[f"{long}: backlog at the return"].value == 1_500
    assert by_name[f"{long}: return → first commit"].value == 3.0
    assert by_name[f"{long}: backlog drained"].value == 1_000.0
    assert by_name[f"{long}: backlog drained from the first commit on"].value == 2_500.0
    assert by_name["20 tables at 500 tx/s: ingest exited"].value == 0


def test_an_outage_whose_commits_were_not_read_shows_no_recovery() -> None:
    result = OutageResult(QUICK, outages=[_outage({"a": 1})])

    by_name = {f.name: f for f in outage_bench.figures(result)}

    assert math.isnan(
        by_name["20 tables at 500 tx/s, catalog down 10 s: return → first commit, p50"].value
    )


def test_a_figure_not_measured_says_why() -> None:
    result = OutageResult(QUICK, missing=["ingest exited with code 1"])

    names = [f.name for f in outage_bench.figures(result)]

    assert "20 tables at 500 tx/s: ingest exited" in names  # measured: 0
    assert "20 tables at 500 tx/s: ingest peak RSS (ingest exited with code 1)" in names


def test_options_are_the_quick_ones_with_what_is_given() -> None:
    options, figures = outage_bench.parse_args(["--quick", "--outages", "3", "--tps", "250"])

    assert (options.tables, options.outages, options.tps) == (20, 3, 250)
    assert options.long_outage_seconds == 20.0
    assert figures is None
