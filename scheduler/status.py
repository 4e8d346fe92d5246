"""What ``tidemark status`` shows of the scheduler: per task, its last window and why it waits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from scheduler.gate import RunState, TaskState, cuts_since, decide
from scheduler.spec import PipelineSchedule
from scheduler.state import StateSettings, StateStore
from tidemark.config.model import PipelineConfig
from tidemark.config.plan import SinkTable
from tidemark.windows import Window, WindowTask


class TaskCondition(StrEnum):
    DUE = "due"  # the next window may run now
    RUNNING = "running"  # recorded running or pending (or left so by a scheduler that stopped)
    WAITING = "waiting"  # for a watermark, a mirror, another job, or a retry time
    HELD = "held"  # failed for good; later windows wait until it is released


@dataclass(frozen=True)
class TaskStatus:
    pipeline: str
    task: WindowTask
    last_succeeded: Window | None
    next_window: Window | None
    condition: TaskCondition
    #: for people: "waiting for shop.orders watermark 2026-01-01 10:04:58 < 2026-01-01 10:05:00"
    reason: str


def describe_pipeline(
    config: PipelineConfig,
    sinks: Sequence[SinkTable],
    now: datetime,
    state: StateSettings,
) -> list[TaskStatus]:
    """``describe`` for a pipeline file and its planned sink tables (``build_plan``), with the
    state where ``state`` says (``tidemark.app.pipeline.Pipeline.state_settings``)."""
    return describe(PipelineSchedule.from_config(config, sinks), StateStore(state), now)


def recorded_watermarks(sinks: Sequence[SinkTable], state: StateSettings) -> dict[str, int]:
    """Per sink table, the watermark its recorded reports have reached (watermark reports
    included)."""
    store = StateStore(state)
    try:
        reached = store.watermarks(sink.changelog for sink in sinks)
    finally:
        store.close()
    return {sink.name: reached[sink.changelog] for sink in sinks if sink.changelog in reached}


def describe(schedule: PipelineSchedule, store: StateStore, now: datetime) -> list[TaskStatus]:
    """One row per task of ``schedule``, mirrors first, from the recorded state at ``now``."""
    tasks = store.task_states(schedule.pipeline)
    tables = store.table_states(schedule.changelogs, cuts_since(schedule.tasks, tasks))
    decision = decide(schedule.tasks, tables, tasks, now)
    lengths = {spec.task: spec.window for spec in schedule.tasks}
    rows: list[tuple[WindowTask, Window | None, TaskCondition, str]] = []
    for due in decision.due:
        state = tasks.get(due.task, TaskState())
        open_run = state.open
        if open_run is not None and open_run.state in (RunState.PENDING, RunState.RUNNING):
            condition, reason = TaskCondition.RUNNING, f"attempt {open_run.attempts}"
        else:
            condition, reason = TaskCondition.DUE, "inputs complete; runs at the next tick"
        rows.append((due.task, due.window, condition, reason))
    for waiting in decision.waiting:
        condition = TaskCondition.HELD if waiting.held else TaskCondition.WAITING
        rows.append((waiting.task, waiting.window, condition, waiting.reason))
    result = []
    for task, window, condition, reason in rows:
        done = tasks.get(task, TaskState()).done_end
        last = Window.ending_at(done, lengths[task]) if done is not None else None
        result.append(TaskStatus(schedule.pipeline, task, last, window, condition, reason))
    order = {spec.task: index for index, spec in enumerate(schedule.tasks)}
    return sorted(result, key=lambda row: order[row.task])
