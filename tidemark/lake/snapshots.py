"""One snapshot producer, shaped like PyIceberg's ``_SnapshotProducer``, for Tidemark's commits.

PyIceberg's producers re-derive at each commit what only changes with the table's schema, spec
or properties, re-read the manifest list their last commit wrote, and hand each step to a thread
pool; a changelog commits every few seconds and a thousand mirrors merge in the minute after a
window, and those were about half of a small commit's CPU (issue 25). This producer writes the
same files the same way (manifests with PyIceberg's writers, ``manifests``; a manifest list; the
snapshot through the table's ``_do_commit``, as PyIceberg's transaction ends), but takes what
is fixed per table from a ``SnapshotPlan`` made once, and the manifests its writer's own last
commit left from a ``ManifestMemo``.

As in PyIceberg, a producer collects the files of its commit (written beforehand by
``tidemark.lake.data_files``), then ``commit`` writes the manifests of the added files once,
and per attempt the manifest list and the snapshot; subclasses say what else a commit does:

- ``FastAppend``: data files, on top of the parent's manifests;
- ``MergeAppend``: a fast append that merges the parent's manifests in tiers
  (``manifest_tiers``), so a changelog's manifest list stays short (ingest's appends);
- ``PositionDeleteOverwrite``: data files and position delete files, as Spark's merge-on-read
  ``MERGE`` commits them (the window merge without Spark).

**Retries.** A commit whose base moved (``CommitFailedException``) is tried again, on the
table read again, up to ``attempts`` times, each attempt asking ``before_retry`` first (ingest's
fence against a second writer raises there). Files are deleted when the commit cannot have
landed: an error before the catalog's commit, the catalog refusing it, or ``before_retry``
refusing to go on; after any other error of the catalog's commit it may have landed, and the
files stay (an orphan costs space, a missing file breaks the table). Failed attempts' own files
are deleted once one lands.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from copy import copy
from dataclasses import dataclass
from functools import cached_property
from types import TracebackType
from typing import Self, cast

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    UNASSIGNED_SEQ,
    AvroCompressionCodec,
    DataFile,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    write_manifest,
)
from pyiceberg.partitioning import PartitionSpec
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
from pyiceberg.utils.properties import property_as_int

from tidemark.lake.manifest_tiers import to_merge
from tidemark.lake.manifests import (
    AvroLayout,
    DeleteManifestWriter,
    LaidOutManifestListWriter,
    LaidOutManifestWriter,
    manifest_layout,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SnapshotPlan:
    """What a producer needs that only changes with the table's schema, spec or properties."""

    locations: LocationProvider
    avro_compression: AvroCompressionCodec
    partition_summary_limit: int
    #: the Avro layout of the default spec's data manifests, derived once; None: PyIceberg's
    #: writer derives it for each manifest (a table committed to once per process)
    data_manifests: AvroLayout | None

    @classmethod
    def of(cls, metadata: TableMetadata, *, laid_out: bool) -> SnapshotPlan:
        properties = metadata.properties
        compression = cast(
            AvroCompressionCodec,
            properties.get(
                TableProperties.WRITE_AVRO_COMPRESSION,
                TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT,
            ),
        )
        return cls(
            locations=load_location_provider(metadata.location, properties),
            avro_compression=compression,
            partition_summary_limit=property_as_int(
                properties,
                TableProperties.WRITE_PARTITION_SUMMARY_LIMIT,
                TableProperties.WRITE_PARTITION_SUMMARY_LIMIT_DEFAULT,
            )
            or 0,
            data_manifests=(
                manifest_layout(metadata.spec(), metadata.schema(), compression)
                if laid_out
                else None
            ),
        )


class ManifestMemo:
    """The manifests of one writer's last commit, as its manifest list listed them, so that its
    next commit carries them over without reading that list again. Only while that commit is
    the table's current snapshot: a commit by anyone else makes another one current."""

    def __init__(self) -> None:
        self._snapshot_id: int | None = None
        self._manifests: tuple[ManifestFile, ...] = ()

    def existing(self, metadata: TableMetadata, io: FileIO) -> list[ManifestFile]:
        """The live manifests of ``metadata``'s current snapshot."""
        parent = metadata.current_snapshot()
        if parent is None:
            return []
        if self._snapshot_id == parent.snapshot_id:
            return list(self._manifests)
        return live_manifests(parent, io)

    def remember(
        self, snapshot_id: int, manifests: list[ManifestFile], sequence_number: int
    ) -> None:
        self._snapshot_id = snapshot_id
        self._manifests = tuple(_assigned(manifest, sequence_number) for manifest in manifests)


def live_manifests(snapshot: Snapshot, io: FileIO) -> list[ManifestFile]:
    """The manifests of ``snapshot`` a fast append on top of it lists again: those with a
    file still in the table."""
    return [
        manifest
        for manifest in snapshot.manifests(io)
        if manifest.has_added_files() or manifest.has_existing_files()
    ]


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


