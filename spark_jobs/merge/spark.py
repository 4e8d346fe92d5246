"""``MERGE INTO`` a mirror: the latest change per key of a changelog order range, with stamps.

The rows with ``_tm_order`` in ``(low, high]`` are read from the changelog (min/max statistics
on ``_tm_order`` keep that cheap), the transform's projection and filter are applied as Spark
SQL, and the latest change of each key (by ``_tm_order``) is merged:

- ``_tm_op`` ``r``/``c``/``u`` whose row passes the filter: update or insert;
- ``d``, or a row that no longer passes the filter: delete. With ``mirror.deletes: keep`` a
  deleted row stays, with ``_tm_deleted = true`` and the values it had when it was deleted.
- ``t`` is a truncate marker: a key whose latest change came from the truncated source table
  before the marker is deleted (flagged with ``mirror.deletes: keep``). The mirror does not
  know which source table each row came from, so a range holding a marker is merged from the
  start of the changelog, which keeps every change: the cost of one rebuild, for a rare event.
  That merge applies every marker up to ``high``, those of earlier ranges too: the rows an
  earlier truncate removed are in the changelog from its start, and would come back.

Before merging, the mirror follows its changelog's structure: columns added and types widened;
under ``evolve``/``try_evolve`` columns dropped and renamed (``spark_jobs.merge.columns``);
columns added with a constant default filled in the rows from before them; the table comment.
These are commits of their own, without stamps.

The merge is idempotent for any ``low`` at or below what the mirror already holds: applying the
latest image of a key twice gives the same row. The commit carries the ``MirrorKey`` stamps in
its snapshot summary (Iceberg 1.11 + Spark 4.1 take them from the session conf
``spark.sql.iceberg.snapshot-property.<key>``); a merge of no rows still commits one.

A scheduler merges each of hundreds of mirrors every window, mostly a few changes each, so a
merge's fixed cost counts: Spark reads the range once (the projected range is ranked by key and
cached: one query over it gives the counts and the truncate markers, and the ``MERGE`` reads its
latest changes; a marker adds the read from the start), a small range is read into one
partition (no shuffle before the ``MERGE``), and the mirror's snapshot ids come from its
properties rather than from a query of its ``.snapshots``. Given what the caller loaded from the
catalog (``KnownState``: ``spark_jobs.window_jobs`` loads the changelog and the mirror with
PyIceberg anyway), a merge whose changelog structure digest is the one the mirror's newest stamp
carries skips following the structure, and reads neither the changelog's properties nor the
mirror's snapshot before it through Spark.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import expr

from spark_jobs.merge.columns import FILLED_PROPERTY, AddedDefault, MirrorColumns
from spark_jobs.merge.request import (
    KnownState,
    MergeCounts,
    MirrorSpec,
    mirror_evolution,
    mirror_properties,
)
from spark_jobs.merge.stamps import MirrorStamp, newest_stamp
from tidemark.contracts.changelog import METADATA_NAMES, MetadataColumn, Operation
from tidemark.contracts.mirror import MIRROR_DELETED_COLUMN
from tidemark.errors import ConfigError, TerminalError
from tidemark.sinks.commits import Commit
from tidemark.sinks.iceberg import commit_from_summary

logger = logging.getLogger(__name__)

#: the column ``mirror.deletes: keep`` adds: true for a row deleted in the source
DELETED_COLUMN = MIRROR_DELETED_COLUMN
_STAMP_CONF = "spark.sql.iceberg.snapshot-property."
# internal columns of the merge source; the transform's output may not use the prefix
_OP, _ORDER, _PASSES, _RANK = "__tm_op", "__tm_order", "__tm_passes", "__tm_rank"
_SOURCE_DB, _SOURCE_TABLE = "__tm_source_db", "__tm_source_table"
_DELETE = Operation.DELETE.value
#: a range of at most this many changelog rows is read into one partition (``_ranked``)
ONE_PARTITION_ROWS = 100_000
_TRUNCATE = Operation.TRUNCATE.value


@dataclass(frozen=True)
class _Truncation:
    database: str
    table: str
    order: int


def table_snapshots(spark: SparkSession, table: str) -> list[Commit]:
    """The snapshots ``table``'s metadata lists, oldest first, as commits; fresh, not from
    Spark's cache."""
    spark.catalog.refreshTable(table)
    rows = spark.sql(
        f"SELECT snapshot_id, committed_at, summary FROM {table}.snapshots ORDER BY committed_at"
    ).collect()
    return [
        commit_from_summary(
            row.snapshot_id, int(row.committed_at.timestamp() * 1000), dict(row.summary or {})
        )
        for row in rows
    ]


