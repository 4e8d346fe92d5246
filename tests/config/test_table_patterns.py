"""Flink CDC's two pattern syntaxes, case by case (docs/architecture.md#pipeline-file-facts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.config import load_pipeline
from tidemark.config.inventory import Column, PhysicalTable
from tidemark.config.patterns import (
    PatternError,
    Route,
    RouteMode,
    parse_selectors,
    route_regex,
    route_table,
    selectors_match,
)
from tidemark.config.plan import build_plan


@pytest.mark.parametrize(
    ("expression", "table", "matches"),
    [
        # an unescaped `.` separates database and table; `\.` is the regex "any character"
        ("shop.orders", "shop.orders", True),
        ("shop.orders", "shop.orders_1", False),  # the whole name must match
        ("shop.orders", "xshop.orders", False),
        (r"shop.orders_\.*", "shop.orders_2024", True),
        (r"shop.orders_\.*", "shop.orders_", True),
        # case-insensitive, for database and table
        ("Shop.Orders", "SHOP.orders", True),
        # comma-separated patterns, spaces trimmed
        ("shop.orders , crm.customers", "crm.customers", True),
        # `\,` is a literal comma inside a pattern's regex
        (r"shop.t{1\,2}", "shop.tt", True),
        # regular expressions in each part
        (r"shop_[0-9]+.orders_(eu|us)", "shop_12.orders_eu", True),
        (r"shop_[0-9]+.orders_(eu|us)", "shop_12.orders_asia", False),
        (r"\.*.\.*", "anything.at_all", True),
    ],
)
def test_table_selectors(expression: str, table: str, matches: bool) -> None:
    database, name = table.split(".")
    assert selectors_match(parse_selectors(expression), database, name) is matches


def test_an_unescaped_dot_in_a_regex_splits_it_as_upstream_does() -> None:
    # 'shop.orders_.*' is three parts for upstream: shop / orders_ / *
    with pytest.raises(PatternError, match="has 3 parts"):
        parse_selectors("shop.orders_.*")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "is empty: give at least one database.table pattern"),
        ("shop.a, ,shop.b", "has an empty pattern between commas: remove the extra comma"),
        ("orders", "pattern 'orders' has no database part"),
        ("shop.orders\\", "ends with a lone '\\': escape something, or remove it"),
        (
            "shop.(orders",
            "pattern 'shop.(orders' is not a valid regular expression: missing ), unterminated "
            "subpattern at position 0 of its table part '(orders'",
        ),
    ],
)
def test_bad_selectors(expression: str, message: str) -> None:
    with pytest.raises(PatternError) as caught:
        parse_selectors(expression)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("source_table", "regex"),
    [
        # TableIdRouter.convertTableListToRegExpPattern's own examples
        (r"db\.*.tbl\.*", r"db.*\.tbl.*"),
        ("a.b, c.d", r"a\.b|c\.d"),
        (r"mydb\.*", "mydb.*"),
    ],
)
def test_route_patterns_convert_like_upstream(source_table: str, regex: str) -> None:
    assert route_regex(source_table) == regex


@pytest.mark.parametrize(
    ("route", "table", "sink"),
    [
        (Route("mydb.orders", "ods.orders"), "mydb.orders", "ods.orders"),
        (Route("mydb.orders", "ods.orders"), "MyDb.orders", None),  # case-sensitive
        (Route(r"mydb\.*", "ods.all"), "mydb.anything", "ods.all"),
        (Route(r"src.\.*", "dst.<>", "<>"), "src.t1", "dst.t1"),
        (Route(r"db_(\.*).(\.*)_tbl", "s_$1.t_$2"), "db_foo.bar_tbl", "s_foo.t_bar"),
        (Route(r"db_(?<shard>\.*).t", "s.t_${shard}"), "db_7.t", "s.t_7"),
        (Route(r"db.t_(\.*)", r"s.t_\$1"), "db.t_9", "s.t_$1"),  # `\$` is a literal dollar
    ],
)
def test_routes(route: Route, table: str, sink: str | None) -> None:
    database, name = table.split(".")
    assert route.apply(database, name) == sink


def test_a_bad_route_pattern_is_quoted_as_written_and_placed_in_its_regex() -> None:
    # no backslash doubled; the position is in the Java regex, not in its Python translation
    with pytest.raises(PatternError) as caught:
        Route(r"db_(?<s>\.*).(?<s>x)", "s.t").apply("db_1", "x")
    assert str(caught.value).startswith(
        r"'db_(?<s>\.*).(?<s>x)' is not a valid regular expression: redefinition of group name "
        r"'s' as group 2; was group 1 at position 16 of 'db_(?<s>.*)\.(?<s>x)', the regex it "
        r"becomes; "
    )


def test_route_modes_and_unrouted_tables() -> None:
    routes = [Route(r"db.orders_\.*", "ods.orders"), Route(r"db\.*", "ods.all")]
    assert route_table(routes, RouteMode.ALL_MATCH, "db", "orders_1") == ["ods.orders", "ods.all"]
    assert route_table(routes, RouteMode.FIRST_MATCH, "db", "orders_1") == ["ods.orders"]
    assert route_table(routes, RouteMode.ALL_MATCH, "other", "t") == ["other.t"]


@pytest.mark.parametrize(
    ("expression", "shown"),
    [
        (r"hold_trade.\.*", r"hold_trade.\.*"),
        (r" shop.t{1\,2} ", r"shop.t{1\,2}"),  # trimmed, as upstream trims it
    ],
)
def test_a_selector_is_shown_as_the_user_wrote_it(expression: str, shown: str) -> None:
    (selector,) = parse_selectors(expression)
    assert str(selector) == shown


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (r"shop.orders_\..v2", r"pattern 'shop.orders_\..v2' has 3 parts"),
        (r"orders_\.*", r"pattern 'orders_\.*' has no database part"),
        # a bad regex: the pattern and the part at fault as written, the position in that part
        (
            r"shop.orders_\d+(",
            r"pattern 'shop.orders_\d+(' is not a valid regular expression: missing ), "
            r"unterminated subpattern at position 10 of its table part 'orders_\d+('",
        ),
        (
            r"shop_\d+[.orders",
            r"pattern 'shop_\d+[.orders' is not a valid regular expression: unterminated "
            r"character set at position 8 of its database part 'shop_\d+['",
        ),
        # `\.` and `\,` are one character of the regex but two of what was written
        (
            r"shop.t{1\,2}_\.*(",
            r"pattern 'shop.t{1\,2}_\.*(' is not a valid regular expression: missing ), "
            r"unterminated subpattern at position 11 of its table part 't{1\,2}_\.*('",
        ),
        # Java's `(?<name>` is `(?P<name>` for Python: the position is still in what was written
        (
            r"shop.(?<n>x)(?<n>y)",
            r"pattern 'shop.(?<n>x)(?<n>y)' is not a valid regular expression: redefinition of "
            r"group name 'n' as group 2; was group 1 at position 10 of its table part "
            r"'(?<n>x)(?<n>y)'",
        ),
        # the one pattern at fault, among others
        (
            r"shop.orders, crm.\w+[",
            r"pattern 'crm.\w+[' is not a valid regular expression: unterminated character set "
            r"at position 3 of its table part '\w+['",
        ),
    ],
)
def test_pattern_problems_quote_the_pattern_as_written(expression: str, message: str) -> None:
    with pytest.raises(PatternError) as caught:
        parse_selectors(expression)
    assert str(caught.value).startswith(message)


def test_plan_notes_show_a_pattern_that_matches_nothing_as_written(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        "source:\n  type: mysql\n  hostname: db\n  username: cdc\n  password: pw\n"
        "  tables: shop.orders, hold_trade.\\.*\n"
        "sink:\n  type: iceberg\n  catalog.properties.type: rest\n"
        "  catalog.properties.uri: http://catalog:8181\n"
    )
    orders = PhysicalTable("shop", "orders", (Column("id", "int", "int"),), ("id",))

    plan = build_plan(load_pipeline(path, {}), [orders])

    assert plan.notes == ("source.tables pattern 'hold_trade.\\.*' matches no table",)
