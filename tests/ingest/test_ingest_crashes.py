"""Exactly once across crashes: ingest killed with SIGKILL at random moments while a workload
writes, restarted each time, ends with every change in the changelog once, in order."""

from __future__ import annotations

import random
import signal
import subprocess
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog

from bench.workloads.stock import Workload, create_stock, ingest
from tests.ingest.pipelines import write_pipeline
from tests.ingest.stock_workload import (
    assert_every_change_once_in_order,
    has_snapshot,
    ingest_to_end,
    partial_commits,
)
from tidemark.stack.endpoints import LakeEndpoint, SourceEndpoint
from tidemark.stack.process import wait_for

KILLS = 10

pytestmark = pytest.mark.every_source


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("statements", "pause", "extra", "storage"),
    [
        pytest.param((1, 20), 0.0, "", "local", id="small transactions"),
        pytest.param((1, 20), 0.0, "", "s3", id="small transactions on S3"),
        pytest.param(
            (300, 700),
            0.5,
            "tidemark:\n  ingest:\n    max-transaction-rows: 250\n",
            "local",
            id="transactions committed in parts",
        ),
    ],
    indirect=["storage"],
)
def test_sigkill_at_random_moments_loses_and_duplicates_nothing(
    statements: tuple[int, int],
    pause: float,
    extra: str,
    source: SourceEndpoint,
    lake: LakeEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    tmp_path: Path,
    server_id: int,
) -> None:
    create_stock(source, source_database)
    pipeline = write_pipeline(
        tmp_path / "stock.yaml",
        source,
        lake,
        database=source_database,
        tables="stock",
        namespace=namespace,
        server_id=server_id,
        extra=extra,
    )
    changelog = f"{namespace}.stock_changelog"
    # The first run picks its start (latest-offset) and commits it before any write.
    first = ingest(pipeline)
    assert wait_for(lambda: has_snapshot(catalog, changelog), timeout=120), first
    workload = Workload(source.admin_source(), source_database, 20261122, statements, pause)
    workload.start()
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
    process.send_signal(signal.SIGKILL)
    process.wait()
    ingest_to_end(pipeline, source.cdc_source(server_id))

    table = catalog.load_table(changelog)
    assert (partial_commits(table) > 0) == bool(extra), "transactions were (not) committed in parts"
    assert_every_change_once_in_order(table, workload)
