"""A scheduler process for the takeover benchmark and the standby tests, whose windows take a
while and say which process ran them and whether they finished:
``python -m bench.workloads.standby_scheduler ARGS_JSON``. It runs until killed."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from dataclasses import replace
from datetime import timedelta

from bench.workloads.recording_executor import RecordingExecutor, loads_state
from bench.workloads.shop_schedule import consumer_settings, two_table_schedule
from scheduler.service import PipelineRun, ServiceSettings, run
from scheduler.state import StateSettings, StateStore
from tidemark.windows import Window

#: how long a window's work takes here: long enough for a kill to land inside one
WORK_SECONDS = 0.3


class TimedExecutor(RecordingExecutor):
    """Records, per call, the process that made it, and whether its work finished."""

    def __init__(self, state: StateSettings) -> None:
        super().__init__(state)
        with self._cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {state.schema}.timed_calls (seq serial PRIMARY KEY, "
                "pid int, task text, window_end timestamptz, finished boolean DEFAULT false)"
            )

    def _call(self, task: str, window: Window, up_to_order: int | None, cut: str | None) -> None:
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._state.schema}.timed_calls (pid, task, window_end) "
                "VALUES (%s, %s, %s) RETURNING seq",
                (os.getpid(), task, window.end),
            )
            (seq,) = cursor.fetchone()
        threading.Event().wait(WORK_SECONDS)  # the window's work
        super()._call(task, window, up_to_order, cut)
        with self._cursor() as cursor:
            cursor.execute(
                f"UPDATE {self._state.schema}.timed_calls SET finished = true WHERE seq = %s",
                (seq,),
            )


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    args = json.loads(argv[0])
    state = loads_state(args["state"])
    consumer = consumer_settings(args["servers"], args["topic"], args["pipeline"])
    if args.get("member_per_process"):  # as without static membership: a new member each time
        member = {"group.instance.id": f"{consumer.group_id}.{os.getpid()}"}
        consumer = replace(consumer, kafka={**consumer.kafka, **member})
    pipeline = PipelineRun(
        two_table_schedule(args["pipeline"], job_retry_delay=timedelta(seconds=1)),
        consumer,
    )
    run(
        [pipeline],
        StateStore(state),
        TimedExecutor(state),
        settings=ServiceSettings(max_workers=1),
        max_seconds=600,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
