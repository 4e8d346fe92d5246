"""What evolve does to a mirror's columns, read from a changelog's schema history."""

from __future__ import annotations

from ingest.schema import SourceColumn, SourceTable
from ingest.schema_history import SchemaVersion, versions_property
from spark_jobs.mirror_columns import EarlierName, Lineage, MirrorColumns, mirror_columns


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
