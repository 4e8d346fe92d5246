"""What the crash and standby tests add to the stock workload (``bench.workloads.stock``): ingest
run to the source's end, and checks of the changelog it made, down to each of the workload's
changes once, in order."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from bench.workloads.stock import Change, Workload, ingest
from tidemark.contracts.progress import TableProgress
from tidemark.source import SourceConnection, current_position


def ingest_to_end(pipeline: Path, source: SourceConnection) -> None:
    """Run ingest until everything the source has written so far is committed."""
    end = current_position(source)
    final = ingest(pipeline, "--until-position", f"{end}", "--max-seconds", "300")
    output, _ = final.communicate(timeout=400)
    assert final.returncode == 0, output
    assert f"reached {end}" in output, output


def has_snapshot(catalog: Catalog, identifier: str) -> bool:
    return catalog.table_exists(identifier) and (
        catalog.load_table(identifier).current_snapshot() is not None
    )


def partial_commits(table: Table) -> int:
    """Commits that hold part of a transaction."""
    return sum(
        progress.partial_rows > 0
        for snapshot in table.snapshots()
        if snapshot.summary is not None
        and (progress := TableProgress.from_summary(snapshot.summary.additional_properties))
    )


def assert_every_change_once_in_order(table: Table, workload: Workload) -> None:
    rows = table.scan().to_arrow().to_pylist()
    orders = sorted(row["_tm_order"] for row in rows)
    assert orders == list(range(1, len(rows) + 1)), "order keys are not unique and dense"
    seen: dict[int, list[Change]] = defaultdict(list)
    for row in sorted(rows, key=lambda row: row["_tm_order"]):
        qty = None if row["_tm_op"] == "d" else row["qty"]
        seen[row["id"]].append((row["_tm_op"], qty))
    assert workload.transactions > 20
    assert dict(seen) == dict(workload.truth)
