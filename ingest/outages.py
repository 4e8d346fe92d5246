"""What ingest waits out rather than stopping for (``tidemark.outages``): the source, the
catalog, the object store or the warehouse's disk not answering for now; and how it learns
that one answers again.

A wait ends a term of the active ingest (``ingest.service``): what it held in memory is
dropped, and the next term reads every table's progress back from the lake and the binlog
from there, as after a kill -9. So a commit whose outcome the outage hid (sent, then the
connection broke) is found in the table if it landed and made again if it did not: never twice.
"""

from __future__ import annotations

from collections.abc import Callable

import pymysql

from ingest.binlog.reader import StreamInterruptedError
from ingest.changelog.catalogs import SinkCatalog
from tidemark.errors import causes, first_line
from tidemark.lake.outages import lake_outage
from tidemark.outages import Dependency, Outage
from tidemark.source import SourceConnection

#: MySQL client errors that mean the server is gone or out of reach (can't connect, gone
#: away, lost, lost at handshake) and the server's own "shutdown in progress"
_SOURCE_GONE = frozenset({2003, 2006, 2013, 2055, 1053})


def ingest_outage(error: BaseException, catalog: SinkCatalog | None = None) -> Outage | None:
    """The outage ``error`` shows, if it is one; ``catalog`` names a full disk's folder."""
    outage = lake_outage(error)
    if outage is not None:
        if outage.dependency is Dependency.WAREHOUSE_DISK and catalog is not None:
            folder = catalog.warehouse_folder()
            return Outage(outage.dependency, f"no space left under {folder}")
        return outage
    for cause in causes(error):
        if isinstance(cause, StreamInterruptedError):
            return Outage(Dependency.SOURCE, first_line(cause))
        if isinstance(cause, pymysql.err.OperationalError | pymysql.err.InterfaceError) and (
            cause.args and cause.args[0] in _SOURCE_GONE
        ):
            return Outage(Dependency.SOURCE, first_line(cause))
    return None


def probe(
    dependency: Dependency, source: SourceConnection, open_catalog: Callable[[], SinkCatalog]
) -> None:
    """Raise unless ``dependency`` answers: one cheap request to it."""
    if dependency is Dependency.SOURCE:
        source.connect().close()
    elif dependency is Dependency.CATALOG:
        open_catalog().probe_catalog()
    else:
        open_catalog().probe_storage()
