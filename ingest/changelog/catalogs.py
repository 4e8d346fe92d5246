"""The catalog a pipeline's sink tables live in, as ingest and the status use it, in each lake
format ingest writes.

Everything ingest asks of its lake goes through ``SinkCatalog``: which tables a namespace has,
creating namespaces, opening (creating) a sink table, loading one, creating an error table and
checking the storage takes writes. Each format answers with its own tables, all
``tidemark.sinks.protocols.ChangelogWriter``:

- ``iceberg``: append-only changelog tables that Spark merges into mirrors
  (``ingest.changelog.table``);
- ``paimon``: primary-key tables that are the mirrors themselves
  (``ingest.changelog.paimon_catalog``, docs/paimon.md), imported only for a Paimon sink.

``open_sink_catalog`` opens the one a pipeline's ``sink.type`` names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from ingest.changelog.listing import Listing
from ingest.changelog.storage_check import check_writable
from ingest.changelog.table import DEFAULT_PROPERTIES, ChangelogTable, open_changelog
from tidemark.catalog import purge_namespace, purge_table
from tidemark.errors import ConfigError
from tidemark.lake.outages import probe_catalog, probe_storage, warehouse_folder
from tidemark.sinks.protocols import ChangelogWriter, SinkTableSpec


class SinkCatalog(Protocol):
    """A pipeline's lake, as ingest, the status and `tidemark reset` use it."""

    #: the sink's ``type``
    @property
    def format(self) -> str: ...

    def table_names(self, namespace: str) -> list[str] | None:
        """The identifiers (``namespace.name``) of ``namespace``'s tables; None when it does
        not exist."""
        ...

    def create_namespace_if_not_exists(self, namespace: str) -> None: ...

    def open_changelog(self, spec: SinkTableSpec, listing: Listing | None) -> ChangelogWriter:
        """The sink table ``spec`` names, created if it does not exist; ``listing`` tells
        whether it and its namespace exist without asking the catalog."""
        ...

    def load_changelog(self, identifier: str) -> ChangelogWriter | None:
        """The table ``identifier`` as it is; None when it does not exist."""
        ...

    def create_error_table(self, identifier: str, schema: pa.Schema) -> ChangelogWriter:
        """A new table keeping every row written to it (an error table), of ``schema``."""
        ...

    def check_writable(self, identifier: str) -> None:
        """Write and delete an empty file where ``identifier``'s data files go; raises
        ``StorageRefusedError`` or ``StorageUnreachableError``."""
        ...

    def probe_catalog(self) -> None:
        """Raise unless the catalog answers: one cheap request (``ingest.outages``)."""
        ...

    def probe_storage(self) -> None:
        """Raise the storage's own ``OSError`` while it is down or full: a small write at the
        warehouse's top, deleted (``ingest.outages``)."""
        ...

    def warehouse_folder(self) -> str:
        """Where the warehouse is, as a user names it (a path for a local one)."""
        ...

    def table_exists(self, identifier: str) -> bool: ...

    def purge_table(self, identifier: str) -> None:
        """Drop ``identifier`` with its files (``tidemark reset``)."""
        ...

    def purge_namespace(self, namespace: str) -> list[str]:
        """Drop every table of ``namespace`` with its files (the demo's clean slate); the
        tables dropped."""
        ...


class IcebergSinkCatalog:
    """An Iceberg catalog (PyIceberg's) holding changelog tables."""

    format = "iceberg"

    def __init__(self, catalog: Catalog) -> None:
        self.iceberg = catalog

    def table_names(self, namespace: str) -> list[str] | None:
        try:
            return [".".join(identifier) for identifier in self.iceberg.list_tables(namespace)]
        except NoSuchNamespaceError:
            return None

    def create_namespace_if_not_exists(self, namespace: str) -> None:
        self.iceberg.create_namespace_if_not_exists(namespace)

    def open_changelog(self, spec: SinkTableSpec, listing: Listing | None) -> ChangelogWriter:
        return open_changelog(self.iceberg, spec.identifier, spec.data, spec.properties, listing)

    def load_changelog(self, identifier: str) -> ChangelogWriter | None:
        try:
            return ChangelogTable(self.iceberg.load_table(identifier))
        except NoSuchTableError:
            return None

    def create_error_table(self, identifier: str, schema: pa.Schema) -> ChangelogWriter:
        self.iceberg.create_table(identifier, schema=schema, properties=dict(DEFAULT_PROPERTIES))
        return ChangelogTable(self.iceberg.load_table(identifier))

    def check_writable(self, identifier: str) -> None:
        check_writable(self.iceberg, identifier)

    def probe_catalog(self) -> None:
        probe_catalog(self.iceberg)

    def probe_storage(self) -> None:
        probe_storage(self.iceberg)

    def warehouse_folder(self) -> str:
        return warehouse_folder(self.iceberg)

    def table_exists(self, identifier: str) -> bool:
        return self.iceberg.table_exists(identifier)

    def purge_table(self, identifier: str) -> None:
        purge_table(self.iceberg, identifier)

    def purge_namespace(self, namespace: str) -> list[str]:
        return purge_namespace(self.iceberg, namespace)


def _open_iceberg(name: str, properties: Mapping[str, str], commit_user: str | None) -> SinkCatalog:
    from tidemark.catalog import load_catalog

    return IcebergSinkCatalog(load_catalog(name, dict(properties)))


def _open_paimon(name: str, properties: Mapping[str, str], commit_user: str | None) -> SinkCatalog:
    # pypaimon takes 1.5 s to import: only for a Paimon sink
    from ingest.changelog.paimon_catalog import PaimonSinkCatalog
    from tidemark.lake.paimon import open_paimon_catalog

    return PaimonSinkCatalog(open_paimon_catalog(properties, commit_user))


#: how a sink's catalog is opened, by the sink's ``type``: ``(catalog name, properties, the
#: prefix of the writer's name in its commits where the format names writers)``
SINK_CATALOGS: Mapping[str, Callable[[str, Mapping[str, str], str | None], SinkCatalog]] = {
    "iceberg": _open_iceberg,
    "paimon": _open_paimon,
}


def open_sink_catalog(
    sink_type: str, name: str, properties: Mapping[str, str], commit_user: str | None = None
) -> SinkCatalog:
    """The catalog of a ``sink_type`` sink, named ``name``, with its catalog properties; a
    Paimon writer names itself ``<commit_user>_<a UUID>`` in its commits (a UUID alone
    without one)."""
    try:
        opener = SINK_CATALOGS[sink_type]
    except KeyError:
        raise ConfigError(
            f"sink.type {sink_type!r} is not a lake format ingest can write: use one of "
            f"{', '.join(sorted(SINK_CATALOGS))}"
        ) from None
    return opener(name, properties, commit_user)