def mirror_state(spark: SparkSession, mirror: str) -> MirrorStamp | None:
    """The newest stamp of ``mirror``, read through Spark (``spark_jobs.merge.stamps`` reads it
    without); None for a mirror not created or never committed to."""
    if not spark.catalog.tableExists(mirror):
        return None
    return newest_stamp(mirror, table_snapshots(spark, mirror))


def merge_range(
    spark: SparkSession,
    spec: MirrorSpec,
    low: int,
    high: int,
    stamps: Mapping[str, str],
    known: KnownState | None = None,
) -> MergeCounts:
    """Merge the changelog rows with ``low < _tm_order <= high`` into the mirror, stamped; from
    the start of the changelog, with every truncate marker up to ``high``, if the range holds
    a marker.

    With ``known`` whose structure is unchanged, and a changelog that Spark reads with the
    columns ``known`` names, the mirror's structure is not looked at (``_ensure_mirror``,
    ``_follow_comment``): a merge of an unchanged structure leaves it as it is anyway."""
    changelog = spark.table(spec.changelog)
    follow = not (
        known is not None
        and known.structure_unchanged
        and known.changelog_columns == _columns(changelog)
    )
    if known is not None and not follow:
        # the properties the digest was computed from, which the mirror's structure follows
        evolution = mirror_evolution(spec, known.changelog_properties)
    else:
        evolution = mirror_evolution(spec, _properties(spark, spec.changelog))
    # the range is read once: the counts, the truncate markers and the MERGE take it from here
    changes = _ranked(
        spark,
        spec,
        changelog.where(
            f"`{MetadataColumn.ORDER_KEY}` > {low} AND `{MetadataColumn.ORDER_KEY}` <= {high}"
        ),
        evolution,
        high - low,
    )
    try:
        columns = _data_columns(spec, changes)
        in_range = _scan(changes)
        keys, truncations = in_range.keys, in_range.truncations
        if in_range.truncations:
            logger.warning(
                "Mirror %s: %s truncated; merging its changelog from the start up to order %d",
                spec.mirror,
                ", ".join(
                    f"{t.database}.{t.table} (order {t.order})" for t in in_range.truncations
                ),
                high,
            )
            changes.unpersist()
            changes = _ranked(
                spark,
                spec,
                changelog.where(f"`{MetadataColumn.ORDER_KEY}` <= {high}"),
                evolution,
                high,
            )
            # the markers of earlier ranges too: the rows they removed are read again
            from_start = _scan(changes)
            keys, truncations = from_start.keys, from_start.truncations
        if follow:
            _ensure_mirror(spark, spec, changes, columns, evolution)
            _follow_comment(spark, spec)
            # following the structure may commit (a default filled in): read what it left
            before = _current_snapshot(spark, spec.mirror)
        else:
            assert known is not None
            before = known.mirror_snapshot
        latest = _truncated(_latest(changes), truncations)
        snapshot_id = _merge(spark, spec, latest, columns, stamps, before)
    finally:
        changes.unpersist()
    # a range of truncate markers alone, in a changelog without rows, brings no change
    return MergeCounts(in_range.rows if keys else 0, keys, snapshot_id)


def _merge(
    spark: SparkSession,
    spec: MirrorSpec,
    latest: DataFrame,
    columns: list[str],
    stamps: Mapping[str, str],
    before: int | None,
) -> int:
    """``MERGE INTO`` the mirror from ``latest``, stamped; the mirror's snapshot after it.
    ``before``: the mirror's current snapshot."""
    view = f"tm_latest_{uuid.uuid4().hex[:12]}"
    latest.createOrReplaceTempView(view)
    try:
        with _stamped(spark, stamps):
            spark.sql(_merge_statement(spec, view, columns))
            after = _current_snapshot(spark, spec.mirror)
            if after is None or after == before:
                # a MERGE that changed nothing may not commit: record the window regardless
                spark.sql(f"INSERT INTO {spec.mirror} SELECT * FROM {spec.mirror} WHERE false")
                after = _current_snapshot(spark, spec.mirror)
    finally:
        spark.catalog.dropTempView(view)
    assert after is not None
    return after


