"""One catalog description, in Iceberg's Java property names, serves PyIceberg and Spark."""

from __future__ import annotations

import pytest

from spark_jobs.session import SparkSettings, spark_conf
from tidemark.catalog import FILE_IO_CLASS, pyiceberg_properties
from tidemark.errors import ConfigError
from tidemark.lake import file_io

JDBC = {
    "type": "jdbc",
    "uri": "jdbc:postgresql://db.internal:5432/lake?sslmode=require",
    "jdbc.user": "iceberg",
    "jdbc.password": "p@ss/word",
    "warehouse": "s3://bucket/warehouse",
}


def test_a_jdbc_catalog_becomes_a_pyiceberg_sql_catalog_with_credentials_in_the_url() -> None:
    assert pyiceberg_properties(JDBC) == {
        "py-io-impl": FILE_IO_CLASS,
        "type": "sql",
        "uri": "postgresql+psycopg2://iceberg:p%40ss%2Fword@db.internal:5432/lake?sslmode=require",
        "warehouse": "s3://bucket/warehouse",
    }


def test_a_rest_catalog_passes_through_unchanged() -> None:
    rest = {"type": "rest", "uri": "https://catalog:8181", "warehouse": "lake", "token": "t"}

    assert pyiceberg_properties(rest) == {"py-io-impl": FILE_IO_CLASS, **rest}


def test_pyicebergs_file_io_is_tidemarks_unless_the_file_names_one() -> None:
    """``tidemark.lake.file_io`` sends small S3 files in one request; the name in
    ``tidemark.catalog`` is the class's."""
    assert FILE_IO_CLASS == file_io.FILE_IO_CLASS
    assert FILE_IO_CLASS == f"{file_io.__name__}.{file_io.SmallWritesFileIO.__name__}"
    own = {"type": "rest", "uri": "http://catalog", "py-io-impl": "my.FileIO"}
    assert pyiceberg_properties(own)["py-io-impl"] == "my.FileIO"


#: a REST catalog over an S3-compatible store, as Iceberg's Java clients (Flink, Spark) take it
REST_ON_S3 = {
    "type": "rest",
    "uri": "http://catalog:8181",
    "warehouse": "s3://lake/",
    "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
    "s3.endpoint": "http://store:9000",
    "s3.path-style-access": "true",
    "s3.access-key-id": "key",
    "s3.secret-access-key": "secret",
    "client.region": "eu-west-1",
}


def test_java_s3_file_io_properties_become_pyiceberg_ones() -> None:
    """PyIceberg picks its FileIO by the location's scheme and reads the shared names (keys,
    endpoint, ``client.region``) itself; path style is its virtual addressing turned off."""
    assert pyiceberg_properties(REST_ON_S3) == {
        "py-io-impl": FILE_IO_CLASS,
        "type": "rest",
        "uri": "http://catalog:8181",
        "warehouse": "s3://lake/",
        "s3.endpoint": "http://store:9000",
        "s3.force-virtual-addressing": "false",
        "s3.access-key-id": "key",
        "s3.secret-access-key": "secret",
        "client.region": "eu-west-1",
    }


def test_a_jdbc_catalog_on_s3_translates_its_file_io_too() -> None:
    translated = pyiceberg_properties({**JDBC, "s3.path-style-access": "false", "s3.region": "x"})

    assert translated["s3.force-virtual-addressing"] == "true"
    assert "s3.path-style-access" not in translated


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        (
            {"uri": "jdbc:postgresql://h/db"},
            "catalog.properties.type must be one of glue, hadoop, hive, jdbc, rest, got: (missing)",
        ),
        (
            {"type": "nessie"},
            "catalog.properties.type must be one of glue, hadoop, hive, jdbc, rest, got: nessie",
        ),
        (
            {"type": "jdbc", "uri": "postgresql://h/db"},
            "catalog.properties.uri of a jdbc catalog must be a JDBC URL such as "
            "jdbc:postgresql://host:5432/catalog, got: postgresql://h/db",
        ),
        (
            {"type": "jdbc", "uri": "postgresql://u:hunter2@h/db?password=hunter2"},
            "catalog.properties.uri of a jdbc catalog must be a JDBC URL such as "
            "jdbc:postgresql://host:5432/catalog, got: postgresql://u:***@h/db?password=***",
        ),
        (
            {**REST_ON_S3, "io-impl": "com.example.MyFileIO"},
            "catalog.properties.io-impl 'com.example.MyFileIO' is not one of Iceberg's own "
            "FileIOs (org.apache.iceberg.aws.s3.S3FileIO, org.apache.iceberg.azure.adlsv2."
            "ADLSFileIO, org.apache.iceberg.gcp.gcs.GCSFileIO, org.apache.iceberg.hadoop."
            "HadoopFileIO, org.apache.iceberg.io.ResolvingFileIO), and ingest's PyIceberg "
            "cannot load a Java class: remove it, or use one of those",
        ),
        (
            {**REST_ON_S3, "s3.path-style-access": "yes"},
            "catalog.properties.s3.path-style-access must be true or false, got: 'yes'",
        ),
        (
            {key: value for key, value in REST_ON_S3.items() if key != "client.region"},
            "a catalog with catalog.properties.s3.endpoint needs catalog.properties.client.region "
            "(the region the store answers for, us-east-1 for most S3-compatible stores)",
        ),
        (
            {"type": "jdbc", "uri": "jdbc:oracle:thin:@h:1521/db"},
            "the jdbc catalog supports the databases postgresql, sqlite in Tidemark, "
            "got: jdbc:oracle",
        ),
        (
            {"type": "hadoop", "warehouse": "hdfs://nn/lake"},
            "catalog.properties.type 'hadoop' cannot be shared with PyIceberg, which ingest "
            "uses: use a jdbc catalog (PostgreSQL) or a rest catalog",
        ),
    ],
)
def test_a_catalog_pyiceberg_cannot_use_is_refused_with_the_fix(
    properties: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        pyiceberg_properties(properties)

    assert str(error.value) == message


def test_spark_gets_the_same_properties_under_the_same_catalog_name() -> None:
    conf = spark_conf(SparkSettings(conf={"spark.sql.shuffle.partitions": "64"}), "lake", JDBC)

    assert conf["spark.sql.catalog.lake"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf["spark.sql.catalog.lake.type"] == "jdbc"
    assert conf["spark.sql.catalog.lake.uri"] == JDBC["uri"]
    assert conf["spark.sql.catalog.lake.jdbc.user"] == "iceberg"
    assert conf["spark.sql.shuffle.partitions"] == "64"  # the user's settings win
