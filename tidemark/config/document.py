"""The entry point: a pipeline file in, a checked ``PipelineConfig`` (or every problem) out."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from tidemark.config.errors import PipelineConfigError, Problem, Problems
from tidemark.config.extension import EXTENSION_KEY, read_extension
from tidemark.config.fields import Reader
from tidemark.config.loader import MapNode, Node, Scalar, parse
from tidemark.config.model import (
    IcebergSink,
    MySqlSource,
    PaimonSink,
    PipelineConfig,
    PipelineSettings,
    RouteRule,
    StartupMode,
    TidemarkSettings,
    reveal,
)
from tidemark.config.patterns import split_table_id
from tidemark.config.pipeline_block import read_pipeline
from tidemark.config.rules import read_routes, read_transforms
from tidemark.config.sink import read_sink
from tidemark.config.source import read_source

logger = logging.getLogger(__name__)

FLINK_BLOCKS = ("source", "sink", "route", "transform", "pipeline")
TOP_LEVEL_KEYS = (*FLINK_BLOCKS, EXTENSION_KEY)


def load_pipeline(path: Path | str, environ: Mapping[str, str] | None = None) -> PipelineConfig:
    """Read and check the pipeline file at ``path``, substituting ``${VAR}`` from ``environ``
    (the process environment by default). Raises ``PipelineConfigError`` with every problem."""
    path = Path(path)
    return parse_pipeline(read_text(path), path, os.environ if environ is None else environ)


def read_text(path: Path) -> str:
    def fail(message: str) -> PipelineConfigError:
        return PipelineConfigError([Problem(str(path), None, "", message)])

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise fail("no such file") from None
    except IsADirectoryError:
        raise fail("is a folder, not a pipeline file") from None
    except OSError as error:
        raise fail(f"cannot be read: {error.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise fail(f"is not UTF-8 text (bad byte at offset {error.start})") from None


def parse_pipeline(text: str, path: Path, environ: Mapping[str, str]) -> PipelineConfig:
    """Check ``text`` (the content of ``path``); relative paths in it are relative to ``path``."""
    problems = Problems(str(path))
    reader = Reader(problems)
    root = parse(text, problems, environ)
    if root is None:
        problems.raise_if_errors()
        raise AssertionError("parse() gives a root or a problem")
    reader.check_keys(root, "", "the top level", TOP_LEVEL_KEYS, required=("source", "sink"))
    pipeline = read_pipeline(reader, _block(reader, root, "pipeline", optional=True), "pipeline")
    source_node = _block(reader, root, "source")
    source = read_source(reader, source_node, "source") if source_node else None
    sink_node = _block(reader, root, "sink")
    sink = (
        read_sink(reader, sink_node, "sink", pipeline.schema_change_behavior) if sink_node else None
    )
    routes = read_routes(reader, root.get("route"))
    transforms = read_transforms(reader, root.get("transform"))
    extension = root.get(EXTENSION_KEY)
    if isinstance(extension, Scalar) and extension.text is None:
        extension = None  # an empty `tidemark:` block: all defaults
    tidemark = read_extension(reader, extension, path.parent)
    if source is not None:
        _check_across(reader, root, source, pipeline)
    if source is not None and routes is not None and tidemark is not None and sink is not None:
        _check_table_names(reader, root, source, routes, tidemark, sink)
    if tidemark is not None and sink is not None:
        _check_jobs_catalog(reader, root, tidemark, sink)
        _check_state_database(reader, root, tidemark, sink)
    problems.raise_if_errors()
    assert source is not None and sink is not None
    assert routes is not None and transforms is not None and tidemark is not None
    warnings = problems.final_warnings()
    for warning in warnings:
        logger.debug("%s", warning)
    try:
        return PipelineConfig(
            path=path,
            source=source,
            sink=sink,
            routes=routes,
            transforms=transforms,
            pipeline=pipeline,
            tidemark=tidemark,
            has_extension=root.get(EXTENSION_KEY) is not None,
            warnings=warnings,
        )
    except ValidationError as error:  # a bug of ours; never show input values (secrets)
        details = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors(include_input=False)
        )
        raise PipelineConfigError([Problem(str(path), None, "", details)]) from None


def _block(reader: Reader, root: MapNode, name: str, *, optional: bool = False) -> MapNode | None:
    node = root.get(name)
    if node is None or (optional and isinstance(node, Scalar) and node.text is None):
        return None
    return reader.mapping(node, name)


def _check_table_names(
    reader: Reader,
    root: MapNode,
    source: MySqlSource,
    routes: tuple[RouteRule, ...],
    tidemark: TidemarkSettings,
    sink: IcebergSink | PaimonSink,
) -> None:
    """Warn about sink table names the pipeline cannot produce: most likely typos. Offline we
    know the names only when no route computes them (with $1 or replace-symbol)."""
    if any(rule.replace_symbol or "$" in rule.sink_table for rule in routes):
        return
    routed = {rule.sink_table for rule in routes}

    def produced(name: str) -> bool:
        parts = split_table_id(name)
        if name in routed or parts is None:
            return True
        unrouted = not any(rule.route.matches(name) for rule in routes)
        return unrouted and source.captures(*parts)

    named: list[tuple[str, str, Node | None]] = [
        (table, f'tidemark.tables."{table}"', _at(root, EXTENSION_KEY, "tables", table))
        for table in tidemark.tables
    ]
    for job in tidemark.jobs:
        path = f"tidemark.jobs.{job.name}.inputs"
        named += [
            (t, path, _at(root, EXTENSION_KEY, "jobs", job.name, "inputs")) for t in job.inputs
        ]
    named += [
        (table, "sink.partition.key", _at(root, "sink", "partition.key"))
        for table in sink.partitioned_tables
    ]
    for table, path, node in named:
        if not produced(table):
            reader.warning(
                node,
                path,
                f"{table} is neither a table source.tables captures nor a route's sink-table: "
                "check the name",
            )


def _check_jobs_catalog(
    reader: Reader, root: MapNode, tidemark: TidemarkSettings, sink: IcebergSink | PaimonSink
) -> None:
    """The jobs' SQL writes Iceberg tables: in an Iceberg sink's catalog, or in the one
    ``tidemark.iceberg-catalog`` names for a Paimon sink (whose catalog holds Paimon tables)."""
    if isinstance(sink, IcebergSink) and tidemark.iceberg_catalog:
        reader.warning(
            _at(root, EXTENSION_KEY, "iceberg-catalog"),
            "tidemark.iceberg-catalog",
            "is ignored: it is for a Paimon pipeline's jobs, and an Iceberg pipeline's jobs use "
            "the sink's catalog; remove it",
        )
    if isinstance(sink, PaimonSink) and tidemark.jobs and not tidemark.iceberg_catalog:
        reader.error(
            _at(root, EXTENSION_KEY, "jobs"),
            "tidemark.jobs",
            "a Paimon pipeline's jobs read the Paimon tables but write Iceberg tables (their "
            "SQL's INSERT INTO db.table), in a catalog the Paimon sink does not name: add "
            "tidemark.iceberg-catalog with that catalog's catalog.properties.* lines, as an "
            "Iceberg sink has them (catalog.properties.type: jdbc, catalog.properties.uri: ...)",
        )


def _check_state_database(
    reader: Reader, root: MapNode, tidemark: TidemarkSettings, sink: IcebergSink | PaimonSink
) -> None:
    """A scheduler keeps its state in the Iceberg catalog's PostgreSQL database unless told
    another: a pipeline the scheduler follows on any other catalog (a REST one, or a Paimon
    sink without a JDBC ``tidemark.iceberg-catalog``) must name one."""
    if tidemark.reports is None or tidemark.state_dsn is not None:
        return
    iceberg = sink.catalog_properties if isinstance(sink, IcebergSink) else tidemark.iceberg_catalog
    uri = reveal(iceberg).get("uri", "")
    if uri.startswith("jdbc:postgresql:"):
        return
    what = (
        "this catalog is not a jdbc:postgresql: one"
        if isinstance(sink, IcebergSink)
        else "a Paimon pipeline's state goes to tidemark.iceberg-catalog's database only when "
        "that is a jdbc:postgresql: one"
    )
    reader.warning(
        _at(root, EXTENSION_KEY, "reports"),
        "tidemark.reports",
        f"the scheduler keeps its state in a PostgreSQL database, and {what}: add "
        "tidemark.state-dsn (a libpq connection string), or give --state-dsn to tidemark "
        "schedule, run, status, ui and reset",
    )


def _at(node: Node | None, *keys: str) -> Node | None:
    for key in keys:
        if not isinstance(node, MapNode):
            return None
        node = node.get(key)
    return node


def _check_across(
    reader: Reader, root: MapNode, source: MySqlSource, pipeline: PipelineSettings
) -> None:
    pipeline_node = root.get("pipeline")
    block = pipeline_node if isinstance(pipeline_node, MapNode) else None
    if pipeline.runtime_mode == "BATCH" and source.startup.mode is not StartupMode.SNAPSHOT:
        reader.error(
            block.get("execution.runtime-mode") if block else None,
            "pipeline.execution.runtime-mode",
            "BATCH needs source.scan.startup.mode: snapshot (Flink CDC refuses other modes), "
            f"got: {source.startup.mode.value}",
        )
    if source.server_id is not None and source.server_id.size < pipeline.parallelism:
        source_node = root.get("source")
        id_node = source_node.get("server-id") if isinstance(source_node, MapNode) else None
        reader.warning(
            id_node,
            "source.server-id",
            f"the range {source.server_id} has {source.server_id.size} id(s) but "
            f"pipeline.parallelism is {pipeline.parallelism}; Flink CDC needs one id per "
            "reader (Tidemark uses the first)",
        )
