"""Appends to a table committed to every few seconds by one writer: PyIceberg's fast append,
from state kept between commits.

A changelog table gets a commit at every flush that touched it, from one writer, with rows of
the table's own schema. PyIceberg (0.12) re-derives everything at each append: it re-reads the
parent snapshot's manifest list, converts and checks the Arrow schema against the table's,
groups rows by partition with a generic group-by, reads its configuration, and hands each step
to a thread pool. At a thousand tables those were about half the CPU of a one-row commit
(issue 25; bench/README.md has the profile). ``Appender`` writes the same files the same way
(``data_files.write_data_files``, then a ``snapshots.MergeAppend``), but keeps what only changes
with the table's schema, spec or properties (``_Plans``) and the manifests its own last commit
left (``snapshots.ManifestMemo``).

Rows whose Arrow schema is not exactly the table's, a table in another format version, with
manifest merging on, or with column names Avro cannot hold go through PyIceberg's append
instead (``Appender.lean``, the caller's ``fallback``), which gives the same snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from pyiceberg.schema import sanitize_column_names
from pyiceberg.table import Table, TableMetadata, TableProperties
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.utils.properties import property_as_bool

from tidemark.lake.data_files import DataFilePlan, write_data_files
from tidemark.lake.snapshots import ManifestMemo, MergeAppend, SnapshotPlan


@dataclass(frozen=True)
class _Plans:
    """What an append needs that only changes with the table's schema, spec or properties."""

    data: DataFilePlan
    snapshot: SnapshotPlan

    def fits(self, metadata: TableMetadata) -> bool:
        return self.data.fits(metadata)


@dataclass
class Appender:
    """Appends rows with their snapshot properties to ``table`` (the module's description)."""

    table: Table
    #: PyIceberg's append, for what the lean path does not cover: rows, properties and the
    #: append's ``before_retry``
    fallback: Callable[[pa.Table, dict[str, str], Callable[[], None] | None], None]
    #: attempts at one commit when another commits in between (PyIceberg's default is 4
    #: retries); each asks the append's ``before_retry`` first
    attempts: int = 5
    _plans: _Plans | None = None
    _memo: ManifestMemo = field(default_factory=ManifestMemo)

    def append(
        self,
        rows: pa.Table,
        properties: dict[str, str],
        before_retry: Callable[[], None] | None = None,
    ) -> Snapshot:
        """One commit of ``rows``; returns its snapshot. When the table moved under the commit,
        it is read again and ``before_retry`` called before the commit is tried again on top:
        it raises to stop, and then nothing is committed."""
        metadata = self.table.metadata
        plans = self._plans_for(metadata)
        if plans is None or not rows.schema.equals(plans.data.arrow, check_metadata=False):
            self.fallback(rows, properties, before_retry)
            snapshot = self.table.current_snapshot()
            assert snapshot is not None  # an append always leaves one
            return snapshot
        with MergeAppend(
            self.table,
            plans.snapshot,
            properties,
            memo=self._memo,
            attempts=self.attempts,
            before_retry=before_retry,
        ) as append:
            for data_file in write_data_files(
                metadata, self.table.io, plans.data, rows, append.commit_uuid
            ):
                append.append_data_file(data_file)
        return append.snapshot

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

    def _plans_for(self, metadata: TableMetadata) -> _Plans | None:
        if self._plans is not None and self._plans.fits(metadata):
            return self._plans
        self._plans = None
        if self.lean(metadata):
            self._plans = _Plans(
                data=DataFilePlan.of(metadata),
                snapshot=SnapshotPlan.of(metadata, laid_out=True),
            )
        return self._plans