@dataclass(frozen=True)
class _Scan:
    rows: int  # changelog rows, truncate markers included
    keys: int  # distinct keys of the changes other than truncate markers
    truncations: list[_Truncation]


def _scan(ranked: DataFrame) -> _Scan:
    """What a merge reports and needs to know before it merges ``ranked`` (``_ranked``), in one
    query: the rows, the keys they change (as many as the latest changes), the markers."""
    row = ranked.selectExpr(
        "count(*) AS rows",
        f"count_if({_RANK} = 1 AND {_OP} != '{_TRUNCATE}') AS keys",
        f"collect_list(struct({_SOURCE_DB}, {_SOURCE_TABLE}, {_ORDER})) "
        f"FILTER (WHERE {_OP} = '{_TRUNCATE}') AS markers",
    ).first()
    assert row is not None  # an aggregate without grouping has one row
    markers = sorted(row.markers, key=lambda marker: marker[2])
    return _Scan(row.rows, row.keys, [_Truncation(*marker) for marker in markers])


def _follow_comment(spark: SparkSession, spec: MirrorSpec) -> None:
    """The source table's comment (``alter.table.comment``, which the changelog takes). A
    reserved property: SHOW TBLPROPERTIES leaves it out, the catalog's description has it."""
    comment = spark.catalog.getTable(spec.changelog).description
    if comment is not None and spark.catalog.getTable(spec.mirror).description != comment:
        spark.sql(f"COMMENT ON TABLE {spec.mirror} IS '{_escape(comment)}'")


