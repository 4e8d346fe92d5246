"""Fixtures of the outage tests: services of the test's own, to kill and start again while a
pipeline runs on them (the shared ones serve every other test)."""

from __future__ import annotations

import pytest
from pyiceberg.catalog import Catalog

from tidemark.catalog import load_catalog
from tidemark.stack.endpoints import CatalogEndpoint
from tidemark.stack.postgres import Postgres


@pytest.fixture
def own_lake(own_postgres: Postgres) -> CatalogEndpoint:
    """A JDBC catalog in the test's own PostgreSQL, its warehouse in the test's own folder."""
    endpoint = own_postgres.endpoint()
    return CatalogEndpoint(
        name=endpoint["catalog_name"],
        uri=endpoint["jdbc_uri"],
        user=endpoint["user"],
        password=endpoint["password"],
        warehouse=endpoint["warehouse"],
    )


@pytest.fixture
def own_catalog(own_lake: CatalogEndpoint) -> Catalog:
    return load_catalog(own_lake.name, own_lake.properties())
