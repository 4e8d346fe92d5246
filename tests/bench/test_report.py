"""The benchmark report: one table of every figure, its target from the issues, and whether the
run met it, headed by the machine it ran on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import ingest_bench
from bench.report import Figure, Machine, Target, read_figures, render, write_figures

MACHINE = Machine(
    cpu="Test CPU",
    cores=2,
    memory_gib=23.4,
    system="Debian GNU/Linux 12 (bookworm)",
    python="3.11.7",
    services=(("MariaDB", "10.11.19"),),
)
WHEN = datetime(2026, 11, 24, 1, 30, tzinfo=UTC)


def test_the_table_shows_each_figure_with_its_target_and_whether_it_was_met() -> None:
    figures = [
        Figure(
            "bootstrap", "1,000,000 rows: bootstrap", 110_528.4, "rows/s", Target(">=", 50_000, 5)
        ),
        Figure("ingest", "1 thread: live lag p99", 29.04, "s", Target("<", 10, 4)),
        Figure("ingest", "1 thread: ingest / plain decode", 144.2, "%", Target(">=", 80, 4)),
        Figure("window", "merge at 10,000,000 rows / at 100,000", 2.71, "×", Target("<=", 3, 7)),
        Figure("scheduler", "report published → job called, p95", 0.76, "s"),
    ]

    assert render(figures, MACHINE, WHEN) == (
        "Measured 2026-11-24 01:30 UTC on Test CPU, 2 cores, 23 GiB; Debian GNU/Linux 12 "
        "(bookworm); Python 3.11.7; MariaDB 10.11.19.\n"
        "\n"
        "| benchmark | figure | value | target | met |\n"
        "|---|---|---|---|---|\n"
        "| bootstrap | 1,000,000 rows: bootstrap | 110,528 rows/s | ≥ 50,000 rows/s (#5) | yes |\n"
        "| ingest | 1 thread: live lag p99 | 29.04 s | < 10 s (#4) | **no** |\n"
        "| ingest | 1 thread: ingest / plain decode | 144% | ≥ 80% (#4) | yes |\n"
        "| window | merge at 10,000,000 rows / at 100,000 | 2.7× | ≤ 3.0× (#7) | yes |\n"
        "| scheduler | report published → job called, p95 | 0.76 s |  |  |\n"
    )


def test_a_figure_nothing_measured_shows_as_not_available() -> None:
    table = render(
        [Figure("latency", "window end → job done, p95", float("nan"), "s")], MACHINE, WHEN
    )

    assert table.splitlines()[-1] == "| latency | window end → job done, p95 | n/a |  |  |"


def test_a_target_compares_only_as_the_issues_write_them() -> None:
    with pytest.raises(ValueError, match="a target compares with one of"):
        Target("=~", 1, 4)


def test_figures_survive_the_hand_over_between_processes(tmp_path: Path) -> None:
    figures = [
        Figure("ingest", "lag p99", 1.5, "s", Target("<", 10, 4)),
        Figure("maintenance", "commit", 0.075, "s"),
    ]
    write_figures(tmp_path / "f.json", figures)

    assert read_figures(tmp_path / "f.json") == figures


def test_the_ingest_lag_target_applies_to_one_unthrottled_thread_only() -> None:
    def result(threads: int, rate: int) -> ingest_bench.Result:
        return ingest_bench.Result(threads, rate, 4000.0, 1000.0, 7000.0, 10_000.0, 1, 1.0, 2.0)

    lags = [
        figure
        for figure in ingest_bench.figures([result(1, 0), result(2, 0), result(1, 1000)])
        if figure.name.endswith("lag p99")
    ]

    assert [(f.name, f.target) for f in lags] == [
        ("MariaDB, 1 thread: live lag p99", Target("<", 10, 4)),
        ("MariaDB, 2 threads: live lag p99", None),
        ("MariaDB, 1 thread, capped at 1000 TPS: live lag p99", None),
    ]


def test_issue_10s_targets_are_the_speed_up_on_oltp_binlogs_and_parity_on_bulk_ones() -> None:
    oltp = ingest_bench.Result(2, 0, 4000.0, 1000.0, 7000.0, 35_000.0, 1, 1.0, 2.0, 60_000.0)
    bulk = ingest_bench.Replay(200_000, 60_000.0, 300_000.0, 90_000.0)

    figures = {f.name: f for f in ingest_bench.figures([oltp]) + ingest_bench.bulk_figures(bulk)}

    speed_up = figures["MariaDB, 2 threads: ingest speed-up over plain decode"]
    assert (speed_up.value, speed_up.target) == (5.0, Target(">=", 10, 10))
    parity = figures["MariaDB, bulk: ingest / plain decode"]
    assert (parity.value, parity.target) == (150.0, Target(">=", 100, 10))
    assert figures["MariaDB, 2 threads: Tidemark decode"].value == 60_000.0


def test_a_compressed_mysql_round_is_compared_with_its_uncompressed_twin() -> None:
    def result(rate: int, ingest: float, compressed: bool) -> ingest_bench.Result:
        return ingest_bench.Result(
            1, rate, 4000.0, 1000.0, 7000.0, ingest, 1, 1.0, 2.0, 60_000.0, "MySQL", compressed
        )

    rounds = [result(0, 50_000.0, False), result(500, 20_000.0, False), result(0, 45_000.0, True)]
    figures = {f.name: f for f in ingest_bench.figures(rounds)}

    ratio = figures["MySQL, 1 thread, compressed: ingest / ingest uncompressed"]
    assert (ratio.value, ratio.target) == (90.0, Target(">=", 100, 26))
    assert "MySQL, 1 thread, compressed: plain library decode" not in figures
