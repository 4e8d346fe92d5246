"""MariaDB from Debian's package, configured as a CDC source (docs/architecture.md#source-facts)."""

from __future__ import annotations

import shutil
import subprocess

from tidemark.stack.installer import ensure_debian_packages
from tidemark.stack.process import os_user, run, spawn_daemon
from tidemark.stack.source_server import SERVER_ID, SourceServer, grants

# Every setting a binlog reader relies on is spelled out, defaults included, so the stack
# documents what a production source needs.
_CONFIG = """\
[mariadbd]
datadir = {data}
socket = {socket}
pid-file = {home}/mariadb/mariadbd.pid
port = {port}
bind-address = {host}
skip-name-resolve
log-error = {log}
server_id = {server_id}
log_bin = {home}/mariadb/binlog/mariadb-bin
binlog_format = ROW
binlog_row_image = FULL
binlog_row_metadata = FULL
log_bin_compress = OFF
gtid_strict_mode = ON
binlog_expire_logs_seconds = 604800
max_binlog_size = 256M
character_set_server = utf8mb4
collation_server = utf8mb4_general_ci
innodb_buffer_pool_size = 256M
innodb_flush_log_at_trx_commit = 2
max_connections = 200
"""

_GRANTS = grants("BINLOG MONITOR")


class MariaDB(SourceServer):
    name = "mariadb"
    flavor = "mariadb"
    grants = _GRANTS
    socket_file = "mariadb.sock"

    @property
    def port(self) -> int:
        return self.settings.mariadb_port

    @property
    def config_file(self) -> str:
        return str(self.data_dir / "my.cnf")

    def install(self) -> None:
        # The server binaries alone: the full mariadb-server package would also start a system
        # MariaDB on port 3306 on machines where services start on install. mariadb-install-db
        # needs my_print_defaults, which only the client package ships.
        ensure_debian_packages(
            ["mariadb-server-core", "mariadb-client-core"],
            present=all(shutil.which(tool) for tool in ("mariadb-install-db", "my_print_defaults")),
        )
        data = self.data_dir / "data"
        (self.data_dir / "binlog").mkdir(parents=True, exist_ok=True)
        self.settings.logs_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "my.cnf").write_text(
            _CONFIG.format(
                data=data,
                socket=self.socket,
                home=self.settings.home,
                port=self.port,
                host=self.settings.host,
                log=self.log,
                server_id=SERVER_ID,
            )
        )
        if (data / "mysql").is_dir():
            return
        run(
            [
                "mariadb-install-db",
                f"--defaults-file={self.config_file}",
                f"--user={os_user()}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            what="initialising the MariaDB data folder",
        )

    def _launch(self) -> subprocess.Popen[bytes]:
        return spawn_daemon(
            ["mariadbd", f"--defaults-file={self.config_file}", f"--user={os_user()}"],
            log=self.log,
            pid_file=self.pid_file,
            cwd=self.data_dir,
        )

    def _root_user(self) -> str:
        # mariadb-install-db lets the OS user that owns the server in through the socket.
        return os_user()
