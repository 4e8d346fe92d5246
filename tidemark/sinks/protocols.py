"""What the stages need of a changelog table, whatever format it is written in.

``ChangelogHistory`` is the reading side (the window merge's bound, ``tidemark status``, commit
reports rebuilt after a restart); ``ChangelogWriter`` is what ingest does with a table: one
atomic commit of rows and their progress, and the newest progress read back to resume. Ingest
commits a hundred times a second at scale, so a writer answers ``commit`` from the commit it
made and ``progress`` from the metadata it holds: neither reads the table again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import pyarrow as pa

from tidemark.contracts.bootstrap_state import BootstrapState
from tidemark.contracts.progress import TableProgress
from tidemark.sinks.commits import Commit


class ChangelogHistory(Protocol):
    """The commits a changelog table keeps."""

    @property
    def identifier(self) -> str:
        """The table's name in its catalog, ``namespace.name``."""
        ...

    def commits(self) -> Iterator[Commit]:
        """The commits of the table's current history, newest first, read lazily (a reader
        that stops early pays for what it read). Commits that maintenance expired are gone;
        those of compactions are listed and carry no progress."""
        ...


class ChangelogWriter(ChangelogHistory, Protocol):
    """One changelog table as ingest writes it."""

    #: the table's columns as Arrow has them, the data columns then Tidemark's metadata
    #: columns (``tidemark.contracts.changelog``); replaced by ``evolve``
    schema: pa.Schema
    #: held by every commit and schema change of the table: ingest commits on background
    #: threads while the schema tracker may evolve the table on the reading thread
    writing: threading.RLock

    @property
    def properties(self) -> dict[str, str]:
        """The table's properties (schema history, comment), as last committed."""
        ...

    def data_schema(self) -> pa.Schema:
        """The source columns, without Tidemark's metadata columns."""
        ...

    def evolve(
        self,
        add: Sequence[pa.Field],
        widen: Sequence[pa.Field],
        properties: Mapping[str, str],
        renamed: Mapping[str, str] | None = None,
        dropped: Sequence[str] = (),
    ) -> None:
        """Add columns, widen types and set properties, in one commit. ``renamed`` (old ->
        new) tells which columns of ``add`` (or added before) are old ones renamed, and
        ``dropped`` which columns the source dropped: a changelog that keeps history adds
        the new names and keeps the dropped; a table that is the mirror (Paimon) renames and
        drops in place."""
        ...

    def commit(
        self, rows: pa.Table, progress: TableProgress, bootstrap: BootstrapState | None = None
    ) -> Commit:
        """Append ``rows`` (possibly none, in ``schema``) with ``progress``, and the bootstrap's
        state when the rows are a snapshot's, in one atomic commit; the commit made. Fails,
        having committed nothing, when another writer committed since this one last did."""
        ...

    def progress(self) -> TableProgress | None:
        """The progress of the newest Tidemark commit; None for a table never committed to."""
        ...

    def bootstrap(self) -> BootstrapState | None:
        """The bootstrap's state if the newest Tidemark commit is one of the bootstrap's."""
        ...

    def last_commit_id(self) -> int | None:
        """The id of the newest Tidemark commit (what a watermark report names)."""
        ...

    def has_commits(self) -> bool:
        """Whether anything was ever committed to the table."""
        ...

    def delete_snapshot_rows_after(self, order: int, progress: TableProgress) -> None:
        """Delete the rows a bootstrap read (``_tm_op`` ``r``) whose ``_tm_order`` is after
        ``order``, in a commit that records ``progress``: an error table's rows of chunks whose
        commit a crash lost, before the resumed bootstrap reads those chunks again."""
        ...

    def newest_rows(self, since: datetime, columns: Sequence[str], limit: int) -> pa.Table:
        """``columns`` of the ``limit`` newest rows (by ``_tm_order``) whose change happened
        since ``since``, newest first (the status page's error rows)."""
        ...


@dataclass(frozen=True)
class SinkTableSpec:
    """What a sink table is created with."""

    identifier: str
    #: the source columns, as ingest's Arrow schema has them
    data: pa.Schema
    #: the sink table's key (Paimon's primary key; an Iceberg changelog has none)
    keys: tuple[str, ...] = ()
    #: Paimon's partition columns (Iceberg changelogs are partitioned by event day)
    partition_keys: tuple[str, ...] = ()
    #: table properties (options) to create it with
    properties: Mapping[str, str] = field(default_factory=dict)
    #: ``mirror.deletes: keep``: a table that is its own mirror (Paimon's) keeps a deleted
    #: row, marked in ``_tm_deleted``
    keep_deletes: bool = False
