"""docker-compose.yml cannot run here (no Docker engine), so these keep it in step with the code."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from tidemark.stack import mariadb
from tidemark.stack.settings import DEFAULT_PORTS, ICEBERG_VERSION, KAFKA_VERSION

ROOT = Path(__file__).parent.parent
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]


def test_mysql_has_every_binlog_setting_a_cdc_source_needs() -> None:
    flags = set(SERVICES["mysql"]["command"])

    assert {
        "--log-bin=mysql-bin",
        "--binlog-format=ROW",
        "--binlog-row-image=FULL",
        "--binlog-row-metadata=FULL",
        "--binlog-transaction-compression=OFF",
        "--gtid-mode=ON",
    } <= flags
    assert any(flag.startswith("--server-id=") for flag in flags)


def test_the_local_stack_enables_the_same_settings_on_mariadb() -> None:
    config = mariadb._CONFIG

    for setting in (
        "binlog_format = ROW",
        "binlog_row_image = FULL",
        "binlog_row_metadata = FULL",
        "log_bin_compress = OFF",
    ):
        assert setting in config


@pytest.mark.parametrize(
    ("service", "port"),
    [
        ("mysql", DEFAULT_PORTS["mariadb"]),
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


def test_the_mysql_accounts_are_the_local_stacks() -> None:
    init = (ROOT / "configs" / "docker" / "mysql-init.sql").read_text()

    assert f"'{mariadb.CDC_USER}'@'%' IDENTIFIED BY '{mariadb.CDC_PASSWORD}'" in init
    assert f"'{mariadb.ADMIN_USER}'@'%' IDENTIFIED BY '{mariadb.ADMIN_PASSWORD}'" in init
    assert "GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.*" in init
