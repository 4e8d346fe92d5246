"""The check the bootstrap and schema change tests make: the changelog, merged (latest change
per key by order, deletes applied), equals the source table; and a workload that keeps changing
the source meanwhile."""

from __future__ import annotations

import random
import threading
from typing import TYPE_CHECKING, Any

import pymysql
from pyiceberg.catalog import Catalog

from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

Row = dict[str, Any]


class Workload:
    """Random single-row inserts, updates (some moving a row to a new key) and deletes: in a
    background thread inside ``with``, or a step at a time."""

    def __init__(self, source: SourceEndpoint, database: str, keys: int, seed: int) -> None:
        self._connection = pymysql.connect(
            **source.admin_source().pymysql_settings(),
            database=database,
            autocommit=True,
        )
        self._random = random.Random(seed)
        self._keys = keys
        self._next_key = keys * 10
        self._stop = threading.Event()
        self.statements = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Workload:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.close()

    def close(self) -> None:
        self._connection.close()

    def step(self) -> None:
        key = self._random.randint(1, self._keys)
        choice = self._random.random()
        with self._connection.cursor() as cursor:
            if choice < 0.5:
                cursor.execute("UPDATE orders SET qty = qty + 1 WHERE id = %s", (key,))
            elif choice < 0.65:
                self._next_key += 1
                cursor.execute("UPDATE orders SET id = %s WHERE id = %s", (self._next_key, key))
            elif choice < 0.8:
                cursor.execute("DELETE FROM orders WHERE id = %s", (key,))
            else:  # re-inserts a deleted key, or does nothing
                cursor.execute(
                    "INSERT IGNORE INTO orders (id, item, qty) VALUES (%s, 'new', 1)", (key,)
                )
        self.statements += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.step()


def merged(rows: list[Row], key: str | tuple[str, ...] = "id") -> dict[Any, Row]:
    """The changelog applied in order: the latest image per key, deleted keys gone."""
    state: dict[Any, Row] = {}
    for row in sorted(rows, key=lambda r: r["_tm_order"]):
        if row["_tm_op"] == "d":
            state.pop(_key(row, key), None)
        else:
            state[_key(row, key)] = {k: v for k, v in row.items() if not k.startswith("_tm_")}
    return state


def source_rows(
    connection: Connection, table: str = "orders", key: str | tuple[str, ...] = "id"
) -> dict[Any, Row]:
    with connection.cursor(pymysql.cursors.DictCursor) as cursor:
        cursor.execute(f"SELECT * FROM {table}")
        return {_key(row, key): dict(row) for row in cursor.fetchall()}


def _key(row: Row, key: str | tuple[str, ...]) -> Any:
    return row[key] if isinstance(key, str) else tuple(row[name] for name in key)


def changelog(catalog: Catalog, namespace: str, table: str = "orders") -> list[Row]:
    return catalog.load_table(f"{namespace}.{table}_changelog").scan().to_arrow().to_pylist()
