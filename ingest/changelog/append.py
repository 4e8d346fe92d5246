"""Appends to one changelog table: PyIceberg's fast append, from state kept between commits,
and fenced against a second writer.

A changelog table gets a commit at every flush that touched it, from one writer, with rows of
the table's own schema. PyIceberg (0.12) re-derives everything at each append: it re-reads the
parent snapshot's manifest list, converts and checks the Arrow schema against the table's,
groups rows by partition with a generic group-by, reads its configuration, and hands each step
to a thread pool. At a thousand tables those were about half the CPU of a one-row commit
(issue 25; bench/README.md has the profile). This writes the same files the same way (Parquet
data files named and placed as PyIceberg does, one manifest, a manifest list, the metadata
through the catalog), but keeps what only changes with the table's schema, spec or properties
(``_WritePlan``) and the manifests its own last commit left (``_Manifests``).

Rows whose Arrow schema is not exactly the table's, a table in another format version, with
manifest merging on, or with column names Avro cannot hold go through PyIceberg's append
instead (``Appender.lean``), which gives the same snapshot.

**Fencing.** A commit names the snapshot its batch follows; if the catalog moved on (the
guarded update of ``tidemark.sql_catalog`` changes nothing), the table is read again and the
append is applied on top only if maintenance, not another writer, came in between
(``ingest.changelog.fencing``); else ``ConcurrentWriterError`` and nothing is committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from copy import copy
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import (
    _determine_partitions,
    _get_parquet_writer_kwargs,
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
    schema_to_pyarrow,
)
from pyiceberg.manifest import (
    UNASSIGNED_SEQ,
    AvroCompressionCodec,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
)
from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
from pyiceberg.schema import sanitize_column_names
from pyiceberg.table import Table, TableMetadata, TableProperties
from pyiceberg.table.locations import LocationProvider, load_location_provider
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import (
    Operation,
    Snapshot,
    SnapshotSummaryCollector,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
)
from pyiceberg.typedef import Record
from pyiceberg.utils.properties import property_as_bool, property_as_int

from ingest.changelog.fencing import (
    ConcurrentWriterError,
    check_no_other_writer,
    newest_progress_id,
)
from ingest.changelog.manifest_merge import to_merge
from ingest.changelog.manifest_writers import (
    AvroLayout,
    LaidOutManifestListWriter,
    LaidOutManifestWriter,
    manifest_layout,
)

#: attempts at one commit when maintenance commits in between (PyIceberg's default is 4 retries)
COMMIT_ATTEMPTS = 5


@dataclass(frozen=True)
class _WritePlan:
    """What an append needs that only changes with the table's schema, spec or properties."""

    schema_id: int
    spec_id: int
    properties: Mapping[str, str]
    arrow: pa.Schema
    writer_options: Mapping[str, Any]
    row_group_rows: int
    statistics: Mapping[int, Any]
    column_ids: Mapping[str, int]
    avro_compression: AvroCompressionCodec
    partition_summary_limit: int
    locations: LocationProvider
    manifests: AvroLayout
    #: per partition field, the Arrow function of its transform and the source column's name
    partition_columns: tuple[tuple[Callable[[pa.Array], pa.Array], str], ...]

    def fits(self, metadata: TableMetadata) -> bool:
        return (
            self.schema_id == metadata.current_schema_id
            and self.spec_id == metadata.default_spec_id
            and self.properties is metadata.properties
        )


@dataclass(frozen=True)
class _Manifests:
    """The manifests of the snapshot ``snapshot_id``, as this writer's commit listed them."""

    snapshot_id: int
    manifests: tuple[ManifestFile, ...]


