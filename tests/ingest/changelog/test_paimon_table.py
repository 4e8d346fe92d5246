"""A Paimon sink table is the mirror: each change upserts or deletes its key, and every commit
is one snapshot with Tidemark's progress and a real Paimon watermark (docs/paimon.md).

Real Paimon tables in a warehouse on local disk, written and read with pypaimon.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from ingest.changelog.paimon_table import ROW_KIND_COLUMN, PaimonChangelog, open_paimon_changelog
from ingest.errors import SchemaChangeStopError
from tidemark.contracts.changelog import TRUNCATE_SCHEMA_VERSION, MetadataColumn, Operation
from tidemark.contracts.progress import TableProgress
from tidemark.errors import ConfigError
from tidemark.lake.paimon import PaimonCatalog, open_paimon_catalog
from tidemark.source import BinlogPosition

T0 = 1_767_225_600_000  # 2026-01-01 00:00 UTC
DATA = pa.schema([("id", pa.int64()), ("qty", pa.int64())])
IDENTIFIER = "shop.orders"

Open = Callable[[], PaimonChangelog]


@pytest.fixture
def paimon(tmp_path: Path) -> PaimonCatalog:
    catalog = open_paimon_catalog({"warehouse": str(tmp_path / "warehouse")})
    catalog.create_namespace_if_not_exists("shop")
    return catalog


@pytest.fixture
def open_table(paimon: PaimonCatalog) -> Open:
    return lambda: open_paimon_changelog(paimon, IDENTIFIER, DATA, ["id"], [], {})


def progress_at(index: int, **changes: Any) -> TableProgress:
    progress = TableProgress(
        position=BinlogPosition("binlog.000001", 4 + index * 100),
        watermark_ms=T0 + index * 2_000,
        last_order=index,
        source="127.0.0.1:3306",
    )
    return replace(progress, **changes)


def change(order: int, key: int, op: Operation, qty: int | None = None, table: str = "orders"):  # type: ignore[no-untyped-def]
    return {
        "id": key,
        "qty": qty,
        MetadataColumn.OPERATION: op.value,
        MetadataColumn.EVENT_TIME: datetime.fromtimestamp((T0 + order) / 1000, UTC),
        MetadataColumn.POSITION: f"binlog.000001:{order}",
        MetadataColumn.SOURCE_DATABASE: "shop",
        MetadataColumn.SOURCE_TABLE: table,
        MetadataColumn.ORDER_KEY: order,
        MetadataColumn.SCHEMA_VERSION: TRUNCATE_SCHEMA_VERSION if op is Operation.TRUNCATE else 1,
    }


def batch(table: PaimonChangelog, changes: Sequence[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(changes), schema=table.schema)


def state(paimon: PaimonCatalog) -> dict[int, int | None]:
    """The table's rows as a reader sees them: qty by id."""
    table = paimon.load_table(IDENTIFIER)
    assert table is not None
    rows = table.read(["id", "qty"]).to_pylist()
    return {row["id"]: row["qty"] for row in sorted(rows, key=lambda row: row["id"])}


