"""The state store survives a lost PostgreSQL connection: the failing call says so, the next
one reconnects, and nothing recorded is lost."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import psycopg2
import pytest

from bench.workloads.shop_schedule import ORDERS, at, report
from scheduler.state import StateSettings, StateStore, StateUnavailableError


@pytest.fixture
def named_store(state_settings: StateSettings, unique_name: str) -> Iterator[StateStore]:
    """A store whose connections carry the test's name, so the test can find and cut them."""
    settings = replace(
        state_settings, connection={**state_settings.connection, "application_name": unique_name}
    )
    store = StateStore(settings)
    store.create()
    yield store
    store.drop()


def cut_connections(settings: StateSettings, application_name: str) -> int:
    """What a PostgreSQL restart does to the store's open connection."""
    params: dict[str, Any] = {**settings.connection, "application_name": "test-admin"}
    connection = psycopg2.connect(**params)
    try:
        with connection, connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (application_name,),
            )
            (count,) = cursor.fetchone() or (0,)
            return int(count)
    finally:
        connection.close()


def test_a_lost_connection_fails_one_call_and_the_next_reconnects(
    named_store: StateStore, state_settings: StateSettings, unique_name: str
) -> None:
    assert named_store.record_reports([report(ORDERS, 1, "10:01", 1)], at("10:02")) == 1

    assert cut_connections(state_settings, unique_name) == 1
    with pytest.raises(StateUnavailableError, match="failed mid-transaction"):
        named_store.report_count("shop.orders_changelog")

    assert named_store.report_count("shop.orders_changelog") == 1
    assert named_store.record_reports([report(ORDERS, 1, "10:01", 1)], at("10:03")) == 0