def _properties(spark: SparkSession, table: str) -> dict[str, str]:
    return {row.key: row.value for row in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def _with_lineage(changes: DataFrame, evolution: MirrorColumns) -> DataFrame:
    """Each renamed column takes, in rows written before its rename, the old column's value."""
    for lineage in evolution.lineages:
        if lineage.column not in changes.columns:
            continue
        kind = changes.schema[lineage.column].dataType.simpleString()
        cases = " ".join(
            f"WHEN `{MetadataColumn.SOURCE_DATABASE}` = '{_escape(database)}' "
            f"AND `{MetadataColumn.SOURCE_TABLE}` = '{_escape(table)}' "
            f"AND `{MetadataColumn.SCHEMA_VERSION}` < {earlier.below_version} "
            f"THEN CAST(`{earlier.name}` AS {kind})"
            for earlier in lineage.earlier
            if earlier.name in changes.columns
            for database, table in [earlier.table_id.split(".", 1)]
        )
        if cases:
            changes = changes.withColumn(
                lineage.column, expr(f"CASE {cases} ELSE `{lineage.column}` END")
            )
    for default in evolution.defaults:
        if default.column not in changes.columns:
            continue  # not in the changelog (behavior ignore)
        database, table = default.table_id.split(".", 1)
        changes = changes.withColumn(
            default.column,
            expr(
                f"CASE WHEN `{MetadataColumn.SOURCE_DATABASE}` = '{_escape(database)}' "
                f"AND `{MetadataColumn.SOURCE_TABLE}` = '{_escape(table)}' "
                f"AND `{MetadataColumn.SCHEMA_VERSION}` < {default.below_version} "
                f"THEN {_default_literal(changes, default)} ELSE `{default.column}` END"
            ),
        )
    return changes


def _default_literal(frame: DataFrame, default: AddedDefault) -> str:
    kind = frame.schema[default.column].dataType.simpleString()
    return f"CAST('{_escape(default.value)}' AS {kind})"


def _truncated(latest: DataFrame, truncations: Sequence[_Truncation]) -> DataFrame:
    """Latest changes that a later truncate of their source table removed become deletes: those
    before the table's last marker, which removed the rows of its earlier ones too."""
    if not truncations:
        return latest
    last = {(t.database, t.table): t.order for t in sorted(truncations, key=lambda t: t.order)}
    removed = " OR ".join(
        f"({_SOURCE_DB} = '{_escape(database)}' AND {_SOURCE_TABLE} = '{_escape(table)}' "
        f"AND {_ORDER} < {order})"
        for (database, table), order in sorted(last.items())
    )
    return latest.withColumn(_OP, expr(f"CASE WHEN {removed} THEN '{_DELETE}' ELSE {_OP} END"))


def _without_dropped(changes: DataFrame, evolution: MirrorColumns) -> DataFrame:
    """The changelog without the columns the source dropped (or renamed, once their values
    moved to the new name): the transform sees the source as it is now, so a column of the
    same name that the projection computes stays in the mirror."""
    gone = [c for c in changes.columns if c.lower() in evolution.dropped]
    return changes.drop(*gone) if gone else changes


def _project(
    spark: SparkSession, spec: MirrorSpec, changes: DataFrame, evolution: MirrorColumns
) -> DataFrame:
    """``changes`` as the transform makes them (``evolution`` applied first), with the internal
    columns the merge needs."""
    source = f"tm_changes_{uuid.uuid4().hex[:12]}"
    _without_dropped(_with_lineage(changes, evolution), evolution).createOrReplaceTempView(source)
    projection = spec.projection or "*"
    passes = f"coalesce(({spec.filter}), false)" if spec.filter else "true"
    try:
        return spark.sql(
            f"SELECT {projection}, `{MetadataColumn.OPERATION}` AS {_OP}, "
            f"`{MetadataColumn.ORDER_KEY}` AS {_ORDER}, {passes} AS {_PASSES}, "
            f"`{MetadataColumn.SOURCE_DATABASE}` AS {_SOURCE_DB}, "
            f"`{MetadataColumn.SOURCE_TABLE}` AS {_SOURCE_TABLE} FROM {source}"
        )
    except AnalysisException as error:
        raise ConfigError(
            f"the transform of {spec.mirror} does not evaluate as Spark SQL over the changelog "
            f"{spec.changelog} (projection: {projection!r}, filter: {spec.filter!r}): "
            f"{_first_line(error)}.{_dropped_hint(evolution.dropped)} Fix "
            "transform.projection/filter in the pipeline file"
        ) from error
    finally:
        spark.catalog.dropTempView(source)  # the frame holds its plan; the name is not needed


def _dropped_hint(dropped: frozenset[str]) -> str:
    if not dropped:
        return ""
    return (
        f" The source dropped or renamed {', '.join(sorted(dropped))}, and the mirror follows "
        "it (schema.change.behavior evolve): the transform no longer sees them."
    )


def _data_columns(spec: MirrorSpec, projected: DataFrame) -> list[str]:
    columns = [
        c for c in projected.columns if c not in METADATA_NAMES and not c.startswith("__tm_")
    ]
    missing = [k for k in spec.key if k not in columns]
    if missing:
        raise ConfigError(
            f"the merge key of {spec.mirror} ({', '.join(spec.key)}) needs the column(s) "
            f"{', '.join(missing)}, which the transform's projection leaves out: add them to "
            "transform.projection"
        )
    return columns


def _ranked(
    spark: SparkSession,
    spec: MirrorSpec,
    changes: DataFrame,
    evolution: MirrorColumns,
    most_rows: int,
) -> DataFrame:
    """``changes`` projected (``_project``), each ranked among the changes of its key, the
    latest first (truncate markers apart), cached. At most ``ONE_PARTITION_ROWS`` rows
    (``most_rows``) are read as one partition: the ranking and the counts then need no
    shuffle, so no Spark job of their own."""
    projected = _project(spark, spec, changes, evolution)
    if most_rows <= ONE_PARTITION_ROWS:
        projected = projected.coalesce(1)
    # a NULL in a key is a key too, as in a window's partitions
    partition = ", ".join([*(f"`{k}`" for k in spec.key), f"{_OP} = '{_TRUNCATE}'"])
    return projected.selectExpr(
        "*", f"row_number() OVER (PARTITION BY {partition} ORDER BY {_ORDER} DESC) AS {_RANK}"
    ).cache()


def _latest(ranked: DataFrame) -> DataFrame:
    """The latest change of each key (``_ranked``), truncate markers left out."""
    return ranked.where(f"{_RANK} = 1 AND {_OP} != '{_TRUNCATE}'").drop(_RANK)


def _columns(frame: DataFrame) -> tuple[tuple[str, str], ...]:
    return tuple((field.name, field.dataType.simpleString()) for field in frame.schema.fields)


def _ensure_mirror(
    spark: SparkSession,
    spec: MirrorSpec,
    projected: DataFrame,
    columns: list[str],
    evolution: MirrorColumns,
) -> None:
    wanted = [(c, projected.schema[c].dataType.simpleString()) for c in columns]
    if spec.keep_deletes:
        wanted.append((DELETED_COLUMN, "boolean"))
    if spark.catalog.tableExists(spec.mirror):
        _drop_and_rename(spark, spec, [name for name, _ in wanted], evolution)
        _follow_changelog(spark, spec, wanted)
        _fill_defaults(spark, spec, evolution.defaults)
        return
    namespace = spec.mirror.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    definition = ", ".join(f"`{name}` {kind}" for name, kind in wanted)
    partitioned = f" PARTITIONED BY ({', '.join(spec.partitioning)})" if spec.partitioning else ""
    listed = ", ".join(
        f"'{_escape(k)}' = '{_escape(v)}'" for k, v in mirror_properties(spec).items()
    )
    logger.info("Creating mirror %s from %s", spec.mirror, spec.changelog)
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {spec.mirror} ({definition}) USING iceberg{partitioned} "
        f"TBLPROPERTIES ({listed})"
    )
    # built from the changelog, which reads the defaults where rows predate their column
    _mark_filled(spark, spec, {default.column for default in evolution.defaults})


