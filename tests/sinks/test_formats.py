"""The lake formats ingest can write, by the sink's ``type``."""

from __future__ import annotations

import pytest

from ingest.changelog.catalogs import SINK_CATALOGS, open_sink_catalog
from tests.sinks.test_changelog_contract import FORMATS_ON_STORAGES
from tidemark.errors import ConfigError


def test_every_format_ingest_writes_runs_the_changelog_contract() -> None:
    assert {sink_format for sink_format, _ in FORMATS_ON_STORAGES} == set(SINK_CATALOGS)


def test_an_unknown_format_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="use one of iceberg, paimon") as refused:
        open_sink_catalog("delta", "tidemark", {})
    assert "'delta'" in str(refused.value)
