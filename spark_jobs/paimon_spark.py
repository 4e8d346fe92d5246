"""Paimon's own Spark runtime (``paimon-spark-4.1_2.13``, 2.0 or later), where it is on the
classpath: a job's pinned inputs and window changes read through Paimon's ``SparkCatalog``
instead of Tidemark's ``tidemark_paimon`` data source (``spark_jobs.paimon_inputs``).

::

    if available(spark):
        register_catalog(spark, catalog_options)
        frame = spark.sql(snapshot_query("shop.orders", 12, ["id", "amount"]))
        changes = spark.sql(changes_query("shop.orders", 11, 12, [...]))

The pipeline's Paimon catalog is registered in each session as ``tidemark_paimon`` (its
``catalog.properties`` as the catalog's options); a snapshot is read with ``VERSION AS OF
<snapshot id>`` and the changes after one snapshot up to another with Paimon's
``paimon_incremental_query`` (its ``incremental-between``: the first exclusive, the second
inclusive). Both are Paimon's documented Spark forms; **neither ran here**: no paimon-spark jar
is served to this stack, so the tests cover the queries' text and the data source's path
(docs/paimon.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

#: Paimon's Spark catalog: in paimon-spark only (paimon-bundle has none of Spark's classes)
CATALOG_CLASS = "org.apache.paimon.spark.SparkCatalog"
#: the name the pipeline's Paimon catalog has in a job's session
CATALOG_NAME = "tidemark_paimon"


def available(spark: SparkSession) -> bool:
    """Whether paimon-spark is on the driver's classpath."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "the Spark session has stopped"
    try:
        jvm.py4j.reflection.ReflectionUtil.classForName(CATALOG_CLASS)
    except Py4JError:  # ClassNotFoundException, wrapped
        return False
    return True


def catalog_conf(catalog_options: Mapping[str, str]) -> dict[str, str]:
    """The session conf that registers the Paimon catalog as ``CATALOG_NAME``."""
    prefix = f"spark.sql.catalog.{CATALOG_NAME}"
    return {prefix: CATALOG_CLASS, **{f"{prefix}.{k}": v for k, v in catalog_options.items()}}


def register_catalog(spark: SparkSession, catalog_options: Mapping[str, str]) -> None:
    """Register the catalog in ``spark``'s session (Spark loads it on first use)."""
    for key, value in catalog_conf(catalog_options).items():
        spark.conf.set(key, value)


def snapshot_query(table: str, snapshot_id: int, columns: Sequence[str]) -> str:
    """``columns`` of ``table`` (``db.t``) as of snapshot ``snapshot_id``."""
    return f"SELECT {_list(columns)} FROM {_qualified(table)} VERSION AS OF {int(snapshot_id)}"


def changes_query(table: str, after: int, through: int, columns: Sequence[str]) -> str:
    """``columns`` of each change to ``table`` committed after snapshot ``after`` up to
    ``through``."""
    name = f"{CATALOG_NAME}.{table}".replace("'", "''")
    return (
        f"SELECT {_list(columns)} FROM paimon_incremental_query("
        f"'{name}', '{int(after)}', '{int(through)}')"
    )


def _qualified(table: str) -> str:
    database, name = table.split(".", 1)
    return ".".join(_quoted(part) for part in (CATALOG_NAME, database, name))


def _list(columns: Sequence[str]) -> str:
    return ", ".join(_quoted(column) for column in columns)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
