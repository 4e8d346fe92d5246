"""Schema changes on the real server: the changelog follows the source under each behaviour,
rows are decoded with the structure they were written with, and nothing is decoded with a guess.

Each test is given the test's database (most with an ``orders (id, item, qty)`` table) and a
``pipeline`` over it; the pipeline's first runner fixes where ingest starts, the test changes
the source, runs ingest to the source's end and reads the changelog.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from ingest.changelog.catalogs import IcebergSinkCatalog
from ingest.errors import SchemaChangeStopError
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from ingest.stream.runner import IngestRunner, StopWhen
from tests.ingest.changelog_checks import Workload, merged, source_rows
from tests.ingest.pipelines import run_to_end
from tests.ingest.source_rows import execute
from tidemark.config import load_pipeline
from tidemark.contracts.schema_history import read_versions
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

Row = dict[str, Any]

pytestmark = pytest.mark.every_source


@dataclass(frozen=True)
class SchemaChangePipeline:
    """A pipeline from the test's database on its source server into its namespace, with the
    test's server id."""

    source: SourceEndpoint
    endpoints: StackEndpoints
    database: str
    namespace: str
    catalog: Catalog
    path: Path
    server_id: int

    def runner(
        self,
        behavior: str = "lenient",
        *,
        tables: str = "orders",
        source_options: str = "",
        sink_options: str = "",
        into: str | None = None,
    ) -> IngestRunner:
        """The runner of the pipeline over ``tables`` under ``pipeline.schema.change.behavior``;
        the first one built fixes where ingest starts (latest-offset). ``source_options`` and
        ``sink_options`` are added to ``source:`` and ``sink:``; ``into`` routes the shards
        ``<into>_*`` to the one sink table ``<into>`` instead of each table to its own."""
        text = local_pipeline(
            self.source,
            self.endpoints.catalog,
            database=self.database,
            tables=tables,
            namespace=self.namespace,
            server_id=self.server_id,
            source_options=source_options,
            extra=f"  schema.change.behavior: {behavior}\n",  # in the pipeline: block
        )
        if sink_options:
            text = text.replace(
                "sink:\n  type: iceberg\n", f"sink:\n  type: iceberg\n{sink_options}"
            )
        if into is not None:
            text = text.replace(
                f"  - source-table: {self.database}.\\.*\n    sink-table: {self.namespace}.<>\n"
                "    replace-symbol: <>\n",
                f"  - source-table: {self.database}.{into}_\\.*\n"
                f"    sink-table: {self.namespace}.{into}\n",
            )
        self.path.write_text(text)
        config = load_pipeline(self.path)
        return build_runner(
            config, IcebergSinkCatalog(self.catalog), reports=None, settings=IngestSettings()
        )

    def run_to_end(self, runner: IngestRunner, max_seconds: float = 60) -> None:
        """Ingest everything the source has written so far."""
        run_to_end(runner, self.source, self.server_id, max_seconds)

    def stop_of(self, runner: IngestRunner) -> str:
        """Run ingest towards the source's end: the schema change stop it must meet instead,
        as the user reads it."""
        end = current_position(self.source.cdc_source(self.server_id))
        with pytest.raises(SchemaChangeStopError) as stop:
            runner.run(StopWhen(until_position=end, max_seconds=60))
        return str(stop.value)

    def changelog(self, table: str = "orders") -> tuple[list[str], list[Row]]:
        """The changelog's source columns (no ``_tm_`` ones) and its rows in order."""
        iceberg = self.catalog.load_table(f"{self.namespace}.{table}_changelog")
        rows = sorted(iceberg.scan().to_arrow().to_pylist(), key=lambda row: row["_tm_order"])
        fields = iceberg.schema().fields
        return [field.name for field in fields if not field.name.startswith("_tm")], rows

    def changelog_ids(self) -> list[Any]:
        return [row["id"] for row in self.changelog()[1]]


@pytest.fixture
def pipeline(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    tmp_path: Path,
    server_id: int,
) -> SchemaChangePipeline:
    return SchemaChangePipeline(
        source, endpoints, source_database, namespace, catalog, tmp_path / "p.yaml", server_id
    )


def values(rows: list[Row], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(row[name] for name in names) for row in rows]


