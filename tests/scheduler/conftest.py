"""Fixtures for the scheduler's tests against the real Kafka and PostgreSQL of the stack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from scheduler.state import StateSettings, StateStore
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.postgres import Postgres


@pytest.fixture
def state_settings(endpoints: StackEndpoints, unique_name: str) -> StateSettings:
    """A schema of the test's own in the catalog's database."""
    return StateSettings.from_catalog(endpoints.catalog.properties(), schema=unique_name)


@pytest.fixture
def store(state_settings: StateSettings) -> Iterator[StateStore]:
    store = StateStore(state_settings)
    store.create()
    yield store
    store.drop()


@pytest.fixture
def own_state(own_postgres: Postgres, unique_name: str) -> StateSettings:
    """A schema of the test's own on a PostgreSQL of its own (``own_postgres``), to kill."""
    endpoint = own_postgres.endpoint()
    return StateSettings(
        {
            "host": endpoint["host"],
            "port": str(endpoint["port"]),
            "dbname": endpoint["database"],
            "user": endpoint["user"],
            "password": endpoint["password"],
        },
        schema=unique_name,
        connect_timeout_seconds=2,
    )


@pytest.fixture
def own_store(own_state: StateSettings) -> Iterator[StateStore]:
    store = StateStore(own_state)
    store.create()
    yield store
    store.close()


@pytest.fixture
def servers(endpoints: StackEndpoints) -> str:
    return endpoints.kafka.bootstrap_servers


@pytest.fixture
def reports_topic(endpoints: StackEndpoints, unique_name: str) -> Iterator[str]:
    """A fresh commit report topic (the broker does not create topics on first use)."""
    admin = AdminClient({"bootstrap.servers": endpoints.kafka.bootstrap_servers})
    topic = f"reports.{unique_name}"
    for future in admin.create_topics([NewTopic(topic, num_partitions=3)]).values():
        future.result(timeout=30)
    yield topic
    for future in admin.delete_topics([topic]).values():
        future.result(timeout=30)
