"""A Paimon catalog as ingest's ``SinkCatalog``: primary-key sink tables that are the mirrors
(``ingest.changelog.paimon_table``), error tables that keep every row, and the warehouse's
write check."""

from __future__ import annotations

import pyarrow as pa

from ingest.changelog.listing import Listing
from ingest.changelog.paimon_table import (
    EVERY_ROW_OPTION,
    PaimonChangelog,
    open_paimon_changelog,
)
from ingest.changelog.storage_check import raise_refused_or_unreachable
from tidemark.contracts.changelog import METADATA_NAMES, MetadataColumn
from tidemark.errors import ConfigError
from tidemark.lake.outages import PROBE_BYTES
from tidemark.lake.paimon import PaimonCatalog
from tidemark.sinks.protocols import ChangelogWriter, SinkTableSpec

#: the data column that, with the change's order, tells an error row from another of the
#: same change (one per column that could not be converted)
ERROR_KEY_COLUMN = "column_name"


class PaimonSinkCatalog:
    """A Paimon catalog holding primary-key sink tables."""

    format = "paimon"

    def __init__(self, catalog: PaimonCatalog) -> None:
        self.paimon = catalog

    def table_names(self, namespace: str) -> list[str] | None:
        return self.paimon.list_tables(namespace)

    def create_namespace_if_not_exists(self, namespace: str) -> None:
        self.paimon.create_namespace_if_not_exists(namespace)

    def open_changelog(self, spec: SinkTableSpec, listing: Listing | None) -> ChangelogWriter:
        if not spec.keys:
            raise ConfigError(
                f"{spec.identifier} has no key, and a Paimon sink table is a primary-key table:"
                " give the source table a primary key, or name one with unique-key"
            )
        table = open_paimon_changelog(
            self.paimon,
            spec.identifier,
            spec.data,
            spec.keys,
            spec.partition_keys,
            spec.properties,
            keep_deletes=spec.keep_deletes,
        )
        if listing is not None:
            listing.add(spec.identifier)
        return table

    def load_changelog(self, identifier: str) -> ChangelogWriter | None:
        table = self.paimon.load_table(identifier)
        return None if table is None else PaimonChangelog(self.paimon, table)

    def create_error_table(self, identifier: str, schema: pa.Schema) -> ChangelogWriter:
        data = pa.schema([f for f in schema if f.name not in METADATA_NAMES])
        # keyed (Paimon tables without a key cannot be deleted from row by row), but never
        # merged: every error row is kept
        keys = (MetadataColumn.ORDER_KEY.value, ERROR_KEY_COLUMN)
        return open_paimon_changelog(
            self.paimon, identifier, data, keys, (), {EVERY_ROW_OPTION: "true"}
        )

    def check_writable(self, identifier: str) -> None:
        table = self.paimon.load_table(identifier)
        if table is None:
            return
        try:
            table.check_writable()
        except OSError as error:
            raise_refused_or_unreachable(error, f"{identifier}'s folder")

    def probe_catalog(self) -> None:
        self.paimon.list_namespaces()

    def probe_storage(self) -> None:
        self.paimon.write_check(PROBE_BYTES)

    def warehouse_folder(self) -> str:
        return self.paimon.warehouse

    def table_exists(self, identifier: str) -> bool:
        return self.paimon.load_table(identifier) is not None

    def purge_table(self, identifier: str) -> None:
        self.paimon.drop_table(identifier)

    def purge_namespace(self, namespace: str) -> list[str]:
        return self.paimon.drop_namespace(namespace)
