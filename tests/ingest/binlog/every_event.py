"""A binlog stretch with every kind of event the readers meet, and events made comparable:
shared by the tests that read it two ways and compare (``test_row_decoders``,
``test_process``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from tests.ingest.schema.type_families import NON_STRICT, families_on
from tidemark.stack.endpoints import SourceFlavor

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]


def comparable(event: Any) -> Any:
    """The event without its structure callback (a new partial per event)."""
    fields = {field.name: getattr(event, field.name) for field in dataclasses.fields(event)}
    fields.pop("structure", None)
    return type(event).__name__, fields


def write_every_kind_of_event(connection: Connection, flavor: SourceFlavor) -> None:
    """Every type family ``flavor``'s server has, inserted, updated, altered and deleted; then
    bulk and single-row transactions on a plain table, across a new binlog file."""
    with connection.cursor() as cursor:
        cursor.execute(NON_STRICT)
        for number, family in enumerate(families_on(flavor)):
            table = f"t{number}"
            names = ", ".join(name for name, _ in family.column_definitions())
            cursor.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, {family.columns})")
            for statement in family.session:
                cursor.execute(statement)
            for key, values in enumerate(family.rows, 1):
                cursor.execute(f"INSERT INTO {table} VALUES ({key}, {values})")
            cursor.execute(f"INSERT INTO {table} SELECT id + 100, {names} FROM {table}")
            cursor.execute(f"UPDATE {table} SET id = id + 1000 WHERE id > 100")
            # a structure change in the middle: a new table map, a new layout
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN tm_extra VARCHAR(300) DEFAULT 'x'")
            cursor.execute(f"UPDATE {table} SET tm_extra = REPEAT('é', 290) WHERE id < 100")
            cursor.execute(f"DELETE FROM {table} WHERE id > 1000")
        # plain layouts (read natively), in a large transaction of bulk events
        cursor.execute(
            "CREATE TABLE plain (id BIGINT UNSIGNED PRIMARY KEY, k MEDIUMINT, f FLOAT, "
            "d DOUBLE, c CHAR(120) CHARACTER SET latin1, v VARCHAR(300), t TEXT, b VARBINARY(8))"
        )
        # the numbers 1 to 4000 (MySQL has no sequence engine's seq_1_to_4000)
        cursor.execute("CREATE TABLE seq (seq INT PRIMARY KEY)")
        cursor.executemany("INSERT INTO seq VALUES (%s)", [(n,) for n in range(1, 4001)])
        cursor.execute("BEGIN")
        cursor.execute(
            "INSERT INTO plain SELECT seq, -seq, seq / 3, seq / 7, REPEAT('é', seq % 120), "
            "REPEAT('ü', seq % 300), IF(seq % 5 = 0, NULL, REPEAT('t', seq)), "
            "UNHEX(HEX(seq)) FROM seq"
        )
        cursor.execute("UPDATE plain SET c = NULL, k = k * 2 WHERE id % 3 = 0")
        cursor.execute("DELETE FROM plain WHERE id % 7 = 0")
        cursor.execute("COMMIT")
        for key in range(1, 200):  # OLTP-shaped: one row a statement, one transaction each
            cursor.execute(f"UPDATE plain SET k = k + 1 WHERE id = {key}")
            if key == 100:  # a new binlog file: table ids are mapped again
                cursor.execute("FLUSH BINARY LOGS")
        cursor.execute("TRUNCATE TABLE plain")
