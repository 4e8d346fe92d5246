"""Commit latency benchmark (#44): one small changelog commit on each lake of the stack, the
JDBC catalog over local disk and the REST catalog over S3, alone and from threads at once.

A commit here is ingest's: ``bench.workloads.changelog_commits.commit`` appends one row with
its progress through ``ChangelogTable.commit`` (Tidemark's appender, the path of ingest's
commit threads), to a changelog table created as ingest creates them (``open_changelog``,
metadata retention included). Per lake, a namespace ``bench_commit_{storage}_{tag}`` holds the
tables; each gets ``--warm-up`` commits first (connections, the appender's plans, the
server's JIT), untimed.

1. **Serial**: ``--rounds`` rounds; in each, ``--commits`` commits in a row to a table of the
   round's own, on each lake in turn, the order alternating between rounds so that a drift in
   the machine's load reaches both. Each commit's wall time: p50 and p95 per lake over every
   round, and REST+S3's over JDBC+local's.
2. **Concurrent**: for each K of ``--threads`` (ingest's commit pool has 4:
   ``IngestSettings.commit_threads``), K threads each commit ``--concurrent-commits`` times to
   a table of its own, as the pool does (one commit per table at a time), on each lake in
   turn: commits/s (every commit over the span from the first's start to the last's end),
   each commit's p50 and p95, and the commits/s of the most threads over one thread's. A
   commit that waits on the catalog or the object store lets another thread run: whether
   more threads hide REST+S3's latency, or the interpreter lock and the cores bound them
   first, shows here, with the CPU this process used and the machine's (every process: the
   REST server and the object store share this machine's cores), in cores.

Figures, never assertions; the namespaces are removed at the end.

``python -m bench.commit_bench [--commits 50] [--rounds 3] [--threads 1 4 16] ...``
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from bench.lakes import LABELS, BenchLake, bench_lake
from bench.report import (
    Figure,
    load_average,
    render,
    render_columns,
    this_machine,
    write_figures,
)
from bench.scale_bench import MACHINE, cores_between, percentile, read_cpu
from bench.workloads.changelog_commits import DATA, commit
from ingest.changelog.table import open_changelog
from tidemark.stack.endpoints import STORAGES, Storage
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

#: a commit's (start, end), ``time.perf_counter()`` seconds
Span = tuple[float, float]
#: what the CPU figures call this process
COMMITS = "commits"
NAN = float("nan")


@dataclass(frozen=True)
class Options:
    commits: int = 50
    rounds: int = 3
    warm_up: int = 5
    threads: tuple[int, ...] = (1, 4, 16)
    concurrent_commits: int = 20
    storages: tuple[Storage, ...] = STORAGES


QUICK = Options(commits=20, rounds=2, warm_up=3, threads=(1, 4), concurrent_commits=10)


@dataclass
class LakeTimes:
    """What one lake measured: each serial round's commit times, and each thread count's
    commit spans."""

    storage: Storage
    serial: list[list[float]] = field(default_factory=list)
    concurrent: dict[int, list[Span]] = field(default_factory=dict)
    #: threads -> the CPU, in cores, of this process, of the lake's services (by name) and of
    #: the machine (``MACHINE``) while they ran
    cpu: dict[int, dict[str, float]] = field(default_factory=dict)


# --- pure: the figures (tests/bench/test_commit_bench.py) ---------------------------------------


def commits_per_second(spans: Sequence[Span]) -> float:
    """Commits over the span from the first's start to the last's end."""
    if not spans:
        return float("nan")
    took = max(end for _, end in spans) - min(start for start, _ in spans)
    return len(spans) / took if took > 0 else float("nan")


def lake_figures(times: LakeTimes, label: str = "") -> list[Figure]:
    """One lake's figures, their names led by ``label``."""
    lead = f"{label}, " if label else ""
    serial = [seconds for round_ in times.serial for seconds in round_]
    out = [
        Figure("commit", f"{lead}one commit at a time, p50", percentile(serial, 50), "s"),
        Figure("commit", f"{lead}one commit at a time, p95", percentile(serial, 95), "s"),
    ]
    for threads, spans in sorted(times.concurrent.items()):
        on = f"{lead}{threads} thread{'s' if threads > 1 else ''} on as many tables"
        out += _at_once_figures(on, spans, times.cpu.get(threads, {}))
    if len(times.concurrent) > 1:
        fewest, most = min(times.concurrent), max(times.concurrent)
        out.append(
            Figure(
                "commit",
                f"{lead}commits/s with {most} threads ÷ with {fewest}",
                commits_per_second(times.concurrent[most])
                / commits_per_second(times.concurrent[fewest]),
                "×",
            )
        )
    return out


