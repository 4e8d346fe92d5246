"""Fixtures for the scheduler's tests against the real Kafka and PostgreSQL of the stack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from scheduler.state import StateSettings, StateStore
from tests.stack_helpers import free_ports, second_stack_home
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.kafka import Kafka
from tidemark.stack.settings import StackSettings


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
def reports_topic(endpoints: StackEndpoints, unique_name: str) -> Iterator[str]:
    """A fresh commit report topic (the broker does not create topics on first use)."""
    admin = AdminClient({"bootstrap.servers": endpoints.kafka.bootstrap_servers})
    topic = f"reports.{unique_name}"
    for future in admin.create_topics([NewTopic(topic, num_partitions=3)]).values():
        future.result(timeout=30)
    yield topic
    for future in admin.delete_topics([topic]).values():
        future.result(timeout=30)


@pytest.fixture
def own_kafka(stack_settings: StackSettings, unique_name: str) -> Iterator[Kafka]:
    """A broker of the test's own, to stop and start (the shared one serves other tests)."""
    with second_stack_home(stack_settings, unique_name) as home:
        port, controller_port = free_ports(2)
        kafka = Kafka(
            StackSettings(home=home, kafka_port=port, kafka_controller_port=controller_port)
        )
        kafka.up()
        yield kafka
