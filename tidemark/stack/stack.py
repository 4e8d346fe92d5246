"""The whole local stack: brings every service up in order, reports and stops them."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import SecretStr

from tidemark.errors import TransientError
from tidemark.stack.endpoints import (
    CatalogEndpoint,
    KafkaEndpoint,
    ObjectStoreEndpoint,
    RestCatalogEndpoint,
    SourceEndpoint,
    SparkEndpoint,
    StackEndpoints,
)
from tidemark.stack.kafka import Kafka
from tidemark.stack.mariadb import MariaDB
from tidemark.stack.mysql import MySQL
from tidemark.stack.object_store import ObjectStore
from tidemark.stack.postgres import Postgres
from tidemark.stack.rest_catalog import RestCatalog
from tidemark.stack.service import Service
from tidemark.stack.settings import StackSettings
from tidemark.stack.spark_runtime import SparkRuntime

logger = logging.getLogger(__name__)


class StackNotHealthyError(TransientError):
    """A service of the local stack is down."""


STATUS_VERSION = 1


class Stack:
    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        # in start order: the REST catalog's database is PostgreSQL's, its files the store's
        self.daemons: list[Service] = [
            MariaDB(settings),
            MySQL(settings),
            Postgres(settings),
            ObjectStore(settings),
            RestCatalog(settings),
            Kafka(settings),
        ]
        self.spark = SparkRuntime(settings)

    def up(self) -> None:
        """Install and start whatever is missing; raises ServiceFailedError naming the service."""
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self.settings.warehouse_dir.mkdir(parents=True, exist_ok=True)
        for daemon in self.daemons:
            daemon.up()
        self.spark.up()

    def down(self) -> list[str]:
        """Stop what the stack started, in reverse order; returns the names stopped."""
        return [daemon.name for daemon in reversed(self.daemons) if daemon.down()]

    def endpoints(self) -> StackEndpoints:
        """Typed endpoints; raises StackNotHealthyError naming each service that is down."""
        report = self.status()
        down = [name for name, service in report["services"].items() if not service["healthy"]]
        if down:
            raise StackNotHealthyError(
                f"the local stack is not healthy ({', '.join(down)} down); "
                "run 'tidemark stack up', and see its logs under "
                f"{self.settings.logs_dir}"
            )
        services = report["services"]
        postgres = services["postgres"]
        object_store = ObjectStoreEndpoint.model_validate(services["object_store"])
        rest_catalog = services["rest_catalog"]
        return StackEndpoints(
            mariadb=SourceEndpoint.model_validate(services["mariadb"]),
            mysql=SourceEndpoint.model_validate(services["mysql"]),
            catalog=CatalogEndpoint(
                name=postgres["catalog_name"],
                uri=postgres["jdbc_uri"],
                user=postgres["user"],
                password=postgres["password"],
                warehouse=postgres["warehouse"],
            ),
            object_store=object_store,
            rest_catalog=RestCatalogEndpoint(
                name=rest_catalog["name"],
                uri=rest_catalog["uri"],
                warehouse=rest_catalog["warehouse"],
                object_store=object_store,
                state_dsn=SecretStr(Postgres(self.settings).state_dsn()),
            ),
            kafka=KafkaEndpoint.model_validate(services["kafka"]),
            spark=SparkEndpoint.model_validate(services["spark"]),
        )

    def status(self) -> dict[str, Any]:
        """Health and endpoints of every service, as ``stack status --json`` prints them."""
        services: dict[str, Any] = {}
        for daemon in self.daemons:
            pid = daemon.running_pid()
            services[daemon.name] = {
                "healthy": pid is not None and daemon.is_healthy(),
                "pid": pid,
                "log": str(daemon.log),
                **daemon.endpoint(),
            }
        services[self.spark.name] = {"healthy": self.spark.is_healthy(), **self.spark.endpoint()}
        return {
            "version": STATUS_VERSION,
            "home": str(self.settings.home),
            "healthy": all(service["healthy"] for service in services.values()),
            "services": services,
        }
