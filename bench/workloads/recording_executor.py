"""An executor of the scheduler's tasks that runs no Spark: it records its calls in PostgreSQL,
where the process that started a scheduler (a benchmark, a test) reads them, and fails when
told to. With it, the state settings as JSON, to hand a scheduler process."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg2

from scheduler.state import StateSettings
from tidemark.outages import Outage
from tidemark.windows import Window


@dataclass(frozen=True)
class Call:
    task: str
    window_end: datetime
    up_to_order: int | None
    #: for a job: where each input mirror stood when its SQL ran ("shop.orders=10:05,...")
    cut: str | None


class RecordingExecutor:
    """Records every call and its effect in tables of the state schema it is given.

    Like the real window jobs it is idempotent per window: a window whose effect is recorded
    does not record it again. ``fail`` names tasks ("job:gmv") whose every call raises;
    ``down``, when set, is the lake's outage it answers ``outage`` with.
    """

    def __init__(self, state: StateSettings, fail: Sequence[str] = ()) -> None:
        self._state = state
        self._fail = set(fail)
        self.down: Outage | None = None
        with self._cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {state.schema}.calls (seq serial PRIMARY KEY, "
                "task text, window_end timestamptz, up_to_order bigint, cut text)"
            )
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {state.schema}.effects (task text, "
                "window_end timestamptz, PRIMARY KEY (task, window_end))"
            )

    def stop_failing(self) -> None:
        self._fail.clear()

    def outage(self) -> Outage | None:
        return self.down

    def merge_mirror(self, sink_table: str, window: Window, up_to_order: int | None) -> object:
        self._call(f"mirror:{sink_table}", window, up_to_order, None)
        return None

    def run_job(
        self,
        job_name: str,
        window: Window,
        snapshots: Mapping[str, int] | None = None,
        since: Mapping[str, int] | None = None,
    ) -> object:
        self._call(f"job:{job_name}", window, None, self._cut())
        return None

    def maintain(self, sink_table: str, keep_from: int | None = None) -> object:
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._state.schema}.calls (task) VALUES (%s)",
                (f"maintain:{sink_table}",),
            )
        return None

    def calls(self) -> list[Call]:
        with self._cursor() as cursor:
            cursor.execute(
                f"SELECT task, window_end, up_to_order, cut FROM {self._state.schema}.calls "
                "ORDER BY seq"
            )
            return [Call(*row) for row in cursor.fetchall()]

    def effects(self) -> list[tuple[str, str]]:
        """(task, window end HH:MM) of every window that took effect, in task order."""
        with self._cursor() as cursor:
            cursor.execute(
                f"SELECT task, window_end FROM {self._state.schema}.effects "
                "ORDER BY task, window_end"
            )
            return [(task, end.strftime("%H:%M")) for task, end in cursor.fetchall()]

    def _call(self, task: str, window: Window, up_to_order: int | None, cut: str | None) -> None:
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._state.schema}.calls (task, window_end, up_to_order, cut) "
                "VALUES (%s, %s, %s, %s)",
                (task, window.end, up_to_order, cut),
            )
        if task in self._fail:
            raise RuntimeError(f"{task} was told to fail")
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._state.schema}.effects VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (task, window.end),
            )

    def _cut(self) -> str:
        """Where each mirror stands: the last window end it took effect for."""
        with self._cursor() as cursor:
            cursor.execute(
                f"SELECT task, max(window_end) FROM {self._state.schema}.effects "
                "WHERE task LIKE 'mirror:%%' GROUP BY task ORDER BY task"
            )
            return ",".join(
                f"{task.removeprefix('mirror:')}={end.strftime('%H:%M')}"
                for task, end in cursor.fetchall()
            )

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        params: dict[str, Any] = {**self._state.connection, "options": "-c TimeZone=UTC"}
        connection = psycopg2.connect(**params)
        try:
            with connection, connection.cursor() as cursor:
                yield cursor
        finally:
            connection.close()


def dumps_state(state: StateSettings) -> str:
    return json.dumps({"connection": dict(state.connection), "schema": state.schema})


def loads_state(text: str) -> StateSettings:
    raw = json.loads(text)
    return StateSettings(raw["connection"], raw["schema"])
