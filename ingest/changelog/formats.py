"""The lake formats ingest writes changelog tables in, by the sink's ``type``.

A format is the function that opens (creating it if need be) one changelog table, returning a
``tidemark.sinks.protocols.ChangelogWriter``; everything ingest does after that goes through
the protocol. Iceberg is the only format today (``sink: type: paimon`` is still refused by
``tidemark.config.sink``); a second one is a module implementing the protocols and one entry
here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyarrow as pa
from pyiceberg.catalog import Catalog

from ingest.changelog.listing import CatalogListing
from ingest.changelog.table import open_changelog
from tidemark.errors import ConfigError
from tidemark.sinks.protocols import ChangelogWriter

#: ``(catalog, identifier, data columns, table properties, listing) -> the table``: the
#: changelog ``identifier``, created with ``data``'s columns and the properties if it does not
#: exist; ``listing`` tells which tables exist without asking the catalog
OpenChangelog = Callable[
    [Catalog, str, pa.Schema, Mapping[str, str], CatalogListing | None], ChangelogWriter
]

CHANGELOG_FORMATS: Mapping[str, OpenChangelog] = {"iceberg": open_changelog}


def changelog_opener(sink_type: str) -> OpenChangelog:
    """How changelog tables of a ``sink_type`` sink are opened."""
    try:
        return CHANGELOG_FORMATS[sink_type]
    except KeyError:
        raise ConfigError(
            f"sink.type {sink_type!r} is not a lake format ingest can write: use one of "
            f"{', '.join(sorted(CHANGELOG_FORMATS))}"
        ) from None
