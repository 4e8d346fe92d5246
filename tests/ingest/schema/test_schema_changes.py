"""Schema changes on the real server: the changelog follows the source under each behaviour,
rows are decoded with the structure they were written with, and nothing is decoded with a guess.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyiceberg.catalog import Catalog

from ingest.errors import SchemaChangeStopError
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from ingest.stream.runner import IngestRunner, StopWhen
from tests.ingest.bootstrap.test_bootstrap import Workload, merged, source_rows
from tests.ingest.pipelines import run_to_end
from tests.polling import wait_until
from tidemark.config import load_pipeline
from tidemark.contracts.schema_history import read_versions
from tidemark.source import current_position
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

SERVER_ID = 4601


def _runner(
    tmp_path: Path,
    endpoints: StackEndpoints,
    database: str,
    namespace: str,
    catalog: Catalog,
    *,
    behavior: str = "lenient",
    sink_options: str = "",
) -> IngestRunner:
    text = local_pipeline(
        endpoints, database=database, tables="orders", namespace=namespace, server_id=SERVER_ID
    ).replace(
        f"pipeline:\n  name: {namespace}\n",
        f"pipeline:\n  name: {namespace}\n  schema.change.behavior: {behavior}\n",
    )
    if sink_options:
        text = text.replace("sink:\n  type: iceberg\n", f"sink:\n  type: iceberg\n{sink_options}")
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return build_runner(load_pipeline(path), catalog, reports=None, settings=IngestSettings())


def _execute(connection: Connection, *statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def _changelog(catalog: Catalog, namespace: str) -> tuple[list[str], list[dict[str, Any]]]:
    table = catalog.load_table(f"{namespace}.orders_changelog")
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["_tm_order"])
    columns = [field.name for field in table.schema().fields if not field.name.startswith("_tm")]
    return columns, rows


def _data(rows: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(row[name] for name in names) for row in rows]


def test_a_column_added_while_streaming_is_added_to_the_changelog(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog)
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'after the change')",
        "UPDATE orders SET note = 'noted' WHERE id = 1",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    columns, rows = _changelog(catalog, namespace)
    assert columns == ["id", "item", "qty", "note"]
    assert _data(rows, "id", "note", "_tm_schema_version") == [
        (1, None, 1),
        (2, "after the change", 2),
        (1, "noted", 2),
    ]


def test_rows_from_before_a_change_made_while_ingest_was_stopped_keep_their_structure(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    _runner(tmp_path, endpoints, source_database, namespace, catalog)  # starts here
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'after the change')",
    )

    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog)
    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    columns, rows = _changelog(catalog, namespace)
    assert columns == ["id", "item", "qty", "note"]
    assert _data(rows, "id", "note", "_tm_schema_version") == [
        (1, None, 1),
        (2, "after the change", 2),
    ]


def test_lenient_keeps_dropped_and_renamed_columns_and_widens_types(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog)
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders DROP COLUMN item",
        "INSERT INTO orders VALUES (2, 2)",
        "ALTER TABLE orders RENAME COLUMN qty TO quantity",
        "INSERT INTO orders VALUES (3, 3)",
        "ALTER TABLE orders MODIFY id BIGINT",
        "INSERT INTO orders VALUES (4000000000, 4)",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    columns, rows = _changelog(catalog, namespace)
    assert columns == ["id", "item", "qty", "quantity"]
    assert _data(rows, "id", "item", "qty", "quantity") == [
        (1, "kettle", 1, None),
        (2, None, 2, None),
        (3, None, None, 3),
        (4_000_000_000, None, None, 4),
    ]
    table = catalog.load_table(f"{namespace}.orders_changelog")
    assert str(table.schema().find_field("id").field_type) == "long"


def test_a_type_change_iceberg_cannot_follow_stops_with_the_fix(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog)
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders MODIFY qty VARCHAR(10)",
        "INSERT INTO orders VALUES (2, 'teapot', 'two')",
    )
    end = current_position(endpoints.mariadb.cdc_source(SERVER_ID))

    with pytest.raises(SchemaChangeStopError) as stop:
        runner.run(StopWhen(until_position=end, max_seconds=60))

    assert f"{source_database}.orders.qty changed from int32 to string" in str(stop.value)
    assert "re-bootstrap the table" in str(stop.value)
    assert [row["id"] for row in _changelog(catalog, namespace)[1]] == [1]


def test_exception_behavior_stops_at_the_first_change(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog, behavior="exception")
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'after the change')",
    )
    end = current_position(endpoints.mariadb.cdc_source(SERVER_ID))

    with pytest.raises(SchemaChangeStopError) as stop:
        runner.run(StopWhen(until_position=end, max_seconds=60))

    assert "pipeline.schema.change.behavior is exception" in str(stop.value)
    assert "added note (string)" in str(stop.value)
    assert [row["id"] for row in _changelog(catalog, namespace)[1]] == [1]


@pytest.mark.parametrize(
    ("behavior", "sink_options"),
    [("ignore", ""), ("lenient", "  exclude.schema.changes: [add.column]\n")],
    ids=["ignore", "excluded"],
)
def test_ignored_changes_leave_the_changelog_as_it_was(
    behavior: str,
    sink_options: str,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(
        tmp_path,
        endpoints,
        source_database,
        namespace,
        catalog,
        behavior=behavior,
        sink_options=sink_options,
    )
    _execute(
        orders,
        "ALTER TABLE orders ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 2, 'not kept')",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    columns, rows = _changelog(catalog, namespace)
    assert columns == ["id", "item", "qty"]
    assert _data(rows, "id", "item") == [(2, "teapot")]


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
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
    behavior: str,
    sink_options: str,
    kept: list[tuple[object, str]],
) -> None:
    runner = _runner(
        tmp_path,
        endpoints,
        source_database,
        namespace,
        catalog,
        behavior=behavior,
        sink_options=sink_options,
    )
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "TRUNCATE TABLE orders",
        "INSERT INTO orders VALUES (2, 'after', 1)",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    rows = _changelog(catalog, namespace)[1]
    assert _data(rows, "id", "_tm_op") == kept
    for marker in (row for row in rows if row["_tm_op"] == "t"):
        assert (marker["_tm_source_db"], marker["_tm_source_table"]) == (source_database, "orders")
        assert marker["item"] is None


def test_a_truncate_stops_ingest_under_exception(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog, behavior="exception")
    _execute(orders, "INSERT INTO orders VALUES (1, 'kettle', 1)", "TRUNCATE TABLE orders")
    end = current_position(endpoints.mariadb.cdc_source(SERVER_ID))

    with pytest.raises(SchemaChangeStopError) as stop:
        runner.run(StopWhen(until_position=end, max_seconds=60))

    assert f"onboarded table {source_database}.orders was truncated" in str(stop.value)


def test_a_table_renamed_out_of_the_selection_leaves_the_pipeline_and_ingest_goes_on(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog)
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "RENAME TABLE orders TO orders_archive",
        "INSERT INTO orders_archive VALUES (2, 'after the rename', 1)",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    assert [row["id"] for row in _changelog(catalog, namespace)[1]] == [1]


def test_a_table_renamed_to_a_selected_name_stops_ingest_for_a_bootstrap(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner_from(
        _pipeline_text(endpoints, source_database, namespace, "orders\\w*"), tmp_path, catalog
    )
    _execute(
        orders, "INSERT INTO orders VALUES (1, 'kettle', 1)", "RENAME TABLE orders TO orders_2025"
    )
    end = current_position(endpoints.mariadb.cdc_source(SERVER_ID))

    with pytest.raises(SchemaChangeStopError) as stop:
        runner.run(StopWhen(until_position=end, max_seconds=60))

    assert (
        f"onboarded table {source_database}.orders was renamed to {source_database}.orders_2025, "
        "which 'tables' selects" in str(stop.value)
    )
    assert "scan.newly-added-table.enabled: true" in str(stop.value)
    assert [row["id"] for row in _changelog(catalog, namespace)[1]] == [1]


def _pipeline_text(
    endpoints: StackEndpoints, database: str, namespace: str, tables: str, source_options: str = ""
) -> str:
    return local_pipeline(
        endpoints,
        database=database,
        tables=tables,
        namespace=namespace,
        server_id=SERVER_ID,
        source_options=source_options,
    )


def _runner_from(text: str, tmp_path: Path, catalog: Catalog) -> IngestRunner:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return build_runner(load_pipeline(path), catalog, reports=None, settings=IngestSettings())


def test_a_table_created_while_streaming_is_onboarded_without_a_restart(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner_from(
        _pipeline_text(endpoints, source_database, namespace, "\\.*"), tmp_path, catalog
    )
    _execute(
        orders,
        "CREATE TABLE payments (id INT PRIMARY KEY, amount DECIMAL(10, 2))",
        "INSERT INTO payments VALUES (1, 9.99)",
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    payments = catalog.load_table(f"{namespace}.payments_changelog").scan().to_arrow()
    assert [(row["_tm_op"], row["id"]) for row in payments.to_pylist()] == [("c", 1)]
    assert [row["id"] for row in _changelog(catalog, namespace)[1]] == [1]


def test_shards_with_different_widths_merge_into_the_widest_type(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    tmp_path: Path,
) -> None:
    _execute(
        admin_connection,
        "CREATE TABLE orders_1 (id INT PRIMARY KEY, qty INT)",
        "CREATE TABLE orders_2 (id BIGINT PRIMARY KEY, qty BIGINT, note TEXT)",
    )
    text = _pipeline_text(endpoints, source_database, namespace, "orders_\\d").replace(
        f"  - source-table: {source_database}.\\.*\n    sink-table: {namespace}.<>\n"
        "    replace-symbol: <>\n",
        f"  - source-table: {source_database}.orders_\\.*\n    sink-table: {namespace}.orders\n",
    )
    runner = _runner_from(text, tmp_path, catalog)
    _execute(
        admin_connection,
        "INSERT INTO orders_1 VALUES (1, 1)",
        "INSERT INTO orders_2 VALUES (5000000000, 5000000000, 'big')",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    columns, rows = _changelog(catalog, namespace)
    assert columns == ["id", "qty", "note"]
    assert sorted(_data(rows, "id", "qty", "note")) == [
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
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    helper, retired = MIGRATIONS[tool]
    text = _pipeline_text(
        endpoints,
        source_database,
        namespace,
        "\\.*",
        source_options="scan.parse.online.schema.changes.enabled: true",
    )
    runner = _runner_from(text, tmp_path, catalog)
    _execute(
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

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    columns, rows = _changelog(catalog, namespace)
    assert columns == ["id", "item", "qty", "note"]
    assert _data(rows, "_tm_op", "id", "note") == [
        ("c", 1, None),
        ("c", 2, None),
        ("c", 3, "after the swap"),
    ]
    assert [identifier[-1] for identifier in catalog.list_tables(namespace)] == ["orders_changelog"]


def test_an_online_schema_change_stops_ingest_unless_it_is_enabled(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner_from(
        _pipeline_text(endpoints, source_database, namespace, "\\.*"), tmp_path, catalog
    )
    _execute(
        orders,
        "CREATE TABLE _orders_gho LIKE orders",
        "RENAME TABLE orders TO _orders_del, _orders_gho TO orders",
    )
    end = current_position(endpoints.mariadb.cdc_source(SERVER_ID))

    with pytest.raises(SchemaChangeStopError) as stop:
        runner.run(StopWhen(until_position=end, max_seconds=60))

    assert "set scan.parse.online.schema.changes.enabled: true" in str(stop.value)


def test_columns_change_while_a_workload_writes_and_the_changelog_still_merges_to_the_source(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog)
    _execute(orders, "INSERT INTO orders SELECT seq, CONCAT('item-', seq), 1 FROM seq_1_to_500")

    with Workload(endpoints, source_database, keys=500, seed=3) as workload:
        _execute(
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
    run_to_end(runner, endpoints, SERVER_ID, max_seconds=120)

    columns, rows = _changelog(catalog, namespace)
    assert merged(rows) == source_rows(orders)
    assert columns == ["id", "item", "qty", "note", "flag"]
    # how many versions rows were written with depends on the workload's timing; at least two
    assert min(r["_tm_schema_version"] for r in rows) < max(r["_tm_schema_version"] for r in rows)


def test_a_column_renamed_while_streaming_is_recorded_as_a_rename(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, endpoints, source_database, namespace, catalog)
    _execute(
        orders,
        "INSERT INTO orders VALUES (1, 'kettle', 1)",
        "ALTER TABLE orders RENAME COLUMN qty TO quantity, ADD COLUMN note TEXT",
        "INSERT INTO orders VALUES (2, 'teapot', 3, 'gift')",
    )

    run_to_end(runner, endpoints, SERVER_ID, max_seconds=60)

    table = catalog.load_table(f"{namespace}.orders_changelog")
    versions = read_versions(table.properties, f"{source_database}.orders")
    assert [v.renamed_from for v in versions] == [(), (("quantity", "qty"),)]
    columns, rows = _changelog(catalog, namespace)
    assert columns == ["id", "item", "qty", "quantity", "note"]  # the changelog keeps history
    assert _data(rows, "id", "qty", "quantity") == [(1, 1, None), (2, None, 3)]