def _at_once_figures(on: str, spans: Sequence[Span], cpu: Mapping[str, float]) -> list[Figure]:
    each = [end - start for start, end in spans]
    rate = commits_per_second(spans)
    services = [cores for name, cores in cpu.items() if name not in (COMMITS, MACHINE)]
    machine = cpu.get(MACHINE, NAN)
    return [
        Figure("commit", f"{on}: commits/s", rate, "commits/s"),
        Figure("commit", f"{on}: one commit, p50", percentile(each, 50), "s"),
        Figure("commit", f"{on}: one commit, p95", percentile(each, 95), "s"),
        Figure("commit", f"{on}: CPU of the committing process", cpu.get(COMMITS, NAN), "cores"),
        Figure(
            "commit",
            f"{on}: CPU of the catalog's and the storage's servers",
            sum(services) if services else NAN,
            "cores",
        ),
        Figure("commit", f"{on}: CPU of all the machine's processes", machine, "cores"),
        Figure("commit", f"{on}: the machine's CPU per commit", machine / rate, "s"),
    ]


def ratio_figures(local: LakeTimes, s3: LakeTimes) -> list[Figure]:
    """REST+S3's serial commit over JDBC+local's, at p50 and p95."""
    mine, theirs = (
        [seconds for round_ in times.serial for seconds in round_] for times in (s3, local)
    )
    label = f"{LABELS['s3']} ÷ {LABELS['local']}"
    return [
        Figure(
            "commit",
            f"{label}, one commit at a time, p{p}",
            percentile(mine, p) / percentile(theirs, p),
            "×",
        )
        for p in (50, 95)
    ]


def figures(results: Sequence[LakeTimes]) -> list[Figure]:
    """Every lake's figures, named after it, then the ratios when both ran."""
    out = [figure for times in results for figure in lake_figures(times, LABELS[times.storage])]
    by_storage = {times.storage: times for times in results}
    if "local" in by_storage and "s3" in by_storage:
        out += ratio_figures(by_storage["local"], by_storage["s3"])
    return out


def side_by_side(results: Sequence[LakeTimes]) -> str:
    return render_columns(
        [LABELS[times.storage] for times in results],
        [lake_figures(times) for times in results],
    )


# --- the lakes --------------------------------------------------------------------------------


class LakeTables:
    """A lake's namespace of changelog tables for this run, each with its next commit's index."""

    def __init__(self, lake: BenchLake, count: int, warm_up: int) -> None:
        self.lake = lake
        self.namespace = f"bench_commit_{lake.storage}_{uuid.uuid4().hex[:6]}"
        catalog = lake.catalog()
        self.tables = [
            open_changelog(catalog, f"{self.namespace}.t_{i:02d}_changelog", DATA, {})
            for i in range(count)
        ]
        self._next = [0] * count
        for number in range(count):
            self.timed(number, warm_up)

    def timed(self, number: int, count: int) -> list[Span]:
        """``count`` commits in a row to table ``number``: their spans."""
        table, spans = self.tables[number], []
        for _ in range(count):
            began = time.perf_counter()
            commit(table, self._next[number])
            spans.append((began, time.perf_counter()))
            self._next[number] += 1
        return spans


