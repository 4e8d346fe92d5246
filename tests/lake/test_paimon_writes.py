"""pypaimon's per-row key fold and bucket hash, replaced by column-at-a-time code
(``tidemark.lake.paimon.columnar_writes``), give the tables pypaimon's own code gives.

Real Paimon tables on local disk; the expected state is computed here from the changes.
"""

from __future__ import annotations

import fcntl
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tidemark.lake.paimon import (
    PUBLISH_LOCK,
    PaimonCatalog,
    _fold_last_per_key,
    local_folder,
    open_paimon_catalog,
    publishing,
)

SCHEMA = pa.schema(
    [
        pa.field("region", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("amount", pa.decimal128(12, 3)),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("_tm_order", pa.int64(), nullable=False),
        pa.field("_tm_row_kind", pa.string(), nullable=False),
    ]
)


def _table(paimon: PaimonCatalog, buckets: int) -> None:
    options = {
        "bucket": str(buckets),
        "rowkind.field": "_tm_row_kind",
        "sequence.field": "_tm_order",
        "write-only": "true",
    }
    paimon.create_namespace_if_not_exists("shop")
    paimon.create_table("shop.orders", SCHEMA, ["region", "id"], [], options)


@pytest.mark.parametrize("buckets", [1, 3])
def test_random_changes_leave_each_keys_newest_change(tmp_path: Path, buckets: int) -> None:
    paimon = open_paimon_catalog({"warehouse": str(tmp_path)})
    _table(paimon, buckets)
    chance = random.Random(buckets)
    expected: dict[tuple[str, int], dict[str, Any]] = {}
    order = 0
    for _ in range(6):  # commits, each with repeated keys in no particular order
        rows: list[dict[str, Any]] = []
        for _ in range(400):
            order += 1
            key = (chance.choice("ab"), chance.randrange(60))
            deleted = chance.random() < 0.2
            row: dict[str, Any] = {
                "region": key[0],
                "id": key[1],
                "amount": Decimal(chance.randrange(10**6)).scaleb(-3),
                "at": chance.randrange(10**15),
                "_tm_order": order,
                "_tm_row_kind": "-D" if deleted else "+U",
            }
            rows.append(row)
        chance.shuffle(rows)
        for row in sorted(rows, key=lambda r: r["_tm_order"]):  # the truth: newest wins
            if row["_tm_row_kind"] == "-D":
                expected.pop((row["region"], row["id"]), None)
            else:
                expected[(row["region"], row["id"])] = row
        table = paimon.load_table("shop.orders")
        assert table is not None
        # in chunks, as ingest's batches come: pypaimon takes a file's key range from its first
        pieces = [
            pa.Table.from_pylist(rows[i : i + 100], schema=SCHEMA) for i in range(0, 400, 100)
        ]
        table.commit(pa.concat_tables(pieces), {}, None, lambda _: None)

    table = paimon.load_table("shop.orders")
    assert table is not None
    read = table.read().to_pylist()
    assert {(r["region"], r["id"]): r["_tm_order"] for r in read} == {
        key: row["_tm_order"] for key, row in expected.items()
    }
    by_key = {(r["region"], r["id"]): r for r in read}
    for key, row in expected.items():
        at = pa.scalar(row["at"], SCHEMA.field("at").type).as_py()
        assert (by_key[key]["amount"], by_key[key]["at"]) == (row["amount"], at)


def test_the_fold_keeps_the_last_row_of_each_run_of_equal_keys() -> None:
    data = pa.table(
        {
            "k1": ["a", "a", "a", "b", "b", "c"],
            "k2": [1, 1, 2, 2, 2, 2],
            "v": [1, 2, 3, 4, 5, 6],
        }
    )
    assert _fold_last_per_key(data, 2)["v"].to_pylist() == [2, 3, 5, 6]
    assert _fold_last_per_key(data, 1)["v"].to_pylist() == [3, 5, 6]
    assert _fold_last_per_key(data.slice(0, 1), 2)["v"].to_pylist() == [1]


def test_a_files_last_key_updated_alone_later_is_read_once(tmp_path: Path) -> None:
    """pypaimon takes a file's key range from the first record batch it is given: a fold that
    handed it two batches made the file's last key fall outside the range, and the key's later
    version was read beside it, not instead of it."""
    paimon = open_paimon_catalog({"warehouse": str(tmp_path)})
    _table(paimon, 1)

    def commit(keys: range, order: int) -> None:
        rows = [
            {"region": "a", "id": key, "amount": None, "at": None, "_tm_order": order + key}
            | {"_tm_row_kind": "+U"}
            for key in keys
        ]
        table = paimon.load_table("shop.orders")
        assert table is not None
        table.commit(pa.Table.from_pylist(rows, schema=SCHEMA), {}, None, lambda _: None)

    commit(range(1, 6), 0)
    commit(range(5, 6), 100)

    table = paimon.load_table("shop.orders")
    assert table is not None
    assert sorted(table.read(["id", "_tm_order"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": key, "_tm_order": 105 if key == 5 else key} for key in range(1, 6)
    ]


def test_a_table_being_published_is_locked_against_every_other_publisher(tmp_path: Path) -> None:
    """Ingest (pypaimon) and the maintenance pass (Paimon's Java code) publish snapshot N by a
    check, then a rename that would replace the other's: one lock across processes orders
    them. Another open of the lock file stands for another process."""
    lock = tmp_path / PUBLISH_LOCK

    def try_lock() -> bool:
        with lock.open("a") as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(other, fcntl.LOCK_UN)
            return True

    with publishing(f"file:{tmp_path}"):
        assert not try_lock()
    assert try_lock()
    assert local_folder("s3://lake/db.db/t") is None  # no rename there: see docs/paimon.md
    assert local_folder(f"file://{tmp_path}") == local_folder(str(tmp_path)) == tmp_path
