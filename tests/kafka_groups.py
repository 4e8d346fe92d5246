"""Consumer groups on the stack's Kafka, as tests set them up and look at them."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient


def consumer_groups(admin: AdminClient) -> set[str]:
    listed = admin.list_consumer_groups(request_timeout=10).result(10)
    return {group.group_id for group in listed.valid}


def commit_offset(bootstrap_servers: str, group: str, topic: str, offset: int = 0) -> None:
    """``group`` has read ``topic``'s partition 0 up to ``offset``."""
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()