def _fill_defaults(spark: SparkSession, spec: MirrorSpec, defaults: Sequence[AddedDefault]) -> None:
    """A column added to the source with a constant default holds it in the rows from before:
    once per column, the mirror's rows get it. Marked in the mirror's properties after the
    fill, so a merge that died in between fills again (no merge ran in between: only NULLs
    are the rows from before)."""
    have = {f.name.lower(): f for f in spark.table(spec.mirror).schema.fields}
    filled = {
        key[len(FILLED_PROPERTY) :]
        for key in _properties(spark, spec.mirror)
        if key.startswith(FILLED_PROPERTY)
    }
    due = {d.column: d for d in defaults if d.column.lower() in have and d.column not in filled}
    for column, default in sorted(due.items()):
        kind = have[column.lower()].dataType.simpleString()
        logger.warning(
            "Mirror %s: filling %s with its default %r in the rows from before it was added",
            spec.mirror,
            column,
            default.value,
        )
        spark.sql(
            f"UPDATE {spec.mirror} SET `{column}` = CAST('{_escape(default.value)}' AS {kind}) "
            f"WHERE `{column}` IS NULL"
        )
    _mark_filled(spark, spec, set(due))


def _mark_filled(spark: SparkSession, spec: MirrorSpec, columns: set[str]) -> None:
    if columns:
        listed = ", ".join(
            f"'{_escape(FILLED_PROPERTY + column)}' = 'true'" for column in sorted(columns)
        )
        spark.sql(f"ALTER TABLE {spec.mirror} SET TBLPROPERTIES ({listed})")


def _drop_and_rename(
    spark: SparkSession, spec: MirrorSpec, wanted: list[str], evolution: MirrorColumns
) -> None:
    """Under ``evolve``: rename the mirror's columns the source renamed, then drop those it
    dropped (``spark_jobs.merge.columns``)."""
    have = {f.name.lower(): f.name for f in spark.table(spec.mirror).schema.fields}
    for old, new in evolution.renames(wanted, have.values()).items():
        if old.lower() in have and new.lower() not in have:
            logger.warning(
                "Mirror %s: renaming column %s to %s, as its source did", spec.mirror, old, new
            )
            spark.sql(f"ALTER TABLE {spec.mirror} RENAME COLUMN `{have[old.lower()]}` TO `{new}`")
            have[new.lower()] = new
            del have[old.lower()]
    wanted_names = {name.lower() for name in wanted}
    for lowered, name in sorted(have.items()):
        if lowered in evolution.dropped and lowered not in wanted_names:
            logger.warning("Mirror %s: dropping column %s, as its source did", spec.mirror, name)
            spark.sql(f"ALTER TABLE {spec.mirror} DROP COLUMN `{name}`")


