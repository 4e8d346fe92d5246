"""The benchmark report: one table of every figure, its target from the issues, and whether the
run met it, headed by the machine it ran on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import ingest_bench, paimon_ingest_bench
from bench.report import Figure, Machine, Target, read_figures, render, write_figures
from tidemark.source import BinlogPosition

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
    lags = [
        figure
        for figure in ingest_bench.figures([_round(1, 0), _round(2, 0), _round(1, 1000)])
        if figure.name.endswith("lag p99")
    ]

    assert [(f.name, f.target) for f in lags] == [
        ("MariaDB, 1 thread: live lag p99", Target("<", 10, 4)),
        ("MariaDB, 2 threads: live lag p99", None),
        ("MariaDB, 1 thread, capped at 1000 TPS: live lag p99", None),
    ]


def test_issue_10s_targets_are_the_speed_up_on_oltp_binlogs_and_parity_on_bulk_ones() -> None:
    oltp = _round(2, 0, ingest=35_000.0, decode=60_000.0)
    bulk = ingest_bench.Replay(200_000, 60_000.0, 300_000.0, 90_000.0)

    figures = {f.name: f for f in ingest_bench.figures([oltp]) + ingest_bench.bulk_figures(bulk)}

    speed_up = figures["MariaDB, 2 threads: ingest speed-up over plain decode"]
    assert (speed_up.value, speed_up.target) == (5.0, Target(">=", 10, 10))
    parity = figures["MariaDB, bulk: ingest / plain decode"]
    assert (parity.value, parity.target) == (150.0, Target(">=", 100, 10))
    assert figures["MariaDB, 2 threads: Tidemark decode"].value == 60_000.0


def test_a_compressed_round_is_paired_with_the_same_load_uncompressed_on_its_server() -> None:
    plain = _round(1, 0, source="MySQL")
    rounds = [_round(1, 0), _round(1, 500, source="MySQL"), plain, _round(2, 0, source="MySQL")]

    compressed = _round(1, 0, source="MySQL", compressed=True)

    assert ingest_bench.uncompressed_twin(compressed, [*rounds, compressed]) is plain
    assert "MySQL, 1 thread, compressed: plain library decode" not in {
        figure.name for figure in ingest_bench.figures([compressed])
    }


def test_compression_is_judged_on_the_medians_of_replays_taken_in_turn() -> None:
    trials = ingest_bench.CompressionTrials(
        load="MySQL, 1 thread",
        decode=[100_000.0, 120_000.0, 110_000.0],
        decode_compressed=[99_000.0, 20_000.0, 121_000.0],
        ingest=[80_000.0, 40_000.0, 90_000.0],
        ingest_compressed=[88_000.0, 70_000.0, 60_000.0],
    )

    figures = {f.name: f for f in ingest_bench.compression_figures(trials)}

    decode = figures["MySQL, 1 thread: decode compressed / uncompressed (medians)"]
    assert (decode.value, decode.target) == (90.0, None)
    ingest = figures["MySQL, 1 thread: ingest compressed / uncompressed (medians)"]
    assert (ingest.value, ingest.target) == (87.5, Target(">=", 100, 26))


def _round(
    threads: int,
    rate: int,
    *,
    ingest: float = 10_000.0,
    decode: float = 60_000.0,
    source: str = "MariaDB",
    compressed: bool = False,
) -> ingest_bench.Result:
    """A sysbench round's figures: 7,000 rows/s of plain decode, the rest as given."""
    return ingest_bench.Result(
        threads=threads,
        rate=rate,
        load_rows_per_s=4000.0,
        tps=1000.0,
        plain_rows_per_s=7000.0,
        ingest_rows_per_s=ingest,
        rows=1,
        lag_p50_s=1.0,
        lag_p99_s=2.0,
        binlog=(BinlogPosition("binlog.000001", 4), BinlogPosition("binlog.000001", 900)),
        decode_rows_per_s=decode,
        source=source,
        compressed=compressed,
    )


def test_paimon_ingest_is_judged_on_the_medians_of_each_sink_ingesting_the_same_binlog() -> None:
    start, end = BinlogPosition("mariadb-bin.000001", 4), BinlogPosition("mariadb-bin.000001", 9)
    comparison = paimon_ingest_bench.Comparison(
        paimon_ingest_bench.Workload("OLTP", 20, "sbtest\\d+", start, end, 1000)
    )
    for sink, seconds, commits in (
        ("iceberg", 10.0, [0.02, 0.04]),
        ("paimon", 40.0, [0.5, 0.7]),
        ("paimon", 20.0, [0.3]),
        ("iceberg", 2.0, [0.01]),
        ("iceberg", 4.0, [0.03]),
        ("paimon", 25.0, [0.9, 0.4]),
    ):
        comparison.runs.append(
            paimon_ingest_bench.Ingest(sink, 100_000, seconds, len(commits), commits)
        )

    figures = {f.name: f for f in paimon_ingest_bench.figures(comparison)}

    assert figures["OLTP, 20 tables: Iceberg ingest"].value == 25_000.0
    assert figures["OLTP, 20 tables: Paimon ingest"].value == 4_000.0
    assert figures["OLTP, 20 tables: Paimon / Iceberg"].value == 0.16
    assert figures["OLTP, 20 tables: Paimon commit p50"].value == 0.5
    assert figures["OLTP, 20 tables: Paimon commit p95"].value == 0.9
    assert figures["OLTP, 20 tables: Iceberg commit p50"].value == 0.03
