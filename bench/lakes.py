"""The stack's two lakes as the benchmarks measure them: the JDBC catalog over a local-disk
warehouse, and the REST catalog over the S3 object store (what production runs).

What differs between them lives here, behind ``BenchLake``: where the catalog keeps its rows
(the commits are counted there), where the scheduler keeps its state, and how a namespace's
files are listed and removed. A benchmark asks its lake, never the storage; the object store's
SDK (``pyarrow.fs``) is used nowhere else in ``bench``.
"""

from __future__ import annotations

import os
import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import psycopg2
from pyarrow.fs import FileSelector, FileType, S3FileSystem
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchNamespaceError

from scheduler.state import DEFAULT_SCHEMA, StateSettings
from tidemark.catalog import load_catalog
from tidemark.stack.endpoints import (
    CatalogEndpoint,
    LakeEndpoint,
    ObjectStoreEndpoint,
    RestCatalogEndpoint,
    StackEndpoints,
    Storage,
)
from tidemark.stack.postgres import REST_CATALOG_DATABASE

_PLAIN_NAME = re.compile(r"[a-z][a-z0-9_]*")

#: how figures name each lake: the catalog, then where its files are
LABELS: dict[Storage, str] = {"local": "JDBC+local", "s3": "REST+S3"}


@dataclass(frozen=True)
class Usage:
    """A namespace's files: bytes stored, and each table's metadata files."""

    bytes: int = 0
    metadata_files: dict[str, int] = field(default_factory=dict)


def tally(files: Iterable[tuple[str, int]]) -> Usage:
    """``files`` (path under the namespace's folder, bytes) summed, with each table's
    ``<table>/metadata/*.metadata.json`` counted."""
    used, metadata = 0, dict[str, int]()
    for path, size in files:
        used += size
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "metadata" and parts[2].endswith(".metadata.json"):
            metadata[parts[0]] = metadata.get(parts[0], 0) + 1
    return Usage(used, metadata)


def metadata_version(location: str) -> int:
    """The version of an Iceberg metadata file, from its name (``00042-<uuid>.metadata.json``):
    one more for every commit, PyIceberg's and Spark's alike, whichever catalog wrote it (the
    REST server's JdbcCatalog names them the same way)."""
    return int(location.rsplit("/", 1)[-1].split("-", 1)[0])


def s3_prefix(warehouse: str, namespace: str) -> str:
    """Where a namespace's tables keep their objects, as ``bucket/key-prefix``: the REST
    catalog puts a table at ``<warehouse>/<namespace>/<table>``."""
    parts = urlsplit(warehouse)
    return "/".join(part for part in (parts.netloc, parts.path.strip("/"), namespace) if part)


class BenchLake(ABC):
    """One lake of the stack: its catalog, the database holding the catalog's rows, the
    scheduler's state, and a namespace's files."""

    storage: ClassVar[Storage]
    #: the stack's services (``tidemark stack status``) a commit to this lake runs on
    services: ClassVar[tuple[str, ...]]

    def __init__(self, endpoints: StackEndpoints, pids: Mapping[str, int] | None = None) -> None:
        self.endpoints = endpoints
        #: the process of each of ``services`` that runs, for their CPU
        self.pids = {name: pid for name, pid in (pids or {}).items() if name in self.services}

    @property
    def label(self) -> str:
        return LABELS[self.storage]

    @property
    @abstractmethod
    def endpoint(self) -> LakeEndpoint:
        """The catalog, as a pipeline file describes it."""

    @abstractmethod
    def catalog_database(self) -> Mapping[str, str]:
        """libpq keywords of the database whose ``iceberg_tables`` the catalog keeps."""

    @abstractmethod
    def state(self) -> StateSettings:
        """Where the scheduler of a pipeline on this lake keeps its state."""

    @abstractmethod
    def files(self, namespace: str) -> Usage:
        """The files of ``namespace``'s tables, now."""

    @abstractmethod
    def remove_files(self, namespace: str) -> None:
        """Remove every file of ``namespace``'s tables, at once."""

    def catalog(self) -> Catalog:
        return load_catalog(self.endpoint.name, self.endpoint.properties())

    def commits(self, namespace: str) -> int:
        """Commits so far to the tables of ``namespace``: their metadata versions, summed."""
        with _cursor(self.catalog_database()) as cursor:
            cursor.execute(
                "SELECT metadata_location FROM iceberg_tables "
                "WHERE catalog_name = %s AND table_namespace = %s",
                (self.endpoint.name, namespace),
            )
            return sum(metadata_version(location) for (location,) in cursor.fetchall())

    @contextmanager
    def state_cursor(self) -> Iterator[psycopg2.extensions.cursor]:
        with _cursor(self.state().connection) as cursor:
            yield cursor

    def drop_namespace(self, namespace: str) -> None:
        """Drop the namespace's tables from the catalog, then remove its files at once: a purge
        reads every manifest of every table (thousands of tables take minutes)."""
        if not _PLAIN_NAME.fullmatch(namespace):  # its files go by path: no ``..``, no ``/``
            raise ValueError(f"a benchmark's namespace is a plain name, got: {namespace!r}")
        catalog = self.catalog()
        try:
            tables = catalog.list_tables(namespace)
        except NoSuchNamespaceError:
            tables = []
        for identifier in tables:
            catalog.drop_table(identifier)
        try:
            catalog.drop_namespace(namespace)
        except NoSuchNamespaceError:
            pass
        self.remove_files(namespace)


