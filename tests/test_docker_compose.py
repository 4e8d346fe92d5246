"""docker-compose.yml cannot run here (no Docker engine), so these keep it in step with the code."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from tidemark.stack import mariadb, mysql
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.settings import DEFAULT_PORTS, ICEBERG_VERSION, KAFKA_VERSION

ROOT = Path(__file__).parent.parent
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]


SHAPING = (
    "binlog_format",
    "binlog_row_image",
    "binlog_row_metadata",
    "binlog_expire_logs_seconds",
    "character_set_server",
    "collation_server",
)


@pytest.mark.parametrize(
    ("service", "config", "own_settings", "log_bin"),
    [
        ("mariadb", mariadb._CONFIG, ("log_bin_compress", "gtid_strict_mode"), "mariadb-bin"),
        (
            "mysql",
            mysql._CONFIG,
            ("binlog_transaction_compression", "gtid_mode", "enforce_gtid_consistency"),
            "mysql-bin",
        ),
    ],
)
def test_sources_run_with_the_local_stacks_server_settings(
    service: str, config: str, own_settings: tuple[str, ...], log_bin: str
) -> None:
    """Every setting of the local stack's my.cnf that shapes the binlog or the data, as a flag."""
    flags = set(SERVICES[service]["command"])
    settings = dict(line.split(" = ", 1) for line in config.splitlines() if " = " in line)

    for name in (*SHAPING, *own_settings):
        assert f"--{name.replace('_', '-')}={settings[name]}" in flags
    assert f"--log-bin={log_bin}" in flags
    assert any(flag.startswith("--server-id=") for flag in flags)


def test_mariadb_is_the_release_the_tests_run_against(endpoints: StackEndpoints) -> None:
    with endpoints.mariadb.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        (version,) = cursor.fetchone()
    major_minor = ".".join(version.split(".")[:2])

    assert SERVICES["mariadb"]["image"] == f"mariadb:{major_minor}"


@pytest.mark.parametrize(
    ("service", "port"),
    [
        ("mariadb", DEFAULT_PORTS["mariadb"]),
        ("mysql", DEFAULT_PORTS["mysql"]),
        ("kafka", DEFAULT_PORTS["kafka"]),
        ("postgres", DEFAULT_PORTS["postgres"]),
    ],
)
def test_services_listen_where_the_local_stack_does(service: str, port: int) -> None:
    published = [mapping.split(":")[1] for mapping in SERVICES[service]["ports"]]

    assert str(port) in published


def test_versions_match_the_code() -> None:
    assert SERVICES["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"
    assert SERVICES["iceberg-rest"]["image"] == f"apache/iceberg-rest-fixture:{ICEBERG_VERSION}"
    spark_version = importlib.metadata.version("pyspark")
    for name in ("spark-master", "spark-worker"):
        assert SERVICES[name]["image"].startswith(f"apache/spark:{spark_version}-scala2.13-")


def test_every_image_is_pinned_and_every_dependency_exists() -> None:
    for name, service in SERVICES.items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name} image is not pinned"
        for dependency in service.get("depends_on", []):
            assert dependency in SERVICES, f"{name} depends on unknown service {dependency}"


@pytest.mark.parametrize(
    ("service", "grants"), [("mariadb", mariadb._GRANTS), ("mysql", mysql._GRANTS)]
)
def test_the_source_accounts_are_the_local_stacks(service: str, grants: list[str]) -> None:
    init = (ROOT / "configs" / "docker" / f"{service}-init.sql").read_text()

    for statement in grants:
        assert f"{statement};" in init


def test_mysql_is_the_long_term_release_our_users_run() -> None:
    # the local stack runs Debian's MySQL 9.x, the only MySQL Debian packages; Docker users
    # get the LTS release
    assert SERVICES["mysql"]["image"] == "mysql:8.4"
