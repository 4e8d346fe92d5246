"""A scheduler process that kills itself inside one window, after its effect and before the
scheduler records it succeeded: ``python -m tests.scheduler.crash_scheduler ARGS_JSON``."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys

from bench.workloads.recording_executor import RecordingExecutor, loads_state
from bench.workloads.shop_schedule import consumer_settings, two_table_schedule
from scheduler.service import PipelineRun, ServiceSettings, run
from scheduler.state import StateSettings, StateStore
from tidemark.windows import Window


class KillingExecutor(RecordingExecutor):
    """Takes effect for every window, then dies with SIGKILL inside the chosen one."""

    def __init__(self, state: StateSettings, kill_task: str, kill_end: str) -> None:
        super().__init__(state)
        self._kill = (kill_task, kill_end)

    def _call(self, task: str, window: Window, up_to_order: int | None, cut: str | None) -> None:
        super()._call(task, window, up_to_order, cut)
        if (task, window.end.isoformat()) == self._kill:
            os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    args = json.loads(argv[0])
    state = loads_state(args["state"])
    executor = KillingExecutor(state, args["kill_task"], args["kill_end"])
    pipeline = PipelineRun(
        two_table_schedule(args["pipeline"]),
        consumer_settings(args["servers"], args["topic"], args["group"]),
    )
    # one window at a time: the killed one is the only window caught mid-run
    run(
        [pipeline],
        StateStore(state),
        executor,
        settings=ServiceSettings(max_workers=1),
        max_seconds=120,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
