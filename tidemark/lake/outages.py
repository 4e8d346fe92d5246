"""Which lake errors are outages: the catalog or the storage not answering for now, as opposed
to refusals that stay until someone fixes the configuration (``tidemark.outages``).

The catalog is a JDBC database (SQLAlchemy over psycopg2) or a REST server (requests); the
storage an S3 store (pyarrow's AWS SDK) or a local disk. Each says "not now" its own way; the
answer here is the ``Outage`` to wait out, or None for an error that must stop the process.
"""

from __future__ import annotations

import contextlib
import errno
import uuid
from urllib.parse import unquote, urlsplit

import requests
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import (
    CommitStateUnknownException,
    ServerError,
    ServiceUnavailableError,
    TooManyRequestsError,
)
from pyiceberg.io import load_file_io
from sqlalchemy.exc import InterfaceError, OperationalError

from tidemark.errors import causes, first_line
from tidemark.lake.sql_catalog import CatalogUnavailableError
from tidemark.outages import Dependency, Outage

#: what PostgreSQL says when it will refuse again until the configuration changes
_POSTGRES_REFUSALS = (
    "password authentication failed",
    "no pg_hba.conf entry",
    "does not exist",
    "permission denied",
)

#: the AWS SDK's error names for a store that is down, overloaded or out of reach
_STORE_OUTAGES = (
    "NETWORK_CONNECTION",
    "SERVICE_UNAVAILABLE",
    "SLOW_DOWN",
    "SlowDown",
    "THROTTLING",
    "Throttling",
    "INTERNAL_FAILURE",
    "InternalError",
    "REQUEST_TIMEOUT",
    "RequestTimeout",
    "HTTP status 500",
    "HTTP status 502",
    "HTTP status 503",
    "HTTP status 504",
)

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def lake_outage(error: BaseException) -> Outage | None:
    """The outage ``error`` (or an error it was raised from) shows, if it is one."""
    for cause in causes(error):
        outage = _outage(cause)
        if outage is not None:
            return outage
    return None


def _outage(error: BaseException) -> Outage | None:
    if isinstance(error, CatalogUnavailableError):
        return Outage(Dependency.CATALOG, error.said)
    if isinstance(error, OperationalError | InterfaceError):  # the JDBC catalog's database
        return _postgres(error)
    if isinstance(
        error,
        requests.ConnectionError
        | requests.Timeout
        | ServerError
        | ServiceUnavailableError
        | TooManyRequestsError
        | CommitStateUnknownException,
    ):
        return Outage(Dependency.CATALOG, _rest_detail(error))
    if isinstance(error, OSError):
        return _storage(error)
    return None


def _postgres(error: OperationalError | InterfaceError) -> Outage | None:
    said = first_line(error.orig or error)
    if any(refusal in said for refusal in _POSTGRES_REFUSALS):
        return None
    return Outage(Dependency.CATALOG, said)


def _rest_detail(error: BaseException) -> str:
    if isinstance(error, requests.ConnectionError):
        return "the REST catalog refused the connection or did not answer"
    if isinstance(error, requests.Timeout):
        return "the REST catalog did not answer in time"
    return f"the REST catalog answered {type(error).__name__}: {first_line(error)}"


def _storage(error: OSError) -> Outage | None:
    if error.errno in _DISK_FULL:
        return Outage(Dependency.WAREHOUSE_DISK, "no space left on the device")
    said = first_line(error)
    if "AWS Error" in said and any(name in said for name in _STORE_OUTAGES):
        return Outage(Dependency.OBJECT_STORE, said)
    return None


def probe_catalog(catalog: Catalog) -> None:
    """Raise unless the catalog answers: one listing of its namespaces."""
    catalog.list_namespaces()


#: what ``probe_storage`` writes: a changelog commit writes a few files of this order, so a
#: disk with room for it has room for the next commit
PROBE_BYTES = 1 << 20


def probe_storage(catalog: Catalog, size: int = PROBE_BYTES) -> None:
    """Write ``size`` bytes at the top of the catalog's warehouse and delete them: raises the
    storage's own ``OSError`` while it is down or full (``lake_outage`` tells which). A
    warehouse that is not a location (some REST catalogs name one) is not checked."""
    warehouse = catalog.properties.get("warehouse", "")
    if "://" not in warehouse:
        return
    location = f"{warehouse.rstrip('/')}/.tidemark-write-check-{uuid.uuid4().hex}"
    io = load_file_io(catalog.properties, location)
    try:
        with io.new_output(location).create(overwrite=True) as stream:
            stream.write(bytes(size))
    finally:
        with contextlib.suppress(OSError):
            io.delete(location)


def warehouse_folder(catalog: Catalog) -> str:
    """Where the catalog's warehouse is, as a user names it (a path for a local one)."""
    warehouse = catalog.properties.get("warehouse", "")
    parts = urlsplit(warehouse)
    return unquote(parts.path) if parts.scheme == "file" else warehouse
