"""What the outage tests share beyond their fixtures (``conftest``): the services of a test's
own that fixtures give, and killing one."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from tidemark.stack.endpoints import RestCatalogEndpoint, SourceEndpoint
from tidemark.stack.mariadb import MariaDB
from tidemark.stack.object_store import ObjectStore
from tidemark.stack.postgres import Postgres
from tidemark.stack.process import wait_for
from tidemark.stack.rest_catalog import RestCatalog
from tidemark.stack.service import Service


@dataclass(frozen=True)
class OwnS3Lake:
    """A REST catalog on an S3 store, both the test's own (the catalog's tables in a
    PostgreSQL of its own too)."""

    postgres: Postgres
    store: ObjectStore
    rest: RestCatalog
    endpoint: RestCatalogEndpoint


@dataclass(frozen=True)
class OwnSource:
    """A MariaDB of the test's own, with a database of the test's in it."""

    server: MariaDB
    endpoint: SourceEndpoint
    database: str


def kill(service: Service) -> None:
    """SIGKILL ``service`` (a test's own) and wait until it no longer answers."""
    pid = service.running_pid()
    assert pid is not None, f"the test's {service.name} is not running"
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not service.is_healthy(), timeout=30)
