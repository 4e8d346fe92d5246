"""Which changelog files a merge reads for an order range: those whose bounds may hold it."""

from __future__ import annotations

import pytest
from pyiceberg.manifest import FileFormat

from spark_jobs.merge.order_range import RangeFile


@pytest.mark.parametrize(
    ("lowest", "highest", "held"),
    [
        (1, 10, False),  # ends at the range's exclusive start
        (1, 11, True),
        (20, 30, True),  # starts at the range's inclusive end
        (21, 30, False),
        (None, 5, False),
        (None, None, True),  # no statistics: read
        (25, None, False),
    ],
)
def test_a_file_is_read_when_its_orders_may_fall_in_the_range(
    lowest: int | None, highest: int | None, held: bool
) -> None:
    file = RangeFile("f.parquet", FileFormat.PARQUET, lowest, highest)

    assert file.may_hold(10, 20) is held
