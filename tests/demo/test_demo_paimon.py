"""What `tidemark demo --sink paimon` does beyond the Iceberg demo's runs: its pipeline file, and
its clean slate in a Paimon warehouse."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from ingest.changelog.catalogs import open_sink_catalog
from tidemark.app.cli import build_parser
from tidemark.app.commands.demo import demo_pipeline_file
from tidemark.app.demo.runner import DEMO_PAIMON_PIPELINE, DEMO_PIPELINES
from tidemark.config import PaimonSink, load_pipeline
from tidemark.errors import ConfigError
from tidemark.sinks.protocols import SinkTableSpec


def test_sink_paimon_runs_the_paimon_pipeline_file_on_local_disk_only() -> None:
    parse = build_parser().parse_args
    paimon = parse(["demo", "--sink", "paimon"])
    assert demo_pipeline_file(paimon, DEMO_PIPELINES, DEMO_PAIMON_PIPELINE) == DEMO_PAIMON_PIPELINE
    iceberg = parse(["demo", "--storage", "s3"])
    assert demo_pipeline_file(iceberg, DEMO_PIPELINES, DEMO_PAIMON_PIPELINE) == DEMO_PIPELINES["s3"]
    with pytest.raises(ConfigError, match="local disk only"):
        demo_pipeline_file(
            parse(["demo", "--sink", "paimon", "--storage", "s3"]),
            DEMO_PIPELINES,
            DEMO_PAIMON_PIPELINE,
        )


def test_the_paimon_demo_is_the_shop_on_paimon_with_an_iceberg_catalog_for_its_job() -> None:
    config = load_pipeline(DEMO_PAIMON_PIPELINE)

    assert isinstance(config.sink, PaimonSink)
    assert config.iceberg_catalog is not None  # the report goes there
    assert [job.name for job in config.tidemark.jobs] == ["shop_per_window"]


def test_the_clean_slate_drops_a_namespaces_paimon_tables_with_their_files(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    lake = open_sink_catalog("paimon", "tidemark", {"warehouse": str(warehouse)})
    lake.create_namespace_if_not_exists("demo")
    data = pa.schema([("id", pa.int64())])
    for name in ("orders", "payments"):
        lake.open_changelog(SinkTableSpec(f"demo.{name}", data, keys=("id",)), None)

    assert sorted(lake.purge_namespace("demo")) == ["demo.orders", "demo.payments"]
    assert lake.table_names("demo") is None
    assert not (warehouse / "demo.db").exists()
    assert lake.purge_namespace("demo") == []  # gone already: nothing to do
