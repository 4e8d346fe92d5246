"""A table's data file plan is made once and kept while its schema, spec and properties hold."""

from __future__ import annotations

from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from tidemark.lake.data_files import DataFilePlan

METADATA = new_table_metadata(
    Schema(NestedField(1, "id", LongType(), required=False)),
    UNPARTITIONED_PARTITION_SPEC,
    UNSORTED_SORT_ORDER,
    "s3://warehouse/shop/orders",
    {"write.parquet.compression-codec": "zstd"},
)


def test_a_plan_fits_the_same_properties_in_a_new_mapping_as_a_rest_catalog_answers() -> None:
    plan = DataFilePlan.of(METADATA)
    answered = METADATA.model_copy(update={"properties": dict(METADATA.properties)})

    assert answered.properties is not METADATA.properties
    assert plan.fits(answered)


def test_a_plan_does_not_fit_changed_properties() -> None:
    plan = DataFilePlan.of(METADATA)
    changed = METADATA.model_copy(
        update={"properties": {"write.parquet.compression-codec": "snappy"}}
    )

    assert not plan.fits(changed)
