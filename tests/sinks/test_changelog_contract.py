"""What every lake format's changelog table promises the pipeline, run against each format
ingest can write (``ingest.changelog.catalogs``) on the real catalog.

Ingest, the scheduler and the window jobs rely on these and on nothing else of a format
(``tidemark.sinks.protocols``): a second format passes this file before the pipeline uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from ingest.changelog.catalogs import SinkCatalog, open_sink_catalog
from ingest.changelog.fencing import ConcurrentWriterError
from spark_jobs.merge.bound import bound_at_order, find_bound
from tidemark.contracts.bootstrap_state import BootstrapState, SourceTableBootstrap
from tidemark.contracts.changelog import MetadataColumn
from tidemark.contracts.progress import TableProgress
from tidemark.sinks.commits import newest_tidemark_commit
from tidemark.sinks.protocols import ChangelogWriter, SinkTableSpec
from tidemark.source import BinlogPosition

#: each format on the storages it is written on here: Paimon on local disk only so far
FORMATS_ON_STORAGES = [("iceberg", "local"), ("iceberg", "s3"), ("paimon", "local")]
pytestmark = pytest.mark.parametrize(
    ("sink_format", "storage"),
    [pytest.param(*pair, id="-".join(pair)) for pair in FORMATS_ON_STORAGES],
    indirect=["storage"],
)

T0 = 1_767_225_600_000  # 2026-01-01 00:00 UTC
DATA = pa.schema([("id", pa.int64()), ("qty", pa.int64())])

Open = Callable[[], ChangelogWriter]


@pytest.fixture
def open_table(
    request: pytest.FixtureRequest, sink_format: str, namespace: str, tmp_path: Path
) -> Open:
    """Opens (creating it the first time) one changelog table of the format, as ingest does."""
    catalog: SinkCatalog = (
        open_sink_catalog("paimon", "tidemark", {"warehouse": str(tmp_path / "warehouse")})
        if sink_format == "paimon"
        else request.getfixturevalue("sink_catalog")  # the session's: one pool per storage
    )
    catalog.create_namespace_if_not_exists(namespace)
    spec = SinkTableSpec(f"{namespace}.orders", DATA, keys=("id",))
    return lambda: catalog.open_changelog(spec, None)


def progress_at(index: int, **changes: Any) -> TableProgress:
    """The progress of the ``index``-th commit: one row each, two seconds of watermark each."""
    progress = TableProgress(
        position=BinlogPosition("binlog.000001", 4 + index * 100),
        watermark_ms=T0 + index * 2_000,
        last_order=index,
        source="127.0.0.1:3306",
    )
    return replace(progress, **changes)


def rows(table: ChangelogWriter, orders: range, op: str = "c") -> pa.Table:
    """Rows of ``orders``, with their metadata columns, in the table's schema."""
    return pa.Table.from_pylist(
        [
            {
                "id": order,
                "qty": order * 10,
                MetadataColumn.OPERATION: op,
                MetadataColumn.EVENT_TIME: datetime.now(UTC),
                MetadataColumn.POSITION: f"binlog.000001:{4 + order * 100}",
                MetadataColumn.SOURCE_DATABASE: "shop",
                MetadataColumn.SOURCE_TABLE: "orders",
                MetadataColumn.ORDER_KEY: order,
                MetadataColumn.SCHEMA_VERSION: 1,
            }
            for order in orders
        ],
        schema=table.schema,
    )


def test_a_new_table_has_no_commit_and_no_progress(open_table: Open) -> None:
    table = open_table()

    assert not table.has_commits()
    assert list(table.commits()) == []
    assert (table.progress(), table.bootstrap(), table.last_commit_id()) == (None, None, None)
    assert table.data_schema().names == DATA.names


def test_a_commit_holds_its_rows_and_progress_and_says_so(open_table: Open) -> None:
    table = open_table()
    before_ms = datetime.now(UTC).timestamp() * 1000 - 1_000

    made = table.commit(rows(table, range(1, 4)), progress_at(3))

    assert made.progress() == progress_at(3)
    assert made.rows_added == 3
    assert made.committed_at_ms >= before_ms
    assert made.bootstrap() is None
    assert table.has_commits()
    assert table.progress() == progress_at(3)
    assert table.last_commit_id() == made.commit_id
    assert next(table.commits()) == made


def test_a_reopened_table_resumes_from_its_newest_progress(open_table: Open) -> None:
    table = open_table()
    for index in range(1, 4):
        table.commit(rows(table, range(index, index + 1)), progress_at(index))

    reopened = open_table()  # a restart

    assert reopened.progress() == progress_at(3)
    assert reopened.last_commit_id() == table.last_commit_id()