def test_changes_upsert_and_delete_their_keys_the_newest_order_winning(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    table.commit(
        batch(table, [change(1, 1, Operation.INSERT, 10), change(2, 2, Operation.INSERT, 20)]),
        progress_at(1),
    )
    # within one batch the rows are not in order: the highest order of a key wins anyway
    table.commit(
        batch(
            table,
            [
                change(5, 1, Operation.UPDATE, 12),
                change(3, 1, Operation.UPDATE, 11),
                change(4, 2, Operation.DELETE, 20),
                change(6, 3, Operation.INSERT, 30),
            ],
        ),
        progress_at(2),
    )

    assert state(paimon) == {1: 12, 3: 30}


def test_a_change_written_twice_is_one_row(open_table: Open, paimon: PaimonCatalog) -> None:
    table = open_table()
    twice = [change(1, 1, Operation.INSERT, 10), change(2, 1, Operation.UPDATE, 11)]
    table.commit(batch(table, twice), progress_at(1))
    table.commit(batch(table, twice[:1]), progress_at(2))  # an older change again

    assert state(paimon) == {1: 11}


def test_every_commit_carries_its_watermark_in_paimons_own_field(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    for index in range(1, 4):
        table.commit(
            batch(table, [change(index, index, Operation.INSERT, index)]), progress_at(index)
        )
    table.commit(table.schema.empty_table(), progress_at(3, watermark_ms=T0 + 60_000))  # idle

    stored = paimon.load_table(IDENTIFIER)
    assert stored is not None
    watermarks = [snapshot.watermark for snapshot in stored.snapshots()]
    assert watermarks == [T0 + 60_000, T0 + 6_000, T0 + 4_000, T0 + 2_000]


def test_a_read_at_a_watermark_sees_the_first_snapshot_that_reached_it(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    table.commit(batch(table, [change(1, 1, Operation.INSERT, 10)]), progress_at(1))
    table.commit(batch(table, [change(2, 1, Operation.UPDATE, 11)]), progress_at(2))
    table.commit(batch(table, [change(3, 1, Operation.DELETE, 11)]), progress_at(3))

    stored = paimon.load_table(IDENTIFIER)
    assert stored is not None
    assert stored.read(["qty"], at_watermark=T0 + 3_000).to_pylist() == [{"qty": 11}]
    assert stored.read(["qty"], at_watermark=T0 + 6_000).num_rows == 0


def test_a_watermark_held_by_a_bootstrap_is_not_stamped(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    table.commit(batch(table, [change(1, 1, Operation.INSERT, 10)]), progress_at(1))
    held = progress_at(2, hold_until=BinlogPosition("binlog.000002", 4))
    table.commit(batch(table, [change(2, 2, Operation.SNAPSHOT_READ, 20)]), held)

    stored = paimon.load_table(IDENTIFIER)
    assert stored is not None
    assert [snapshot.watermark for snapshot in stored.snapshots()] == [T0 + 2_000, T0 + 2_000]
    assert table.progress() == held  # the progress itself is kept whole


def test_a_truncate_deletes_the_keys_whose_newest_change_came_from_that_source_table(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()  # a sink table fed by two shards
    table.commit(
        batch(
            table,
            [
                change(1, 1, Operation.INSERT, 10, table="orders_a"),
                change(2, 2, Operation.INSERT, 20, table="orders_b"),
                change(3, 3, Operation.INSERT, 30, table="orders_a"),
            ],
        ),
        progress_at(1),
    )
    table.commit(
        batch(
            table,
            [
                change(4, 4, Operation.INSERT, 40, table="orders_a"),  # before: truncated
                change(5, 3, Operation.UPDATE, 31, table="orders_b"),  # moved shards: stays
                change(6, 0, Operation.TRUNCATE, table="orders_a"),
                change(7, 1, Operation.INSERT, 11, table="orders_a"),  # after: stays
            ],
        ),
        progress_at(2),
    )

    assert state(paimon) == {1: 11, 2: 20, 3: 31}


def test_a_commit_the_fence_refuses_publishes_nothing_at_once(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    table.commit(batch(table, [change(1, 1, Operation.INSERT, 10)]), progress_at(1))
    stored = paimon.load_table(IDENTIFIER)
    assert stored is not None

    asked: list[int | None] = []

    def refuse(follows: int | None) -> None:
        asked.append(follows)
        raise LookupError(f"not after snapshot {follows}")

    with pytest.raises(LookupError, match="not after snapshot 1"):
        stored.commit(
            batch(table, [change(2, 2, Operation.INSERT, 20)]).append_column(
                ROW_KIND_COLUMN, pa.array(["+I"], pa.string())
            ),
            {},
            None,
            refuse,
        )

    # pypaimon retries what fails in a commit, ten times over about ten seconds: not this
    assert asked == [1]
    assert [snapshot.snapshot_id for snapshot in stored.snapshots()] == [1]
    assert state(paimon) == {1: 10}


def test_with_deletes_kept_a_deleted_row_stays_marked_until_its_key_comes_back(
    paimon: PaimonCatalog,
) -> None:
    table = open_paimon_changelog(paimon, IDENTIFIER, DATA, ["id"], [], {}, keep_deletes=True)
    table.commit(
        batch(table, [change(1, 1, Operation.INSERT, 10), change(2, 2, Operation.INSERT, 20)]),
        progress_at(1),
    )
    table.commit(batch(table, [change(3, 1, Operation.DELETE, 10)]), progress_at(2))
    stored = paimon.load_table(IDENTIFIER)
    assert stored is not None

    def rows() -> list[tuple[int, int | None, str, bool]]:
        read = stored.read(["id", "qty", "_tm_op", "_tm_deleted"]).to_pylist()
        return sorted((r["id"], r["qty"], r["_tm_op"], r["_tm_deleted"]) for r in read)

    assert rows() == [(1, 10, "d", True), (2, 20, "c", False)]
    table.commit(batch(table, [change(4, 1, Operation.INSERT, 11)]), progress_at(3))
    assert rows() == [(1, 11, "c", False), (2, 20, "c", False)]
    assert (
        "_tm_deleted"
        not in open_paimon_changelog(paimon, IDENTIFIER, DATA, ["id"], [], {}).schema.names
    )  # ingest's rows do not carry it


def test_a_key_inserted_and_deleted_in_a_tables_only_commit_is_gone(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    """pypaimon counted no deletes in its files' metadata, so a bucket whose only file held a
    delete was read without merging, and the deleted row came back."""
    table = open_table()
    inserted_and_deleted = [
        change(1, 1, Operation.INSERT, 10),
        change(2, 2, Operation.INSERT, 20),
        change(3, 2, Operation.DELETE, 20),
    ]
    table.commit(batch(table, inserted_and_deleted), progress_at(1))

    assert state(paimon) == {1: 10}


def test_a_null_in_a_key_column_stops_the_commit_with_the_fix(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    keyless = change(1, 1, Operation.INSERT, 10) | {"id": None}

    with pytest.raises(ConfigError, match="NULL in key column 'id'.*unique-key"):
        table.commit(batch(table, [keyless]), progress_at(1))

    stored = paimon.load_table(IDENTIFIER)
    assert stored is not None and not stored.has_snapshots()


def amounts(paimon: PaimonCatalog, column: str) -> dict[int, int | None]:
    table = paimon.load_table(IDENTIFIER)
    assert table is not None
    return {row["id"]: row[column] for row in table.read(["id", column]).to_pylist()}


def test_a_renamed_column_keeps_its_values_and_takes_rows_still_under_the_old_name(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    table.commit(batch(table, [change(1, 1, Operation.INSERT, 10)]), progress_at(1))

    table.evolve([pa.field("amount", pa.int64())], [], {}, renamed={"qty": "amount"})
    # rows of the structure before the rename: buffered when it came, or read again after a
    # restart (the table renamed already, the rows' position not committed yet)
    before = [change(2, 2, Operation.INSERT, 20)]
    after = {**change(3, 3, Operation.INSERT), "amount": 30}
    table.commit(pa.Table.from_pylist([*before, after], schema=table.schema), progress_at(2))

    reopened = open_table()  # a restart: the old name is still known
    assert "qty" in reopened.schema.names and "qty" not in reopened.data_schema().names
    reopened.commit(batch(reopened, [change(4, 4, Operation.INSERT, 40)]), progress_at(3))
    assert amounts(paimon, "amount") == {1: 10, 2: 20, 3: 30, 4: 40}
    stored = paimon.load_table(IDENTIFIER)
    assert stored is not None and "qty" not in stored.arrow_schema().names


def test_a_rename_known_after_its_new_column_was_added_renames_over_it(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    """Ingest started after the ALTER: it added the new name, then read the ALTER."""
    table = open_table()
    table.commit(batch(table, [change(1, 1, Operation.INSERT, 10)]), progress_at(1))
    table.evolve([pa.field("units", pa.int64())], [], {})

    table.evolve([], [], {}, renamed={"qty": "units"})
    table.evolve([pa.field("total", pa.int64())], [], {}, renamed={"units": "total"})

    assert amounts(paimon, "total") == {1: 10}
    rows = [{**change(2, 2, Operation.INSERT), "qty": 20}, {**change(3, 3, Operation.INSERT)}]
    rows[1]["units"] = 30
    table.commit(pa.Table.from_pylist(rows, schema=table.schema), progress_at(2))
    assert amounts(paimon, "total") == {1: 10, 2: 20, 3: 30}


def test_a_rename_to_a_type_the_column_cannot_hold_adds_the_new_name(
    open_table: Open, paimon: PaimonCatalog, caplog: pytest.LogCaptureFixture
) -> None:
    table = open_table()
    table.commit(batch(table, [change(1, 1, Operation.INSERT, 10)]), progress_at(1))

    table.evolve([pa.field("label", pa.string())], [], {}, renamed={"qty": "label"})

    assert table.data_schema().names == ["id", "qty", "label"]
    assert "qty renamed to label changed its type from int64 to string" in caplog.text


def test_a_dropped_column_is_dropped_and_a_key_column_never_is(
    open_table: Open, paimon: PaimonCatalog
) -> None:
    table = open_table()
    table.commit(batch(table, [change(1, 1, Operation.INSERT, 10)]), progress_at(1))

    table.evolve([], [], {}, dropped=["qty", "id"])

    assert table.data_schema().names == ["id"]
    # a row of the structure before the drop, read again after a restart: the value goes
    table.commit(batch(table, [change(2, 2, Operation.INSERT)]), progress_at(2))
    assert amounts(paimon, "id") == {1: 1, 2: 2}


def test_a_new_column_taking_a_renamed_columns_old_name_stops_with_the_fix(
    open_table: Open,
) -> None:
    table = open_table()
    table.evolve([pa.field("amount", pa.int64())], [], {}, renamed={"qty": "amount"})

    with pytest.raises(SchemaChangeStopError, match="a column qty is added, and qty is the old"):
        table.evolve([pa.field("qty", pa.int64())], [], {})
    assert table.data_schema().names == ["id", "amount"]  # nothing changed


def test_a_renamed_key_column_is_a_new_column_as_paimon_keeps_key_names(
    open_table: Open, caplog: pytest.LogCaptureFixture
) -> None:
    table = open_table()

    table.evolve([pa.field("order_id", pa.int64())], [], {}, renamed={"id": "order_id"})

    assert table.data_schema().names == ["id", "qty", "order_id"]
    assert "id, a key or partition column, was renamed to order_id" in caplog.text
