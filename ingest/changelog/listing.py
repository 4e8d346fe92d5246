"""Which tables exist in a few namespaces, from one catalog listing each.

Onboarding a thousand new tables asked the catalog twice per table before creating it: a
``load_table`` that failed and a ``create_namespace_if_not_exists``; start-up asked again for
each sink table's error table. A listing per namespace answers all of them; what is created
through it joins it. A table another process creates meanwhile is not expected (one ingest runs
a pipeline); creating it again fails in the catalog, and ``open_changelog`` then opens it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


def namespace_of(identifier: str) -> str:
    return identifier.rsplit(".", 1)[0]


class Listing(Protocol):
    """Which tables exist, as a listing knows them."""

    def has_table(self, identifier: str) -> bool: ...

    def has_namespace(self, namespace: str) -> bool: ...

    def add(self, identifier: str) -> None: ...


class ListsTables(Protocol):
    """A catalog that lists a namespace's tables (``ingest.changelog.catalogs.SinkCatalog``)."""

    def table_names(self, namespace: str) -> list[str] | None: ...


class CatalogListing:
    """The identifiers (``namespace.name``) of every table of ``namespaces``, listed once."""

    def __init__(self, catalog: ListsTables, namespaces: Iterable[str]) -> None:
        self._namespaces: set[str] = set()
        self._tables: set[str] = set()
        for namespace in set(namespaces):
            identifiers = catalog.table_names(namespace)
            if identifiers is None:
                continue
            self._namespaces.add(namespace)
            self._tables.update(identifiers)

    def has_table(self, identifier: str) -> bool:
        return identifier in self._tables

    def has_namespace(self, namespace: str) -> bool:
        return namespace in self._namespaces

    def add(self, identifier: str) -> None:
        """``identifier`` was created (with its namespace)."""
        self._tables.add(identifier)
        self._namespaces.add(namespace_of(identifier))

    def add_namespace(self, namespace: str) -> None:
        """``namespace`` was created."""
        self._namespaces.add(namespace)
