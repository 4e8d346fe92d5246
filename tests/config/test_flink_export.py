"""``export-flink-cdc``: the file minus the tidemark block is still a valid Flink CDC file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.config.examples import EXAMPLES
from tidemark.config import load_pipeline, parse_pipeline
from tidemark.config.flink_export import SECRETS_LEFT, export_flink_cdc
from tidemark.errors import ConfigError

WriteFile = Callable[..., Path]

FLINK_PART = """\
# Orders into the lake.
source:
  type: mysql
  hostname: ${MYSQL_HOST:-db}   # the primary
  username: cdc
  password: ${MYSQL_PASSWORD}
  tables: shop.orders
  port: 3306

sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
"""

BLOCK = """\
# Five-minute reports.
tidemark:
  window: 5 min
  tables:
    shop.orders:
      unique-key: order_no

  # (more tables later)
"""

PIPELINE = """\
# The pipeline's settings.
pipeline:
  name: orders
"""

ENV = {"MYSQL_PASSWORD": "Sup3r-S3cret-Pa55"}


@pytest.mark.parametrize(
    "text",
    [
        FLINK_PART + "\n" + BLOCK + "\n" + PIPELINE,
        FLINK_PART + "\n" + PIPELINE + "\n" + BLOCK,
        BLOCK + "\n" + FLINK_PART + "\n" + PIPELINE,
    ],
    ids=["block in the middle", "block at the end", "block first"],
)
def test_export_drops_only_the_block(text: str) -> None:
    exported = export_flink_cdc(text, Path("p.yaml"), ENV)

    expected = text.replace(BLOCK, "")
    assert exported.replace("\n\n\n", "\n\n").strip() == expected.replace("\n\n\n", "\n\n").strip()
    assert "tidemark" not in yaml.safe_load(exported)
    # and what is left is a valid pure ingestion pipeline
    config = parse_pipeline(exported, Path("p.yaml"), ENV)
    assert config.has_extension is False
    assert config.source.password.get_secret_value() == ENV["MYSQL_PASSWORD"]


def test_a_file_without_the_block_is_exported_as_it_is() -> None:
    text = FLINK_PART + PIPELINE
    assert export_flink_cdc(text, Path("p.yaml"), ENV) == text


def test_resolve_replaces_references_except_secrets() -> None:
    text = FLINK_PART + BLOCK
    exported = export_flink_cdc(text, Path("p.yaml"), {**ENV, "MYSQL_HOST": "db1"}, resolve=True)

    assert exported.startswith(SECRETS_LEFT)
    document = yaml.safe_load(exported)
    assert document["source"]["hostname"] == "db1"
    assert document["source"]["password"] == "${MYSQL_PASSWORD}"
    assert document["source"]["port"] == 3306
    assert "tidemark" not in document
    assert ENV["MYSQL_PASSWORD"] not in exported


def test_flow_style_file_needs_resolve() -> None:
    text = "{source: {type: mysql}, sink: {type: iceberg}, tidemark: {window: 5 min}}\n"
    with pytest.raises(ConfigError, match="use --resolve, or write it in block style"):
        export_flink_cdc(text, Path("p.yaml"), {})
    assert "tidemark" not in export_flink_cdc(text, Path("p.yaml"), {}, resolve=True)


def test_examples_export_to_files_that_validate_without_the_block(
    write_file: WriteFile,
) -> None:
    for example in EXAMPLES:
        exported = export_flink_cdc(example.read_text(), example, {})
        config = load_pipeline(write_file(exported, example.name), {})
        assert config.has_extension is False, example.name
        assert config.source == load_pipeline(example, {}).source, example.name