def test_a_column_added_while_streaming_is_added_to_the_changelog(
    orders: Connection, pipeline: SchemaChangePipeline
) -> None:
    runner = pipeline.runner()
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'after the change')",
        "UPDATE orders SET note = 'noted' WHERE id = 1",
    )

    pipeline.run_to_end(runner)

    columns, rows = pipeline.changelog()
    assert columns == ["id", "item", "qty", "note"]
    assert values(rows, "id", "note", "_tm_schema_version") == [
        (1, None, 1),
        (2, "after the change", 2),
        (1, "noted", 2),
    ]


def test_rows_from_before_a_change_made_while_ingest_was_stopped_keep_their_structure(
    orders: Connection, pipeline: SchemaChangePipeline
) -> None:
    pipeline.runner()  # starts here
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'after the change')",
    )

    pipeline.run_to_end(pipeline.runner())

    columns, rows = pipeline.changelog()
    assert columns == ["id", "item", "qty", "note"]
    assert values(rows, "id", "note", "_tm_schema_version") == [
        (1, None, 1),
        (2, "after the change", 2),
    ]


def test_lenient_keeps_dropped_and_renamed_columns_and_widens_types(
    orders: Connection, pipeline: SchemaChangePipeline, catalog: Catalog, namespace: str
) -> None:
    runner = pipeline.runner("lenient")
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders DROP COLUMN item",
        "INSERT INTO orders VALUES (2, 2)",
        "ALTER TABLE orders RENAME COLUMN qty TO quantity",
        "INSERT INTO orders VALUES (3, 3)",
        "ALTER TABLE orders MODIFY id BIGINT",
        "INSERT INTO orders VALUES (4000000000, 4)",
    )

    pipeline.run_to_end(runner)

    columns, rows = pipeline.changelog()
    assert columns == ["id", "item", "qty", "quantity"]
    assert values(rows, "id", "item", "qty", "quantity") == [
        (1, "kettle", 1, None),
        (2, None, 2, None),
        (3, None, None, 3),
        (4_000_000_000, None, None, 4),
    ]
    table = catalog.load_table(f"{namespace}.orders_changelog")
    assert str(table.schema().find_field("id").field_type) == "long"


def test_a_type_change_iceberg_cannot_follow_stops_with_the_fix(
    orders: Connection, pipeline: SchemaChangePipeline, source_database: str
) -> None:
    runner = pipeline.runner()
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders MODIFY qty VARCHAR(10)",
        "INSERT INTO orders VALUES (2, 'teapot', 'two')",
    )

    stop = pipeline.stop_of(runner)

    assert f"{source_database}.orders.qty changed from int32 to string" in stop
    assert "re-bootstrap the table" in stop
    assert pipeline.changelog_ids() == [1]


def test_exception_behavior_stops_at_the_first_change(
    orders: Connection, pipeline: SchemaChangePipeline
) -> None:
    runner = pipeline.runner("exception")
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'after the change')",
    )

    stop = pipeline.stop_of(runner)

    assert "pipeline.schema.change.behavior is exception" in stop
    assert "added note (string)" in stop
    assert pipeline.changelog_ids() == [1]


@pytest.mark.parametrize(
    ("behavior", "sink_options"),
    [("ignore", ""), ("lenient", "  exclude.schema.changes: [add.column]\n")],
    ids=["ignore", "excluded"],
)
def test_ignored_changes_leave_the_changelog_as_it_was(
    behavior: str, sink_options: str, orders: Connection, pipeline: SchemaChangePipeline
) -> None:
    runner = pipeline.runner(behavior, sink_options=sink_options)
    execute(
        orders,
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'not kept')",
    )

    pipeline.run_to_end(runner)

    columns, rows = pipeline.changelog()
    assert columns == ["id", "item", "qty"]
    assert values(rows, "id", "item") == [(2, "teapot")]


