"""Source tables as information_schema describes them, read from each real source server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ingest.errors import SourceSchemaError
from ingest.schema.source_tables import enum_members, read_source_tables
from tidemark.contracts.source_tables import SourceColumn, UniqueKey
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


def test_columns_keys_and_unique_keys_are_read_in_source_order(
    source: SourceEndpoint, source_database: str, admin_connection: Connection
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute(
            r"""CREATE TABLE orders (
                region CHAR(2) CHARACTER SET latin1 NOT NULL,
                id BIGINT UNSIGNED NOT NULL,
                amount DECIMAL(12,3),
                flags BIT(5) DEFAULT b'101',  -- COLUMN_DEFAULT as the server writes it
                placed DATETIME(3),
                state ENUM('new', 'it''s', 'back\\slash', 'unsigned') NOT NULL DEFAULT 'it''s',
                code VARCHAR(8) COLLATE utf8mb4_bin,
                PRIMARY KEY (id, region),
                UNIQUE KEY by_code (code),
                UNIQUE KEY by_state (state, placed)
            )"""
        )
        cursor.execute("CREATE TABLE plain (note TEXT)")

    tables = read_source_tables(
        admin_connection, [(source_database, "orders"), (source_database, "plain")]
    )

    orders = tables[(source_database, "orders")]
    # MySQL 8.0.19 dropped integer display widths; its utf8mb4 collation is UCA 9.0.0's
    bigint, utf8mb4 = {
        "mariadb": ("bigint(20) unsigned", "utf8mb4_general_ci"),
        "mysql": ("bigint unsigned", "utf8mb4_0900_ai_ci"),
    }[source.flavor]
    assert (orders.database, orders.name, orders.table_id) == (
        source_database,
        "orders",
        f"{source_database}.orders",
    )
    assert orders.primary_key == ("id", "region")
    assert orders.unique_keys == (
        UniqueKey("by_code", ("code",)),
        UniqueKey("by_state", ("state", "placed")),
    )
    assert orders.columns == (
        SourceColumn("region", 1, "char", "char(2)", nullable=False, max_length=2,
                     octet_length=2, charset="latin1", collation="latin1_swedish_ci"),
        SourceColumn("id", 2, "bigint", bigint, nullable=False, unsigned=True,
                     precision=20, scale=0),
        SourceColumn("amount", 3, "decimal", "decimal(12,3)", nullable=True, precision=12,
                     scale=3, default="NULL"),
        SourceColumn("flags", 4, "bit", "bit(5)", nullable=True, precision=5,
                     default="b'101'"),
        SourceColumn("placed", 5, "datetime", "datetime(3)", nullable=True,
                     datetime_precision=3, default="NULL"),
        SourceColumn("state", 6, "enum", r"enum('new','it''s','back\\slash','unsigned')",
                     nullable=False, max_length=10, octet_length=40, charset="utf8mb4",
                     collation=utf8mb4,
                     members=("new", "it's", "back\\slash", "unsigned"), default="'it''s'"),
        SourceColumn("code", 7, "varchar", "varchar(8)", nullable=True, max_length=8,
                     octet_length=32, charset="utf8mb4", collation="utf8mb4_bin", default="NULL"),
    )  # fmt: skip
    assert orders.column("PLACED").name == "placed"  # column names ignore case
    plain = tables[(source_database, "plain")]
    assert (plain.primary_key, plain.unique_keys) == ((), ())


def test_a_table_that_does_not_exist_is_named_in_the_error(
    source_database: str, admin_connection: Connection
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE present (id INT)")

    with pytest.raises(SourceSchemaError) as caught:
        read_source_tables(
            admin_connection, [(source_database, "present"), (source_database, "gone")]
        )

    assert f"no table {source_database}.gone:" in str(caught.value)
    assert "present" not in str(caught.value)


@pytest.mark.parametrize(
    ("column_type", "members"),
    [
        ("enum('a','b')", ("a", "b")),
        ("set('x,y')", ("x,y",)),
        ("enum('it''s','')", ("it's", "")),
        (r"enum('back\\slash','q\'uote')", ("back\\slash", "q'uote")),
        ("enum('é','ü)')", ("é", "ü)")),
    ],
)
def test_enum_and_set_members_are_unescaped(column_type: str, members: tuple[str, ...]) -> None:
    assert enum_members(column_type) == members
