"""``tidemark status --json``, from statuses made by hand: the document scripts read."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ingest.changelog.status import TableStatus
from scheduler.status import TaskCondition, TaskStatus
from tidemark.app.output.status_json import status_json
from tidemark.app.pipeline import PipelineStatus
from tidemark.contracts.bootstrap_state import BootstrapState, SourceTableBootstrap
from tidemark.contracts.instance import Instance, LeaseHolders, Role, State
from tidemark.contracts.progress import TableProgress
from tidemark.source import BinlogPosition
from tidemark.windows import TaskKind, Window, WindowTask

NOW = datetime(2026, 11, 22, 15, 48, tzinfo=UTC)
WATERMARK_MS = int(datetime(2026, 11, 22, 15, 47, 1, tzinfo=UTC).timestamp() * 1000)
PROGRESS = TableProgress(
    BinlogPosition("mariadb-bin.000002", 12345),
    WATERMARK_MS,
    7,
    "shop",
    late_rows=2,
    nulled=(("born", 4),),
)


def test_a_streaming_table_has_its_watermark_lag_position_and_counts() -> None:
    table = TableStatus(
        "shop.orders", "lake.orders_changelog", True, PROGRESS, 41, NOW, 1234, None, 3
    )

    document = json.loads(status_json(PipelineStatus([table], False, None), NOW))

    assert document["generated_at"] == "2026-11-22T15:48:00Z"
    assert document["tables"] == [
        {
            "sink": "shop.orders",
            "changelog": "lake.orders_changelog",
            "exists": True,
            "watermark": "2026-11-22T15:47:01Z",
            "lag_seconds": 59.0,
            "state": None,
            "position": {"file": "mariadb-bin.000002", "offset": 12345},
            "rows": 1234,
            "late_rows": 2,
            "error_rows": 3,
            "stored_as_null": {"born": 4},
            "bootstrap_rows": None,
            "last_commit": "2026-11-22T15:48:00Z",
            "snapshot_id": 41,
        }
    ]
    assert (document["scheduled"], document["tasks"]) == (False, None)


def test_a_table_without_a_watermark_says_why_and_has_none() -> None:
    bootstrapping = TableStatus(
        "shop.users",
        "lake.users_changelog",
        True,
        replace(PROGRESS, watermark_ms=0),
        bootstrap=BootstrapState({"shop.users": SourceTableBootstrap(rows=5000)}),
    )
    absent = TableStatus("shop.items", "lake.items_changelog", exists=False)

    document = json.loads(status_json(PipelineStatus([bootstrapping, absent], False, None), NOW))

    users, items = document["tables"]
    assert (users["watermark"], users["lag_seconds"]) == (None, None)
    assert (users["state"], users["bootstrap_rows"]) == ("bootstrapping: 5,000 rows read", 5000)
    assert (items["exists"], items["position"], items["rows"]) == (False, None, None)


def test_tasks_and_processes_are_listed_with_their_windows_and_who_runs() -> None:
    window = Window.ending_at(datetime(2026, 11, 22, 15, 45, tzinfo=UTC), timedelta(minutes=5))
    task = TaskStatus(
        "shop",
        WindowTask(TaskKind.MIRROR, "shop.orders"),
        window,
        Window.ending_at(window.end + timedelta(minutes=5), timedelta(minutes=5)),
        TaskCondition.WAITING,
        "waiting for shop.orders watermark",
    )
    active = Instance(
        role=Role.INGEST,
        pipeline="shop",
        state=State.ACTIVE,
        host="db-1",
        pid=42,
        since=NOW - timedelta(hours=1),
    )
    standby = active.model_copy(update={"state": State.STANDBY, "host": "db-2", "pid": 7})
    status = PipelineStatus([], True, [task], LeaseHolders(active, [standby]), None)

    document = json.loads(status_json(status, NOW))

    assert document["tasks"] == [
        {
            "task": "mirror:shop.orders",
            "kind": "mirror",
            "name": "shop.orders",
            "condition": "waiting",
            "reason": "waiting for shop.orders watermark",
            "last_succeeded": {"start": "2026-11-22T15:40:00Z", "end": "2026-11-22T15:45:00Z"},
            "next_window": {"start": "2026-11-22T15:45:00Z", "end": "2026-11-22T15:50:00Z"},
        }
    ]
    assert document["ingest"] == {
        "active": {
            "state": "active",
            "host": "db-1",
            "pid": 42,
            "since": "2026-11-22T14:48:00Z",
            "description": None,
            "waiting_for": None,
        },
        "standbys": [
            {
                "state": "standby",
                "host": "db-2",
                "pid": 7,
                "since": "2026-11-22T14:48:00Z",
                "description": None,
                "waiting_for": None,
            }
        ],
    }
    assert document["scheduler"] is None


def test_a_process_waiting_for_a_service_and_what_could_not_be_read_are_listed() -> None:
    waiting = Instance(
        role=Role.INGEST,
        pipeline="shop",
        state=State.ACTIVE,
        host="db-1",
        pid=42,
        since=NOW - timedelta(hours=1),
        waiting_for="waiting for the catalog since 2026-11-22 15:47:00 UTC",
    )
    unreadable = ["the changelog tables: the catalog (Connection refused)"]
    status = PipelineStatus([], False, None, LeaseHolders(waiting, []), None, unreadable)

    document = json.loads(status_json(status, NOW))

    assert document["ingest"]["active"]["waiting_for"] == (
        "waiting for the catalog since 2026-11-22 15:47:00 UTC"
    )
    assert document["unreadable"] == unreadable
    assert document["tables"] == []
    assert status.waiting() == ["ingest: waiting for the catalog since 2026-11-22 15:47:00 UTC"]