def at_once(tables: LakeTables, first: int, threads: int, commits: int) -> list[Span]:
    """``threads`` threads, each committing ``commits`` times to a table of its own (tables
    ``first``, ``first + 1``, ...), started together; every commit's span."""
    start = threading.Barrier(threads)
    spans: list[list[Span]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []

    def run(k: int) -> None:
        start.wait()
        try:
            spans[k] = tables.timed(first + k, commits)
        except BaseException as error:  # handed to the main thread below
            errors.append(error)

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return [span for thread in spans for span in thread]


@contextmanager
def lake_tables(lake: BenchLake, count: int, warm_up: int) -> Iterator[LakeTables]:
    tables: LakeTables | None = None
    try:
        tables = LakeTables(lake, count, warm_up)
        yield tables
    finally:
        if tables is not None:
            lake.drop_namespace(tables.namespace)


def measure(lakes: Sequence[BenchLake], options: Options) -> list[LakeTimes]:
    results = [LakeTimes(lake.storage) for lake in lakes]
    concurrent_first = options.rounds  # tables 0..rounds-1 are the serial rounds'
    count = concurrent_first + max(options.threads)
    with ExitStack() as stack:
        tables = [stack.enter_context(lake_tables(lake, count, options.warm_up)) for lake in lakes]
        for round_ in range(options.rounds):
            turn = range(len(lakes)) if round_ % 2 == 0 else reversed(range(len(lakes)))
            for k in turn:
                seconds = [end - start for start, end in tables[k].timed(round_, options.commits)]
                results[k].serial.append(seconds)
            sys.stdout.write(_round_line(round_, results) + "\n")
            sys.stdout.flush()
        for threads in options.threads:
            for k in range(len(lakes)):
                pids = {COMMITS: os.getpid(), **lakes[k].pids}
                before = read_cpu(pids)
                spans = at_once(tables[k], concurrent_first, threads, options.concurrent_commits)
                results[k].concurrent[threads] = spans
                results[k].cpu[threads] = cores_between(before, read_cpu(pids))
            sys.stdout.write(_threads_line(threads, results) + "\n")
            sys.stdout.flush()
    return results


def _round_line(round_: int, results: Sequence[LakeTimes]) -> str:
    return f"round {round_ + 1}: " + ", ".join(
        f"{LABELS[times.storage]} p50 {1000 * percentile(times.serial[-1], 50):.1f} ms"
        for times in results
    )


def _threads_line(threads: int, results: Sequence[LakeTimes]) -> str:
    return f"{threads} threads: " + ", ".join(
        f"{LABELS[times.storage]} {commits_per_second(times.concurrent[threads]):.0f} commits/s"
        for times in results
    )


# --- the command ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> tuple[Options, Path | None]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer commits and threads")
    parser.add_argument("--commits", type=int, help="commits per serial round and lake")
    parser.add_argument("--rounds", type=int, help="serial rounds, the lakes in turn")
    parser.add_argument("--warm-up", type=int, help="untimed commits to each table first")
    parser.add_argument("--threads", type=int, nargs="+", help="threads committing at once")
    parser.add_argument("--concurrent-commits", type=int, help="commits per thread")
    parser.add_argument("--storage", nargs="+", choices=STORAGES, help="the lakes (default both)")
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args(argv)
    options = QUICK if args.quick else Options()
    given = {
        key: getattr(args, key)
        for key in ("commits", "rounds", "warm_up", "concurrent_commits")
        if getattr(args, key) is not None
    }
    if args.threads:
        given["threads"] = tuple(dict.fromkeys(args.threads))
    if args.storage:
        given["storages"] = tuple(dict.fromkeys(args.storage))
    return replace(options, **given), args.figures


def main(argv: Sequence[str] | None = None) -> int:
    options, figures_path = parse_args(argv)
    stack = Stack(StackSettings.from_env())
    endpoints, status = stack.endpoints(), stack.status()
    lakes = [bench_lake(endpoints, storage, status) for storage in options.storages]
    started = datetime.now(UTC)
    sys.stdout.write(
        f"load average {load_average()}; {options.rounds} rounds of {options.commits} "
        f"commits, then {', '.join(map(str, options.threads))} threads of "
        f"{options.concurrent_commits}, on {', '.join(lake.label for lake in lakes)}\n"
    )
    began = time.monotonic()
    # PyIceberg's warning for each metadata file past retention the REST server deleted first
    results = measure(lakes, options)
    every = figures(results)
    machine = this_machine()
    sys.stdout.write(
        f"{time.monotonic() - began:.0f} s; load average at the end {load_average()}\n\n"
        + render(every, machine, started)
        + "\n"
        + side_by_side(results)
    )
    if figures_path:
        write_figures(figures_path, every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
