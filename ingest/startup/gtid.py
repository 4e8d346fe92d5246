"""GTID sets as ``scan.startup.specific-offset.gtid-set`` gives them, in either server's syntax.

MariaDB: ``domain-server-sequence`` per replication domain, comma separated
(``0-1-1042,1-2-7``), the form of ``@@gtid_binlog_pos``: each names the last transaction applied
in its domain, so it covers every transaction of that domain up to that sequence number.

MySQL: ``uuid:interval[:interval...]`` per source server, comma separated
(``3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7``): exactly the transactions it lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tidemark.errors import ConfigError

_MARIADB = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_MYSQL_UUID = re.compile(r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$")


@dataclass(frozen=True)
class MariaDBGtidSet:
    """The last sequence number applied per domain."""

    last_sequence: dict[int, int]

    def same_form(self, gtid: str) -> bool:
        return _MARIADB.match(gtid) is not None

    def covers(self, gtid: str) -> bool:
        match = _MARIADB.match(gtid)
        if match is None:
            return False
        domain, _, sequence = (int(part) for part in match.groups())
        return sequence <= self.last_sequence.get(domain, -1)

    def follows_directly(self, gtid: str) -> bool:
        """Whether ``gtid`` is the transaction right after the set in its domain."""
        match = _MARIADB.match(gtid)
        if match is None:
            return False
        domain, _, sequence = (int(part) for part in match.groups())
        return domain not in self.last_sequence or sequence == self.last_sequence[domain] + 1


@dataclass(frozen=True)
class MySQLGtidSet:
    """Closed intervals of transaction numbers per source server UUID."""

    intervals: dict[str, tuple[tuple[int, int], ...]]

    def same_form(self, gtid: str) -> bool:
        uuid, _, number = gtid.rpartition(":")
        return number.isdigit() and _MYSQL_UUID.match(uuid) is not None

    def covers(self, gtid: str) -> bool:
        uuid, _, number = gtid.rpartition(":")
        if not number.isdigit():
            return False
        transaction = int(number)
        return any(
            low <= transaction <= high for low, high in self.intervals.get(_uuid_key(uuid), ())
        )

    def includes(self, other: MySQLGtidSet) -> bool:
        """Whether every transaction of ``other`` is in this set."""
        merged = {uuid: _merged(intervals) for uuid, intervals in self.intervals.items()}
        return all(
            any(low <= start and end <= high for low, high in merged.get(uuid, ()))
            for uuid, intervals in other.intervals.items()
            for start, end in intervals
        )


GtidSet = MariaDBGtidSet | MySQLGtidSet


def _merged(intervals: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """``intervals`` sorted, adjacent and overlapping ones joined (``1-5:6-9`` is ``1-9``)."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(intervals):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def parse_gtid_set(text: str) -> GtidSet:
    """The set ``text`` names; a ``ConfigError`` naming the bad part and both accepted forms."""
    parts = [part.strip() for part in text.replace("\n", "").split(",") if part.strip()]
    if not parts:
        raise _malformed(text, "it is empty")
    mariadb = [match for match in map(_MARIADB.match, parts) if match is not None]
    if len(mariadb) == len(parts):
        last: dict[int, int] = {}
        for match in mariadb:
            domain, _, sequence = (int(group) for group in match.groups())
            if domain in last:
                raise _malformed(text, f"domain {domain} appears twice")
            last[domain] = sequence
        return MariaDBGtidSet(last)
    intervals: dict[str, tuple[tuple[int, int], ...]] = {}
    for part in parts:
        uuid, *ranges = part.split(":")
        if not _MYSQL_UUID.match(uuid) or not ranges:
            raise _malformed(text, f"'{part}' is neither domain-server-sequence nor uuid:1-5")
        intervals[_uuid_key(uuid)] = intervals.get(_uuid_key(uuid), ()) + tuple(
            _interval(text, part, spec) for spec in ranges
        )
    return MySQLGtidSet(intervals)


def _interval(text: str, part: str, spec: str) -> tuple[int, int]:
    low, _, high = spec.partition("-")
    if not low.isdigit() or not (high or low).isdigit() or int(high or low) < int(low):
        raise _malformed(text, f"'{spec}' in '{part}' is not a number or a range low-high")
    return int(low), int(high or low)


def _uuid_key(uuid: str) -> str:
    return uuid.replace("-", "").lower()


def _malformed(text: str, reason: str) -> ConfigError:
    return ConfigError(
        f"scan.startup.specific-offset.gtid-set '{text}' is not a GTID set: {reason}. Write "
        "MariaDB's form, the last transaction per domain as in @@gtid_binlog_pos "
        "('0-1-1042,1-2-7'), or MySQL's, as in @@gtid_executed ('<server uuid>:1-1042')"
    )
