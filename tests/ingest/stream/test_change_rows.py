"""A table's changelog rows between two commits: values kept as tuples, metadata once per run,
the same Arrow table as the rows as dicts would give."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from ingest.changelog.table import changelog_schema
from ingest.stream.change_rows import ChangeRows, Run, arrow_rows

SCHEMA = changelog_schema(pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string())]))
#: the same as an Iceberg table gives it (``Schema.as_arrow``): its text is large_string
ICEBERG_SCHEMA = pa.schema(
    [field.with_type(pa.large_string()) if field.type == pa.string() else field for field in SCHEMA]
)
SCHEMAS = pytest.mark.parametrize(
    "schema", [SCHEMA, ICEBERG_SCHEMA], ids=["string", "large_string"]
)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def run(operation: str, columns: tuple[str, ...] = ("id", "name"), version: int = 1) -> Run:
    return (
        columns,
        int(T0.timestamp() * 1000),
        "bin.000001:120",
        "shop",
        "orders",
        version,
        operation,
    )


def test_rows_of_one_run_share_its_metadata_and_take_consecutive_order_keys() -> None:
    inserts = run("c")
    changes = ChangeRows(first_order=41)
    changes.add_run([(1, "a"), (2, "b")], inserts)
    changes.append((3, "c"), inserts)

    assert changes.counts == [3]
    assert changes.rows == [
        {
            "id": key,
            "name": name,
            "_tm_event_time": T0,
            "_tm_position": "bin.000001:120",
            "_tm_source_db": "shop",
            "_tm_source_table": "orders",
            "_tm_schema_version": 1,
            "_tm_op": "c",
            "_tm_order": order,
        }
        for key, name, order in [(1, "a", 41), (2, "b", 42), (3, "c", 43)]
    ]


@SCHEMAS
def test_arrow_of_single_row_runs_equals_arrow_of_the_rows_as_dicts(schema: pa.Schema) -> None:
    changes = ChangeRows(first_order=7)
    for key in range(5):
        changes.append((key, f"n{key}"), run("u" if key % 2 else "c"))

    assert changes.to_arrow(schema).equals(arrow_rows(changes.rows, schema))
    assert changes.to_arrow(schema).column("_tm_order").to_pylist() == [7, 8, 9, 10, 11]


@SCHEMAS
def test_arrow_expands_runs_of_many_rows(schema: pa.Schema) -> None:
    changes = ChangeRows()
    changes.add_run([(1, "a"), (2, "b"), (3, "c")], run("c"))
    changes.add_run([(1, None)], run("d"))
    changes.add_run([(4, "d"), (5, "e")], run("c"))

    table = changes.to_arrow(schema)

    assert table.equals(arrow_rows(changes.rows, schema))
    assert table.column("_tm_op").to_pylist() == ["c", "c", "c", "d", "c", "c"]


@SCHEMAS
def test_metadata_that_varies_within_a_flush_is_kept_row_by_row(schema: pa.Schema) -> None:
    """Most flushes share one source table, schema version and binlog file; these do not:
    the binlog rotated, and the table's type changed without renaming a column."""
    changes = ChangeRows()
    for key, (file, offset, version) in enumerate(
        [("bin.000009", 4000, 1), ("bin.000010", 4, 1), ("bin.000010", 330, 2)]
    ):
        changes.append(
            (key, "x"),
            (
                ("id", "name"),
                0,
                f"{file}:{offset}",
                "shop",
                f"orders_{version}",
                version,
                "c",
            ),
        )

    table = changes.to_arrow(schema)

    assert table.equals(arrow_rows(changes.rows, schema))
    assert table.select(["_tm_position", "_tm_source_table", "_tm_schema_version"]).to_pylist() == [
        {
            "_tm_position": "bin.000009:4000",
            "_tm_source_table": "orders_1",
            "_tm_schema_version": 1,
        },
        {"_tm_position": "bin.000010:4", "_tm_source_table": "orders_1", "_tm_schema_version": 1},
        {"_tm_position": "bin.000010:330", "_tm_source_table": "orders_2", "_tm_schema_version": 2},
    ]


def test_rows_of_another_structure_have_nulls_for_the_columns_they_lack() -> None:
    """An older structure without ``name``, a newer one with a column the schema does not have
    yet, and a truncate marker, which has no values at all."""
    changes = ChangeRows()
    changes.append((1,), run("c", columns=("id",), version=1))
    changes.append((2, "b", 9), run("c", columns=("id", "name", "later"), version=2))
    changes.append((), run("t", columns=(), version=-1))

    table = changes.to_arrow(SCHEMA)

    assert table.select(["id", "name", "_tm_schema_version", "_tm_op"]).to_pylist() == [
        {"id": 1, "name": None, "_tm_schema_version": 1, "_tm_op": "c"},
        {"id": 2, "name": "b", "_tm_schema_version": 2, "_tm_op": "c"},
        {"id": None, "name": None, "_tm_schema_version": -1, "_tm_op": "t"},
    ]


def test_no_rows_make_an_empty_table_of_the_schema() -> None:
    table = ChangeRows().to_arrow(SCHEMA)

    assert table.num_rows == 0
    assert table.schema.equals(SCHEMA)


def test_extending_keeps_the_order_of_rows_and_runs() -> None:
    first, second = ChangeRows(first_order=1), ChangeRows()
    first.append((1, "a"), run("c"))
    second.add_run([(2, "b"), (3, "c")], run("u"))

    first.extend(second)

    assert [(row["id"], row["_tm_op"], row["_tm_order"]) for row in first.rows] == [
        (1, "c", 1),
        (2, "u", 2),
        (3, "u", 3),
    ]
