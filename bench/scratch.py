"""What a benchmark leaves behind, removed: its Iceberg namespaces, with their files."""

from __future__ import annotations

from pyiceberg.catalog import Catalog

from tidemark.catalog import load_catalog, purge_namespace
from tidemark.stack.endpoints import StackEndpoints


def drop_namespace(catalog: Catalog, namespace: str) -> None:
    """Purge every table of ``namespace`` (data files included) and the namespace itself."""
    purge_namespace(catalog, namespace, drop=True)


def stack_catalog(endpoints: StackEndpoints) -> Catalog:
    return load_catalog(endpoints.catalog.name, endpoints.catalog.properties())
