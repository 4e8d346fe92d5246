"""A restart of the PostgreSQL server that holds the scheduler's state: no window is lost or run
twice, and the pipeline's lock, which the restart frees, is taken again or given up."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from bench.workloads.recording_executor import RecordingExecutor
from bench.workloads.shop_schedule import at, consumer_settings, publish, two_table_schedule
from scheduler.engine import WindowEngine
from scheduler.reports_consumer import ReportsConsumer
from scheduler.state import (
    PipelineLockedError,
    StateSettings,
    StateStore,
    StateUnavailableError,
)
from tests.scheduler.harness import DEADLINE, EXPECTED, REPORTS, Clock, all_succeeded, serving
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.postgres import Postgres
from tidemark.stack.process import wait_for


def test_a_state_database_restart_mid_stream_loses_no_window_and_runs_none_twice(
    own_store: StateStore,
    own_postgres: Postgres,
    store: StateStore,
    state_settings: StateSettings,
    endpoints: StackEndpoints,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the executor records its calls in the shared server, which stays up: they show what the
    # scheduler decided, whatever happened to its own state
    executor = RecordingExecutor(state_settings)
    servers = endpoints.kafka.bootstrap_servers
    publish(servers, reports_topic, [r for r in REPORTS if r.snapshot_id <= 2])  # to 10:05

    with serving(own_store, executor, servers, reports_topic, unique_name):
        assert wait_for(lambda: len(executor.effects()) == 3, timeout=DEADLINE)
        with caplog.at_level(logging.WARNING, logger="scheduler"):
            own_postgres.down()
            assert wait_for(
                lambda: any(
                    "The scheduler state database is unavailable" in r.message
                    for r in caplog.records
                ),
                timeout=DEADLINE,
            )
            own_postgres.up()
            publish(servers, reports_topic, [r for r in REPORTS if r.snapshot_id > 2])
            assert wait_for(
                _once_answering(all_succeeded(own_store, unique_name)), timeout=DEADLINE
            )
        assert any("lost pipeline" in r.message for r in caplog.records)

    calls = sorted((c.task, c.window_end.strftime("%H:%M")) for c in executor.calls())
    assert calls == EXPECTED
    assert executor.effects() == EXPECTED


def _once_answering(check: Callable[[], bool]) -> Callable[[], bool]:
    """``check`` through the store, whose connection the restart broke: the first call after a
    restart fails, the next reconnects."""

    def answered() -> bool:
        try:
            return check()
        except StateUnavailableError:
            return False

    return answered


def test_the_lock_freed_by_a_restart_is_taken_again_and_keeps_a_second_scheduler_out(
    own_store: StateStore, own_state: StateSettings, own_postgres: Postgres, unique_name: str
) -> None:
    with own_store.pipeline_lock(unique_name) as lock:
        own_postgres.down()
        own_postgres.up()

        lock.confirm()

        with pytest.raises(PipelineLockedError, match="another scheduler already runs"):
            with StateStore(own_state).pipeline_lock(unique_name):
                pass


def test_a_scheduler_whose_lock_another_took_after_a_restart_stops(
    own_store: StateStore, own_state: StateSettings, own_postgres: Postgres, unique_name: str
) -> None:
    with own_store.pipeline_lock(unique_name) as lock:
        own_postgres.down()
        own_postgres.up()
        with StateStore(own_state).pipeline_lock(unique_name):
            with pytest.raises(PipelineLockedError) as stopped:
                lock.confirm()

    assert str(stopped.value) == (
        f"pipeline {unique_name!r}'s lock was lost when the state database (schema "
        f"{unique_name} at {own_state.connection['host']}:{own_state.connection['port']}) "
        "restarted, and another scheduler took it: this one stops so that no window runs twice"
    )


def test_reports_read_while_the_state_database_is_down_are_recorded_once_it_is_back(
    own_store: StateStore,
    own_postgres: Postgres,
    store: StateStore,  # the shared server's schema, where the executor records its calls
    state_settings: StateSettings,
    endpoints: StackEndpoints,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    servers = endpoints.kafka.bootstrap_servers
    reports = ReportsConsumer(consumer_settings(servers, reports_topic, unique_name))
    engine = WindowEngine(
        two_table_schedule(unique_name), own_store, reports, executor, clock=Clock(at("10:20"))
    )
    publish(servers, reports_topic, [r for r in REPORTS if r.snapshot_id <= 2])  # to 10:05
    assert wait_for(lambda: (engine.tick(), len(executor.effects()) == 3)[1], timeout=DEADLINE)
    own_postgres.down()
    publish(servers, reports_topic, [r for r in REPORTS if r.snapshot_id > 2])

    def read_but_not_recorded() -> bool:
        try:
            engine.consume()
        except StateUnavailableError:
            return True  # it had reports to record
        return False

    assert wait_for(read_but_not_recorded, timeout=DEADLINE)
    own_postgres.up()

    done = all_succeeded(own_store, unique_name)

    def ticked_to_the_end() -> bool:
        engine.tick()
        return done()

    assert wait_for(_once_answering(ticked_to_the_end), timeout=DEADLINE)
    reports.close()
    assert sorted((c.task, c.window_end.strftime("%H:%M")) for c in executor.calls()) == EXPECTED
