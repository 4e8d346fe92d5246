"""The demo shop in MariaDB: users sharded over databases and tables, orders and payments.

Every run starts from the same rows, created here with the admin account; the pipeline reads
them with its own least-privilege CDC account, as it would in production.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SHOP_DATABASE = "demo_shop"
USER_DATABASES = ("demo_users_0", "demo_users_1")
USER_TABLES_PER_DATABASE = 2
COUNTRIES = ("DE", "FR", "NL", "ES")


@dataclass(frozen=True)
class ShopSize:
    """How many rows the shop holds before the workload starts."""

    users: int = 2_000
    orders: int = 6_000


def user_shard(user_id: int) -> tuple[str, str]:
    """The (database, table) holding ``user_id``: ids are global, shards split them by modulo."""
    database = USER_DATABASES[user_id % len(USER_DATABASES)]
    table = f"users_{user_id // len(USER_DATABASES) % USER_TABLES_PER_DATABASE}"
    return database, table


def user_shards() -> Iterator[tuple[str, str]]:
    for database in USER_DATABASES:
        for index in range(USER_TABLES_PER_DATABASE):
            yield database, f"users_{index}"


def create_shop(conn: Any, size: ShopSize) -> None:
    """Drop and recreate the shop's databases with ``size`` existing rows (MariaDB's
    ``seq_1_to_N`` tables make the rows in SQL, without sending them over the wire)."""
    with conn.cursor() as cursor:
        for statement in _drop_statements():
            cursor.execute(statement)
        for statement in _schema_statements():
            cursor.execute(statement)
        for statement in _seed_statements(size):
            cursor.execute(statement)


def _drop_statements() -> list[str]:
    return [f"DROP DATABASE IF EXISTS `{name}`" for name in (SHOP_DATABASE, *USER_DATABASES)]


def _schema_statements() -> list[str]:
    statements = [f"CREATE DATABASE `{name}`" for name in (SHOP_DATABASE, *USER_DATABASES)]
    statements += [
        f"""CREATE TABLE `{database}`.`{table}` (
            id BIGINT PRIMARY KEY,
            name VARCHAR(64) NOT NULL,
            email VARCHAR(128) NOT NULL,
            country CHAR(2) NOT NULL,
            created_at DATETIME(3) NOT NULL,
            updated_at DATETIME(3) NOT NULL
        )"""
        for database, table in user_shards()
    ]
    statements += [
        f"""CREATE TABLE `{SHOP_DATABASE}`.orders (
            id BIGINT AUTO_INCREMENT PRIMARY KEY,
            user_id BIGINT NOT NULL,
            status VARCHAR(16) NOT NULL,
            amount DECIMAL(12, 2) NOT NULL,
            created_at DATETIME(3) NOT NULL,
            updated_at DATETIME(3) NOT NULL,
            KEY created_at (created_at)
        )""",
        f"""CREATE TABLE `{SHOP_DATABASE}`.payments (
            id BIGINT AUTO_INCREMENT PRIMARY KEY,
            order_id BIGINT NOT NULL,
            method ENUM('card', 'paypal', 'transfer') NOT NULL,
            amount DECIMAL(12, 2) NOT NULL,
            paid_at DATETIME(3) NOT NULL,
            UNIQUE KEY order_id (order_id)
        )""",
    ]
    return statements


def _seed_statements(size: ShopSize) -> list[str]:
    shards = len(USER_DATABASES)
    countries = ", ".join(f"'{country}'" for country in COUNTRIES)
    statements = [
        f"""INSERT INTO `{database}`.`{table}`
            SELECT seq, CONCAT('user ', seq), CONCAT('user', seq, '@example.com'),
                   ELT(1 + seq % {len(COUNTRIES)}, {countries}),
                   UTC_TIMESTAMP(3) - INTERVAL seq MINUTE, UTC_TIMESTAMP(3) - INTERVAL seq MINUTE
            FROM `{SHOP_DATABASE}`.seq_1_to_{size.users}
            WHERE seq % {shards} = {USER_DATABASES.index(database)}
              AND seq DIV {shards} % {USER_TABLES_PER_DATABASE} = {table.removeprefix("users_")}"""
        for database, table in user_shards()
    ]
    # orders of the last hours, one every few seconds, each a third new, paid or shipped
    statements += [
        f"""INSERT INTO `{SHOP_DATABASE}`.orders
            SELECT seq, 1 + seq * 7919 % {size.users}, ELT(1 + seq % 3, 'new', 'paid', 'shipped'),
                   5 + seq * 37 % 19500 / 100,
                   UTC_TIMESTAMP(3) - INTERVAL ({size.orders} - seq) * 3 SECOND,
                   UTC_TIMESTAMP(3) - INTERVAL ({size.orders} - seq) * 3 SECOND
            FROM `{SHOP_DATABASE}`.seq_1_to_{size.orders}""",
        f"""INSERT INTO `{SHOP_DATABASE}`.payments (order_id, method, amount, paid_at)
            SELECT id, ELT(1 + id % 3, 'card', 'paypal', 'transfer'), amount,
                   created_at + INTERVAL 1 SECOND
            FROM `{SHOP_DATABASE}`.orders WHERE status <> 'new'""",
    ]
    return statements
