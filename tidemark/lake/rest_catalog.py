"""PyIceberg's REST catalog, leaving the old metadata files to the server.

A table whose ``write.metadata.delete-after-commit.enabled`` is set (every table Tidemark
creates: ``tidemark.catalog.METADATA_RETENTION``) keeps its last few metadata files. Behind a
REST catalog the server writes them and deletes the old ones as it commits, as Iceberg's Java
REST client expects; PyIceberg (0.12) deletes them again after every commit, finds them gone,
and logs a warning per commit ("Failed to delete metadata file"), at the cost of a request.
"""

from __future__ import annotations

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.io import FileIO
from pyiceberg.table import TableMetadata


class TidemarkRestCatalog(RestCatalog):
    """PyIceberg's ``RestCatalog`` without its client-side delete of old metadata files."""

    @staticmethod
    def _delete_old_metadata(io: FileIO, base: TableMetadata, metadata: TableMetadata) -> None:
        """The server deleted them as it committed."""
