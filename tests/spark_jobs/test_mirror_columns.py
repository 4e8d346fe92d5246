"""What evolve does to a mirror's columns, read from a changelog's schema history."""

from __future__ import annotations

import pytest

from spark_jobs.merge.columns import (
    AddedDefault,
    EarlierName,
    Lineage,
    MirrorColumns,
    default_value,
    mirror_columns,
)
from tidemark.contracts.schema_history import SchemaVersion, versions_property
from tidemark.contracts.source_tables import SourceColumn, SourceTable


def table(name: str, *columns: str) -> SourceTable:
    return SourceTable(
        "shop",
        name,
        tuple(
            SourceColumn(column, index, "int", "int(11)", True)
            for index, column in enumerate(columns, start=1)
        ),
        primary_key=("id",),
    )


def history(
    name: str, *versions: tuple[tuple[str, ...], tuple[tuple[str, str], ...]]
) -> dict[str, str]:
    return versions_property(
        f"shop.{name}",
        [
            SchemaVersion(number, f"bin.000001:{number}", table(name, *columns), renamed)
            for number, (columns, renamed) in enumerate(versions, start=1)
        ],
    )


def test_a_changelog_without_history_asks_nothing_of_the_mirror() -> None:
    assert mirror_columns({"format-version": "2"}, ("id",)) == MirrorColumns()


def test_a_column_no_source_table_has_any_more_is_dropped_but_never_the_key() -> None:
    properties = history("orders", (("id", "qty", "note"), ()), (("qty",), ()))

    assert mirror_columns(properties, ("id",)).dropped == {"note"}


def test_a_column_a_shard_still_has_stays() -> None:
    properties = {
        **history("orders_0", (("id", "qty", "note"), ()), (("id", "qty"), ())),
        **history("orders_1", (("id", "qty", "note"), ())),
    }

    assert mirror_columns(properties, ("id",)).dropped == frozenset()


def test_renames_chain_back_through_the_versions_and_are_renamed_in_place() -> None:
    properties = history(
        "orders",
        (("id", "qty"), ()),
        (("id", "amount"), (("amount", "qty"),)),
        (("id", "quantity"), (("quantity", "amount"),)),
    )

    found = mirror_columns(properties, ("id",))

    assert found.lineages == (
        Lineage(
            "quantity",
            (EarlierName("shop.orders", 2, "qty"), EarlierName("shop.orders", 3, "amount")),
        ),
    )
    assert found.dropped == {"qty", "amount"}
    # the mirror holds whichever earlier name it was last merged with
    assert found.renames(["id", "quantity"], ["id", "amount"]) == {"amount": "quantity"}
    assert found.renames(["id", "quantity"], ["id", "qty"]) == {"qty": "quantity"}
    assert found.renames(["id", "quantity"], ["id", "quantity"]) == {}


def test_a_rename_in_one_shard_keeps_the_old_column_the_other_shard_still_writes() -> None:
    properties = {
        **history("orders_0", (("id", "qty"), ()), (("id", "quantity"), (("quantity", "qty"),))),
        **history("orders_1", (("id", "qty"), ())),
    }

    found = mirror_columns(properties, ("id",))

    assert found.dropped == frozenset()
    assert found.renames(["id", "qty", "quantity"], ["id", "qty"]) == {}
    assert found.lineages[0].earlier == (EarlierName("shop.orders_0", 2, "qty"),)


@pytest.mark.parametrize(
    ("data_type", "default", "value"),
    [
        ("int", "3", "3"),
        ("decimal", "-1.50", "-1.50"),
        ("varchar", "'it''s'", "it's"),
        ("date", "'2026-01-01'", "2026-01-01"),
        ("varchar", "NULL", None),  # MariaDB's word for a nullable column's missing default
        ("varchar", None, None),
        ("timestamp", "current_timestamp()", None),  # one value per row: not filled
        ("datetime", "'2026-01-01 00:00:00'", None),  # time zones: not filled
        ("int", "(1 + 2)", None),
    ],
)
def test_only_constant_defaults_of_plain_types_are_filled(
    data_type: str, default: str | None, value: str | None
) -> None:
    column = SourceColumn("c", 1, data_type, data_type, True, default=default)

    assert default_value(column) == value


def test_a_column_added_with_a_default_fills_the_rows_from_before_its_version() -> None:
    def versions(*columns: SourceColumn) -> SchemaVersion:
        base = SourceColumn("id", 1, "int", "int(11)", False)
        number = len(columns) + 1
        return SchemaVersion(number, "x", SourceTable("shop", "orders", (base, *columns)))

    priority = SourceColumn("priority", 2, "int", "int(11)", False, default="3")
    properties = versions_property("shop.orders", [versions(), versions(priority)])

    assert mirror_columns(properties, ("id",)).defaults == (
        AddedDefault("shop.orders", 2, "priority", "3"),
    )
