"""Column renames read from ALTER TABLE statements: what tells a rename from a drop and an add."""

from __future__ import annotations

import pytest

from ingest.schema.ddl import renamed_columns, table_comment


@pytest.mark.parametrize(
    ("statement", "renamed"),
    [
        ("ALTER TABLE orders RENAME COLUMN qty TO quantity", {"qty": "quantity"}),
        ("alter table shop.orders rename column `qty` to `the qty`", {"qty": "the qty"}),
        (
            "ALTER TABLE orders CHANGE qty quantity INT NOT NULL, CHANGE COLUMN item name "
            "VARCHAR(40) DEFAULT 'a,b'",
            {"qty": "quantity", "item": "name"},
        ),
        ("ALTER TABLE orders CHANGE COLUMN IF EXISTS qty quantity BIGINT", {"qty": "quantity"}),
        # a CHANGE that keeps the name only changes the definition
        ("ALTER TABLE orders CHANGE qty qty BIGINT", {}),
        (
            "ALTER TABLE orders ADD COLUMN price DECIMAL(10, 2), RENAME COLUMN qty TO quantity",
            {"qty": "quantity"},
        ),
        ("ALTER TABLE orders /* RENAME COLUMN a TO b */ ADD COLUMN c INT", {}),
        ("ALTER TABLE orders RENAME TO orders_old", {}),
        ("ALTER TABLE orders ADD COLUMN rename_me INT", {}),
        ("RENAME TABLE orders TO orders_old", {}),
    ],
)
def test_renamed_columns(statement: str, renamed: dict[str, str]) -> None:
    assert renamed_columns(statement) == renamed


@pytest.mark.parametrize(
    ("statement", "comment"),
    [
        ("ALTER TABLE orders COMMENT = 'the orders'", "the orders"),
        ("ALTER TABLE orders COMMENT 'it''s'", "it's"),
        ("ALTER TABLE orders ENGINE=InnoDB COMMENT='a, b'", "a, b"),
        ("ALTER TABLE orders ADD COLUMN x INT, COMMENT = 'both'", "both"),
        # a column's comment is not the table's
        ("ALTER TABLE orders ADD COLUMN x INT COMMENT 'the column'", None),
        ("ALTER TABLE orders MODIFY qty BIGINT COMMENT 'wider'", None),
        ("ALTER TABLE orders ADD COLUMN note TEXT", None),
    ],
)
def test_table_comment(statement: str, comment: str | None) -> None:
    assert table_comment(statement) == comment