class SnapshotProducer(ABC):
    """One commit of a new snapshot to ``table``'s main branch, with ``properties`` in its
    summary (the module's description). Used as PyIceberg's are: files added in a ``with``
    block, committed at its end (``snapshot`` is then the new snapshot); an error in the
    block deletes the files added."""

    def __init__(
        self,
        table: Table,
        plan: SnapshotPlan,
        properties: Mapping[str, str],
        *,
        memo: ManifestMemo | None = None,
        attempts: int = 1,
        before_retry: Callable[[], None] | None = None,
    ) -> None:
        self._table = table
        self._plan = plan
        self._properties = dict(properties)
        self._memo = memo
        self._attempts = attempts
        self._before_retry = before_retry
        #: names the commit's files, as PyIceberg's ``commit_uuid`` does
        self.commit_uuid = uuid.uuid4()
        #: kept over the attempts, so the added files' manifests are written once
        self.snapshot_id = table.metadata.new_snapshot_id()
        self._data_files: list[DataFile] = []
        self._manifest_numbers = itertools.count()
        #: the files every attempt lists: the added files and their manifests
        self._written: list[str] = []
        #: per attempt, the files only it wrote: its manifest list, its merged manifests
        self._attempt_files: list[list[str]] = []
        #: from the catalog's commit on, until it is refused
        self._may_have_landed = False
        self._snapshot: Snapshot | None = None

    # what a commit adds

    def append_data_file(self, data_file: DataFile) -> None:
        """Add ``data_file``, written for this commit (deleted if the commit does not land)."""
        self._data_files.append(data_file)
        self._written.append(data_file.file_path)

    # what subclasses decide

    @abstractmethod
    def _operation(self) -> Operation: ...

    def _existing_manifests(self, base: TableMetadata) -> list[ManifestFile]:
        """The manifests of the parent snapshot the new one lists again."""
        if self._memo is not None:
            return self._memo.existing(base, self._table.io)
        parent = base.current_snapshot()
        return live_manifests(parent, self._table.io) if parent is not None else []

    def _process_manifests(
        self, base: TableMetadata, manifests: list[ManifestFile], written: list[str]
    ) -> list[ManifestFile]:
        """The existing ``manifests`` as the new snapshot lists them; files written for it go
        to ``written`` (this attempt's)."""
        return manifests

    def _added_manifests(self, base: TableMetadata) -> list[ManifestFile]:
        """The manifests of the files the commit adds, written once for every attempt."""
        if not self._data_files:
            return []
        layout = self._plan.data_manifests
        path = self._new_manifest_path(self._written)
        arguments = self._manifest_arguments(base, base.spec(), path)
        writer: ManifestWriter = (
            LaidOutManifestWriter(layout, **arguments)
            if layout is not None
            else write_manifest(format_version=2, **arguments)  # type: ignore[arg-type]
        )
        return [self._write_added(writer, self._data_files)]

    def _summarize(self, base: TableMetadata, collector: SnapshotSummaryCollector) -> None:
        """Count in ``collector`` what else the commit adds than data files."""
        return None

    # the commit

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None:
            self._delete(self._written)
            return
        self._snapshot = self.commit()

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot committed."""
        assert self._snapshot is not None, "the snapshot is known once committed"
        return self._snapshot

    def commit(self) -> Snapshot:
        """Commit the files added; the new snapshot."""
        try:
            added = self._added_manifests(self._table.metadata)
            for attempt in range(self._attempts):
                try:
                    return self._attempt(attempt, added)
                except CommitFailedException:
                    if attempt == self._attempts - 1:
                        raise
                    self._table.refresh()
                    if self._before_retry is not None:
                        self._before_retry()
            raise AssertionError("unreachable")  # the loop returns or raises
        except BaseException:
            if not self._may_have_landed:
                self._delete(self._written + [p for files in self._attempt_files for p in files])
            raise

    def _attempt(self, attempt: int, added: list[ManifestFile]) -> Snapshot:
        table, plan = self._table, self._plan
        base = table.metadata
        parent = base.current_snapshot()
        parent_id = parent.snapshot_id if parent is not None else None
        sequence_number = base.next_sequence_number()
        written: list[str] = []
        self._attempt_files.append(written)
        manifests = added + self._process_manifests(base, self._existing_manifests(base), written)
        path = plan.locations.new_metadata_location(
            f"snap-{self.snapshot_id}-{attempt}-{self.commit_uuid}.avro"
        )
        written.append(path)
        with LaidOutManifestListWriter(
            output_file=table.io.new_output(path),
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent_id,
            sequence_number=sequence_number,
            compression=plan.avro_compression,
        ) as writer:
            writer.add_manifests(manifests)
        snapshot = Snapshot(  # type: ignore[call-arg]
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent_id,
            manifest_list=path,
            sequence_number=sequence_number,
            summary=self._summary(base, parent),
            schema_id=base.current_schema_id,
        )
        self._may_have_landed = True
        try:
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
                        snapshot_id=self.snapshot_id,
                        parent_snapshot_id=parent_id,
                        ref_name=MAIN_BRANCH,
                        type=SnapshotRefType.BRANCH,
                    ),
                ),
            )
        except CommitFailedException:
            self._may_have_landed = False
            raise
        # the attempts that did not land; the commit has: a file that cannot be deleted now is
        # an orphan (space), never a reason to report a landed commit as failed
        try:
            self._delete([path for files in self._attempt_files[:-1] for path in files])
        except OSError:
            logger.warning(
                "Files of failed commit attempts to %s were kept", self._table.name(), exc_info=True
            )
        if self._memo is not None:
            self._memo.remember(self.snapshot_id, manifests, sequence_number)
        return snapshot

    def _summary(self, base: TableMetadata, parent: Snapshot | None) -> Summary:
        collector = SnapshotSummaryCollector(
            partition_summary_limit=self._plan.partition_summary_limit
        )
        schema, spec = base.schema(), base.spec()
        for data_file in self._data_files:
            collector.add_file(data_file=data_file, partition_spec=spec, schema=schema)
        self._summarize(base, collector)
        return update_snapshot_summaries(
            summary=Summary(operation=self._operation(), **collector.build(), **self._properties),
            previous_summary=parent.summary if parent is not None else None,
        )

    # files

    def _new_manifest_path(self, written: list[str]) -> str:
        path = self._plan.locations.new_metadata_location(
            f"{self.commit_uuid}-m{next(self._manifest_numbers)}.avro"
        )
        written.append(path)
        return path

    def _manifest_arguments(
        self, base: TableMetadata, spec: PartitionSpec, path: str
    ) -> dict[str, object]:
        return {
            "spec": spec,
            "schema": base.schema(),
            "output_file": self._table.io.new_output(path),
            "snapshot_id": self.snapshot_id,
            "avro_compression": self._plan.avro_compression,
        }

    def _write_added(self, writer: ManifestWriter, files: list[DataFile]) -> ManifestFile:
        with writer:
            for data_file in files:
                writer.add(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED,
                        snapshot_id=self.snapshot_id,
                        sequence_number=None,
                        file_sequence_number=None,
                        data_file=data_file,
                    )
                )
        return writer.to_manifest_file()

    def _delete(self, paths: list[str]) -> None:
        for path in paths:
            try:
                self._table.io.delete(path)
            except FileNotFoundError:
                pass  # never written: the error came first


class FastAppend(SnapshotProducer):
    """Data files added on top of the parent snapshot's manifests."""

    def _operation(self) -> Operation:
        return Operation.APPEND


