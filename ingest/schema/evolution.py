"""What a source table's change of structure does to its changelog table: a pure decision.

``pipeline.schema.change.behavior`` (Flink CDC's meanings,
docs/architecture.md#pipeline-file-facts) and the sink's
``include.schema.changes``/``exclude.schema.changes`` decide; Iceberg decides what is safe:

- ``exception``: any change stops ingest, naming it.
- ``ignore``: the changelog keeps its columns: new columns are not written, dropped ones are
  NULL from then on. A type change the old column cannot hold stops ingest.
- ``lenient`` (the default), ``try_evolve``, ``evolve``: new columns are added (nullable);
  dropped columns stay, NULL from then on; a renamed column is a new column (the old one stays);
  a type change is applied where Iceberg allows it (int -> long, float -> double, decimal
  precision up); anything else stops ingest with the fix. The changelog keeps its history, so
  no behaviour drops or renames a column there; ``evolve`` and ``try_evolve`` differ only in
  what the window merge does to the mirror (``spark_jobs.merge.columns``). Renames are told
  from a drop and an add by the ALTER statement (``ingest.schema.ddl.renamed_columns``) and
  recorded in the schema history. A sink table that is the mirror (Paimon) renames the column
  in place instead (``ChangelogWriter.evolve``'s ``renamed``).

A change type the sink excludes is treated as under ``ignore``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import pyarrow as pa

from tidemark.config.model import SchemaChangeBehavior, SchemaChangeType


@dataclass(frozen=True)
class SchemaDiff:
    """Two versions of one source table's columns, as lake types, compared by name."""

    added: tuple[pa.Field, ...] = ()
    dropped: tuple[str, ...] = ()
    #: (column, old type, new type)
    retyped: tuple[tuple[str, pa.DataType, pa.DataType], ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.dropped or self.retyped)

    def describe(self) -> str:
        parts = [f"added {field.name} ({field.type})" for field in self.added]
        parts += [f"dropped {name}" for name in self.dropped]
        parts += [f"{name} changed from {old} to {new}" for name, old, new in self.retyped]
        return ", ".join(parts) or "no column changed"


@dataclass(frozen=True)
class Evolution:
    """What to do to the changelog table, or why ingest must stop instead."""

    add: tuple[pa.Field, ...] = ()
    widen: tuple[pa.Field, ...] = ()
    #: changes not applied, for the log
    ignored: tuple[str, ...] = ()
    refusal: str | None = None


def diff(old: pa.Schema, new: pa.Schema) -> SchemaDiff:
    old_fields = {field.name.lower(): field for field in old}
    new_fields = {field.name.lower(): field for field in new}
    added = tuple(field for key, field in new_fields.items() if key not in old_fields)
    dropped = tuple(field.name for key, field in old_fields.items() if key not in new_fields)
    retyped = tuple(
        (field.name, old_fields[key].type, field.type)
        for key, field in new_fields.items()
        if key in old_fields and not old_fields[key].type.equals(field.type)
    )
    return SchemaDiff(added, dropped, retyped)


def plan_evolution(
    table: str,
    change: SchemaDiff,
    behavior: SchemaChangeBehavior,
    allowed: Collection[SchemaChangeType],
    changelog: pa.Schema,
) -> Evolution:
    """What ``change`` of source table ``table`` does to its changelog (columns ``changelog``)."""
    if change.empty:
        return Evolution()
    if behavior is SchemaChangeBehavior.EXCEPTION:
        return Evolution(
            refusal=(
                f"{table} changed its columns ({change.describe()}) and "
                "pipeline.schema.change.behavior is exception: set it to lenient to follow "
                "the change, or re-bootstrap the table"
            )
        )
    applying = behavior is not SchemaChangeBehavior.IGNORE
    present = {name.lower() for name in changelog.names}
    add, widen, ignored = [], [], []
    for field in change.added:
        if field.name.lower() in present:
            continue  # added back, or added to another shard first: the column is there
        if applying and SchemaChangeType.ADD_COLUMN in allowed:
            add.append(field.with_nullable(True))
        else:
            ignored.append(f"new column {field.name} is not written")
    ignored += [f"dropped column {name} stays, NULL from now on" for name in change.dropped]
    for name, old, new in change.retyped:
        current = changelog.field(changelog.get_field_index(_spelled(changelog, name)))
        if holds(current.type, new):
            continue
        if applying and SchemaChangeType.ALTER_COLUMN_TYPE in allowed and promotes(old, new):
            widen.append(pa.field(current.name, new, nullable=True))
            continue
        return Evolution(
            refusal=(
                f"{table}.{name} changed from {old} to {new}, which its changelog column "
                f"({current.type}) cannot hold and Iceberg cannot widen it to; re-bootstrap "
                "the table (drop its changelog table, start with scan.startup.mode: initial), "
                "or leave the change out with a transform projection"
            )
        )
    return Evolution(tuple(add), tuple(widen), tuple(ignored))


def _spelled(schema: pa.Schema, name: str) -> str:
    return next(field.name for field in schema if field.name.lower() == name.lower())


def holds(column: pa.DataType, values: pa.DataType) -> bool:
    """Whether a column of type ``column`` takes every value of type ``values`` unchanged."""
    return column.equals(values) or promotes(values, column)


def promotes(old: pa.DataType, new: pa.DataType) -> bool:
    """Iceberg's type promotions: int -> long, float -> double, decimal(P, S) -> decimal(P', S)
    with P' >= P."""
    if pa.types.is_int32(old) and pa.types.is_int64(new):
        return True
    if pa.types.is_float32(old) and pa.types.is_float64(new):
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return bool(new.scale == old.scale and new.precision >= old.precision)
    return False
