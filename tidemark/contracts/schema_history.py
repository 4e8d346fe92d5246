"""Every structure a source table has had, kept in its changelog table's properties.

Property ``tidemark.schema.<database>.<table>`` holds, per version, the table as
``information_schema`` described it and the binlog position where ingest first saw it::

    {"versions": [{"version": 1, "since": "mariadb-bin.000002:4", "table": {...}}, ...]}

A row image names its columns (``binlog_row_metadata=FULL``), so a row written before a change
finds the version whose columns it has, and is decoded with that version even after a restart
from an old position. ``_tm_schema_version`` records the version in every changelog row.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from tidemark.contracts.source_tables import SourceColumn, SourceTable, UniqueKey

PROPERTY_PREFIX = "tidemark.schema."


@dataclass(frozen=True)
class SchemaVersion:
    version: int
    #: the binlog position where ingest first met this structure
    since: str
    table: SourceTable
    #: (new name, old name) of each column this version renamed (``ALTER ... RENAME COLUMN``)
    renamed_from: tuple[tuple[str, str], ...] = ()

    @functools.cached_property
    def column_names(self) -> frozenset[str]:
        """Asked of every row: computed once (a frozen dataclass may cache in its __dict__)."""
        return frozenset(column.name for column in self.table.columns)


def property_name(table_id: str) -> str:
    return PROPERTY_PREFIX + table_id


def read_versions(properties: Mapping[str, str], table_id: str) -> list[SchemaVersion]:
    text = properties.get(property_name(table_id))
    if text is None:
        return []
    return [
        SchemaVersion(
            int(entry["version"]),
            str(entry["since"]),
            _table(entry["table"]),
            tuple((str(new), str(old)) for new, old in entry.get("renamed_from", ())),
        )
        for entry in json.loads(text)["versions"]
    ]


def versions_property(table_id: str, versions: list[SchemaVersion]) -> dict[str, str]:
    document = {
        "versions": [
            {
                "version": v.version,
                "since": v.since,
                "table": asdict(v.table),
                **(
                    {"renamed_from": [list(pair) for pair in v.renamed_from]}
                    if v.renamed_from
                    else {}
                ),
            }
            for v in versions
        ]
    }
    return {property_name(table_id): json.dumps(document, separators=(",", ":"))}


def _table(raw: Mapping[str, Any]) -> SourceTable:
    return SourceTable(
        database=raw["database"],
        name=raw["name"],
        columns=tuple(
            SourceColumn(**{**column, "members": tuple(column["members"])})
            for column in raw["columns"]
        ),
        primary_key=tuple(raw["primary_key"]),
        unique_keys=tuple(
            UniqueKey(key["name"], tuple(key["columns"])) for key in raw["unique_keys"]
        ),
    )
