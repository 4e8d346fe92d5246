"""One Iceberg catalog, two clients: PyIceberg in ingest, Spark in the window jobs.

Users describe the catalog once, with the property names of Iceberg's Java catalogs (as Flink
CDC's Iceberg sink takes them under ``catalog.properties.*``). This module turns that description
into a PyIceberg catalog; ``spark_jobs.session`` hands the same properties to Spark. Both sides
must use the same catalog *name*: the JDBC catalog stores it in every row
(docs/architecture.md#one-catalog-two-clients).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from pyiceberg.catalog import Catalog
from pyiceberg.catalog import load_catalog as load_pyiceberg_catalog
from pyiceberg.exceptions import NoSuchNamespaceError

from tidemark.errors import ConfigError

#: Every table Tidemark creates keeps only its last few metadata files. A changelog commits every
#: few seconds and each metadata file holds the table's whole snapshot list, so kept files grow
#: with the square of its history (1,000 ten-row tables took 2.4 GB after 62 commits each);
#: nothing in Tidemark reads an older metadata file. PyIceberg and Spark both honour these.
METADATA_RETENTION = {
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "10",
}

# JDBC driver scheme -> SQLAlchemy dialect+driver that PyIceberg's SqlCatalog understands.
_SQLALCHEMY_DIALECTS = {"postgresql": "postgresql+psycopg2", "sqlite": "sqlite"}


def load_catalog(name: str, properties: Mapping[str, str]) -> Catalog:
    """A PyIceberg catalog named ``name`` from Java-style catalog ``properties``; a JDBC
    catalog is ``TidemarkSqlCatalog`` (``open_sql_catalog``), which commits without re-reading
    each table first, a REST one ``TidemarkRestCatalog``, which leaves old metadata files to
    the server."""
    translated = pyiceberg_properties(properties)
    if translated.get("type") == "sql":
        # here, not at the top: the fence checks PyIceberg's version when first imported, and
        # this is where a command opens its catalog, so a wrong PyIceberg is a one-line error
        # with its fix (not a traceback from reading a pipeline file), and ``tidemark
        # validate`` never needs it
        from tidemark.lake.sql_catalog import open_sql_catalog

        return open_sql_catalog(name, **translated)
    if translated.get("type") == "rest":
        from tidemark.lake.rest_catalog import TidemarkRestCatalog

        return TidemarkRestCatalog(name, **translated)
    return load_pyiceberg_catalog(name, **translated)


def purge_table(catalog: Catalog, identifier: str) -> None:
    """Drop ``identifier`` with its files. PyIceberg's purge reads the manifests of every
    snapshot, so its cost grows with the square of a changelog's history (38 s for a table of
    a hundred commits, measured in the test suite); a table in a local warehouse, all of whose
    files are under its location, has that folder removed instead."""
    table = catalog.load_table(identifier)
    folder = urlsplit(table.location())
    path = Path(unquote(folder.path))
    inside = not any(key in table.properties for key in _ELSEWHERE)
    # a location of the table's own (``<namespace>.db/<table>``, Spark's ``<table>-<uuid>``),
    # never one a user pointed at a folder that holds more than this table
    own = path.name.startswith(identifier.rsplit(".", 1)[-1])
    if folder.scheme != "file" or not inside or not own:
        catalog.purge_table(identifier)
        return
    catalog.drop_table(identifier)  # first: no reader finds a table whose files are going
    shutil.rmtree(path, ignore_errors=True)


#: table properties that put some of a table's files outside its location
_ELSEWHERE = ("write.data.path", "write.metadata.path", "write.object-storage.path")


def purge_namespace(catalog: Catalog, namespace: str, *, drop: bool = False) -> list[str]:
    """Drop every table of ``namespace`` with its files (and the namespace too, with ``drop``);
    the tables dropped. A namespace that does not exist is left alone."""
    try:
        tables = catalog.list_tables(namespace)
    except NoSuchNamespaceError:
        return []
    for identifier in tables:
        purge_table(catalog, ".".join(identifier))
    if drop:
        catalog.drop_namespace(namespace)
    return [".".join(identifier) for identifier in tables]


def pyiceberg_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """Translate Java-style catalog properties into PyIceberg's; PyIceberg's FileIO is
    Tidemark's (``tidemark.lake.file_io``) unless ``py-io-impl`` names another."""
    catalog_type = properties.get("type", "").lower()
    translate = _TRANSLATIONS.get(catalog_type)
    if translate is None:
        known = ", ".join(sorted(_TRANSLATIONS))
        raise ConfigError(
            f"catalog.properties.type must be one of {known}, got: {catalog_type or '(missing)'}"
        )
    return {"py-io-impl": FILE_IO_CLASS, **translate(dict(properties))}