class MergeAppend(FastAppend):
    """A fast append whose parent manifests are merged in tiers (``manifest_tiers``): each
    group ``to_merge`` names becomes one manifest of its files as ``EXISTING`` entries, with
    their own snapshot ids and sequence numbers, as Java's merge writes them; a group without
    a live file is dropped."""

    def _process_manifests(
        self, base: TableMetadata, manifests: list[ManifestFile], written: list[str]
    ) -> list[ManifestFile]:
        groups = to_merge(manifests)
        if not groups:
            return manifests
        merged_away = {id(manifest) for group in groups for manifest in group}
        merged = []
        io = self._table.io
        for group in groups:
            entries = [
                entry
                for manifest in group
                for entry in manifest.fetch_manifest_entry(io, discard_deleted=True)
            ]
            if not entries:
                continue
            path = self._new_manifest_path(written)
            spec = base.specs()[group[0].partition_spec_id]
            with write_manifest(
                format_version=2,
                **self._manifest_arguments(base, spec, path),  # type: ignore[arg-type]
            ) as writer:
                for entry in entries:
                    writer.existing(entry)
            merged.append(writer.to_manifest_file())
        return merged + [manifest for manifest in manifests if id(manifest) not in merged_away]


class PositionDeleteOverwrite(SnapshotProducer):
    """Data files and position delete files, as Spark's merge-on-read ``MERGE`` commits them:
    an ``overwrite`` when it deletes rows, else an ``append``."""

    @cached_property
    def _delete_files(self) -> list[DataFile]:
        return []

    def add_delete_file(self, delete_file: DataFile) -> None:
        """Add a position delete file written for this commit."""
        self._delete_files.append(delete_file)
        self._written.append(delete_file.file_path)

    def _operation(self) -> Operation:
        return Operation.OVERWRITE if self._delete_files else Operation.APPEND

    def _added_manifests(self, base: TableMetadata) -> list[ManifestFile]:
        added = super()._added_manifests(base)
        # a manifest per spec: deletes keep the spec of the data files they delete from
        for spec_id in sorted({f.spec_id for f in self._delete_files}):
            of_spec = [f for f in self._delete_files if f.spec_id == spec_id]
            path = self._new_manifest_path(self._written)
            arguments = self._manifest_arguments(base, base.specs()[spec_id], path)
            writer = DeleteManifestWriter(**arguments)  # type: ignore[arg-type]
            added.append(self._write_added(writer, of_spec))
        return added

    def _summarize(self, base: TableMetadata, collector: SnapshotSummaryCollector) -> None:
        schema, specs = base.schema(), base.specs()
        for delete_file in self._delete_files:
            collector.add_file(
                delete_file, partition_spec=specs[delete_file.spec_id], schema=schema
            )
