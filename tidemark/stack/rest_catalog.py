"""Apache Iceberg's REST catalog server (the code of the apache/iceberg-rest-fixture image): a
JdbcCatalog in the stack's PostgreSQL, its warehouse on the stack's object store."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Mapping
from importlib import resources
from typing import Any

from tidemark.errors import TerminalError
from tidemark.stack.installer import MINIMUM_JAVA, ensure_java, resolve_maven_jars
from tidemark.stack.object_store import ObjectStore
from tidemark.stack.postgres import REST_CATALOG_DATABASE, Postgres
from tidemark.stack.process import run, spawn_daemon
from tidemark.stack.service import Service
from tidemark.stack.settings import CATALOG_NAME, ICEBERG_VERSION, POSTGRES_JDBC_VERSION

#: Tidemark's launcher (resources/TidemarkRestCatalog.java): the fixture's own main listens on
#: every address
LAUNCHER_SOURCE = "TidemarkRestCatalog.java"
LAUNCHER_CLASS = "org.apache.iceberg.rest.TidemarkRestCatalog"
#: a small heap is plenty for a catalog: it serves metadata, never data
_JVM_FLAGS = ("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class RestCatalog(Service):
    """Runs after PostgreSQL, which creates its database, and after the object store."""

    name = "rest_catalog"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jars_dir = self.settings.jars_dir / "rest_catalog"
        self.classes_dir = self.data_dir / "launcher"

    @property
    def port(self) -> int:
        return self.settings.rest_catalog_port

    @property
    def url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    def install(self) -> None:
        ensure_java(MINIMUM_JAVA, compiler=True)
        resolve_maven_jars(
            "rest-catalog-pom.xml",
            self.jars_dir,
            {"iceberg.version": ICEBERG_VERSION, "postgres.jdbc.version": POSTGRES_JDBC_VERSION},
        )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._compile_launcher()

    def _compile_launcher(self) -> None:
        """javac the launcher once, and again when its source or the jars change."""
        source = resources.files("tidemark.stack").joinpath("resources", LAUNCHER_SOURCE)
        text = source.read_text()
        digest = hashlib.sha256(
            text.encode() + (self.jars_dir / ".resolved").read_bytes()
        ).hexdigest()
        stamp = self.classes_dir / ".compiled"
        if stamp.exists() and stamp.read_text() == digest:
            return
        if self.classes_dir.exists():
            shutil.rmtree(self.classes_dir)
        self.classes_dir.mkdir(parents=True)
        source_file = self.classes_dir / LAUNCHER_SOURCE
        source_file.write_text(text)
        run(
            [
                _tool("javac"),
                *("--release", str(MINIMUM_JAVA), "-encoding", "UTF-8", "-nowarn"),
                *("-cp", self._jars(), "-d", str(self.classes_dir), str(source_file)),
            ],
            what="compiling the REST catalog's launcher",
        )
        stamp.write_text(digest)

    def _launch(self) -> subprocess.Popen[bytes]:
        return spawn_daemon(
            [
                _tool("java"),
                *_JVM_FLAGS,
                "-Djava.awt.headless=true",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
                "-cp",
                f"{self.classes_dir}{os.pathsep}{self._jars()}",
                LAUNCHER_CLASS,
            ],
            log=self.log,
            pid_file=self.pid_file,
            cwd=self.data_dir,
            env=launcher_environment(os.environ, self.catalog_properties()),
        )

    def catalog_properties(self) -> dict[str, str]:
        """The server's own catalog: Iceberg's Java names, as the fixture reads them."""
        postgres = Postgres(self.settings).endpoint()
        store = ObjectStore(self.settings).endpoint()
        return {
            "rest.host": self.settings.host,
            "rest.port": str(self.port),
            "catalog.name": CATALOG_NAME,
            "catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "uri": f"jdbc:postgresql://{postgres['host']}:{postgres['port']}/{REST_CATALOG_DATABASE}",
            "jdbc.user": postgres["user"],
            "jdbc.password": postgres["password"],
            # the schema PyIceberg's SqlCatalog writes too: either can open the other's tables
            "jdbc.schema-version": "V1",
            "warehouse": f"s3://{store['bucket']}/",
            "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            "s3.endpoint": store["endpoint"],
            "s3.path-style-access": "true",
            "s3.access-key-id": store["access_key_id"],
            "s3.secret-access-key": store["secret_access_key"],
            "client.region": store["region"],
            # Clients bring their own keys (RestCatalogEndpoint.properties()); a server that
            # handed its keys to whoever loads a table would hide a client that has none.
            "include-credentials": "false",
        }

    def is_healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/v1/config", timeout=2) as response:
                return response.status == 200
        except OSError:  # refused, reset, timed out, or an HTTP error status
            return False

    def endpoint(self) -> dict[str, Any]:
        properties = self.catalog_properties()
        return {"name": CATALOG_NAME, "uri": self.url, "warehouse": properties["warehouse"]}

    def _jars(self) -> str:
        return str(self.jars_dir / "*")


def launcher_environment(
    inherited: Mapping[str, str], properties: Mapping[str, str]
) -> dict[str, str]:
    """``inherited`` without its ``CATALOG_*`` variables, plus ``properties`` named as the
    fixture reads them: ``CATALOG_`` prefix, ``-`` as ``__``, ``.`` as ``_``, upper case.

    The fixture turns every ``CATALOG_*`` variable into a property, so one left in a user's
    shell would reach the catalog unseen.
    """
    environment = {key: value for key, value in inherited.items() if not key.startswith("CATALOG_")}
    for key, value in properties.items():
        if "_" in key or key != key.lower():
            raise ValueError(
                f"catalog property {key!r} cannot be passed as a CATALOG_ variable: the fixture "
                "reads '_' as '.' and lower-cases every name"
            )
        environment["CATALOG_" + key.replace("-", "__").replace(".", "_").upper()] = value
    return environment


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise TerminalError(
            f"no '{name}' on PATH; install Java {MINIMUM_JAVA}'s JDK "
            f"(openjdk-{MINIMUM_JAVA}-jdk-headless)"
        )
    return path