@pytest.mark.parametrize(
    ("behavior", "sink_options", "kept"),
    [
        ("lenient", "", [(1, "c"), (2, "c")]),  # lenient leaves truncate.table out by default
        # any exclusion list takes the place of lenient's default one
        ("lenient", "  exclude.schema.changes: [drop.table]\n", [(1, "c"), (None, "t"), (2, "c")]),
        ("try_evolve", "", [(1, "c"), (None, "t"), (2, "c")]),
        ("ignore", "", [(1, "c"), (2, "c")]),
    ],
)
def test_a_truncate_is_marked_in_the_changelog_when_the_sink_takes_it(
    orders: Connection,
    pipeline: SchemaChangePipeline,
    source_database: str,
    behavior: str,
    sink_options: str,
    kept: list[tuple[object, str]],
) -> None:
    runner = pipeline.runner(behavior, sink_options=sink_options)
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "TRUNCATE TABLE orders",
        "INSERT INTO orders VALUES (2, 'after', 1)",
    )

    pipeline.run_to_end(runner)

    rows = pipeline.changelog()[1]
    assert values(rows, "id", "_tm_op") == kept
    for marker in (row for row in rows if row["_tm_op"] == "t"):
        assert (marker["_tm_source_db"], marker["_tm_source_table"]) == (source_database, "orders")
        assert marker["item"] is None


def test_a_truncate_stops_ingest_under_exception(
    orders: Connection, pipeline: SchemaChangePipeline, source_database: str
) -> None:
    runner = pipeline.runner("exception")
    execute(orders, "INSERT INTO orders VALUES (1, 'kettle', 1)", "TRUNCATE TABLE orders")

    stop = pipeline.stop_of(runner)

    assert f"onboarded table {source_database}.orders was truncated" in stop


def test_a_table_renamed_out_of_the_selection_leaves_the_pipeline_and_ingest_goes_on(
    orders: Connection, pipeline: SchemaChangePipeline
) -> None:
    runner = pipeline.runner()
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "RENAME TABLE orders TO orders_archive",
        "INSERT INTO orders_archive VALUES (2, 'after the rename', 1)",
    )

    pipeline.run_to_end(runner)

    assert pipeline.changelog_ids() == [1]


def test_a_table_renamed_to_a_selected_name_stops_ingest_for_a_bootstrap(
    orders: Connection, pipeline: SchemaChangePipeline, source_database: str
) -> None:
    runner = pipeline.runner(tables="orders\\w*")
    execute(
        orders, "INSERT INTO orders VALUES (1, 'kettle', 1)", "RENAME TABLE orders TO orders_2025"
    )

    stop = pipeline.stop_of(runner)

    assert (
        f"onboarded table {source_database}.orders was renamed to {source_database}.orders_2025, "
        "which 'tables' selects" in stop
    )
    assert "scan.newly-added-table.enabled: true" in stop
    assert pipeline.changelog_ids() == [1]


def test_a_table_created_while_streaming_is_onboarded_without_a_restart(
    orders: Connection, pipeline: SchemaChangePipeline, catalog: Catalog, namespace: str
) -> None:
    runner = pipeline.runner(tables="\\.*")
    execute(
        orders,
        "CREATE TABLE payments (id INT PRIMARY KEY, amount DECIMAL(10, 2))",
        "INSERT INTO payments VALUES (1, 9.99)",
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
    )

    pipeline.run_to_end(runner)

    payments = catalog.load_table(f"{namespace}.payments_changelog").scan().to_arrow()
    assert [(row["_tm_op"], row["id"]) for row in payments.to_pylist()] == [("c", 1)]
    assert pipeline.changelog_ids() == [1]


def test_shards_with_different_widths_merge_into_the_widest_type(
    admin_connection: Connection, pipeline: SchemaChangePipeline
) -> None:
    execute(
        admin_connection,
        "CREATE TABLE orders_1 (id INT PRIMARY KEY, qty INT)",
        "CREATE TABLE orders_2 (id BIGINT PRIMARY KEY, qty BIGINT, note TEXT)",
    )
    runner = pipeline.runner(tables="orders_\\d", into="orders")
    execute(
        admin_connection,
        "INSERT INTO orders_1 VALUES (1, 1)",
        "INSERT INTO orders_2 VALUES (5000000000, 5000000000, 'big')",
    )

    pipeline.run_to_end(runner)

    columns, rows = pipeline.changelog()
    assert columns == ["id", "qty", "note"]
    assert sorted(values(rows, "id", "qty", "note")) == [
        (1, 1, None),
        (5_000_000_000, 5_000_000_000, "big"),
    ]


