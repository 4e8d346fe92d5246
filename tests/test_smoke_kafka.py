"""The Kafka broker is real: a message produced is consumed back through a consumer group."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tidemark.stack.endpoints import StackEndpoints


def test_a_produced_message_is_consumed_by_a_group(
    endpoints: StackEndpoints, unique_name: str
) -> None:
    servers = endpoints.kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})
    for future in admin.create_topics([NewTopic(unique_name, num_partitions=1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    producer.produce(unique_name, key=b"db.table", value=b'{"version": "1.0"}')
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": unique_name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([unique_name])
    try:
        message = None
        deadline = time.monotonic() + 60
        while message is None and time.monotonic() < deadline:
            polled = consumer.poll(1.0)
            if polled is not None:
                assert polled.error() is None, polled.error()
                message = polled
        assert message is not None, "no message came back within 60 s"
        consumer.commit(message=message, asynchronous=False)
        committed = consumer.committed(consumer.assignment(), timeout=30)
    finally:
        consumer.close()

    assert (message.key(), message.value()) == (b"db.table", b'{"version": "1.0"}')
    assert [partition.offset for partition in committed] == [1]