class LocalLake(BenchLake):
    """The JDBC catalog in the stack's PostgreSQL, its warehouse a folder on this disk; the
    scheduler's state in the catalog's own database."""

    storage = "local"
    services = ("postgres",)

    @property
    def endpoint(self) -> CatalogEndpoint:
        return self.endpoints.catalog

    def catalog_database(self) -> Mapping[str, str]:
        return self.state().connection

    def state(self) -> StateSettings:
        return StateSettings.from_catalog(self.endpoint.properties(), DEFAULT_SCHEMA)

    def folder(self, namespace: str) -> Path:
        return Path(urlsplit(self.endpoint.warehouse).path) / namespace

    def files(self, namespace: str) -> Usage:
        return scan_folder(self.folder(namespace))

    def remove_files(self, namespace: str) -> None:
        shutil.rmtree(self.folder(namespace), ignore_errors=True)


class S3Lake(BenchLake):
    """Apache Iceberg's REST catalog, its warehouse a bucket of the object store; the server's
    JdbcCatalog keeps its rows in the stack's PostgreSQL (database ``REST_CATALOG_DATABASE``,
    the scheduler's account), and the scheduler its state in the database of ``state_dsn``."""

    storage = "s3"
    services = ("postgres", "rest_catalog", "object_store")

    @property
    def endpoint(self) -> RestCatalogEndpoint:
        return self.endpoints.rest_catalog

    def catalog_database(self) -> Mapping[str, str]:
        return {**self.state().connection, "dbname": REST_CATALOG_DATABASE}

    def state(self) -> StateSettings:
        return StateSettings.from_dsn(self.endpoint.state_dsn.get_secret_value(), DEFAULT_SCHEMA)

    def files(self, namespace: str) -> Usage:
        prefix = s3_prefix(self.endpoint.warehouse, namespace)
        found = _object_store(self.endpoint.object_store).get_file_info(
            FileSelector(prefix, recursive=True, allow_not_found=True)
        )
        return tally(
            (info.path[len(prefix) + 1 :], info.size or 0)
            for info in found
            if info.type == FileType.File
        )

    def remove_files(self, namespace: str) -> None:
        try:
            _object_store(self.endpoint.object_store).delete_dir(
                s3_prefix(self.endpoint.warehouse, namespace)
            )
        except FileNotFoundError:
            pass  # nothing was written


_LAKES: dict[Storage, type[BenchLake]] = {"local": LocalLake, "s3": S3Lake}


def bench_lake(
    endpoints: StackEndpoints, storage: Storage, status: Mapping[str, Any] | None = None
) -> BenchLake:
    """The lake of ``storage``; with the stack's ``status`` (``Stack.status()``), it knows
    its services' processes."""
    kind = _LAKES.get(storage)
    if kind is None:
        raise ValueError(f"the stack's lakes are {', '.join(_LAKES)}, got: {storage!r}")
    return kind(endpoints, service_pids(status or {}))


def service_pids(status: Mapping[str, Any]) -> dict[str, int]:
    """Each running service's process, from ``Stack.status()``."""
    services: Mapping[str, Mapping[str, Any]] = status.get("services", {})
    return {name: service["pid"] for name, service in services.items() if service.get("pid")}


def scan_folder(folder: Path) -> Usage:
    """A local folder's files, in the bytes ``du`` counts (whole blocks)."""

    def walk() -> Iterator[tuple[str, int]]:
        for parent, _dirs, names in os.walk(folder):
            relative = Path(parent).relative_to(folder)
            for name in names:
                try:
                    size = (Path(parent) / name).stat().st_blocks * 512
                except OSError:
                    continue  # deleted meanwhile (a metadata file past retention)
                yield (relative / name).as_posix(), size

    return tally(walk())


def _object_store(store: ObjectStoreEndpoint) -> S3FileSystem:
    """The object store through Arrow's S3 client: path-style, as the stack serves it."""
    address = urlsplit(store.endpoint)
    return S3FileSystem(
        access_key=store.access_key_id,
        secret_key=store.secret_access_key.get_secret_value(),
        region=store.region,
        endpoint_override=address.netloc,
        scheme=address.scheme or "http",
        force_virtual_addressing=False,
    )


@contextmanager
def _cursor(connection: Mapping[str, str]) -> Iterator[psycopg2.extensions.cursor]:
    params: dict[str, Any] = dict(connection)
    opened = psycopg2.connect(**params)
    try:
        with opened.cursor() as cursor:
            yield cursor
    finally:
        opened.close()
