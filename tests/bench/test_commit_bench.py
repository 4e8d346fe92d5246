"""The commit benchmark's pure parts: rates, and its figures on each lake."""

from __future__ import annotations

import math

import pytest

from bench import commit_bench
from bench.commit_bench import COMMITS, LakeTimes, commits_per_second
from bench.scale_bench import MACHINE


def test_commits_per_second_span_from_the_first_start_to_the_last_end() -> None:
    spans = [(10.0, 10.5), (10.2, 11.0), (10.9, 12.0)]

    assert commits_per_second(spans) == 1.5
    assert math.isnan(commits_per_second([]))


def _times(storage: str, serial_ms: float) -> LakeTimes:
    times = LakeTimes(storage)  # type: ignore[arg-type]
    times.serial = [[serial_ms / 1000] * 10, [serial_ms / 1000] * 10]
    times.concurrent = {1: [(0.0, 1.0)] * 10, 4: [(0.0, 0.5)] * 20}
    times.cpu = {
        1: {COMMITS: 0.4, "rest_catalog": 0.5, "object_store": 0.2, MACHINE: 1.2},
        4: {COMMITS: 0.8, "rest_catalog": 0.9, "object_store": 0.2, MACHINE: 2.0},
    }
    return times


def test_each_lake_is_named_and_rest_s3_is_compared_with_jdbc_local() -> None:
    by_name = {f.name: f for f in commit_bench.figures([_times("local", 5), _times("s3", 35)])}

    assert by_name["JDBC+local, one commit at a time, p50"].value == 0.005
    assert by_name["REST+S3, 4 threads on as many tables: commits/s"].value == 40.0
    servers = by_name[
        "REST+S3, 4 threads on as many tables: CPU of the catalog's and the storage's servers"
    ]
    assert servers.value == pytest.approx(1.1)
    per_commit = by_name["REST+S3, 4 threads on as many tables: the machine's CPU per commit"]
    assert per_commit.value == 0.05
    assert by_name["REST+S3, commits/s with 4 threads ÷ with 1"].value == 4.0
    assert by_name["REST+S3 ÷ JDBC+local, one commit at a time, p50"].value == pytest.approx(7.0)


def test_side_by_side_has_a_column_per_lake_and_a_row_per_figure() -> None:
    table = commit_bench.side_by_side([_times("local", 5), _times("s3", 35)]).splitlines()

    assert table[0] == "| figure | JDBC+local | REST+S3 | target |"
    assert table[2] == "| one commit at a time, p50 | 0.005 s | 0.035 s |  |"


def test_quick_and_chosen_options() -> None:
    quick, figures = commit_bench.parse_args(["--quick"])
    chosen, _ = commit_bench.parse_args(["--threads", "1", "8", "8", "--storage", "s3"])

    assert (quick.threads, figures) == ((1, 4), None)
    assert (chosen.threads, chosen.storages, chosen.commits) == ((1, 8), ("s3",), 50)