@dataclass
class Appender:
    """Appends rows with their snapshot properties to ``table`` (the module's description)."""

    table: Table
    #: PyIceberg's append, for what the lean path does not cover
    fallback: Callable[[pa.Table, dict[str, str]], None]
    _plan: _WritePlan | None = None
    _manifests: _Manifests | None = None

    def append(self, rows: pa.Table, properties: dict[str, str]) -> Snapshot:
        """One commit of ``rows``; returns its snapshot."""
        metadata = self.table.metadata
        plan = self._plan_for(metadata)
        if plan is None or not rows.schema.equals(plan.arrow, check_metadata=False):
            self.fallback(rows, properties)
            snapshot = self.table.current_snapshot()
            assert snapshot is not None  # an append always leaves one
            return snapshot
        return _LeanCommit(self, plan, rows, properties).run()

    def lean(self, metadata: TableMetadata) -> bool:
        """Whether the lean path can write to a table with ``metadata``."""
        return (
            metadata.format_version == 2
            and not property_as_bool(
                metadata.properties,
                TableProperties.MANIFEST_MERGE_ENABLED,
                TableProperties.MANIFEST_MERGE_ENABLED_DEFAULT,
            )
            and sanitize_column_names(metadata.schema()) == metadata.schema()
        )

    def _plan_for(self, metadata: TableMetadata) -> _WritePlan | None:
        if self._plan is not None and self._plan.fits(metadata):
            return self._plan
        self._plan = _write_plan(metadata) if self.lean(metadata) else None
        return self._plan

    def existing_manifests(self, metadata: TableMetadata, io: FileIO) -> list[ManifestFile]:
        """The manifests a fast append carries over from the current snapshot: as this
        writer's last commit listed them while that is the current one (anything another
        writer committed since makes another snapshot current), else read."""
        parent = metadata.current_snapshot()
        if parent is None:
            return []
        known = self._manifests
        if known is not None and known.snapshot_id == parent.snapshot_id:
            return list(known.manifests)
        return [
            manifest
            for manifest in parent.manifests(io)
            if manifest.has_added_files() or manifest.has_existing_files()
        ]

    def committed(self, snapshot_id: int, manifests: list[ManifestFile]) -> None:
        self._manifests = _Manifests(snapshot_id, tuple(manifests))


def _write_plan(metadata: TableMetadata) -> _WritePlan:
    schema, spec, properties = metadata.schema(), metadata.spec(), metadata.properties
    compression = cast(
        AvroCompressionCodec,
        properties.get(
            TableProperties.WRITE_AVRO_COMPRESSION, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT
        ),
    )
    partition_columns = []
    for field in spec.fields:
        source = schema.find_field(field.source_id)
        name = schema.find_column_name(field.source_id)
        assert name is not None  # a spec's fields come from its schema
        partition_columns.append((field.transform.pyarrow_transform(source.field_type), name))
    return _WritePlan(
        schema_id=metadata.current_schema_id,
        spec_id=metadata.default_spec_id,
        properties=properties,
        arrow=schema_to_pyarrow(schema, include_field_ids=True),
        writer_options=_get_parquet_writer_kwargs(properties),
        row_group_rows=property_as_int(
            properties,
            TableProperties.PARQUET_ROW_GROUP_LIMIT,
            TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT,
        )
        or TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT,
        statistics=compute_statistics_plan(schema, properties),
        column_ids=parquet_path_to_id_mapping(schema),
        avro_compression=compression,
        partition_summary_limit=property_as_int(
            properties,
            TableProperties.WRITE_PARTITION_SUMMARY_LIMIT,
            TableProperties.WRITE_PARTITION_SUMMARY_LIMIT_DEFAULT,
        )
        or 0,
        locations=load_location_provider(metadata.location, properties),
        manifests=manifest_layout(spec, schema, compression),
        partition_columns=tuple(partition_columns),
    )


