"""``tidemark:``: Tidemark's own block, for what Flink CDC has no words for.

Mirrors (the merged, current-state copy of each sink table, refreshed every window), per-table
merge keys, commit reports, ingest pacing, table maintenance and scheduled Spark SQL jobs. Flink
CDC 3.6+ rejects unknown top-level keys, so ``tidemark export-flink-cdc`` prints the file without
this block. Its options are declared on ``TidemarkSettings`` and the models it holds
(``tidemark.config.model``), and read from those declarations (``tidemark.config.blocks``); this
module reads what needs more than one option's declaration: the tables and jobs by name, the
reports' Kafka properties, SQL files beside the pipeline file, and the checks across options.
docs/configuration.md has the block's reference, generated from the declarations.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from tidemark.config.blocks import read_block, read_options
from tidemark.config.compound import BUILT_IN_VARIABLES
from tidemark.config.declaration import declared
from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode, Node
from tidemark.config.model import (
    JobConfig,
    Properties,
    ReportsSettings,
    TableOptions,
    TidemarkSettings,
)
from tidemark.config.patterns import split_table_id
from tidemark.config.secrets import is_secret_key
from tidemark.config.sink import read_iceberg_catalog
from tidemark.config.values import format_duration

EXTENSION_KEY = "tidemark"
_KAFKA = "kafka."
_JOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_SQL_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def read_extension(reader: Reader, node: Node | None, base: Path) -> TidemarkSettings | None:
    """The block at ``node`` (None: no block), SQL files relative to ``base``."""
    if node is None:
        return TidemarkSettings()
    values, failed = read_options(
        reader,
        node,
        EXTENSION_KEY,
        TidemarkSettings,
        readers={
            "reports": _reports,
            "iceberg_catalog": _iceberg_catalog,
            "tables": _tables,
            "jobs": lambda reader, node, path: _jobs(reader, node, path, base),
        },
    )
    # a wrong single value (window: 7 min) leaves its default to the checks across options,
    # which can still find problems in the rest; a wrong block leaves nothing to check
    if not isinstance(node, MapNode) or not all(_single_value(name) for name in failed):
        return None
    settings = TidemarkSettings(**values)
    jobs_ok = _check_jobs(reader, node.get("jobs"), settings)
    _check_names(reader, node.get("tables"), settings)
    return settings if jobs_ok and not failed else None


def _single_value(attribute: str) -> bool:
    (item,) = [o for o in declared(TidemarkSettings) if o.attribute == attribute]
    return item.option.parse is not None


def _reports(reader: Reader, node: Node, path: str) -> ReportsSettings | None:
    """``topic`` and librdkafka properties (``kafka.`` and the property's name)."""
    plain = reader.string_map(node, path)
    if plain is None:
        return None
    unknown = [k for k in plain if k != "topic" and not k.startswith(_KAFKA)]
    for key in unknown:
        reader.error(
            node,
            child(path, key),
            "is not a reports option: use 'topic', or 'kafka.' followed by a librdkafka "
            "property such as kafka.bootstrap.servers",
        )
    kafka: Properties = {
        key.removeprefix(_KAFKA): SecretStr(value) if is_secret_key(key) else value
        for key, value in plain.items()
        if key.startswith(_KAFKA)
    }
    if "bootstrap.servers" not in kafka:
        reader.error(
            node,
            path,
            "the reports block is missing the required key 'kafka.bootstrap.servers' "
            "(where Kafka is, e.g. kafka.bootstrap.servers: kafka:9092)",
        )
    if unknown or "bootstrap.servers" not in kafka:
        return None
    topic = {"topic": plain["topic"]} if "topic" in plain else {}
    return ReportsSettings(**topic, kafka=kafka)


def _iceberg_catalog(reader: Reader, node: Node, path: str) -> Properties | None:
    block = reader.mapping(node, path)
    return None if block is None else read_iceberg_catalog(reader, block, path)


def _tables(reader: Reader, node: Node, path: str) -> dict[str, TableOptions] | None:
    block = reader.mapping(node, path)
    if block is None:
        return None
    tables: dict[str, TableOptions] = {}
    ok = True
    for key, value in block:
        table_path = child(path, key.name, quote=True)
        if split_table_id(key.name) is None:
            reader.problems.error(
                key.mark.line,
                table_path,
                "must be a sink table's database.table name, as the route gives it",
            )
            ok = False
            continue
        options = read_block(reader, value, table_path, TableOptions)
        if options is None:
            ok = False
        else:
            tables[key.name] = options
    return tables if ok else None


def _jobs(reader: Reader, node: Node, path: str, base: Path) -> list[dict[str, Any]] | None:
    """Each job's options as given, with its name; ``TidemarkSettings`` gives the ones without
    a window the block's."""
    block = reader.mapping(node, path)
    if block is None:
        return None
    jobs: list[dict[str, Any]] = []
    ok = True
    for key, value in block:
        job_path = child(path, key.name, quote=True)
        if not _JOB_NAME.fullmatch(key.name):
            reader.problems.error(
                key.mark.line,
                job_path,
                "a job name must start with a letter and hold only letters, digits, _ and -",
            )
            ok = False
            continue
        values, failed = read_options(
            reader,
            value,
            job_path,
            JobConfig,
            readers={"sql": lambda reader, node, path: _sql_files(reader, node, path, base)},
        )
        if failed:
            ok = False
            continue
        assert isinstance(value, MapNode)  # it read well
        _check_sql_references(reader, value, job_path, values["sql"], values.get("variables", {}))
        jobs.append({"name": key.name, **values})
    return jobs if ok else None


def _sql_files(reader: Reader, node: Node, path: str, base: Path) -> tuple[Path, ...] | None:
    names = reader.text_list(node, path, "sql: [sql/report.sql]")
    if names is None:
        return None
    if not names:
        reader.error(node, path, "must name at least one SQL file")
        return None
    files = []
    for index, name in enumerate(names):
        file = (base / name).resolve()
        if not file.is_file():
            where = "relative to the pipeline file's folder" if not Path(name).is_absolute() else ""
            reader.error(
                node,
                f"{path}[{index}]" if len(names) > 1 else path,
                f"SQL file {name!r} does not exist ({where or 'absolute path'}: {file})",
            )
            continue
        files.append(file)
    return tuple(files) if len(files) == len(names) else None


def _check_sql_references(
    reader: Reader, block: MapNode, path: str, files: tuple[Path, ...], variables: Properties
) -> None:
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reader.error(block.get("sql"), child(path, "sql"), f"cannot read {file}: {error}")
            continue
        if not text.strip():
            reader.warning(block.get("sql"), child(path, "sql"), f"{file.name} is empty")
        unknown = sorted(
            {
                name
                for name in _SQL_REFERENCE.findall(text)
                if name not in variables and name not in BUILT_IN_VARIABLES
            }
        )
        if unknown:
            reader.warning(
                block.get("sql"),
                child(path, "sql"),
                f"{file.name} uses {', '.join('${' + n + '}' for n in unknown)}, which this job "
                f"does not define under variables (Tidemark sets {', '.join(BUILT_IN_VARIABLES)})",
            )


def _check_jobs(reader: Reader, node: Node | None, settings: TidemarkSettings) -> bool:
    ok = True
    block = node if isinstance(node, MapNode) else None
    for job in settings.jobs:
        job_node = block.get(job.name) if block else None
        path = child("tidemark.jobs", job.name, quote=True)
        for table in job.inputs:
            if settings.mirror_table(table) is None:
                reader.error(
                    job_node,
                    child(path, "inputs"),
                    f"{table} has its mirror turned off, and jobs run after the mirror merge: "
                    f'turn it on under tidemark.tables."{table}".mirror',
                )
                ok = False
                continue
            mirror_window = settings.mirror_window(table)
            if job.window % mirror_window:
                reader.error(
                    job_node,
                    child(path, "window"),
                    f"({format_duration(job.window)}) must be a multiple of the mirror window "
                    f"of its input {table} ({format_duration(mirror_window)})",
                )
                ok = False
    return ok


def _check_names(reader: Reader, node: Node | None, settings: TidemarkSettings) -> None:
    """Mirror and changelog names must not collide with each other."""
    owners: dict[str, str] = {}
    block = node if isinstance(node, MapNode) else None
    for table in settings.tables:
        names = [("changelog", settings.changelog_table(table))]
        mirror = settings.mirror_table(table)
        if mirror is not None:
            names.append(("mirror", mirror))
        for role, name in names:
            owner = f"the {role} of {table}"
            if name in owners:
                reader.error(
                    block.get(table) if block else None,
                    child("tidemark.tables", table, quote=True),
                    f"{owner} is named {name}, like {owners[name]}: give one another name",
                )
            owners[name] = owner
