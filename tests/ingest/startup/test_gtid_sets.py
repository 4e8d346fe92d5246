"""MySQL GTID sets compared as sets: what ``scan.startup.specific-offset.gtid-set`` lacks of
``@@gtid_purged`` is what was purged before the pipeline read it."""

from __future__ import annotations

import pytest

from ingest.startup.gtid import MySQLGtidSet, parse_gtid_set

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "aaaaaaaa-71ca-11e1-9e33-c80aa9429562"


def _set(text: str) -> MySQLGtidSet:
    parsed = parse_gtid_set(text)
    assert isinstance(parsed, MySQLGtidSet)
    return parsed


@pytest.mark.parametrize(
    ("given", "purged", "included"),
    [
        (f"{A}:1-100", f"{A}:1-77", True),
        (f"{A}:1-50", f"{A}:1-77", False),
        (f"{A}:1-40:41-100", f"{A}:1-77", True),  # adjacent intervals are one
        (f"{A}:1-40:42-100", f"{A}:1-77", False),  # 41 is missing
        (f"{A.upper()}:1-100,{B}:1-5", f"{A}:1-10,{B}:1-5", True),  # case and servers
        (f"{A}:1-100", f"{A}:1-10,{B}:1", False),  # another server's purged transaction
    ],
)
def test_a_set_includes_another_when_it_has_every_transaction_of_it(
    given: str, purged: str, included: bool
) -> None:
    assert _set(given).includes(_set(purged)) is included
