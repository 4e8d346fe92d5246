"""docs/configuration.md agrees with the option declarations: the ``tidemark:`` block's reference
is rendered from them, its example sets each option and nothing else, and every Flink CDC option
Tidemark accepts is named."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from tidemark.config import load_pipeline
from tidemark.config.declaration import declared
from tidemark.config.model import (
    MySqlSource,
    PipelineSettings,
    RouteRule,
    Startup,
    TransformRule,
)
from tidemark.config.pipeline_block import PIPELINE_OPTIONS
from tidemark.config.reference import options, render, written_in
from tidemark.config.sink import ICEBERG_OPTIONS, PAIMON_OPTIONS
from tidemark.config.source import MYSQL_OPTIONS

DOCS = Path(__file__).parents[2] / "docs" / "configuration.md"
REGENERATE = ".venv/bin/python -m tidemark.config.reference --write docs/configuration.md"


def docs() -> str:
    return DOCS.read_text(encoding="utf-8")


def example_block() -> str:
    """The YAML example of the ``tidemark:`` block."""
    (block,) = re.findall(r"```yaml\n(tidemark:\n.*?)```", docs(), flags=re.DOTALL)
    return block


def example_paths(node: Any, prefix: str = "") -> Iterator[str]:
    """Key paths of the example, with names of tables and jobs as ``<table>`` and ``<name>``,
    and librdkafka properties as ``kafka.*``."""
    for key, value in node.items():
        path = prefix + ("kafka.*" if key.startswith("kafka.") else key)
        yield path
        if path in ("tables", "jobs"):
            entry = "<table>" if path == "tables" else "<name>"
            for inner in value.values():
                yield from example_paths(inner, f"{path}.{entry}.")
        elif isinstance(value, dict) and not path.endswith(
            ("properties", "variables", "spark", "iceberg-catalog")
        ):
            yield from example_paths(value, f"{path}.")


def test_the_reference_table_is_what_the_declarations_render() -> None:
    assert written_in(docs()) == render(), f"the reference is out of date: run {REGENERATE}"


def test_the_example_block_sets_every_option_and_only_declared_ones() -> None:
    example = yaml.safe_load(example_block())["tidemark"]
    assert sorted(set(example_paths(example))) == sorted(path for path, _ in options())


def test_the_example_block_is_valid(write_file: Callable[..., Path]) -> None:
    write_file("SELECT 1", "sql/orders_per_minute.sql")
    source = (
        "source: {type: mysql, hostname: db, username: cdc, password: pw, tables: shop.orders}\n"
        "sink: {type: iceberg, catalog.properties.type: rest, catalog.properties.uri: "
        "'http://catalog:8181'}\n"
    )
    config = load_pipeline(write_file(source + example_block()), {})
    assert config.tidemark.jobs[0].name == "orders_per_minute"


def named_in_docs() -> set[str]:
    """Every `code` span of the prose, with `a.{b,c}` spelled out."""
    prose = re.sub(r"```.*?```", "", docs(), flags=re.DOTALL)
    names: set[str] = set()
    for span in re.findall(r"`([^`]+)`", prose):
        span = re.sub(r"\s+", "", span)
        braces = re.fullmatch(r"(.*)\{(.*)\}(.*)", span)
        if braces is None:
            names.add(span)
        else:
            head, alternatives, tail = braces.groups()
            names.update(f"{head}{alternative}{tail}" for alternative in alternatives.split(","))
    return names


def test_every_flink_cdc_option_tidemark_accepts_is_named_in_the_docs() -> None:
    names = named_in_docs()
    wildcards = [name.removesuffix("*") for name in names if name.endswith("*")]

    def named(key: str) -> bool:
        return key in names or any(key.startswith(prefix) for prefix in wildcards)

    keys = [
        *(
            option.key
            for spec in (MYSQL_OPTIONS, ICEBERG_OPTIONS, PAIMON_OPTIONS, PIPELINE_OPTIONS)
            for option in spec.options
        ),
        *(
            prefix.prefix + "*"
            for spec in (MYSQL_OPTIONS, ICEBERG_OPTIONS, PAIMON_OPTIONS, PIPELINE_OPTIONS)
            for prefix in spec.prefixes
        ),
        *(item.key for model in (RouteRule, TransformRule) for item in declared(model)),
    ]
    assert [key for key in keys if not named(key)] == []


def test_every_option_says_what_it_does_or_why_it_does_nothing() -> None:
    flat = (MySqlSource, Startup, PipelineSettings, RouteRule, TransformRule)
    flink = (MYSQL_OPTIONS, ICEBERG_OPTIONS, PAIMON_OPTIONS, PIPELINE_OPTIONS)
    silent = [
        *(f"tidemark.{path}" for path, item in options() if not item.option.doc),
        *(
            f"{m.__name__}.{item.attribute}"
            for m in flat
            for item in declared(m)
            if not item.option.doc
        ),
        *(o.key for spec in flink for o in spec.options if not (o.doc or o.no_effect)),
        *(p.prefix for spec in flink for p in spec.prefixes if not (p.doc or p.no_effect)),
    ]
    assert silent == []


def test_files_the_config_package_names_exist() -> None:
    """A docstring that sends the reader to a test or a page names one that is there."""
    root = Path(__file__).parents[2]
    named = {
        (source.name, name)
        for source in (root / "tidemark" / "config").glob("*.py")
        for name in re.findall(r"\b(?:tests|docs)/[\w/.-]+\.(?:py|md)\b", source.read_text())
    }
    assert named, "no file names found: the pattern is wrong"
    assert [(source, name) for source, name in sorted(named) if not (root / name).is_file()] == []
