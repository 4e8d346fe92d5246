"""docker-compose.yml cannot run here (no Docker engine), so these keep it in step with the code."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tidemark.stack import mariadb, mysql, object_store
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.postgres import REST_CATALOG_DATABASE
from tidemark.stack.rest_catalog import RestCatalog, launcher_environment
from tidemark.stack.settings import (
    DEFAULT_PORTS,
    ICEBERG_VERSION,
    KAFKA_VERSION,
    POSTGRES_JDBC_VERSION,
    SEAWEEDFS_VERSION,
    ObjectStorePorts,
    StackSettings,
)

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
        ("seaweedfs", DEFAULT_PORTS["object_store"]),
        ("iceberg-rest", DEFAULT_PORTS["rest_catalog"]),
    ],
)
def test_services_listen_where_the_local_stack_does(service: str, port: int) -> None:
    published = [mapping.split(":")[1] for mapping in SERVICES[service]["ports"]]

    assert str(port) in published


def test_versions_match_the_code() -> None:
    assert SERVICES["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"
    assert SERVICES["iceberg-rest"]["image"] == f"apache/iceberg-rest-fixture:{ICEBERG_VERSION}"
    assert SERVICES["seaweedfs"]["image"] == f"chrislusf/seaweedfs:{SEAWEEDFS_VERSION}"
    driver = f"org/postgresql/postgresql/{POSTGRES_JDBC_VERSION}/"
    assert driver in SERVICES["iceberg-rest"]["command"][0]
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


def _defaults(environment: dict[str, str]) -> dict[str, str]:
    """Compose's ``${NAME:-default}`` values, as a user who sets nothing gets them."""
    return {
        key: re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", str(value))
        for key, value in environment.items()
    }


PARTS = ("s3", "master", "volume", "filer", "admin")


def test_the_object_store_runs_with_the_local_stacks_flags_and_keys() -> None:
    store = SERVICES["seaweedfs"]
    local = object_store.weed_mini_flags(
        Path("/data"), "127.0.0.1", ObjectStorePorts.from_s3_port(DEFAULT_PORTS["object_store"])
    )
    # in a container SeaweedFS keeps its own address and ports: the published port moves it
    ports = (f"-{part}.port{grpc}=" for part in PARTS for grpc in ("", ".grpc"))
    placement = ("-dir=", "-ip=", "-ip.bind=", *ports)

    assert store["command"][0] == "mini"
    assert {flag for flag in local if not flag.startswith(placement)} <= set(store["command"])
    assert _defaults(store["environment"]) == {
        "AWS_ACCESS_KEY_ID": object_store.ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": object_store.SECRET_ACCESS_KEY,
        "GOMEMLIMIT": object_store.GO_MEMORY_LIMIT,
    }


def test_the_rest_catalog_is_configured_as_the_local_stacks() -> None:
    local = launcher_environment(
        {}, RestCatalog(StackSettings(home=Path("/x"))).catalog_properties()
    )
    compose = _defaults(SERVICES["iceberg-rest"]["environment"])
    # addresses differ inside Docker's network; the image's port is its default
    addresses = ("CATALOG_URI", "CATALOG_S3_ENDPOINT", "CATALOG_REST_HOST", "CATALOG_REST_PORT")

    assert {k: v for k, v in compose.items() if k not in addresses} == {
        k: v for k, v in local.items() if k not in addresses
    } | {"CATALOG_JDBC_STRICT__MODE": "false"}
    assert compose["CATALOG_URI"] == f"jdbc:postgresql://postgres:5432/{REST_CATALOG_DATABASE}"
    assert compose["CATALOG_S3_ENDPOINT"] == "http://seaweedfs:8333"


def test_the_postgres_service_creates_the_rest_catalogs_database() -> None:
    init = (ROOT / "configs" / "docker" / "postgres-init.sql").read_text()

    assert f"CREATE DATABASE {REST_CATALOG_DATABASE} OWNER tidemark;" in init
    assert any(
        volume.startswith("./configs/docker/postgres-init.sql:/docker-entrypoint-initdb.d/")
        for volume in SERVICES["postgres"]["volumes"]
    )
