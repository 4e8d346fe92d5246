"""The demo's shoppers: a steady stream of sign-ups, orders, payments, shipments, cancellations
and refunds against the shop, with one ``ALTER TABLE ... ADD COLUMN`` partway through.

Runs in a thread of its own on one admin connection; every business step is one transaction,
so the lake sees the same atomic steps the shop made.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tidemark.app.demo.shop import COUNTRIES, SHOP_DATABASE, user_shard, user_shards
from tidemark.source import SourceConnection

logger = logging.getLogger(__name__)

#: the column the workload adds to ``orders`` partway through, and fills from then on
ADDED_COLUMN = "coupon"


@dataclass(frozen=True)
class WorkloadSettings:
    transactions_per_second: float = 20.0
    #: seconds after the start at which ``orders`` gets its new column
    alter_after_seconds: float = 60.0
    seed: int = 20261122


@dataclass(frozen=True)
class WorkloadCounts:
    """What the workload has done so far."""

    transactions: int = 0
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    #: seconds after the start at which the ALTER ran; None until then
    altered_after: float | None = None


@dataclass
class _Shop:
    """The ids the workload may act on, as it left them."""

    next_user: int
    users: list[int]
    new_orders: list[int]
    paid_orders: list[int]
    altered: bool = False
    counts: WorkloadCounts = field(default_factory=WorkloadCounts)


class ShopWorkload:
    """Call ``run(stop)`` in a thread; ``counts`` and ``error`` may be read from any thread."""

    def __init__(
        self,
        admin: SourceConnection,
        settings: WorkloadSettings = WorkloadSettings(),  # noqa: B008 - frozen
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._admin = admin
        self._settings = settings
        self._clock = clock
        self._random = random.Random(settings.seed)
        self._counts = WorkloadCounts()
        self._lock = threading.Lock()
        self.error: BaseException | None = None

    @property
    def counts(self) -> WorkloadCounts:
        with self._lock:
            return self._counts

    def run(self, stop: threading.Event) -> None:
        """Write until ``stop`` is set; an error stops the workload and is kept in ``error``."""
        try:
            self._run(stop)
        except Exception as error:  # reported by the demo, which then fails
            logger.exception("The demo workload stopped")
            self.error = error

    def _run(self, stop: threading.Event) -> None:
        conn = self._admin.connect()
        try:
            shop = _load(conn)
            started = self._clock()
            pause = 1.0 / self._settings.transactions_per_second
            steps = self._steps()
            while not stop.is_set():
                elapsed = self._clock() - started
                if not shop.altered and elapsed >= self._settings.alter_after_seconds:
                    _add_column(conn)
                    shop.altered = True
                    self._record(shop, replace(shop.counts, altered_after=elapsed))
                step = self._random.choices(steps, weights=[w for _, w in _STEP_WEIGHTS])[0]
                counts = step(conn, shop)
                self._record(shop, counts)
                stop.wait(pause)  # paces the shoppers, not a wait for a condition
        finally:
            conn.close()

    def _record(self, shop: _Shop, counts: WorkloadCounts) -> None:
        shop.counts = counts
        with self._lock:
            self._counts = counts

    def _steps(self) -> list[Callable[[Any, _Shop], WorkloadCounts]]:
        actions = _Actions(self._random)
        return [getattr(actions, name) for name, _ in _STEP_WEIGHTS]


#: business steps and how often each happens
_STEP_WEIGHTS = (
    ("sign_up", 8),
    ("order", 40),
    ("pay", 25),
    ("ship", 12),
    ("cancel", 8),
    ("refund", 3),
    ("move", 4),
)


class _Actions:
    """One method per business step; each runs one transaction and returns the new counts."""

    def __init__(self, rng: random.Random) -> None:
        self._random = rng

    def sign_up(self, conn: Any, shop: _Shop) -> WorkloadCounts:
        user = shop.next_user
        database, table = user_shard(user)
        _transaction(
            conn,
            (
                f"INSERT INTO `{database}`.`{table}` VALUES "
                "(%s, %s, %s, %s, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))",
                (user, f"user {user}", f"user{user}@example.com", self._country()),
            ),
        )
        shop.next_user += 1
        shop.users.append(user)
        return _counted(shop.counts, inserts=1)

    def order(self, conn: Any, shop: _Shop) -> WorkloadCounts:
        columns, values = "user_id, status, amount, created_at, updated_at", "%s, 'new', %s, "
        values += "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3)"
        parameters: tuple[Any, ...] = (
            self._random.choice(shop.users),
            round(self._random.uniform(5, 200), 2),
        )
        if shop.altered:
            columns += f", {ADDED_COLUMN}"
            values += ", %s"
            parameters += (self._random.choice((None, None, "WELCOME10", "AUTUMN")),)
        with conn.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO `{SHOP_DATABASE}`.orders ({columns}) VALUES ({values})", parameters
            )
            shop.new_orders.append(cursor.lastrowid)
        return _counted(shop.counts, inserts=1)

    def pay(self, conn: Any, shop: _Shop) -> WorkloadCounts:
        if not shop.new_orders:
            return self.order(conn, shop)
        order = _take(self._random, shop.new_orders)
        _transaction(
            conn,
            (
                f"INSERT INTO `{SHOP_DATABASE}`.payments (order_id, method, amount, paid_at) "
                f"SELECT id, %s, amount, UTC_TIMESTAMP(3) FROM `{SHOP_DATABASE}`.orders "
                "WHERE id = %s",
                (self._random.choice(("card", "paypal", "transfer")), order),
            ),
            _set_status(order, "paid"),
        )
        shop.paid_orders.append(order)
        return _counted(shop.counts, inserts=1, updates=1)

    def ship(self, conn: Any, shop: _Shop) -> WorkloadCounts:
        if not shop.paid_orders:
            return self.order(conn, shop)
        _transaction(conn, _set_status(_take(self._random, shop.paid_orders), "shipped"))
        return _counted(shop.counts, updates=1)

    def cancel(self, conn: Any, shop: _Shop) -> WorkloadCounts:
        if not shop.new_orders:
            return self.order(conn, shop)
        order = _take(self._random, shop.new_orders)
        _transaction(conn, (f"DELETE FROM `{SHOP_DATABASE}`.orders WHERE id = %s", (order,)))
        return _counted(shop.counts, deletes=1)

    def refund(self, conn: Any, shop: _Shop) -> WorkloadCounts:
        if not shop.paid_orders:
            return self.order(conn, shop)
        order = _take(self._random, shop.paid_orders)
        _transaction(
            conn,
            (f"DELETE FROM `{SHOP_DATABASE}`.payments WHERE order_id = %s", (order,)),
            _set_status(order, "refunded"),
        )
        return _counted(shop.counts, updates=1, deletes=1)

    def move(self, conn: Any, shop: _Shop) -> WorkloadCounts:
        user = self._random.choice(shop.users)
        database, table = user_shard(user)
        _transaction(
            conn,
            (
                f"UPDATE `{database}`.`{table}` SET country = %s, updated_at = UTC_TIMESTAMP(3) "
                "WHERE id = %s",
                (self._country(), user),
            ),
        )
        return _counted(shop.counts, updates=1)

    def _country(self) -> str:
        return self._random.choice(COUNTRIES)


def _load(conn: Any) -> _Shop:
    """The ids already in the shop (``create_shop``'s rows, or an earlier workload's)."""
    with conn.cursor() as cursor:
        cursor.execute(f"SELECT id, status FROM `{SHOP_DATABASE}`.orders")
        orders = cursor.fetchall()
        highest = 0
        for database, table in user_shards():
            cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM `{database}`.`{table}`")
            (shard_highest,) = cursor.fetchone()
            highest = max(highest, int(shard_highest))
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = 'orders' AND column_name = %s",
            (SHOP_DATABASE, ADDED_COLUMN),
        )
        (altered,) = cursor.fetchone()
    users = list(range(1, highest + 1))
    return _Shop(
        next_user=len(users) + 1,
        users=users,
        new_orders=[order for order, status in orders if status == "new"],
        paid_orders=[order for order, status in orders if status == "paid"],
        altered=bool(altered),
    )


def _add_column(conn: Any) -> None:
    logger.info("ALTER TABLE %s.orders ADD COLUMN %s", SHOP_DATABASE, ADDED_COLUMN)
    with conn.cursor() as cursor:
        cursor.execute(
            f"ALTER TABLE `{SHOP_DATABASE}`.orders ADD COLUMN {ADDED_COLUMN} VARCHAR(16) NULL"
        )


def _set_status(order: int, status: str) -> tuple[str, tuple[Any, ...]]:
    return (
        f"UPDATE `{SHOP_DATABASE}`.orders SET status = %s, updated_at = UTC_TIMESTAMP(3) "
        "WHERE id = %s",
        (status, order),
    )


def _transaction(conn: Any, *statements: tuple[str, tuple[Any, ...]]) -> None:
    conn.begin()
    try:
        with conn.cursor() as cursor:
            for statement, parameters in statements:
                cursor.execute(statement, parameters)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def _take(rng: random.Random, ids: list[int]) -> int:
    """Remove and return a random id: swap it with the last, so removal is O(1)."""
    index = rng.randrange(len(ids))
    ids[index], ids[-1] = ids[-1], ids[index]
    return ids.pop()


def _counted(
    counts: WorkloadCounts, inserts: int = 0, updates: int = 0, deletes: int = 0
) -> WorkloadCounts:
    return replace(
        counts,
        transactions=counts.transactions + 1,
        inserts=counts.inserts + inserts,
        updates=counts.updates + updates,
        deletes=counts.deletes + deletes,
    )
