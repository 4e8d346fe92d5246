"""One scheduler process runs the windows of several pipelines on one Spark session, which
holds one catalog per name: pipelines that name different catalogs alike are refused."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from pyspark.sql import SparkSession

from spark_jobs.executor import SparkWindowExecutor
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.errors import ConfigError

SOURCE = """\
source: {type: mysql, hostname: db, username: cdc, password: pw, tables: shop.orders}
sink:
  type: iceberg
"""
JDBC = "  catalog.properties.type: jdbc\n  catalog.properties.uri: jdbc:postgresql://pg/lake\n"
REST = "  catalog.properties.type: rest\n  catalog.properties.uri: http://catalog:8181\n"


def _pipeline(folder: Path, name: str, catalog: str) -> PipelineConfig:
    path = folder / f"{name}.yaml"
    path.write_text(SOURCE + catalog + f"pipeline: {{name: {name}}}\n")
    return load_pipeline(path, {})


def test_two_catalogs_under_one_name_are_refused_before_anything_runs(tmp_path: Path) -> None:
    configs = [_pipeline(tmp_path, "on_jdbc", JDBC), _pipeline(tmp_path, "on_rest", REST)]

    with pytest.raises(ConfigError, match="different catalogs under one name"):
        SparkWindowExecutor(configs, cast(SparkSession, None))
