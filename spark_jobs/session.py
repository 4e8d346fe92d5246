"""Spark sessions wired to the Iceberg catalog; the only place that builds one."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from spark_jobs.arguments import SparkTarget
from tidemark.config import PipelineConfig
from tidemark.config.model import reveal

# Catalog properties that are PyIceberg's or Tidemark's alone, never passed to Spark.
_NOT_FOR_SPARK = frozenset({"py-io-impl"})


@dataclass(frozen=True)
class SparkSettings:
    """Where Spark runs and what it loads; ``conf`` overrides anything set here.

    ``master`` None leaves the master to ``spark-submit --master``.
    """

    app_name: str = "tidemark"
    master: str | None = "local[*]"
    jars: Sequence[Path] = ()
    conf: Mapping[str, str] = field(default_factory=dict)


def build_session(
    settings: SparkSettings, catalog_name: str, catalog_properties: Mapping[str, str]
) -> SparkSession:
    """A session whose catalog ``catalog_name`` is the Iceberg catalog the ingest writes to."""
    builder = SparkSession.builder.appName(settings.app_name)
    if settings.master is not None:
        builder = builder.master(settings.master)
    for key, value in spark_conf(settings, catalog_name, catalog_properties).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def spark_conf(
    settings: SparkSettings, catalog_name: str, catalog_properties: Mapping[str, str]
) -> dict[str, str]:
    prefix = f"spark.sql.catalog.{catalog_name}"
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        # ingest commits every few seconds from another process: never read a cached table
        f"{prefix}.cache-enabled": "false",
    }
    if settings.jars:
        conf["spark.jars"] = ",".join(str(jar) for jar in settings.jars)
    for key, value in catalog_properties.items():
        if key not in _NOT_FOR_SPARK:
            conf[f"{prefix}.{key}"] = value
    conf.update(settings.conf)
    return conf


def pipeline_session(config: PipelineConfig, target: SparkTarget, app_name: str) -> SparkSession:
    """The pipeline's Spark session: its catalog, under its name, as the default catalog."""
    master = target.master
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this process
    if master is None and not under_submit:
        master = "local[*]"
    jars: Sequence[Path] = target.jars
    if not jars and not under_submit:
        jars = _local_stack_jars()
    settings = SparkSettings(
        app_name=app_name,
        master=master,
        jars=jars,
        conf={"spark.sql.defaultCatalog": config.tidemark.catalog_name},
    )
    return build_session(
        settings, config.tidemark.catalog_name, reveal(config.sink.catalog_properties)
    )


def _local_stack_jars() -> list[Path]:
    from tidemark.stack.settings import StackSettings
    from tidemark.stack.spark_runtime import SparkRuntime

    return SparkRuntime(StackSettings.from_env()).jars()
