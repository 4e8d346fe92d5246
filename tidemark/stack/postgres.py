"""PostgreSQL from Debian's package, holding the Iceberg JDBC catalog of PyIceberg and Spark."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import psycopg2
from psycopg2 import sql

from tidemark.errors import TerminalError
from tidemark.stack.installer import ensure_debian_packages
from tidemark.stack.process import owned_pid, run, spawn_daemon
from tidemark.stack.service import Service
from tidemark.stack.settings import CATALOG_NAME

CATALOG_USER, CATALOG_PASSWORD = "tidemark", "tidemark"
CATALOG_DATABASE = "tidemark_catalog"
#: the REST catalog's own JdbcCatalog: apart from the JDBC catalog's, whose tables live on local
#: disk under the same catalog name
REST_CATALOG_DATABASE = "tidemark_rest_catalog"
# PostgreSQL refuses to run as root; as root the stack runs it as Debian's postgres user.
_SERVICE_USER = "postgres"


class Postgres(Service):
    name = "postgres"
    # SIGINT is PostgreSQL's "fast" shutdown; SIGTERM would wait for every client to leave.
    stop_signal = signal.SIGINT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cluster_dir = self.data_dir / "data"

    @property
    def port(self) -> int:
        return self.settings.postgres_port

    def install(self) -> None:
        ensure_debian_packages(["postgresql"], present=_bin_dir() is not None)
        self.settings.logs_dir.mkdir(parents=True, exist_ok=True)
        self.log.touch()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for path in (self.data_dir, self.log):
            _give_to_service_user(path)
        if (self.cluster_dir / "PG_VERSION").exists():
            return
        run(
            [
                str(_require_bin_dir() / "initdb"),
                "--pgdata",
                str(self.cluster_dir),
                "--username",
                "postgres",
                "--auth-local",
                "trust",  # the socket lives inside the 0700 data folder
                "--auth-host",
                "scram-sha-256",
                "--encoding",
                "UTF8",
                "--no-instructions",
            ],
            what="initialising the PostgreSQL data folder",
            user=_service_user(),
            cwd=self.data_dir,
        )

    def _launch(self) -> subprocess.Popen[bytes]:
        self._remove_stale_lock_files()
        return spawn_daemon(
            [
                str(_require_bin_dir() / "postgres"),
                "-D",
                str(self.cluster_dir),
                "-p",
                str(self.port),
                "-k",
                str(self.cluster_dir),
                "-c",
                f"listen_addresses={self.settings.host}",
                "-c",
                "max_connections=200",
                "-c",
                "shared_buffers=128MB",
                "-c",
                "fsync=on",
            ],
            log=self.log,
            pid_file=self.pid_file,
            cwd=self.data_dir,
            user=_service_user(),
        )

    def _remove_stale_lock_files(self) -> None:
        """After a crash or a reboot the lock files may name a pid that another process now
        has, and PostgreSQL would refuse to start; the stack knows its server is not running."""
        for lock in ("postmaster.pid", f".s.PGSQL.{self.port}.lock"):
            path = self.cluster_dir / lock
            if path.exists() and owned_pid(path, str(self.cluster_dir)) is None:
                path.unlink()

    def is_healthy(self) -> bool:
        try:
            conn = self.superuser()
        except psycopg2.Error:
            return False
        conn.close()
        return True

    def _after_first_health(self) -> None:
        conn = self.superuser()
        conn.autocommit = True  # CREATE DATABASE refuses to run inside a transaction
        try:
            cursor = conn.cursor()
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (CATALOG_USER,))
            if cursor.fetchone() is None:
                cursor.execute(
                    sql.SQL("CREATE ROLE {} LOGIN PASSWORD %s").format(
                        sql.Identifier(CATALOG_USER)
                    ),
                    (CATALOG_PASSWORD,),
                )
            for database in (CATALOG_DATABASE, REST_CATALOG_DATABASE):
                cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
                if cursor.fetchone() is None:
                    cursor.execute(
                        sql.SQL("CREATE DATABASE {} OWNER {}").format(
                            sql.Identifier(database), sql.Identifier(CATALOG_USER)
                        )
                    )
        finally:
            conn.close()

    def endpoint(self) -> dict[str, Any]:
        host, port = self.settings.host, self.port
        warehouse = self.settings.warehouse_dir.as_uri()
        return {
            "host": host,
            "port": port,
            "database": CATALOG_DATABASE,
            "user": CATALOG_USER,
            "password": CATALOG_PASSWORD,
            "catalog_name": CATALOG_NAME,
            "warehouse": warehouse,
            "sqlalchemy_uri": (
                f"postgresql+psycopg2://{CATALOG_USER}:{CATALOG_PASSWORD}"
                f"@{host}:{port}/{CATALOG_DATABASE}"
            ),
            "jdbc_uri": f"jdbc:postgresql://{host}:{port}/{CATALOG_DATABASE}",
        }

    def state_dsn(self) -> str:
        """A libpq connection string of the catalog's database, where a pipeline on the REST
        catalog keeps its scheduler's state (``tidemark.state-dsn``)."""
        endpoint = self.endpoint()
        return (
            f"host={endpoint['host']} port={endpoint['port']} dbname={endpoint['database']} "
            f"user={endpoint['user']} password={endpoint['password']}"
        )

    def superuser(self, database: str = "postgres") -> Any:
        """A connection as the cluster's superuser, over the socket in the data folder (tests
        make roles with it)."""
        return psycopg2.connect(
            host=str(self.cluster_dir),
            port=self.port,
            user="postgres",
            dbname=database,
            connect_timeout=2,
        )


def _bin_dir() -> Path | None:
    """The newest installed server's binaries: Debian keeps them out of PATH."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    return candidates[-1].parent if candidates else None


def _require_bin_dir() -> Path:
    bin_dir = _bin_dir()
    if bin_dir is None:
        raise TerminalError(
            "no PostgreSQL server under /usr/lib/postgresql; run 'tidemark stack up'"
        )
    return bin_dir


def _service_user() -> str | None:
    return _SERVICE_USER if os.geteuid() == 0 else None


def _give_to_service_user(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, user=_SERVICE_USER, group=_SERVICE_USER)
