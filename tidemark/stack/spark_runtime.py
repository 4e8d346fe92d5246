"""The jars Spark needs for Iceberg, the JDBC catalog and Paimon's maintenance, resolved once into
the stack's home."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidemark.errors import TidemarkError
from tidemark.stack.installer import resolve_maven_jars
from tidemark.stack.service import ServiceFailedError
from tidemark.stack.settings import (
    ICEBERG_VERSION,
    PAIMON_VERSION,
    POSTGRES_JDBC_VERSION,
    SPARK_SCALA_SUFFIX,
    StackSettings,
)

#: what a healthy runtime has: jars left by an older POM (a checkout before Paimon) are not
_REQUIRED = ("iceberg-spark-runtime-", "paimon-bundle-")


class SparkRuntime:
    """Not a daemon: Spark runs inside each job's process (local[*]) or on the user's cluster."""

    name = "spark"

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.directory = settings.jars_dir / "spark"

    def up(self) -> None:
        try:
            resolve_maven_jars(
                "spark-pom.xml",
                self.directory,
                {
                    "iceberg.version": ICEBERG_VERSION,
                    "spark.scala.suffix": SPARK_SCALA_SUFFIX,
                    "postgres.jdbc.version": POSTGRES_JDBC_VERSION,
                    "paimon.version": PAIMON_VERSION,
                },
            )
        except TidemarkError as error:
            raise ServiceFailedError(self.name, f"resolving jars failed: {error}", None) from error

    def jars(self) -> list[Path]:
        return sorted(self.directory.glob("*.jar"))

    def is_healthy(self) -> bool:
        names = [jar.name for jar in self.jars()]
        return (self.directory / ".resolved").exists() and all(
            any(name.startswith(prefix) for name in names) for prefix in _REQUIRED
        )

    def endpoint(self) -> dict[str, Any]:
        return {"master": "local[*]", "jars": [str(jar) for jar in self.jars()]}
