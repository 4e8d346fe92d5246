"""Starting a pipeline over (as the demo does): the store forgets its windows and its tables'
reports, and Kafka its report topic and consumer group; other pipelines keep theirs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.polling import wait_until
from bench.workloads.shop_schedule import ORDERS, USERS, at, report
from scheduler.gate import job_task
from scheduler.reports_consumer import ConsumerSettings, forget_reports
from scheduler.state import StateMissingError, StateSettings, StateStore
from tests.kafka_groups import consumer_groups
from tidemark.stack.endpoints import StackEndpoints
from tidemark.windows import Window


def test_forget_drops_one_pipelines_windows_and_its_tables_reports(store: StateStore) -> None:
    window = Window.ending_at(at("10:05"), timedelta(minutes=5))
    task = job_task("revenue")
    for pipeline in ("old shop", "other shop"):
        store.mark_pending(pipeline, task, window, None, at("10:06"))
    store.record_reports([report(ORDERS, 1, "10:05", 1), report(USERS, 2, "10:05", 1)], at("10:06"))

    store.forget("old shop", [f"{ORDERS}_changelog"])

    assert store.runs("old shop") == []
    assert len(store.runs("other shop")) == 1
    assert store.report_count(f"{ORDERS}_changelog") == 0
    assert store.report_count(f"{USERS}_changelog") == 1


def test_forget_leaves_a_store_that_was_never_created_alone(
    state_settings: StateSettings,
) -> None:
    store = StateStore(state_settings)
    try:
        store.forget("never scheduled", [f"{ORDERS}_changelog"])

        with pytest.raises(StateMissingError):  # forget created nothing
            store.task_states("never scheduled")
    finally:
        store.close()


def test_forget_reports_deletes_the_topic_and_the_consumer_group(
    endpoints: StackEndpoints, unique_name: str
) -> None:
    kafka: dict[str, Any] = {"bootstrap.servers": endpoints.kafka.bootstrap_servers}
    admin = AdminClient(kafka)
    reports_topic, group = f"reports.{unique_name}", f"tidemark-{unique_name}"
    admin.create_topics([NewTopic(reports_topic, num_partitions=1)])[reports_topic].result(30)
    consumer = Consumer({**kafka, "group.id": group})
    consumer.commit(offsets=[TopicPartition(reports_topic, 0, 0)], asynchronous=False)
    consumer.close()
    assert group in consumer_groups(admin)

    forget_reports(ConsumerSettings(reports_topic, kafka, group))

    assert reports_topic not in admin.list_topics(timeout=10).topics
    assert group not in consumer_groups(admin)


def test_forget_reports_waits_for_a_stopped_scheduler_to_leave_its_group(
    endpoints: StackEndpoints, unique_name: str
) -> None:
    """A scheduler is a static member: stopped, it stays in the group until its session ends
    (6 s here, the broker's shortest), and the group cannot be deleted before."""
    kafka: dict[str, Any] = {
        "bootstrap.servers": endpoints.kafka.bootstrap_servers,
        "session.timeout.ms": "6000",
    }
    admin = AdminClient({"bootstrap.servers": endpoints.kafka.bootstrap_servers})
    reports_topic = f"reports.{unique_name}"
    settings = ConsumerSettings(reports_topic, kafka, f"tidemark-{unique_name}")
    admin.create_topics([NewTopic(reports_topic, num_partitions=1)])[reports_topic].result(30)
    scheduler = Consumer(settings.consumer_config())
    scheduler.subscribe([reports_topic])

    def assigned() -> bool:  # polled, as a scheduler does: close() waits on an unpolled join
        scheduler.poll(0.2)
        return bool(scheduler.assignment())

    wait_until("the scheduler in its group", assigned, 30)
    scheduler.close()
    assert _members(admin, settings.group_id), "a static member stays after closing"

    forget_reports(settings)

    assert reports_topic not in admin.list_topics(timeout=10).topics
    assert settings.group_id not in consumer_groups(admin)


def _members(admin: AdminClient, group: str) -> int:
    return len(admin.describe_consumer_groups([group])[group].result(30).members)