class _LeanCommit:
    """One append: data files and their manifest written once, the snapshot as often as
    maintenance commits in between."""

    def __init__(
        self, appender: Appender, plan: _WritePlan, rows: pa.Table, properties: dict[str, str]
    ) -> None:
        self._appender = appender
        self._table = appender.table
        self._plan = plan
        self._rows = pa.Table.from_arrays(rows.columns, schema=plan.arrow)
        self._properties = properties
        self._commit_uuid = uuid.uuid4()
        #: data files and the manifest
        self._files: list[str] = []
        #: per attempt, its manifest list and merged manifests
        self._attempts: list[list[str]] = []

    def run(self) -> Snapshot:
        metadata = self._table.metadata
        follows = newest_progress_id(metadata)
        snapshot_id = metadata.new_snapshot_id()
        data_files = [
            self._write_data_file(metadata, key, part, number)
            for number, (key, part) in enumerate(self._partitions(metadata))
        ]
        added = self._write_manifest(metadata, snapshot_id, data_files) if data_files else None
        try:
            for attempt in range(COMMIT_ATTEMPTS):
                try:
                    return self._commit(snapshot_id, attempt, data_files, added)
                except CommitFailedException:
                    if attempt == COMMIT_ATTEMPTS - 1:
                        raise
                    self._table.refresh()
                    check_no_other_writer(self._table, follows)
            raise AssertionError("unreachable")  # the loop returns or raises
        except (CommitFailedException, ConcurrentWriterError):
            # the commit did not land: nothing refers to these files
            self._delete(self._files + [path for files in self._attempts for path in files])
            raise

    def _partitions(
        self, metadata: TableMetadata
    ) -> Iterator[tuple[PartitionKey | None, pa.Table]]:
        rows, plan = self._rows, self._plan
        if rows.num_rows == 0:
            return
        if not plan.partition_columns:
            yield None, rows
            return
        values = [transform(rows.column(name)) for transform, name in plan.partition_columns]
        if all(_single_value(column) for column in values):
            spec, schema = metadata.spec(), metadata.schema()
            key = PartitionKey(
                field_values=[
                    PartitionFieldValue(field=field, value=column[0].as_py())
                    for field, column in zip(spec.fields, values, strict=True)
                ],
                partition_spec=spec,
                schema=schema,
            )
            yield key, rows
            return
        for partition in _determine_partitions(metadata.spec(), metadata.schema(), rows):
            yield partition.partition_key, partition.arrow_table_partition

    def _write_data_file(
        self, metadata: TableMetadata, key: PartitionKey | None, rows: pa.Table, number: int
    ) -> DataFile:
        plan = self._plan
        path = plan.locations.new_data_location(
            data_file_name=f"00000-{number}-{self._commit_uuid}.parquet", partition_key=key
        )
        output = self._table.io.new_output(path)
        self._files.append(path)
        with output.create(overwrite=True) as stream:
            writer = pq.ParquetWriter(
                stream, schema=plan.arrow, store_decimal_as_integer=True, **plan.writer_options
            )
            writer.write(rows, row_group_size=plan.row_group_rows)
            writer.close()
        statistics = data_file_statistics_from_parquet_metadata(
            parquet_metadata=writer.writer.metadata,
            stats_columns=dict(plan.statistics),
            parquet_column_mapping=dict(plan.column_ids),
        )
        return DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=path,
            file_format=FileFormat.PARQUET,
            partition=key.partition if key is not None else Record(),
            file_size_in_bytes=len(output),
            sort_order_id=None,
            spec_id=metadata.default_spec_id,
            equality_ids=None,
            key_metadata=None,
            **statistics.to_serialized_dict(),
        )

    def _write_manifest(
        self, metadata: TableMetadata, snapshot_id: int, data_files: list[DataFile]
    ) -> ManifestFile:
        path = self._plan.locations.new_metadata_location(f"{self._commit_uuid}-m0.avro")
        self._files.append(path)
        with LaidOutManifestWriter(
            self._plan.manifests,
            spec=metadata.spec(),
            schema=metadata.schema(),
            output_file=self._table.io.new_output(path),
            snapshot_id=snapshot_id,
            avro_compression=self._plan.avro_compression,
        ) as writer:
            for data_file in data_files:
                writer.add(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED,
                        snapshot_id=snapshot_id,
                        sequence_number=None,
                        file_sequence_number=None,
                        data_file=data_file,
                    )
                )
        return writer.to_manifest_file()

    def _commit(
        self,
        snapshot_id: int,
        attempt: int,
        data_files: list[DataFile],
        added: ManifestFile | None,
    ) -> Snapshot:
        table, plan = self._table, self._plan
        base = table.metadata
        parent = base.current_snapshot()
        parent_id = parent.snapshot_id if parent is not None else None
        sequence_number = base.next_sequence_number()
        written: list[str] = []
        self._attempts.append(written)
        existing = self._appender.existing_manifests(base, table.io)
        manifests = ([added] if added is not None else []) + self._merged(
            base, snapshot_id, attempt, existing, written
        )
        path = plan.locations.new_metadata_location(
            f"snap-{snapshot_id}-{attempt}-{self._commit_uuid}.avro"
        )
        written.append(path)
        with LaidOutManifestListWriter(
            output_file=table.io.new_output(path),
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent_id,
            sequence_number=sequence_number,
            compression=plan.avro_compression,
        ) as writer:
            writer.add_manifests(manifests)
        snapshot = Snapshot(  # type: ignore[call-arg]
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent_id,
            manifest_list=path,
            sequence_number=sequence_number,
            summary=self._summary(base, data_files, parent),
            schema_id=base.current_schema_id,
        )
        # PyIceberg's own last step: the catalog's commit, then the old metadata files
        # deleted as the table's retention says, and the table given the new metadata
        table._do_commit(
            requirements=(
                AssertTableUUID(uuid=base.table_uuid),
                AssertRefSnapshotId(snapshot_id=parent_id, ref=MAIN_BRANCH),  # type: ignore[call-arg]
            ),
            updates=(
                AddSnapshotUpdate(snapshot=snapshot),
                SetSnapshotRefUpdate(  # type: ignore[call-arg]
                    snapshot_id=snapshot_id,
                    parent_snapshot_id=parent_id,
                    ref_name=MAIN_BRANCH,
                    type=SnapshotRefType.BRANCH,
                ),
            ),
        )
        # the attempts that did not land
        self._delete([path for files in self._attempts[:-1] for path in files])
        self._appender.committed(snapshot_id, [_assigned(m, sequence_number) for m in manifests])
        return snapshot

    def _merged(
        self,
        base: TableMetadata,
        snapshot_id: int,
        attempt: int,
        manifests: list[ManifestFile],
        written: list[str],
    ) -> list[ManifestFile]:
        """``manifests`` with each group ``manifest_merge.to_merge`` names merged into one
        (its files as ``EXISTING`` entries); a group without live files is dropped."""
        groups = to_merge(manifests)
        if not groups:
            return manifests
        merged_away = {id(manifest) for group in groups for manifest in group}
        merged = []
        for number, group in enumerate(groups, start=1):
            entries = [
                entry
                for manifest in group
                for entry in manifest.fetch_manifest_entry(self._table.io, discard_deleted=True)
            ]
            if not entries:
                continue
            path = self._plan.locations.new_metadata_location(
                f"{self._commit_uuid}-m{number}-{attempt}.avro"
            )
            written.append(path)
            spec = base.specs()[group[0].partition_spec_id]
            with write_manifest(
                format_version=2,
                spec=spec,
                schema=base.schema(),
                output_file=self._table.io.new_output(path),
                snapshot_id=snapshot_id,
                avro_compression=self._plan.avro_compression,
            ) as writer:
                for entry in entries:
                    writer.existing(entry)
            merged.append(writer.to_manifest_file())
        return merged + [manifest for manifest in manifests if id(manifest) not in merged_away]

    def _summary(
        self, base: TableMetadata, data_files: list[DataFile], parent: Snapshot | None
    ) -> Summary:
        collector = SnapshotSummaryCollector(
            partition_summary_limit=self._plan.partition_summary_limit
        )
        schema, spec = base.schema(), base.spec()
        for data_file in data_files:
            collector.add_file(data_file=data_file, partition_spec=spec, schema=schema)
        return update_snapshot_summaries(
            summary=Summary(operation=Operation.APPEND, **collector.build(), **self._properties),
            previous_summary=parent.summary if parent is not None else None,
        )

    def _delete(self, paths: list[str]) -> None:
        for path in paths:
            self._table.io.delete(path)


def _single_value(column: pa.Array | pa.ChunkedArray) -> bool:
    if column.null_count:
        return False
    bounds = pc.min_max(column)
    return bool(bounds["min"] == bounds["max"])


def _assigned(manifest: ManifestFile, sequence_number: int) -> ManifestFile:
    """``manifest`` as a manifest list written at ``sequence_number`` lists it."""
    if UNASSIGNED_SEQ not in (manifest.sequence_number, manifest.min_sequence_number):
        return manifest
    listed = copy(manifest)
    if listed.sequence_number == UNASSIGNED_SEQ:
        listed.sequence_number = sequence_number
    if listed.min_sequence_number == UNASSIGNED_SEQ:
        listed.min_sequence_number = sequence_number
    return listed
