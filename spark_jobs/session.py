"""Spark sessions wired to the Iceberg catalog; the only place that builds one.

A Paimon pipeline's session has ``tidemark.iceberg-catalog`` (where its jobs' outputs go) as its
default catalog, and the ``tidemark_paimon`` data source its jobs read the Paimon tables with
(``spark_jobs.paimon_inputs``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from spark_jobs import paimon_datasource
from spark_jobs.arguments import SparkTarget
from tidemark.config import PipelineConfig
from tidemark.config.model import PaimonSink, reveal

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
    settings: SparkSettings, catalog_name: str, catalog_properties: Mapping[str, str] | None
) -> SparkSession:
    """A session whose catalog ``catalog_name`` is the Iceberg catalog the ingest writes to
    (``catalog_properties`` None: a Paimon pipeline without one, no Iceberg catalog).

    A process that already has a session (one scheduler running the windows of pipelines on
    different catalogs of the same name, a test run on two storages) gets a session of its
    own on the same Spark context: Spark keeps a catalog it has loaded for the session's
    lifetime, so another catalog under the same name needs another session.
    """
    conf = spark_conf(settings, catalog_name, catalog_properties)
    active = SparkSession.getActiveSession()
    if active is None:
        if (settings.master or "").startswith("local"):
            # Python workers (the Paimon data source's) run this interpreter, with its
            # packages, unless told otherwise; pyspark's default is whatever python3 is on PATH
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.appName(settings.app_name)
        if settings.master is not None:
            builder = builder.master(settings.master)
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    session_conf = {key: value for key, value in conf.items() if key.startswith(_SESSION_CONF)}
    if all(active.conf.get(key, None) == value for key, value in session_conf.items()):
        return active
    settings_key = frozenset(session_conf.items())
    session = _OWN_SESSIONS.get(settings_key)
    if session is None or session.sparkContext is not active.sparkContext:
        session = _OWN_SESSIONS[settings_key] = active.newSession()
        for key, value in session_conf.items():
            session.conf.set(key, value)
    return session


#: the sessions of their own ``build_session`` made, by their settings: the next window of
#: the same pipeline uses its catalog as loaded
_OWN_SESSIONS: dict[frozenset[tuple[str, str]], SparkSession] = {}


def jvm_died(session: SparkSession) -> bool:
    """Whether the driver's JVM this process started for ``session`` has exited (killed by
    the kernel's OOM killer, say): every call on the session fails from then on."""
    process = getattr(session.sparkContext._gateway, "proc", None)
    return process is not None and process.poll() is not None


def forget_dead_jvm() -> None:
    """Drop pyspark's handles on a driver JVM that died, so that the next ``build_session``
    starts a new one (pyspark would hand out the dead session for ever)."""
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None
    _OWN_SESSIONS.clear()


#: what a session of its own may set differently: the context's settings (jars, master, the
#: SQL extensions) are shared by every session of the process
_SESSION_CONF = ("spark.sql.catalog.", "spark.sql.defaultCatalog", "spark.sql.session.")


def spark_conf(
    settings: SparkSettings, catalog_name: str, catalog_properties: Mapping[str, str] | None
) -> dict[str, str]:
    prefix = f"spark.sql.catalog.{catalog_name}"
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
    }
    if catalog_properties is not None:
        conf[prefix] = "org.apache.iceberg.spark.SparkCatalog"
        # ingest commits every few seconds from another process: never read a cached table
        conf[f"{prefix}.cache-enabled"] = "false"
    if settings.jars:
        conf["spark.jars"] = ",".join(str(jar) for jar in settings.jars)
    for key, value in (catalog_properties or {}).items():
        if key not in _NOT_FOR_SPARK:
            conf[f"{prefix}.{key}"] = value
    conf.update(settings.conf)
    return conf


def pipeline_session(config: PipelineConfig, target: SparkTarget, app_name: str) -> SparkSession:
    """The pipeline's Spark session: its Iceberg catalog (a Paimon pipeline's
    ``tidemark.iceberg-catalog``), under its name, as the default catalog; for a Paimon
    pipeline, with the ``tidemark_paimon`` data source registered."""
    iceberg = config.iceberg_catalog
    master = target.master
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this process
    if master is None and not under_submit:
        master = "local[*]"
    jars: Sequence[Path] = target.jars
    if not jars and not under_submit:
        jars = _local_stack_jars()
    default = {"spark.sql.defaultCatalog": config.tidemark.catalog_name} if iceberg else {}
    settings = SparkSettings(app_name=app_name, master=master, jars=jars, conf=default)
    session = build_session(
        settings, config.tidemark.catalog_name, None if iceberg is None else reveal(iceberg)
    )
    if isinstance(config.sink, PaimonSink):
        paimon_datasource.register(session)
    return session


def _local_stack_jars() -> list[Path]:
    from tidemark.stack.settings import StackSettings
    from tidemark.stack.spark_runtime import SparkRuntime

    return SparkRuntime(StackSettings.from_env()).jars()
