"""Every benchmark on the local stack, and one markdown table of their figures.

    python -m bench                      # all, full size; writes bench/RESULTS.md
    python -m bench --quick              # all, small sizes: a smoke run (nothing written)
    python -m bench --only ingest window # some of them

Each benchmark runs in a process of its own (ingest changes the binlog library in place, Spark
sessions keep their JVM) and hands its figures back as JSON; its own tables go to the console
as it runs. Figures, never assertions: a slow machine fails no target here, it shows it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.report import Figure, read_figures, render, this_machine
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

RESULTS = Path(__file__).parent / "RESULTS.md"


@dataclass(frozen=True)
class Benchmark:
    name: str
    module: str
    full: tuple[str, ...]
    quick: tuple[str, ...]


BENCHMARKS = (
    Benchmark(
        "ingest",
        "bench.ingest_bench",
        ("--loads", "1", "2", "4", "1@1000", "--seconds", "30", "--bulk-rows", "200000"),
        ("--loads", "1", "--seconds", "10", "--bulk-rows", "20000", "--compression-trials", "2"),
    ),
    Benchmark(
        "bootstrap",
        "bench.bootstrap_bench",
        ("--rows", "1000000", "--max-rates", "none,150000"),
        ("--rows", "100000", "--tps-trials", "1"),
    ),
    Benchmark(
        "window",
        "bench.window_bench",
        ("--sizes", "100000,1000000,10000000"),
        ("--sizes", "20000,200000", "--changes", "5000", "--warm-up", "0"),
    ),
    Benchmark("scheduler", "bench.scheduler_bench", ("--windows", "30"), ("--windows", "5")),
    Benchmark("latency", "bench.latency_bench", ("--minutes", "6"), ("--minutes", "2")),
    Benchmark(
        "maintenance",
        "bench.maintenance_bench",
        ("--commits", "600"),
        ("--commits", "100", "--sample", "10"),
    ),
    Benchmark(
        "paimon-maintenance",
        "bench.paimon_maintenance_bench",
        ("--rows", "10000", "100000", "--buckets", "1", "4"),
        ("--rows", "10000", "--buckets", "1", "--commits", "20"),
    ),
    Benchmark("commit", "bench.commit_bench", (), ("--quick",)),
    Benchmark("scale", "bench.scale_bench", ("--tables", "10", "100", "1000"), ("--quick",)),
    Benchmark("takeover", "bench.takeover_bench", ("--trials", "10"), ("--trials", "3")),
    Benchmark("outage", "bench.outage_bench", (), ("--quick",)),
    Benchmark(
        "paimon-ingest",
        "bench.paimon_ingest_bench",
        ("--tables", "1", "20", "--seconds", "20", "--bulk-rows", "100000", "--trials", "3"),
        ("--tables", "1", "20", "--seconds", "5", "--bulk-rows", "20000", "--trials", "2"),
    ),
    Benchmark(
        "paimon-window",
        "bench.paimon_window_bench",
        ("--minutes", "6"),
        ("--minutes", "2"),
    ),
    Benchmark(
        "paimon-read",
        "bench.paimon_read_bench",
        ("--rows", "100000"),
        ("--rows", "20000", "--runs", "1"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    names = [b.name for b in BENCHMARKS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=names, help="run just these")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument(
        "--output", type=Path, help=f"where to write the table (default on a full run: {RESULTS})"
    )
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only]
    started = datetime.now(UTC)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as folder:
        for benchmark in chosen:
            figures += _run(benchmark, Path(folder), quick=args.quick)
    table = render(figures, this_machine(_service_versions()), started)
    sys.stdout.write("\n" + table)
    output = args.output or (RESULTS if not args.quick and not args.only else None)
    if output is not None:
        output.write_text(
            "# Benchmark results\n\nThe latest full run of `make bench` (`python -m bench`). "
            "What each figure measures is in the docstring of its module in `bench/`.\n\n" + table
        )
        sys.stdout.write(f"\nWritten to {output}\n")
    return 0


def _run(benchmark: Benchmark, folder: Path, *, quick: bool) -> list[Figure]:
    figures = folder / f"{benchmark.name}.json"
    arguments = benchmark.quick if quick else benchmark.full
    sys.stdout.write(f"\n== {benchmark.name}: python -m {benchmark.module} {' '.join(arguments)}\n")
    sys.stdout.flush()
    subprocess.run(
        [sys.executable, "-m", benchmark.module, *arguments, "--figures", str(figures)],
        check=True,
    )
    return read_figures(figures)


def _service_versions() -> list[tuple[str, str]]:
    endpoints = Stack(StackSettings.from_env()).endpoints()
    versions = []
    for source in (endpoints.mariadb, endpoints.mysql):
        with source.admin_source().connect() as conn, conn.cursor() as cursor:
            cursor.execute("SELECT VERSION()")
            (version,) = cursor.fetchone() or ("unknown",)
        versions.append((source.name, str(version).split("-")[0]))
    jars = " ".join(path.name for path in endpoints.spark.jars)
    kafka_jars = StackSettings.from_env().jars_dir / "kafka"
    kafka = re.search(r"kafka_2\.\d+-([\d.]+)\.jar", " ".join(p.name for p in kafka_jars.glob("*")))
    if kafka:
        versions.append(("Kafka", kafka.group(1)))
    versions.append(("Spark", importlib.metadata.version("pyspark")))
    iceberg = re.search(r"iceberg-spark-runtime-[\d.]+_[\d.]+-([\d.]+)\.jar", jars)
    if iceberg:
        versions.append(("Iceberg", iceberg.group(1)))
    return versions


if __name__ == "__main__":
    sys.exit(main())
