"""Where the local stack's services listen, typed, for the tests, the demo and scripts."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from tidemark.source import SourceConnection

#: the source servers the stack runs
SourceFlavor = Literal["mariadb", "mysql"]
SOURCE_FLAVORS: tuple[SourceFlavor, ...] = ("mariadb", "mysql")

#: the lakes the stack serves: a JDBC catalog over a local-disk warehouse, and a REST catalog
#: over an S3 object store (what production runs)
Storage = Literal["local", "s3"]
STORAGES: tuple[Storage, ...] = ("local", "s3")


class SourceEndpoint(BaseModel):
    """A MariaDB or MySQL server of the stack, with its two accounts."""

    model_config = ConfigDict(frozen=True)

    flavor: SourceFlavor
    host: str
    port: int
    server_id: int
    admin_user: str
    admin_password: SecretStr
    cdc_user: str
    cdc_password: SecretStr

    @property
    def name(self) -> str:
        """The server as people name it: MariaDB or MySQL."""
        return {"mariadb": "MariaDB", "mysql": "MySQL"}[self.flavor]

    def cdc_source(self, server_id: int) -> SourceConnection:
        """The least-privilege CDC account, as a reader with replica id ``server_id``."""
        return SourceConnection(
            host=self.host,
            port=self.port,
            user=self.cdc_user,
            password=self.cdc_password,
            server_id=server_id,
        )

    def admin_source(self) -> SourceConnection:
        """An account that may create databases and write rows, for workloads and tests."""
        return SourceConnection(
            host=self.host,
            port=self.port,
            user=self.admin_user,
            password=self.admin_password,
            server_id=self.server_id,
        )


class CatalogEndpoint(BaseModel):
    """The Iceberg JDBC catalog, described with Iceberg's Java property names."""

    model_config = ConfigDict(frozen=True)

    name: str
    uri: str
    user: str
    password: SecretStr
    warehouse: str

    def properties(self) -> dict[str, str]:
        """What a pipeline YAML puts under ``sink: catalog.properties.*``."""
        return {
            "type": "jdbc",
            "uri": self.uri,
            "jdbc.user": self.user,
            "jdbc.password": self.password.get_secret_value(),
            "warehouse": self.warehouse,
        }


class ObjectStoreEndpoint(BaseModel):
    """The stack's S3-compatible object store (SeaweedFS), with its one key pair."""

    model_config = ConfigDict(frozen=True)

    endpoint: str  # http://127.0.0.1:PORT
    region: str
    access_key_id: str
    secret_access_key: SecretStr
    bucket: str

    def environment(self) -> dict[str, str]:
        """The AWS SDKs' own variables for this store's keys and region."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key.get_secret_value(),
            "AWS_REGION": self.region,
        }


class RestCatalogEndpoint(BaseModel):
    """The Iceberg REST catalog (Apache Iceberg's own server), its warehouse on the object
    store, described with Iceberg's Java property names."""

    model_config = ConfigDict(frozen=True)

    name: str
    uri: str  # http://127.0.0.1:PORT
    warehouse: str  # s3://BUCKET/
    object_store: ObjectStoreEndpoint
    #: the scheduler's state: a REST catalog has no database of its own to keep it in, so the
    #: stack's PostgreSQL (``tidemark.state-dsn``)
    state_dsn: SecretStr

    def properties(self) -> dict[str, str]:
        """What a pipeline YAML puts under ``sink: catalog.properties.*``."""
        store = self.object_store
        return {
            "type": "rest",
            "uri": self.uri,
            "warehouse": self.warehouse,
            "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            "s3.endpoint": store.endpoint,
            "s3.path-style-access": "true",
            "s3.access-key-id": store.access_key_id,
            "s3.secret-access-key": store.secret_access_key.get_secret_value(),
            "client.region": store.region,
        }


class KafkaEndpoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    bootstrap_servers: str


class SparkEndpoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    master: str
    jars: tuple[Path, ...]


#: the catalog of either lake: both say what a pipeline file puts under ``catalog.properties``
LakeEndpoint = CatalogEndpoint | RestCatalogEndpoint


class StackEndpoints(BaseModel):
    model_config = ConfigDict(frozen=True)

    mariadb: SourceEndpoint
    mysql: SourceEndpoint
    catalog: CatalogEndpoint
    object_store: ObjectStoreEndpoint
    rest_catalog: RestCatalogEndpoint
    kafka: KafkaEndpoint
    spark: SparkEndpoint

    def source(self, flavor: SourceFlavor) -> SourceEndpoint:
        return self.mariadb if flavor == "mariadb" else self.mysql

    def lake(self, storage: Storage) -> LakeEndpoint:
        """The catalog of ``storage``: the JDBC one on local disk, or the REST one on S3."""
        return self.catalog if storage == "local" else self.rest_catalog

    def pipeline_environment(self) -> dict[str, str]:
        """The variables the pipeline files in ``configs/`` read their addresses from."""
        catalog = self.catalog
        sources: dict[str, str] = {}
        for flavor in SOURCE_FLAVORS:
            source, prefix = self.source(flavor), f"TIDEMARK_{flavor.upper()}"
            sources |= {
                f"{prefix}_HOST": source.host,
                f"{prefix}_PORT": str(source.port),
                f"{prefix}_USER": source.cdc_user,
                f"{prefix}_PASSWORD": source.cdc_password.get_secret_value(),
            }
        return {
            **sources,
            "TIDEMARK_CATALOG_URI": catalog.uri,
            "TIDEMARK_CATALOG_USER": catalog.user,
            "TIDEMARK_CATALOG_PASSWORD": catalog.password.get_secret_value(),
            "TIDEMARK_WAREHOUSE": catalog.warehouse,
            # a Paimon warehouse beside the Iceberg one, as a path (pypaimon's local form)
            "TIDEMARK_PAIMON_WAREHOUSE": f"{unquote(urlsplit(catalog.warehouse).path)}/paimon",
            "TIDEMARK_REST_CATALOG_URI": self.rest_catalog.uri,
            "TIDEMARK_S3_ENDPOINT": self.object_store.endpoint,
            "TIDEMARK_STATE_DSN": self.rest_catalog.state_dsn.get_secret_value(),
            **self.object_store.environment(),
            "TIDEMARK_KAFKA_BOOTSTRAP": self.kafka.bootstrap_servers,
        }
