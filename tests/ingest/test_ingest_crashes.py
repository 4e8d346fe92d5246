"""Exactly once across crashes: ingest killed with SIGKILL at random moments while a workload
writes, restarted each time, ends with every change in the changelog once, in order."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog

from tests.ingest.pipelines import write_pipeline
from tidemark.contracts.progress import TableProgress
from tidemark.source import SourceConnection, current_position
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.process import wait_for

KILLS = 10
Change = tuple[str, int | None]  # (operation, qty after the change; None for a delete)


class Workload:
    """Single-threaded, so the order of its commits is the binlog's: the ground truth."""

    def __init__(
        self,
        source: SourceConnection,
        database: str,
        seed: int,
        statements: tuple[int, int],
        pause: float,
    ) -> None:
        self._statements = statements
        self._pause = pause
        self._source = source
        self._database = database
        self._random = random.Random(seed)
        self.truth: dict[int, list[Change]] = defaultdict(list)
        self._live: dict[int, int] = {}  # id -> qty
        self._next_id = 1
        self._stop = threading.Event()
        self.transactions = 0

    def run(self) -> None:
        with self._source.connect() as conn, conn.cursor() as cursor:
            conn.select_db(self._database)
            conn.autocommit(False)
            while not self._stop.is_set():
                count = self._random.randint(*self._statements)
                changes = [self._statement(cursor) for _ in range(count)]
                conn.commit()
                for key, change in changes:
                    self.truth[key].append(change)
                self.transactions += 1
                self._stop.wait(self._pause)  # paces the load; returns at once when stopped

    def stop(self) -> None:
        self._stop.set()

    def _statement(self, cursor: object) -> tuple[int, Change]:
        choice = self._random.random()
        if not self._live or choice < 0.5:
            key, self._next_id = self._next_id, self._next_id + 1
            qty = self._random.randint(1, 1000)
            cursor.execute(f"INSERT INTO stock VALUES ({key}, {qty})")  # type: ignore[attr-defined]
            self._live[key] = qty
            return key, ("c", qty)
        key = self._random.choice(sorted(self._live))
        if choice < 0.85:
            # a different value: an UPDATE that changes nothing is not in the binlog
            qty = self._live[key] % 1000 + 1
            cursor.execute(f"UPDATE stock SET qty = {qty} WHERE id = {key}")  # type: ignore[attr-defined]
            self._live[key] = qty
            return key, ("u", qty)
        cursor.execute(f"DELETE FROM stock WHERE id = {key}")  # type: ignore[attr-defined]
        del self._live[key]
        return key, ("d", None)


def ingest(pipeline: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tidemark.cli", "ingest", str(pipeline), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("statements", "pause", "extra"),
    [
        pytest.param((1, 20), 0.0, "", id="small transactions"),
        pytest.param(
            (300, 700),
            0.5,
            "tidemark:\n  ingest:\n    max-transaction-rows: 250\n",
            id="transactions committed in parts",
        ),
    ],
)
def test_sigkill_at_random_moments_loses_and_duplicates_nothing(
    statements: tuple[int, int],
    pause: float,
    extra: str,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    tmp_path: Path,
    server_id: int,
) -> None:
    admin = endpoints.mariadb.admin_source()
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.stock (id INT PRIMARY KEY, qty INT)")
    pipeline = write_pipeline(
        tmp_path / "stock.yaml",
        endpoints,
        database=source_database,
        tables="stock",
        namespace=namespace,
        server_id=server_id,
        extra=extra,
    )
    changelog = f"{namespace}.stock_changelog"
    # The first run picks its start (latest-offset) and commits it before any write.
    first = ingest(pipeline)
    assert wait_for(lambda: _has_snapshot(catalog, changelog), timeout=120), first
    workload = Workload(admin, source_database, 20261122, statements, pause)
    writer = threading.Thread(target=workload.run)
    writer.start()
    chance = random.Random(7)
    process = first
    try:
        for _ in range(KILLS):
            moment = chance.uniform(0.5, 4.0)
            with pytest.raises(subprocess.TimeoutExpired):
                process.wait(timeout=moment)  # alive all along: it is killed, not exiting
            process.send_signal(signal.SIGKILL)
            process.wait()
            process = ingest(pipeline)
    finally:
        workload.stop()
        writer.join()
    process.send_signal(signal.SIGKILL)
    process.wait()
    end = current_position(endpoints.mariadb.cdc_source(server_id))
    final = ingest(pipeline, "--until-position", f"{end}", "--max-seconds", "300")
    output, _ = final.communicate(timeout=400)
    assert final.returncode == 0, output
    assert f"reached {end}" in output, output

    table = catalog.load_table(changelog)
    rows = table.scan().to_arrow().to_pylist()
    partial_commits = sum(
        progress.partial_rows > 0
        for snapshot in table.snapshots()
        if snapshot.summary is not None
        and (progress := TableProgress.from_summary(snapshot.summary.additional_properties))
    )
    assert (partial_commits > 0) == bool(extra), "transactions were (not) committed in parts"
    orders = sorted(row["_tm_order"] for row in rows)
    assert orders == list(range(1, len(rows) + 1)), "order keys are not unique and dense"
    seen: dict[int, list[Change]] = defaultdict(list)
    for row in sorted(rows, key=lambda row: row["_tm_order"]):
        qty = None if row["_tm_op"] == "d" else row["qty"]
        seen[row["id"]].append((row["_tm_op"], qty))
    assert workload.transactions > 20
    assert dict(seen) == dict(workload.truth)


def _has_snapshot(catalog: Catalog, identifier: str) -> bool:
    return catalog.table_exists(identifier) and (
        catalog.load_table(identifier).current_snapshot() is not None
    )
