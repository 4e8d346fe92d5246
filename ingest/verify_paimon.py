"""A Paimon sink table as ``ingest.verify`` reads it: the table is its own mirror, pinned at
its newest snapshot when the comparison starts.

Ingest goes on writing while the source is compared, so a key that differs is *in flight* when
the table's newest snapshot has a newer change of it (a higher ``_tm_order``), or no longer has
it (deleted since).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ingest.verify import Key, live_rows, selected_columns
from tidemark.contracts.changelog import MetadataColumn
from tidemark.contracts.progress import TableProgress
from tidemark.lake.paimon import PaimonTable
from tidemark.sinks.paimon import newest_progress

_ORDER = MetadataColumn.ORDER_KEY.value


class PaimonMirror:
    """``ingest.verify.MirrorReader`` of a Paimon sink table."""

    def __init__(self, table: PaimonTable) -> None:
        self._table = table
        # one walk back from the state compared: the progress read is that state's
        snapshots = table.snapshots()
        newest = next(snapshots, None)
        self._snapshot_id = None if newest is None else newest.snapshot_id
        progress = None if newest is None else newest_progress(itertools.chain([newest], snapshots))
        summary = None if progress is None else TableProgress.from_summary(progress.properties)
        #: the newest change the pinned state holds
        self._order = 0 if summary is None else summary.last_order

    @property
    def name(self) -> str:
        return self._table.identifier

    def column_names(self) -> list[str]:
        return list(self._table.arrow_schema().names)

    def rows(self, key: Sequence[str], names: Sequence[str], keys: list[Key]) -> pa.Table:
        if self._snapshot_id is None:
            return pa.table({})
        return self._table.read(
            selected_columns(self.column_names(), names),
            at_snapshot=self._snapshot_id,
            one_of=(key[0], sorted({k[0] for k in keys})),
        )

    def keys(self, key: Sequence[str]) -> Iterable[Key]:
        if self._snapshot_id is None:
            return []
        columns = selected_columns(self.column_names(), key)
        rows = live_rows(self._table.read(columns, at_snapshot=self._snapshot_id))
        return list(zip(*(rows.column(name).to_pylist() for name in key), strict=True))

    def changed_since(self, key: Sequence[str], suspects: list[Key]) -> set[Key]:
        first = (key[0], sorted({k[0] for k in suspects}))
        now = self._table.read([*key, _ORDER], one_of=first)
        newer = _keys(now.filter(pc.greater(now[_ORDER], self._order)), key)
        # deleted since: held then, gone now (a key never held and still absent is missing)
        held = _keys(self._table.read(list(key), at_snapshot=self._snapshot_id, one_of=first), key)
        return newer | (held - _keys(now, key))


def _keys(rows: pa.Table, key: Sequence[str]) -> set[Key]:
    return set(zip(*(rows.column(k).to_pylist() for k in key), strict=True))