def _follow_changelog(spark: SparkSession, spec: MirrorSpec, wanted: list[tuple[str, str]]) -> None:
    """Carry the changelog's schema changes (``ingest.schema.evolution``) to the mirror: columns it
    gained are added, widened types widened. A column the mirror has and the changelog and
    transform no longer give means the transform changed: that needs a rebuild."""
    have = {f.name.lower(): f for f in spark.table(spec.mirror).schema.fields}
    gone = sorted(set(have) - {name.lower() for name, _ in wanted})
    if gone:
        raise TerminalError(
            f"the mirror {spec.mirror} has the columns {', '.join(gone)}, which its changelog "
            "and transform no longer give: the transform changed. Drop the mirror to rebuild it "
            "from the changelog"
        )
    for name, kind in wanted:
        field = have.get(name.lower())
        if field is None:
            logger.warning(
                "Mirror %s: adding column %s %s from its changelog", spec.mirror, name, kind
            )
            spark.sql(f"ALTER TABLE {spec.mirror} ADD COLUMNS (`{name}` {kind})")
        elif field.dataType.simpleString() != kind:
            logger.warning(
                "Mirror %s: column %s changes from %s to %s, as in its changelog",
                spec.mirror,
                name,
                field.dataType.simpleString(),
                kind,
            )
            try:
                spark.sql(f"ALTER TABLE {spec.mirror} ALTER COLUMN `{name}` TYPE {kind}")
            except AnalysisException as error:
                raise TerminalError(
                    f"the mirror {spec.mirror} cannot change {name} from "
                    f"{field.dataType.simpleString()} to {kind} ({_first_line(error)}); drop the "
                    "mirror to rebuild it from the changelog"
                ) from error


def _merge_statement(spec: MirrorSpec, view: str, columns: list[str]) -> str:
    on = " AND ".join(f"t.`{k}` = s.`{k}`" for k in spec.key)
    targets = [f"`{c}`" for c in columns]
    values = [f"s.`{c}`" for c in columns]
    live = f"(s.{_OP} != '{_DELETE}' AND s.{_PASSES})"
    if spec.keep_deletes:
        # deleted rows stay, flagged; rows the filter now rejects leave the mirror
        flag = f"(s.{_OP} = '{_DELETE}')"
        targets.append(f"`{DELETED_COLUMN}`")
        values.append(flag)
        remove, keep = f"NOT s.{_PASSES}", f"s.{_PASSES}"
    else:
        remove, keep = f"NOT {live}", live
    updates = ", ".join(f"t.{t} = {v}" for t, v in zip(targets, values, strict=True))
    return (
        f"MERGE INTO {spec.mirror} t USING {view} s ON {on} "
        f"WHEN MATCHED AND {remove} THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {updates} "
        f"WHEN NOT MATCHED AND {keep} THEN INSERT ({', '.join(targets)}) "
        f"VALUES ({', '.join(values)})"
    )


def _current_snapshot(spark: SparkSession, table: str) -> int | None:
    """The table's current snapshot, which Iceberg lists among its properties: no Spark job,
    where a query of ``<table>.snapshots`` runs one."""
    snapshot = _properties(spark, table).get("current-snapshot-id", "none")
    return None if snapshot == "none" else int(snapshot)


@contextmanager
def _stamped(spark: SparkSession, stamps: Mapping[str, str]) -> Iterator[None]:
    """Every Iceberg commit of this session inside the block carries ``stamps``."""
    for key, value in stamps.items():
        spark.conf.set(_STAMP_CONF + key, value)
    try:
        yield
    finally:
        for key in stamps:
            spark.conf.unset(_STAMP_CONF + key)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
