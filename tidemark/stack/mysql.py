"""MySQL 9.x from Debian sid, configured as a CDC source (docs/architecture.md#source-facts).

Debian has no MySQL 8.x in any suite, and sid's ``mysql-server-core`` needs a newer C library
than a stable host has. So the stack builds a minimal sid system once with ``debootstrap``
(``MySQLSystem``: about 640 MB, under a minute on a fast mirror) and runs sid's ``mysqld``
through sid's own dynamic loader and libraries. No chroot: the data folder, socket and logs
stay in the stack's home like every other service's, and one built system serves every stack
on the machine.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

from tidemark.errors import TerminalError, TidemarkError
from tidemark.stack.installer import ensure_debian_packages
from tidemark.stack.process import os_user, run, spawn_daemon
from tidemark.stack.settings import StackSettings
from tidemark.stack.source_server import CDC_USER, SERVER_ID, SourceServer, grants

logger = logging.getLogger(__name__)

#: what debootstrap installs into the system: the server, and the client tools for a human
PACKAGES = ("mysql-server-core", "mysql-client-core")
_LIBRARY_PATH = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")

# Every setting a binlog reader relies on is spelled out, defaults included, so the stack
# documents what a production source needs. Paths are the system's own where mysqld looks
# for its files relative to a /usr it does not live in.
_CONFIG = """\
[mysqld]
basedir = {system}/usr
lc_messages_dir = {system}/usr/share/mysql
character_sets_dir = {system}/usr/share/mysql/charsets
plugin_dir = {system}/usr/lib/mysql/plugin
datadir = {data}
socket = {socket}
pid_file = {home}/mysql/mysql.pid
port = {port}
bind_address = {host}
mysqlx = OFF
secure_file_priv = NULL
skip_name_resolve = ON
server_id = {server_id}
log_bin = {home}/mysql/binlog/mysql-bin
binlog_format = ROW
binlog_row_image = FULL
# binlog_row_value_options stays empty: PARTIAL_JSON updates carry no full after image
binlog_row_metadata = FULL
binlog_transaction_compression = OFF
gtid_mode = ON
enforce_gtid_consistency = ON
binlog_expire_logs_seconds = 604800
max_binlog_size = 256M
character_set_server = utf8mb4
collation_server = utf8mb4_0900_ai_ci
innodb_buffer_pool_size = 256M
# a test stack: commits need not reach the disk before they are acknowledged
innodb_flush_log_at_trx_commit = 2
sync_binlog = 0
max_connections = 200
"""

# BACKUP_ADMIN: the bootstrap's low watermark (performance_schema.log_status)
_GRANTS = [
    *grants("REPLICATION CLIENT"),
    f"GRANT BACKUP_ADMIN ON *.* TO '{CDC_USER}'@'%'",
]


class MySQLSystem:
    """The Debian sid system ``mysqld`` runs from, built once and kept in the stack's home."""

    def __init__(self, settings: StackSettings) -> None:
        self.root = settings.mysql_system_dir
        self.mirror = settings.debian_mirror

    @property
    def mysqld(self) -> Path:
        return self.root / "usr" / "sbin" / "mysqld"

    def command(self, program: Path, *arguments: str) -> list[str]:
        """``program`` of the system run on this host with the system's loader and libraries."""
        library_path = ":".join(str(self.root / part) for part in _LIBRARY_PATH)
        loader = self.root / "lib64" / "ld-linux-x86-64.so.2"
        return [str(loader), "--library-path", library_path, str(program), *arguments]

    def ensure_built(self) -> None:
        """Build the system unless a complete one is there; a build cut short starts over."""
        if self.mysqld.exists():
            return
        if os.geteuid() != 0:
            raise TerminalError(
                f"the stack's MySQL server is built from Debian sid with debootstrap, which "
                f"needs root, and {self.root} holds no built system yet: run 'tidemark stack "
                "up' as root once (the build is kept and later runs need no root)"
            )
        ensure_debian_packages(["debootstrap"], present=shutil.which("debootstrap") is not None)
        partial = self.root.with_name(self.root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        self.root.parent.mkdir(parents=True, exist_ok=True)
        logger.info("Building MySQL's Debian sid system in %s from %s", self.root, self.mirror)
        try:
            run(
                [
                    "debootstrap",
                    "--variant=minbase",
                    f"--include={','.join(PACKAGES)}",
                    "sid",
                    str(partial),
                    self.mirror,
                ],
                what="building the MySQL server's Debian sid system with debootstrap",
            )
        except TidemarkError as error:
            raise TerminalError(
                f"{error}\nthe stack's MySQL server could not be built: check that "
                f"{self.mirror} is reachable from this machine, or name a Debian mirror that "
                "is with TIDEMARK_DEBIAN_MIRROR, then run 'tidemark stack up' again"
            ) from error
        partial.rename(self.root)


class MySQL(SourceServer):
    name = "mysql"
    flavor = "mysql"
    grants = _GRANTS
    socket_file = "mysqld.sock"

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.system = MySQLSystem(settings)

    @property
    def port(self) -> int:
        return self.settings.mysql_port

    @property
    def config_file(self) -> Path:
        return self.data_dir / "my.cnf"

    def install(self) -> None:
        self.system.ensure_built()
        data = self.data_dir / "data"
        (self.data_dir / "binlog").mkdir(parents=True, exist_ok=True)
        self.settings.logs_dir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(
            _CONFIG.format(
                system=self.system.root,
                data=data,
                socket=self.socket,
                home=self.settings.home,
                port=self.port,
                host=self.settings.host,
                server_id=SERVER_ID,
            )
        )
        if (data / "mysql.ibd").exists():
            return
        shutil.rmtree(data, ignore_errors=True)  # an initialisation cut short
        run(
            self._mysqld("--initialize-insecure"),
            what="initialising the MySQL data folder",
        )

    def _mysqld(self, *arguments: str) -> list[str]:
        # --defaults-file must come first; --user is required of a server started as root
        return self.system.command(
            self.system.mysqld,
            f"--defaults-file={self.config_file}",
            f"--user={os_user()}",
            *arguments,
        )

    def _launch(self) -> subprocess.Popen[bytes]:
        # A server killed with SIGKILL leaves its socket's lock file naming its pid, and mysqld
        # refuses to start while any process has that pid (after a reboot, often another).
        # The stack launches only when its own server is not running, so the lock is stale.
        Path(self.socket + ".lock").unlink(missing_ok=True)
        return spawn_daemon(self._mysqld(), log=self.log, pid_file=self.pid_file, cwd=self.data_dir)

    def _root_user(self) -> str:
        # --initialize-insecure makes root@localhost without a password, reachable by socket.
        return "root"
