"""What a statement from the binlog does to ingest: followed, ignored, marked, or a stop."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ingest.binlog.events import StatementExecuted
from ingest.errors import SchemaChangeStopError
from ingest.schema.structure_changes import Truncation
from ingest.stream.statements import (
    CANNOT_FOLLOW,
    PROCEED,
    RESTART_TO_ONBOARD,
    Decision,
    Proceed,
    StatementPolicy,
    Stop,
    StopOnEveryChange,
    TruncatedTable,
)
from tidemark.source import BinlogPosition

AT = BinlogPosition("bin.000001", 210)
#: the onboarded tables and their sinks; the patterns select every table of shop
ONBOARDED = {("shop", "orders"): "lake.orders", ("shop", "users"): "lake.users"}


@dataclass
class Follower:
    """A ``StructureChanges`` that records what it is told and answers as configured."""

    refuse_alter: str | None = None
    stop_on_drop: bool = False
    truncation: Truncation = Truncation.MARK
    onboard_created: bool = False
    refuse_create: str | None = None
    told: list[tuple[str, ...]] = field(default_factory=list)

    def altered(self, database: str, table: str, statement: str) -> None:
        self.told.append(("altered", f"{database}.{table}", statement))
        if self.refuse_alter is not None:
            raise SchemaChangeStopError(self.refuse_alter)

    def dropped(self, database: str, table: str) -> bool:
        self.told.append(("dropped", f"{database}.{table}"))
        return self.stop_on_drop

    def truncated(self, database: str, table: str) -> Truncation:
        self.told.append(("truncated", f"{database}.{table}"))
        return self.truncation

    def created(self, database: str, table: str) -> bool:
        self.told.append(("created", f"{database}.{table}"))
        if self.refuse_create is not None:
            raise SchemaChangeStopError(self.refuse_create)
        return self.onboard_created


def policy(
    follower: Follower | None = None,
    *,
    follow_online: bool = False,
    onboarded: dict[tuple[str, str], str] | None = None,
) -> StatementPolicy:
    sinks = ONBOARDED if onboarded is None else onboarded
    return StatementPolicy(
        sink_of=lambda database, table: sinks.get((database, table)),
        captures=lambda database, table: database == "shop",
        structure=follower if follower is not None else StopOnEveryChange(),
        follow_online_schema_changes=follow_online,
    )


def decide(policy: StatementPolicy, statement: str, database: str = "shop") -> Decision:
    return policy.decide(StatementExecuted(database, statement, AT, 0))


# --- tables that are not onboarded ---------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE audit_log ADD COLUMN x INT",
        "DROP TABLE audit_log",
        "TRUNCATE TABLE audit_log",
        "CREATE INDEX i ON orders (x)",
        "RENAME TABLE staging.a TO staging.b",
        "RENAME TABLE staging.t TO staging._t_del, staging._t_gho TO staging.t",
    ],
)
def test_a_statement_that_changes_no_onboarded_table_is_none_of_ingests_business(
    statement: str,
) -> None:
    follower = Follower(stop_on_drop=True, truncation=Truncation.STOP)

    assert decide(policy(follower), statement) == PROCEED
    assert follower.told == []


# --- ALTER, DROP, TRUNCATE of an onboarded table -------------------------------------------


def test_an_alter_of_an_onboarded_table_is_told_to_the_follower_with_its_statement() -> None:
    follower = Follower()

    decision = decide(policy(follower), "ALTER TABLE orders ADD COLUMN x INT")

    assert decision == PROCEED
    assert follower.told == [("altered", "shop.orders", "ALTER TABLE orders ADD COLUMN x INT")]


def test_an_alter_the_follower_cannot_follow_stops_with_its_reason() -> None:
    follower = Follower(refuse_alter="column x of shop.orders changed type")

    decision = decide(policy(follower), "ALTER TABLE orders MODIFY x TEXT")

    assert decision == Stop("column x of shop.orders changed type", CANNOT_FOLLOW)


def test_without_a_follower_every_alter_of_an_onboarded_table_stops() -> None:
    decision = decide(policy(), "ALTER TABLE shop.users ADD COLUMN x INT", database="other")

    assert decision == Stop("the binlog changes the structure of shop.users", CANNOT_FOLLOW)


@pytest.mark.parametrize("stop_on_drop", [False, True])
def test_a_drop_stops_only_when_the_follower_says(stop_on_drop: bool) -> None:
    decision = decide(policy(Follower(stop_on_drop=stop_on_drop)), "DROP TABLE orders")

    if stop_on_drop:
        assert decision == Stop("onboarded table shop.orders was dropped", CANNOT_FOLLOW)
    else:
        assert decision == PROCEED


def test_a_statement_on_several_tables_stops_at_the_first_that_must_stop() -> None:
    follower = Follower(stop_on_drop=True)

    decision = decide(policy(follower), "DROP TABLE audit_log, users, orders")

    assert decision == Stop("onboarded table shop.users was dropped", CANNOT_FOLLOW)
    assert follower.told == [("dropped", "shop.users")]


def test_a_truncate_the_sink_records_is_marked_in_the_onboarded_tables_sink() -> None:
    decision = decide(policy(Follower(truncation=Truncation.MARK)), "TRUNCATE TABLE users")

    assert decision == Proceed((TruncatedTable("lake.users", "shop", "users"),))


def test_a_truncate_the_sink_leaves_out_keeps_the_rows_and_marks_nothing() -> None:
    decision = decide(policy(Follower(truncation=Truncation.KEEP_ROWS)), "TRUNCATE orders")

    assert decision == PROCEED


def test_a_truncate_under_behavior_exception_stops_saying_how_to_follow_truncations() -> None:
    decision = decide(policy(Follower(truncation=Truncation.STOP)), "TRUNCATE orders")

    assert decision == Stop(
        "onboarded table shop.orders was truncated and pipeline.schema.change.behavior is "
        "exception",
        "Set the behavior to try_evolve (or lenient with the sink's exclude.schema.changes "
        "listed) to empty the table's mirror rows, or re-bootstrap shop.orders",
    )


# --- CREATE TABLE --------------------------------------------------------------------------


def test_the_creation_of_an_onboarded_table_is_history() -> None:
    follower = Follower()

    assert decide(policy(follower), "CREATE TABLE orders (id INT PRIMARY KEY)") == PROCEED
    assert follower.told == []


def test_a_new_table_the_patterns_do_not_select_is_ignored() -> None:
    follower = Follower()

    decision = decide(policy(follower), "CREATE TABLE staging.payments (id INT PRIMARY KEY)")

    assert decision == PROCEED
    assert follower.told == []


def test_a_new_table_the_patterns_select_is_onboarded_by_the_follower_while_ingest_runs() -> None:
    follower = Follower(onboard_created=True)

    decision = decide(policy(follower), "CREATE TABLE payments (id INT PRIMARY KEY)")

    assert decision == PROCEED
    assert follower.told == [("created", "shop.payments")]


def test_a_new_table_the_follower_does_not_onboard_stops_for_a_restart_that_does() -> None:
    decision = decide(policy(Follower()), "CREATE TABLE payments (id INT PRIMARY KEY)")

    assert decision == Stop("new table shop.payments matches 'tables'", RESTART_TO_ONBOARD)


def test_a_new_table_the_follower_refuses_stops_saying_how_to_leave_it_out() -> None:
    follower = Follower(refuse_create="new table shop.payments cannot be onboarded: no key")

    decision = decide(policy(follower), "CREATE TABLE payments (note TEXT)")

    assert decision == Stop(
        "new table shop.payments cannot be onboarded: no key",
        "fix the table, or leave it out with tables.exclude",
    )


def test_the_helper_table_of_an_online_schema_change_is_not_a_new_table() -> None:
    follower = Follower()

    decision = decide(policy(follower), "CREATE TABLE _orders_gho LIKE orders")

    assert decision == PROCEED
    assert follower.told == []


# --- online schema changes (gh-ost, pt-osc) ------------------------------------------------

GH_OST_CUT_OVER = "RENAME TABLE orders TO _orders_del, _orders_gho TO orders"


def test_an_online_schema_change_stops_unless_following_them_is_enabled() -> None:
    follower = Follower()

    decision = decide(policy(follower), GH_OST_CUT_OVER)

    assert decision == Stop(
        "an online schema change (gh-ost or pt-osc) swapped a new shop.orders in",
        "set scan.parse.online.schema.changes.enabled: true to follow such changes",
    )
    assert follower.told == []


def test_a_followed_online_schema_change_is_an_alter_of_the_table_under_its_own_name() -> None:
    follower = Follower(stop_on_drop=True)

    decision = decide(policy(follower, follow_online=True), GH_OST_CUT_OVER)

    assert decision == PROCEED
    # no rename: the table keeps its name, and its old copy leaving is no drop
    assert follower.told == [("altered", "shop.orders", "")]


def test_an_online_schema_change_the_follower_cannot_follow_stops() -> None:
    follower = Follower(refuse_alter="column x of shop.orders changed type")

    decision = decide(policy(follower, follow_online=True), GH_OST_CUT_OVER)

    assert decision == Stop("column x of shop.orders changed type", CANNOT_FOLLOW)


# --- RENAME TABLE ----------------------------------------------------------------------------


@pytest.mark.parametrize("stop_on_drop", [False, True])
def test_a_table_renamed_out_of_the_selection_leaves_like_a_dropped_one(
    stop_on_drop: bool,
) -> None:
    follower = Follower(stop_on_drop=stop_on_drop)

    decision = decide(policy(follower), "RENAME TABLE orders TO archive.orders_2025")

    assert follower.told == [("dropped", "shop.orders")]
    if stop_on_drop:
        assert decision == Stop(
            "onboarded table shop.orders was renamed to archive.orders_2025, which 'tables' "
            "does not select: it leaves the pipeline",
            CANNOT_FOLLOW,
        )
    else:
        assert decision == PROCEED


def test_an_onboarded_table_renamed_to_a_selected_name_stops_for_a_bootstrap() -> None:
    decision = decide(policy(Follower()), "RENAME TABLE orders TO orders_2025")

    assert decision == Stop(
        "onboarded table shop.orders was renamed to shop.orders_2025, which 'tables' selects: "
        "its rows were never read under that name",
        "Start ingest again with scan.newly-added-table.enabled: true: it bootstraps "
        "shop.orders_2025, losing nothing; the changelog of shop.orders keeps its history",
    )


def test_a_table_renamed_into_the_selection_stops_for_a_bootstrap_rather_than_go_unread() -> None:
    decision = decide(policy(Follower()), "RENAME TABLE items TO shop.items", database="staging")

    assert decision == Stop(
        "staging.items was renamed to shop.items, which 'tables' selects: its rows were never "
        "read under that name",
        "Start ingest again with scan.newly-added-table.enabled: true: it bootstraps "
        "shop.items, losing nothing",
    )


def test_a_table_renamed_to_an_online_schema_change_helper_name_is_no_table_to_bootstrap() -> None:
    # gh-ost's two-step cut-over: the table leaves under a helper name, then the new one comes
    follower = Follower(stop_on_drop=False)

    decision = decide(policy(follower), "RENAME TABLE orders TO _orders_del")

    assert decision == PROCEED
    assert follower.told == [("dropped", "shop.orders")]


# --- what the policy asks, and what a stop says ----------------------------------------------


def test_each_statement_asks_anew_which_tables_are_onboarded() -> None:
    onboarded: dict[tuple[str, str], str] = {}
    statements = policy(Follower(truncation=Truncation.MARK), onboarded=onboarded)
    assert decide(statements, "TRUNCATE payments") == PROCEED

    onboarded[("shop", "payments")] = "lake.payments"  # onboarded while ingest runs

    assert decide(statements, "TRUNCATE payments") == Proceed(
        (TruncatedTable("lake.payments", "shop", "payments"),)
    )


def test_a_stop_names_where_and_what_the_statement_was_and_that_nothing_earlier_is_lost() -> None:
    event = StatementExecuted("shop", "  ALTER TABLE orders ADD x INT\n", AT, 0)

    error = Stop("the reason", "The fix.").error(event)

    assert str(error) == (
        "the reason at bin.000001:210: 'ALTER TABLE orders ADD x INT'. Ingest stopped before "
        "it, with everything earlier committed. The fix."
    )


def test_a_stop_quotes_at_most_the_first_300_characters_of_the_statement() -> None:
    statement = "ALTER TABLE orders COMMENT '" + "x" * 400 + "'"

    error = Stop("the reason", "The fix.").error(StatementExecuted("shop", statement, AT, 0))

    assert f"{statement[:300]!r}. Ingest stopped" in str(error)