MIGRATIONS = {
    "gh-ost": ("_orders_gho", "_orders_del"),
    "pt-osc": ("_orders_new", "_orders_old"),
}


@pytest.mark.parametrize("tool", sorted(MIGRATIONS))
def test_an_online_schema_change_is_applied_at_the_swap_without_the_helpers_rows(
    tool: str,
    orders: Connection,
    pipeline: SchemaChangePipeline,
    catalog: Catalog,
    namespace: str,
) -> None:
    helper, retired = MIGRATIONS[tool]
    runner = pipeline.runner(
        tables="\\.*", source_options="scan.parse.online.schema.changes.enabled: true"
    )
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        f"CREATE TABLE {helper} LIKE orders",
        f"ALTER TABLE {helper} ADD COLUMN note TEXT",
        f"INSERT INTO {helper} (id, item, qty) SELECT id, item, qty FROM orders",
        "INSERT INTO orders VALUES (2, 'teapot', 2)",  # written during the copy
        f"INSERT INTO {helper} (id, item, qty) VALUES (2, 'teapot', 2)",  # the tool's copy
        f"RENAME TABLE orders TO {retired}, {helper} TO orders",
        f"DROP TABLE {retired}",
        "INSERT INTO orders VALUES (3, 'cup', 3, 'after the swap')",
    )

    pipeline.run_to_end(runner)

    columns, rows = pipeline.changelog()
    assert columns == ["id", "item", "qty", "note"]
    assert values(rows, "_tm_op", "id", "note") == [
        ("c", 1, None),
        ("c", 2, None),
        ("c", 3, "after the swap"),
    ]
    assert [identifier[-1] for identifier in catalog.list_tables(namespace)] == ["orders_changelog"]


def test_an_online_schema_change_stops_ingest_unless_it_is_enabled(
    orders: Connection, pipeline: SchemaChangePipeline
) -> None:
    runner = pipeline.runner(tables="\\.*")
    execute(
        orders,
        "CREATE TABLE _orders_gho LIKE orders",
        "RENAME TABLE orders TO _orders_del, _orders_gho TO orders",
    )

    stop = pipeline.stop_of(runner)

    assert "set scan.parse.online.schema.changes.enabled: true" in stop


def test_columns_change_while_a_workload_writes_and_the_changelog_still_merges_to_the_source(
    orders: Connection,
    pipeline: SchemaChangePipeline,
    source: SourceEndpoint,
    source_database: str,
) -> None:
    runner = pipeline.runner()
    with orders.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO orders VALUES (%s, %s, 1)", [(key, f"item-{key}") for key in range(1, 501)]
        )

    with Workload(source, source_database, keys=500, seed=3) as workload:
        execute(
            orders,
            "ALTER TABLE orders ADD COLUMN note TEXT",
            "ALTER TABLE orders MODIFY qty BIGINT",
            "ALTER TABLE orders ADD COLUMN flag TINYINT",
        )
        statements_before = workload.statements
        wait_until(
            "200 workload statements after the ALTERs",
            lambda: workload.statements >= statements_before + 200,
            30,
        )
    pipeline.run_to_end(runner, max_seconds=120)

    columns, rows = pipeline.changelog()
    assert merged(rows) == source_rows(orders)
    assert columns == ["id", "item", "qty", "note", "flag"]
    # how many versions rows were written with depends on the workload's timing; at least two
    assert min(r["_tm_schema_version"] for r in rows) < max(r["_tm_schema_version"] for r in rows)


def test_a_column_renamed_while_streaming_is_recorded_as_a_rename(
    orders: Connection,
    pipeline: SchemaChangePipeline,
    catalog: Catalog,
    namespace: str,
    source_database: str,
) -> None:
    runner = pipeline.runner()
    execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders RENAME COLUMN qty TO quantity, ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 3, 'gift')",
    )

    pipeline.run_to_end(runner)

    table = catalog.load_table(f"{namespace}.orders_changelog")
    versions = read_versions(table.properties, f"{source_database}.orders")
    assert [v.renamed_from for v in versions] == [(), (("quantity", "qty"),)]
    columns, rows = pipeline.changelog()
    assert columns == ["id", "item", "qty", "quantity", "note"]  # the changelog keeps history
    assert values(rows, "id", "qty", "quantity") == [(1, 1, None), (2, None, 3)]