#: ``tidemark.lake.file_io.FILE_IO_CLASS``, named here so that reading a pipeline file does not
#: import the lake fence (which checks PyIceberg's version)
FILE_IO_CLASS = "tidemark.lake.file_io.SmallWritesFileIO"


def _jdbc(properties: dict[str, str]) -> dict[str, str]:
    uri = properties.pop("uri", "")
    if not uri.startswith("jdbc:"):
        raise ConfigError(
            "catalog.properties.uri of a jdbc catalog must be a JDBC URL such as "
            f"jdbc:postgresql://host:5432/catalog, got: {_masked(uri) or '(missing)'}"
        )
    url = uri.removeprefix("jdbc:")
    scheme = url.split(":", 1)[0]
    dialect = _SQLALCHEMY_DIALECTS.get(scheme)
    if dialect is None:
        known = ", ".join(sorted(_SQLALCHEMY_DIALECTS))
        raise ConfigError(
            f"the jdbc catalog supports the databases {known} in Tidemark, got: jdbc:{scheme}"
        )
    user = properties.pop("jdbc.user", None)
    password = properties.pop("jdbc.password", None)
    properties.pop("type")
    properties = _object_store(properties)
    if scheme == "sqlite":
        return {**properties, "type": "sql", "uri": f"sqlite:{url.removeprefix('sqlite:')}"}
    parts = urlsplit(url)
    credentials = ""
    if user:
        credentials = quote(user, safe="")
        if password:
            credentials += ":" + quote(password, safe="")
        credentials += "@"
    sqlalchemy_uri = f"{dialect}://{credentials}{parts.netloc}{parts.path}"
    if parts.query:
        sqlalchemy_uri += f"?{parts.query}"
    return {**properties, "type": "sql", "uri": sqlalchemy_uri}


def _masked(uri: str) -> str:
    """``uri`` without the secrets a URL can carry: ``user:password@`` and ``password=``."""
    without_userinfo = re.sub(r"//([^/@:]*):[^/@]*@", r"//\1:***@", uri)
    return re.sub(r"(?i)(password=)[^&;]*", r"\1***", without_userinfo)


def _passthrough(properties: dict[str, str]) -> dict[str, str]:
    return _object_store(properties)


def _object_store(properties: dict[str, str]) -> dict[str, str]:
    """Iceberg's Java S3FileIO properties in PyIceberg's words: the shared ones (``s3.endpoint``,
    the keys, ``client.region``) mean the same in both; the rest differ.

    ``io-impl`` names a Java class PyIceberg cannot load: it picks its FileIO by the location's
    scheme. ``s3.path-style-access`` is Java's inverse of ``s3.force-virtual-addressing``.
    """
    io_impl = properties.pop("io-impl", None)
    if io_impl is not None and io_impl not in _JAVA_FILE_IO:
        raise ConfigError(
            f"catalog.properties.io-impl {io_impl!r} is not one of Iceberg's own FileIOs "
            f"({', '.join(sorted(_JAVA_FILE_IO))}), and ingest's PyIceberg cannot load a Java "
            "class: remove it, or use one of those"
        )
    path_style = properties.pop("s3.path-style-access", None)
    if path_style is not None:
        if path_style.lower() not in ("true", "false"):
            raise ConfigError(
                "catalog.properties.s3.path-style-access must be true or false, got: "
                f"{path_style!r}"
            )
        properties.setdefault(
            "s3.force-virtual-addressing", "false" if path_style.lower() == "true" else "true"
        )
    if "s3.endpoint" in properties and not {"s3.region", "client.region"} & properties.keys():
        # without a region PyIceberg asks AWS where the bucket is: a store of one's own (an
        # endpoint) is not on AWS, and the question would hang or fail at the first write
        raise ConfigError(
            "a catalog with catalog.properties.s3.endpoint needs catalog.properties.client.region "
            "(the region the store answers for, us-east-1 for most S3-compatible stores)"
        )
    return properties


#: the FileIO classes of Iceberg's Java catalogs that PyIceberg has its own equivalent of
_JAVA_FILE_IO = frozenset(
    {
        "org.apache.iceberg.aws.s3.S3FileIO",
        "org.apache.iceberg.hadoop.HadoopFileIO",
        "org.apache.iceberg.io.ResolvingFileIO",
        "org.apache.iceberg.gcp.gcs.GCSFileIO",
        "org.apache.iceberg.azure.adlsv2.ADLSFileIO",
    }
)


def _hadoop(properties: dict[str, str]) -> dict[str, str]:
    raise ConfigError(
        "catalog.properties.type 'hadoop' cannot be shared with PyIceberg, which ingest uses: "
        "use a jdbc catalog (PostgreSQL) or a rest catalog"
    )


_TRANSLATIONS: dict[str, Callable[[dict[str, str]], dict[str, str]]] = {
    "jdbc": _jdbc,
    "rest": _passthrough,
    "hive": _passthrough,
    "glue": _passthrough,
    "hadoop": _hadoop,
}
