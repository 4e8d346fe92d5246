"""What the stack's two source servers, MariaDB and MySQL, share: their accounts, their health
check, their endpoint."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import pymysql

from tidemark.stack.service import Service

ADMIN_USER, ADMIN_PASSWORD = "tidemark_admin", "tidemark-admin"
CDC_USER, CDC_PASSWORD = "tidemark_cdc", "tidemark-cdc"
SERVER_ID = 1


def grants(monitor_privilege: str) -> list[str]:
    """The statements that make the accounts; ``monitor_privilege`` is the server's name for
    the right to ask where the binlog stands."""
    return [
        f"CREATE USER IF NOT EXISTS '{ADMIN_USER}'@'%' IDENTIFIED BY '{ADMIN_PASSWORD}'",
        f"GRANT ALL PRIVILEGES ON *.* TO '{ADMIN_USER}'@'%' WITH GRANT OPTION",
        # Least privilege for change data capture: read rows and stream the binlog, nothing else.
        f"CREATE USER IF NOT EXISTS '{CDC_USER}'@'%' IDENTIFIED BY '{CDC_PASSWORD}'",
        f"GRANT SELECT, REPLICATION SLAVE, {monitor_privilege} ON *.* TO '{CDC_USER}'@'%'",
    ]


class SourceServer(Service):
    """A MariaDB or MySQL server of the stack, reached by its root account on its socket."""

    #: ``SourceEndpoint.flavor``
    flavor: str
    #: the statements that make its accounts (``grants``)
    grants: list[str]
    #: its socket's name in its data folder
    socket_file: str

    @property
    def socket(self) -> str:
        return str(self.data_dir / self.socket_file)

    @abstractmethod
    def _root_user(self) -> str:
        """The account the server lets in by its socket without a password."""

    def is_healthy(self) -> bool:
        try:
            with self._root_connection() as conn:
                conn.ping()
        except pymysql.MySQLError:
            return False
        return True

    def _after_first_health(self) -> None:
        with self._root_connection() as conn, conn.cursor() as cursor:
            for statement in self.grants:
                cursor.execute(statement)

    def endpoint(self) -> dict[str, Any]:
        return {
            "flavor": self.flavor,
            "host": self.settings.host,
            "port": self.port,
            "server_id": SERVER_ID,
            "admin_user": ADMIN_USER,
            "admin_password": ADMIN_PASSWORD,
            "cdc_user": CDC_USER,
            "cdc_password": CDC_PASSWORD,
        }

    def _root_connection(self) -> pymysql.connections.Connection[Any]:
        return pymysql.connect(
            unix_socket=self.socket, user=self._root_user(), connect_timeout=2, autocommit=True
        )
