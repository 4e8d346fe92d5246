"""A smoke pipeline through the four real services, until `tidemark demo` exists.

MariaDB rows change -> the binlog is read from a saved position -> the changes are appended to
an Iceberg changelog table with a watermark and position in the same commit -> a commit report
goes through Kafka -> Spark merges the changelog into a mirror table -> the mirror equals MariaDB.
Run by `make demo` as `python -m spark_jobs.smoke_pipeline`; prints each step and exits non-zero
if the mirror differs. The demo issue replaces it with `tidemark demo`.
"""

from __future__ import annotations

import sys
import time
import uuid

import pyarrow as pa
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from ingest.binlog import BinlogReader, Row, RowsChanged
from spark_jobs.session import SparkSettings, build_session
from tidemark.catalog import load_catalog
from tidemark.contracts import CommitReport, SummaryKey
from tidemark.source import current_position
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

RUN = uuid.uuid4().hex[:8]
DATABASE, NAMESPACE, TOPIC = f"smoke_{RUN}", f"smoke_{RUN}", f"tidemark.smoke.{RUN}"
CHANGELOG_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("item", pa.string()),
        ("qty", pa.int64()),
        ("_tm_op", pa.string()),
        ("_tm_order", pa.int64()),
    ]
)


def step(text: str) -> None:
    say(f"==> {text}")


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> int:
    endpoints = Stack(StackSettings.from_env()).endpoints()
    admin = endpoints.mariadb.admin_source()
    cdc = endpoints.mariadb.cdc_source(server_id=4100)

    step(f"MariaDB {admin.host}:{admin.port}: create {DATABASE}.orders, then change rows")
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {DATABASE}")
        cursor.execute(f"CREATE TABLE {DATABASE}.orders (id INT PRIMARY KEY, item TEXT, qty INT)")
        start = current_position(cdc)
        for statement in [
            "INSERT INTO {db}.orders VALUES (1, 'kettle', 1), (2, 'teapot', 2), (3, 'cup', 6)",
            "UPDATE {db}.orders SET qty = 4 WHERE id = 3",
            "DELETE FROM {db}.orders WHERE id = 2",
        ]:
            cursor.execute(statement.format(db=DATABASE))
        cursor.execute(f"SELECT id, item, qty FROM {DATABASE}.orders ORDER BY id")
        source_rows = [tuple(row) for row in cursor.fetchall()]

    step(f"binlog from {start} as the least-privilege CDC user")
    with BinlogReader(cdc, start) as reader:
        events = [e for e in reader if isinstance(e, RowsChanged) and e.database == DATABASE]
    changes = [(event, before, after) for event in events for before, after in event.rows]
    say(f"    {len(changes)} row changes")

    step(f"Iceberg: append to {NAMESPACE}.orders_changelog with watermark and position")
    catalog = load_catalog(endpoints.catalog.name, endpoints.catalog.properties())
    catalog.create_namespace(NAMESPACE)
    changelog = catalog.create_table(f"{NAMESPACE}.orders_changelog", schema=CHANGELOG_SCHEMA)
    watermark, position = events[-1].event_time_ms, str(events[-1].position)
    changelog.append(
        pa.Table.from_pylist(
            [changelog_row(order, c) for order, c in enumerate(changes)], schema=CHANGELOG_SCHEMA
        ),
        snapshot_properties={SummaryKey.WATERMARK: str(watermark), SummaryKey.POSITION: position},
    )
    snapshot = changelog.current_snapshot()
    assert snapshot is not None

    step(f"Kafka {endpoints.kafka.bootstrap_servers}: publish and consume the commit report")
    report = CommitReport(
        table=f"{NAMESPACE}.orders_changelog",
        snapshot_id=snapshot.snapshot_id,
        watermark_ms=watermark,
        position=position,
        rows_added=len(changes),
        committed_at_ms=snapshot.timestamp_ms,
    )
    received = round_trip(endpoints.kafka.bootstrap_servers, report)

    step(f"Spark: MERGE snapshot {received.snapshot_id} into {NAMESPACE}.orders_mirror")
    spark = build_session(
        SparkSettings(app_name="tidemark-smoke", jars=endpoints.spark.jars),
        endpoints.catalog.name,
        endpoints.catalog.properties(),
    )
    merge_into_mirror(spark, endpoints.catalog.name, received)
    mirror_rows = [
        (row.id, row.item, row.qty)
        for row in spark.sql(
            f"SELECT id, item, qty FROM {endpoints.catalog.name}.{NAMESPACE}.orders_mirror "
            "ORDER BY id"
        ).collect()
    ]
    spark.stop()

    say(f"    MariaDB: {source_rows}\n    mirror:  {mirror_rows}")
    if mirror_rows != source_rows:
        step("FAILED: the mirror differs from MariaDB")
        return 1
    step("OK: the mirror equals MariaDB")
    return 0


def changelog_row(order: int, change: tuple[RowsChanged, Row | None, Row | None]) -> Row:
    event, before, after = change
    image = after if after is not None else before
    assert image is not None
    # Binlog order is commit order, so the read order sorts the changes of each key.
    return {**image, "_tm_op": event.operation.value, "_tm_order": order}


def round_trip(bootstrap_servers: str, report: CommitReport) -> CommitReport:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    for future in admin.create_topics([NewTopic(TOPIC, num_partitions=1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    producer.produce(TOPIC, key=report.table.encode(), value=report.to_json())
    if producer.flush(30):
        raise RuntimeError("the commit report was not delivered within 30 s")
    consumer = Consumer(
        {"bootstrap.servers": bootstrap_servers, "group.id": TOPIC, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            payload = None if message is None or message.error() else message.value()
            if payload is not None:
                return CommitReport.from_json(payload)
    finally:
        consumer.close()
    raise RuntimeError("the commit report did not come back within 60 s")


def merge_into_mirror(spark: SparkSession, catalog: str, report: CommitReport) -> None:
    mirror = f"{catalog}.{NAMESPACE}.orders_mirror"
    spark.sql(
        f"CREATE TABLE {mirror} (id BIGINT, item STRING, qty BIGINT) USING iceberg "
        "TBLPROPERTIES ('format-version'='2', 'write.merge.mode'='merge-on-read')"
    )
    spark.sql(
        "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY _tm_order DESC) "
        f"AS rn FROM {catalog}.{report.table} VERSION AS OF {report.snapshot_id}) WHERE rn = 1"
    ).createOrReplaceTempView("latest")
    spark.sql(
        f"MERGE INTO {mirror} t USING latest s ON t.id = s.id "
        "WHEN MATCHED AND s._tm_op = 'd' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.item = s.item, t.qty = s.qty "
        "WHEN NOT MATCHED AND s._tm_op != 'd' THEN INSERT (id, item, qty) "
        "VALUES (s.id, s.item, s.qty)"
    )


if __name__ == "__main__":
    sys.exit(main())