def test_an_empty_commit_moves_the_progress_and_keeps_the_rows(open_table: Open) -> None:
    table = open_table()
    table.commit(rows(table, range(1, 2)), progress_at(1))

    empty = table.commit(table.schema.empty_table(), progress_at(1, watermark_ms=T0 + 60_000))

    assert empty.rows_added == 0
    assert table.progress() == progress_at(1, watermark_ms=T0 + 60_000)
    assert table.newest_rows(datetime.now(UTC) - timedelta(hours=1), ["id"], 10).num_rows == 1


def test_the_history_lists_every_commit_newest_first_with_its_watermark(open_table: Open) -> None:
    table = open_table()
    made = [table.commit(rows(table, range(i, i + 1)), progress_at(i)) for i in range(1, 6)]

    history = list(open_table().commits())

    assert [commit.commit_id for commit in history] == [c.commit_id for c in reversed(made)]
    watermarks = [commit.progress().watermark_ms for commit in history]  # type: ignore[union-attr]
    assert watermarks == [T0 + i * 2_000 for i in range(5, 0, -1)]
    assert newest_tidemark_commit(history) == made[-1]


def test_a_window_is_bounded_by_the_first_commit_whose_watermark_reaches_its_end(
    open_table: Open,
) -> None:
    table = open_table()
    made = [table.commit(rows(table, range(i, i + 1)), progress_at(i)) for i in range(1, 6)]
    # a transaction committed in parts: a commit in the middle of it is never a bound
    partial = table.commit(rows(table, range(6, 7)), progress_at(6, partial_rows=1))
    whole = table.commit(rows(table, range(7, 8)), progress_at(7))

    commits = list(table.commits())

    bound = find_bound(table.identifier, commits, window_end_ms=T0 + 5_000)
    assert (bound.commit_id, bound.order, bound.watermark_ms) == (made[2].commit_id, 3, T0 + 6_000)
    assert find_bound(table.identifier, commits, T0 + 11_000).commit_id == whole.commit_id
    assert bound_at_order(table.identifier, commits, 2).commit_id == made[1].commit_id
    assert find_bound(table.identifier, commits, T0 + 12_000).commit_id == whole.commit_id
    assert partial.progress() is not None  # a Tidemark commit, passed over


def test_a_bootstrap_state_round_trips_until_the_stream_commits(open_table: Open) -> None:
    table = open_table()
    reading = BootstrapState(
        {"shop.orders": SourceTableBootstrap(after=(2,), rows=2, key=("id",))}, errors_order=0
    )
    done = BootstrapState({"shop.orders": SourceTableBootstrap(done=True, rows=3, key=("id",))})

    chunk = table.commit(rows(table, range(1, 3), op="r"), progress_at(2), reading)
    assert (chunk.bootstrap(), open_table().bootstrap()) == (reading, reading)
    table.commit(rows(table, range(3, 4), op="r"), progress_at(3), done)
    assert open_table().bootstrap() == done
    table.commit(rows(table, range(4, 5)), progress_at(4))  # the stream
    assert open_table().bootstrap() is None


def test_the_bootstrap_rows_after_an_order_are_deleted_keeping_the_progress(
    open_table: Open,
) -> None:
    table = open_table()
    table.commit(rows(table, range(1, 5), op="r"), progress_at(4))

    table.delete_snapshot_rows_after(2, progress_at(2))

    newest = table.newest_rows(datetime.now(UTC) - timedelta(hours=1), ["id"], limit=10)
    assert newest["id"].to_pylist() == [2, 1]
    assert open_table().progress() == progress_at(2)


def test_evolving_adds_and_widens_columns_and_sets_properties(open_table: Open) -> None:
    table = open_table()
    table.commit(rows(table, range(1, 2)), progress_at(1))

    table.evolve(
        add=[pa.field("note", pa.string())], widen=[], properties={"comment": "the orders"}
    )

    assert table.data_schema().names == [*DATA.names, "note"]
    assert "note" in table.schema.names
    assert table.properties["comment"] == "the orders"
    reopened = open_table()
    assert reopened.data_schema().names == [*DATA.names, "note"]
    assert reopened.properties["comment"] == "the orders"


def test_a_second_writer_commits_nothing(open_table: Open) -> None:
    first, second = open_table(), open_table()  # a second ingest of the same pipeline
    first.commit(rows(first, range(1, 2)), progress_at(1))

    with pytest.raises(ConcurrentWriterError):
        second.commit(rows(second, range(2, 3)), progress_at(2))

    assert open_table().progress() == progress_at(1)
