"""PyIceberg's SQL catalog (the JDBC catalog's tables), committing on the metadata it holds.

PyIceberg's ``SqlCatalog.commit_table`` loads the table before every commit (a query, and the
whole metadata JSON read and parsed) to check the commit's requirements against it, and then
updates the catalog row only where it still names the metadata file it loaded. That last
condition is what guards against a concurrent writer, so the metadata the committing ``Table``
already holds serves as the base just as well: if another writer committed since, the row names
another file, the update changes nothing, and the commit fails with ``CommitFailedException``
exactly as it does after a load (PyIceberg's transaction then refreshes the table and retries,
or the caller handles it).

Applying the updates also skips PyIceberg's deep copy of the whole metadata, every snapshot in
it, which it makes on every application (``staged_metadata``). A changelog commits every few
seconds, so at a thousand tables these two were half the CPU of an empty commit
(``bench/scale_bench.py``, issue 25).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError
from pyiceberg.table import CommitTableResponse, StagedTable, Table, TableMetadata
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.update import (
    TableRequirement,
    TableUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)
from pyiceberg.utils.datetime import datetime_to_millis
from sqlalchemy import CursorResult, insert, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from tidemark.errors import TerminalError, TransientError, first_line

#: what the database says when it will refuse again until the configuration changes
_REFUSALS = ("password authentication failed", "no pg_hba.conf entry", "does not exist")


class CatalogRefusedError(TerminalError):
    """The catalog's database refused the connection: its user, password or database."""


class CatalogUnavailableError(TransientError):
    """The catalog's database could not be reached (yet); ``said`` is what the driver said."""

    def __init__(self, said: str) -> None:
        super().__init__(
            f"the catalog's database cannot be reached ({said}): is it running at "
            "catalog.properties.uri?"
        )
        self.said = said


def open_sql_catalog(name: str, **properties: str) -> TidemarkSqlCatalog:
    """``TidemarkSqlCatalog``, connected: a refusal or an unreachable database becomes an error
    that says which, without the driver's traceback (nor the password, which it never names)."""
    # a pooled connection is checked before use: after the database restarted (a failover)
    # the first query of a long-running process would otherwise fail on a dead connection
    properties = {"pool_pre_ping": "true", **properties}
    try:
        return TidemarkSqlCatalog(name, **properties)
    except OperationalError as error:
        said = first_line(error.orig or error)
        if any(refusal in said for refusal in _REFUSALS):
            raise CatalogRefusedError(
                f"the catalog's database refused the connection ({said}): check "
                "catalog.properties.uri, jdbc.user and jdbc.password"
            ) from None
        raise CatalogUnavailableError(said) from None


def staged_metadata(
    base: TableMetadata, updates: tuple[TableUpdate, ...], metadata_location: str | None = None
) -> TableMetadata:
    """``base`` with ``updates`` applied, as PyIceberg's ``update_table_metadata`` makes it
    (the metadata log gains ``metadata_location`` when given), but sharing what did not change
    with ``base`` instead of deep-copying it: metadata models are frozen, and each update builds
    new lists rather than changing old ones. ``base`` itself when nothing changes."""
    context = _TableMetadataUpdateContext()
    metadata = base
    for change in updates:
        metadata = _apply_table_update(change, metadata, context)
    if not context.has_changes():
        return base
    if metadata_location:
        metadata = _update_table_metadata_log(metadata, metadata_location, base.last_updated_ms)
    if metadata.last_updated_ms == base.last_updated_ms:
        now = datetime_to_millis(datetime.now().astimezone())
        metadata = metadata.model_copy(update={"last_updated_ms": now})
    metadata.spec().check_compatible(metadata.schema())
    metadata.sort_order().check_compatible(metadata.schema())
    return metadata


class TidemarkSqlCatalog(SqlCatalog):
    """``SqlCatalog`` whose commits to existing tables start from the metadata the committing
    table holds (the module's description)."""

    def commit_table(
        self,
        table: Table,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
    ) -> CommitTableResponse:
        if isinstance(table, StagedTable):
            return self._create(table, requirements, updates)
        if not self.engine.dialect.supports_sane_rowcount:
            return super().commit_table(table, requirements, updates)  # no guard
        base, base_location = table.metadata, table.metadata_location
        for requirement in requirements:
            requirement.validate(base)
        metadata = staged_metadata(base, updates, base_location)
        if metadata is base:
            return CommitTableResponse(metadata=base, metadata_location=base_location)  # type: ignore[call-arg]
        version = self._parse_metadata_version(base_location) + 1
        provider = load_location_provider(metadata.location, metadata.properties)
        location = provider.new_table_metadata_file_location(version)
        # the table's own FileIO: a new one per commit read PyIceberg's configuration again
        self._write_metadata(metadata=metadata, io=table.io, metadata_path=location)
        identifier = table.name()
        namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        name = Catalog.table_name_from(identifier)
        # a Core connection, not an ORM session: a fifth of the CPU, on every commit
        with self.engine.begin() as connection:
            result: CursorResult[Any] = connection.execute(
                update(IcebergTables)
                .where(
                    IcebergTables.catalog_name == self.name,
                    IcebergTables.table_namespace == namespace,
                    IcebergTables.table_name == name,
                    IcebergTables.metadata_location == base_location,
                )
                .values(metadata_location=location, previous_metadata_location=base_location)
            )
            if result.rowcount < 1:
                # no table refers to the file just written: it would stay behind for good
                table.io.delete(location)
                raise CommitFailedException(
                    f"Table has been updated by another process: {namespace}.{name}"
                )
        return CommitTableResponse(metadata=metadata, metadata_location=location)  # type: ignore[call-arg]

    def _create(
        self,
        table: StagedTable,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
    ) -> CommitTableResponse:
        """A new table's row, as ``SqlCatalog.commit_table`` inserts it, without first trying
        to load the table: the insert itself fails if it exists (a thousand tables onboarded
        paid a failed load each)."""
        staged = self._update_and_stage_table(None, table.name(), requirements, updates)
        self._write_metadata(
            metadata=staged.metadata, io=staged.io, metadata_path=staged.metadata_location
        )
        identifier = table.name()
        namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        name = Catalog.table_name_from(identifier)
        with Session(self.engine) as session:
            try:
                row = self._create_table_row(namespace, name, staged.metadata_location)
                session.execute(insert(IcebergTables).values(**row))
                session.commit()
            except IntegrityError as error:
                raise TableAlreadyExistsError(f"Table {namespace}.{name} already exists") from error
        return CommitTableResponse(  # type: ignore[call-arg]
            metadata=staged.metadata, metadata_location=staged.metadata_location
        )
