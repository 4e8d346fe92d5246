"""``tidemark status`` while a service it reads is down: it shows what it can, lists what it
could not read, and exits 1 (a monitor's check)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.ingest.pipelines import reports_block, write_pipeline
from tidemark.stack.endpoints import LakeEndpoint, SourceEndpoint, StackEndpoints
from tidemark.stack.postgres import Postgres


def test_status_with_the_scheduler_state_database_down_lists_it_as_unreadable(
    source: SourceEndpoint,
    lake: LakeEndpoint,
    endpoints: StackEndpoints,
    own_postgres: Postgres,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    kafka = {"bootstrap.servers": endpoints.kafka.bootstrap_servers}
    pipeline = write_pipeline(
        tmp_path / "p.yaml",
        source,
        lake,
        database=source_database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
        extra=reports_block(f"reports.{namespace}", kafka)
        + f"  state-dsn: {own_postgres.state_dsn()}\n",
    )
    with source.admin_source().connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.orders (id INT PRIMARY KEY)")
    own_postgres.down()

    shown = subprocess.run(
        [sys.executable, "-m", "tidemark.app.cli", "status", "--json", str(pipeline)],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert shown.returncode == 1, shown
    document = json.loads(shown.stdout)
    [unreadable] = document["unreadable"]
    assert unreadable.startswith(
        "the windows and the scheduler: the scheduler state database (connection to server at "
    ), unreadable
    assert [table["sink"] for table in document["tables"]] == [f"{namespace}.orders"]
