"""What a pipeline file would onboard from a given set of MySQL tables, and what it cannot.

A pure function of the checked ``PipelineConfig`` and the server's tables (``inventory``), so it
is the same whether the tables come from a live server or a test.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from tidemark.config.fields import child
from tidemark.config.inventory import PhysicalTable, read_tables
from tidemark.config.model import PaimonSink, PipelineConfig, TransformRule
from tidemark.config.patterns import split_table_id

#: MySQL types ingest cannot write to Iceberg. Spatial types are written as WKB bytes
#: (``ingest/schema/types.py``, docs/types.md); MySQL 9's VECTOR has no mapping yet.
UNSUPPORTED_TYPES = frozenset({"vector"})

_HELPER = re.compile(r"_(?P<base>.+)_(?P<kind>gho|ghc|del|new|old)")
_HELPER_TOOLS = {
    "gho": "gh-ost",
    "ghc": "gh-ost",
    "del": "gh-ost",
    "new": "pt-osc",
    "old": "pt-osc",
}


@dataclass(frozen=True)
class Onboarded:
    """One physical table feeding one Iceberg (sink) table."""

    source: str
    sink: str
    key: tuple[str, ...]
    key_origin: str


@dataclass(frozen=True)
class SinkTable:
    name: str
    key: tuple[str, ...]
    key_origin: str
    sources: tuple[str, ...]
    mirror: str | None
    mirror_window: timedelta
    changelog: str


@dataclass(frozen=True)
class Refusal:
    table: str
    reason: str


@dataclass(frozen=True)
class Plan:
    onboarded: tuple[Onboarded, ...]
    sinks: tuple[SinkTable, ...]
    refused: tuple[Refusal, ...]
    skipped: tuple[Refusal, ...]
    #: problems that stop the pipeline as a whole (a job input nobody produces ...)
    blockers: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.refused and not self.blockers


def build_plan(config: PipelineConfig, tables: Sequence[PhysicalTable]) -> Plan:
    captured = [t for t in tables if config.source.captures(t.database, t.table)]
    helpers = _helper_tables(captured)
    candidates = [t for t in captured if t.table_id not in {h.table for h in helpers}]
    onboarded: list[Onboarded] = []
    refused: list[Refusal] = []
    for table in candidates:
        mappings, refusals = _map_table(config, table)
        onboarded += mappings
        refused += refusals
    onboarded, sink_refusals, sinks = _group(config, onboarded)
    refused += sink_refusals
    blockers = _blockers(config, captured, sinks)
    notes = _notes(config, captured, sinks)
    return Plan(tuple(onboarded), tuple(sinks), tuple(refused), tuple(helpers), blockers, notes)


def _lake(config: PipelineConfig) -> str:
    return "Paimon" if isinstance(config.sink, PaimonSink) else "Iceberg"


def _helper_tables(tables: Sequence[PhysicalTable]) -> list[Refusal]:
    names = {(t.database, t.table) for t in tables}
    helpers = []
    for table in tables:
        match = _HELPER.fullmatch(table.table)
        if match and (table.database, match.group("base")) in names:
            tool = _HELPER_TOOLS[match.group("kind")]
            helpers.append(
                Refusal(
                    table.table_id,
                    f"{tool} helper table of {table.database}.{match.group('base')}: its rows "
                    "are ignored, and the schema change is applied at the swap",
                )
            )
    return helpers


def _map_table(
    config: PipelineConfig, table: PhysicalTable
) -> tuple[list[Onboarded], list[Refusal]]:
    transform = config.transform_for(table.database, table.table)
    # a projection without `*` chooses its columns: it may leave the unsupported ones out
    projection = transform.projection if transform is not None else None
    chooses_columns = projection is not None and "*" not in projection
    unsupported = [c for c in table.columns if c.data_type in UNSUPPORTED_TYPES]
    if unsupported and not chooses_columns:
        listed = ", ".join(f"{c.name} ({c.column_type})" for c in unsupported)
        return [], [
            Refusal(
                table.table_id,
                f"unsupported column type: {listed} has no {_lake(config)} type; leave the "
                "column out with a transform projection, or the table out with "
                "source.tables.exclude",
            )
        ]
    mappings, refusals = [], []
    for sink in config.sink_tables(table.database, table.table):
        if split_table_id(sink) is None:
            refusals.append(
                Refusal(
                    table.table_id,
                    f"the route gives {sink!r}, which is not a database.table {_lake(config)} name",
                )
            )
            continue
        key, origin, problem = _key(config, table, sink, transform)
        problem = problem or _paimon_partitions(config, table, sink, key, transform)
        if problem:
            refusals.append(Refusal(table.table_id, problem))
        else:
            mappings.append(Onboarded(table.table_id, sink, key, origin))
    return mappings, refusals


def _paimon_partitions(
    config: PipelineConfig,
    table: PhysicalTable,
    sink: str,
    key: tuple[str, ...],
    transform: TransformRule | None,
) -> str | None:
    """Why ``partition.key`` cannot partition the Paimon table ``sink`` (keyed by ``key``)."""
    if not isinstance(config.sink, PaimonSink):
        return None
    columns = config.sink.partition_keys_for(sink)
    absent = [c for c in columns if table.column(c) is None]
    if absent and (transform is None or transform.projection is None):
        return (
            f"sink.partition.key partitions {sink} by {', '.join(absent)}, which "
            f"{table.table_id} does not have"
        )
    lowered = {c.lower() for c in key}
    outside = [c for c in columns if c.lower() not in lowered]
    if not outside:
        return None
    options_path = child("tidemark.tables", sink, quote=True)
    return (
        f"sink.partition.key partitions {sink} by {', '.join(outside)}, not in its key "
        f"({', '.join(key)}): a Paimon primary-key table's partition columns must be in its key "
        "(Paimon moves a row between partitions only in a dynamic-bucket table without "
        f"sequence.field, which Tidemark orders changes by); set {options_path}.unique-key to "
        f"{', '.join([*key, *outside])}, or partition {sink} by key columns only"
    )


def _key(
    config: PipelineConfig, table: PhysicalTable, sink: str, transform: TransformRule | None
) -> tuple[tuple[str, ...], str, str | None]:
    """(merge key, where it comes from, why there is none)."""
    options_path = child("tidemark.tables", sink, quote=True)
    unique_key = config.tidemark.table(sink).unique_key
    if unique_key:
        missing = [c for c in unique_key if table.column(c) is None]
        if missing and (transform is None or transform.projection is None):
            return (
                (),
                "",
                (
                    f"{options_path}.unique-key names {', '.join(missing)}, which "
                    f"{table.table_id} does not have"
                ),
            )
        return unique_key, f"{options_path}.unique-key", None
    if transform is not None and transform.primary_keys:
        position = config.transforms.index(transform)
        origin = f"transform[{position}].primary-keys"
        missing = [c for c in transform.primary_keys if table.column(c) is None]
        if missing and transform.projection is None:
            return (
                (),
                "",
                f"{origin} names {', '.join(missing)}, which {table.table_id} does not have",
            )
        return transform.primary_keys, origin, None
    if table.primary_key:
        return table.primary_key, "primary key", None
    hint = ""
    if table.unique_indexes:
        index = table.unique_indexes[0]
        hint = f" (its unique index {index.name} has {', '.join(index.columns)})"
    paimon = isinstance(config.sink, PaimonSink)
    needed = " (a Paimon sink table is a primary-key table)" if paimon else ""
    return (
        (),
        "",
        (
            f"no primary key, and no unique key given{needed}: set "
            f"{options_path}.unique-key{hint}, or primary-keys in a transform"
        ),
    )


def _group(
    config: PipelineConfig, onboarded: list[Onboarded]
) -> tuple[list[Onboarded], list[Refusal], list[SinkTable]]:
    by_sink: dict[str, list[Onboarded]] = defaultdict(list)
    for mapping in onboarded:
        by_sink[mapping.sink].append(mapping)
    kept, refused, sinks = [], [], []
    for sink, mappings in sorted(by_sink.items()):
        keys = {tuple(c.lower() for c in m.key) for m in mappings}
        if len(keys) > 1:
            listed = "; ".join(f"{m.source} ({', '.join(m.key)})" for m in mappings)
            refused.append(
                Refusal(
                    sink,
                    f"the tables routed here have different keys: {listed}; give one with "
                    f"{child('tidemark.tables', sink, quote=True)}.unique-key",
                )
            )
            continue
        kept += mappings
        first = mappings[0]
        # a Paimon sink table is the mirror itself (a primary-key table), written by ingest
        paimon = isinstance(config.sink, PaimonSink)
        sinks.append(
            SinkTable(
                name=sink,
                key=first.key,
                key_origin=first.key_origin,
                sources=tuple(m.source for m in mappings),
                mirror=None if paimon else config.tidemark.mirror_table(sink),
                mirror_window=config.tidemark.mirror_window(sink),
                changelog=sink if paimon else config.tidemark.changelog_table(sink),
            )
        )
    return kept, refused, sinks


def _blockers(
    config: PipelineConfig, captured: Sequence[PhysicalTable], sinks: Sequence[SinkTable]
) -> tuple[str, ...]:
    blockers = []
    if not captured:
        blockers.append(
            f"source.tables ({config.source.tables}) matches no table on the server"
            + (" that source.tables.exclude leaves" if config.source.tables_exclude else "")
        )
    produced = {sink.name for sink in sinks}
    for job in config.tidemark.jobs:
        for table in job.inputs:
            if table not in produced:
                blockers.append(
                    f"job {job.name} reads {table}, which this pipeline does not produce"
                )
    owners: dict[str, str] = {}
    for sink in sinks:
        tables = [("", sink.name)]
        if sink.changelog != sink.name:  # a Paimon sink writes the sink table itself
            tables.append(("changelog of ", sink.changelog))
        for role, name in tables:
            if name in owners and owners[name] != f"{role}{sink.name}":
                blockers.append(
                    f"{name} would be both the {owners[name]} and the {role}{sink.name}: "
                    f"rename one under {child('tidemark.tables', sink.name, quote=True)}"
                )
            owners.setdefault(name, f"{role}{sink.name}")
    return tuple(blockers)


def _notes(
    config: PipelineConfig, captured: Sequence[PhysicalTable], sinks: Sequence[SinkTable]
) -> tuple[str, ...]:
    notes = []
    for selector in config.source.table_selectors:
        if not any(selector.matches(t.database, t.table) for t in captured):
            notes.append(f"source.tables pattern '{selector}' matches no table")
    for index, rule in enumerate(config.routes):
        if not any(rule.route.matches(t.table_id) for t in captured):
            notes.append(f"route[{index}] ({rule.source_table}) matches no table")
    for index, transform in enumerate(config.transforms):
        if not any(transform.matches(t.database, t.table) for t in captured):
            notes.append(f"transform[{index}] ({transform.source_table}) matches no table")
    produced = {sink.name for sink in sinks}
    for table in config.tidemark.tables:
        if table not in produced:
            notes.append(f"tidemark.tables names {table}, which this pipeline does not produce")
    for table in config.sink.partitioned_tables:
        if table not in produced:
            notes.append(f"sink.partition.key names {table}, which this pipeline does not produce")
    for sink in sinks:
        if len(sink.sources) > 1 and sink.key_origin == "primary key":
            notes.append(
                f"{len(sink.sources)} tables merge into {sink.name} on ({', '.join(sink.key)}): "
                "rows with equal keys in different tables overwrite each other unless the key "
                "is unique across all of them"
            )
    return tuple(notes)


def plan_from_source(config: PipelineConfig) -> Plan:
    """The pipeline's plan against its source's tables now (keys come from the server)."""
    source = config.source
    return build_plan(config, read_tables(source.connection, source.captures))
