"""Data files and position delete files, written (and deletes read) as PyIceberg does.

A commit's files are written before its snapshot (``tidemark.lake.snapshots``) lists them.
Three writers:

- ``write_data_files``, for a changelog's append: Parquet files named, placed, laid out and
  described (statistics, partition) as PyIceberg's append writes them, from a
  ``DataFilePlan`` made once per table schema, spec and properties. PyIceberg (0.12)
  re-derives all of it at each append and groups rows by partition with a generic group-by
  that dominated a one-row commit (issue 25); rows of one partition, the common case, are
  written without it. The rows must have the table's exact Arrow schema.
- ``write_with_pyiceberg``: PyIceberg's own writer (any Arrow schema it accepts; bin-packed to
  the target file size), for a merge's new rows.
- ``write_position_deletes``: one position delete file, as the Iceberg spec and Java's writer
  make it (PyIceberg writes none).

``read_position_deletes`` reads one back, per data file it names.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import (
    _dataframe_to_data_files,
    _determine_partitions,
    _get_parquet_writer_kwargs,
    _read_deletes,
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
    schema_to_pyarrow,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
from pyiceberg.schema import Schema
from pyiceberg.table import TableMetadata, TableProperties
from pyiceberg.table.locations import LocationProvider, load_location_provider
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType
from pyiceberg.utils.properties import property_as_int


@dataclass(frozen=True)
class DataFilePlan:
    """What writing a table's data files needs that only changes with its schema, spec or
    properties."""

    schema_id: int
    spec_id: int
    properties: Mapping[str, str]
    arrow: pa.Schema
    writer_options: Mapping[str, Any]
    row_group_rows: int
    statistics: Mapping[int, Any]
    column_ids: Mapping[str, int]
    locations: LocationProvider
    #: per partition field, the Arrow function of its transform and the source column's name
    partition_columns: tuple[tuple[Callable[[pa.Array], pa.Array], str], ...]

    @classmethod
    def of(cls, metadata: TableMetadata) -> DataFilePlan:
        schema, spec, properties = metadata.schema(), metadata.spec(), metadata.properties
        partition_columns = []
        for field in spec.fields:
            source = schema.find_field(field.source_id)
            name = schema.find_column_name(field.source_id)
            assert name is not None  # a spec's fields come from its schema
            partition_columns.append((field.transform.pyarrow_transform(source.field_type), name))
        return cls(
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
            locations=load_location_provider(metadata.location, properties),
            partition_columns=tuple(partition_columns),
        )

    def fits(self, metadata: TableMetadata) -> bool:
        """Whether the plan is still the one of a table with ``metadata``: its properties are
        replaced, never changed in place, so identity mostly tells; a REST catalog answers
        each commit with new metadata, equal properties in a new mapping, and comparing them
        (a few dozen strings) is far cheaper than planning again (2-3 ms a commit)."""
        return (
            self.schema_id == metadata.current_schema_id
            and self.spec_id == metadata.default_spec_id
            and (self.properties is metadata.properties or self.properties == metadata.properties)
        )


def write_data_files(
    metadata: TableMetadata, io: FileIO, plan: DataFilePlan, rows: pa.Table, commit_uuid: uuid.UUID
) -> Iterator[DataFile]:
    """``rows`` (in ``plan.arrow``'s schema, field ids aside) as one data file per partition,
    named ``00000-<n>-<commit_uuid>.parquet`` as PyIceberg names them."""
    rows = pa.Table.from_arrays(rows.columns, schema=plan.arrow)
    for number, (key, part) in enumerate(_partitions(metadata, plan, rows)):
        yield _write_data_file(metadata, io, plan, key, part, number, commit_uuid)


def _partitions(
    metadata: TableMetadata, plan: DataFilePlan, rows: pa.Table
) -> Iterator[tuple[PartitionKey | None, pa.Table]]:
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


def _single_value(column: pa.Array | pa.ChunkedArray) -> bool:
    if column.null_count:
        return False
    bounds = pc.min_max(column)
    return bool(bounds["min"] == bounds["max"])


def _write_data_file(
    metadata: TableMetadata,
    io: FileIO,
    plan: DataFilePlan,
    key: PartitionKey | None,
    rows: pa.Table,
    number: int,
    commit_uuid: uuid.UUID,
) -> DataFile:
    path = plan.locations.new_data_location(
        data_file_name=f"00000-{number}-{commit_uuid}.parquet", partition_key=key
    )
    output = io.new_output(path)
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


def write_with_pyiceberg(
    metadata: TableMetadata, io: FileIO, rows: pa.Table, commit_uuid: uuid.UUID
) -> Iterator[DataFile]:
    """``rows`` written by PyIceberg's own append writer, as its append would write them."""
    if rows.num_rows == 0:
        return
    yield from _dataframe_to_data_files(
        table_metadata=metadata, df=rows, io=io, write_uuid=commit_uuid
    )


#: the position delete file's columns (Iceberg spec, "Position Delete Files")
_DELETE_SCHEMA = Schema(
    NestedField(2147483546, "file_path", StringType(), required=True),
    NestedField(2147483545, "pos", LongType(), required=True),
)
_DELETE_ARROW = schema_to_pyarrow(_DELETE_SCHEMA, include_field_ids=True)
#: file paths kept whole in the statistics, as Iceberg's Java writers keep them, so a reader
#: matches a delete file to the data files it names
_DELETE_STATISTICS = compute_statistics_plan(
    _DELETE_SCHEMA, {"write.metadata.metrics.default": "full"}
)
_DELETE_COLUMN_IDS = parquet_path_to_id_mapping(_DELETE_SCHEMA)


def write_position_deletes(
    metadata: TableMetadata,
    io: FileIO,
    locations: LocationProvider,
    deletes: Sequence[tuple[DataFile, pa.Array]],
) -> DataFile:
    """One position delete file for rows (int64 positions, ascending) of data files of one spec
    and partition: a delete file applies to its own partition only. Rows are sorted by file
    and position, as the spec asks."""
    deletes = sorted(deletes, key=lambda delete: delete[0].file_path)
    rows = pa.Table.from_arrays(
        [
            pa.chunked_array(
                [
                    pa.array([data_file.file_path] * len(positions), pa.string())
                    for data_file, positions in deletes
                ]
            ),
            pa.chunked_array([positions for _, positions in deletes], pa.int64()),
        ],
        schema=_DELETE_ARROW,
    )
    first = deletes[0][0]
    spec = metadata.specs()[first.spec_id]
    key = None
    if not spec.is_unpartitioned():
        key = PartitionKey(
            field_values=[
                PartitionFieldValue(field=field, value=first.partition[index])
                for index, field in enumerate(spec.fields)
            ],
            partition_spec=spec,
            schema=metadata.schema(),
        )
    path = locations.new_data_location(
        data_file_name=f"00000-deletes-{uuid.uuid4()}.parquet", partition_key=key
    )
    output = io.new_output(path)
    with output.create(overwrite=True) as stream:
        writer = pq.ParquetWriter(stream, schema=_DELETE_ARROW)
        writer.write(rows)
        writer.close()
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=writer.writer.metadata,
        stats_columns=dict(_DELETE_STATISTICS),
        parquet_column_mapping=dict(_DELETE_COLUMN_IDS),
    )
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=first.partition,
        file_size_in_bytes=len(output),
        sort_order_id=None,
        spec_id=first.spec_id,
        equality_ids=None,
        key_metadata=None,
        **statistics.to_serialized_dict(),
    )
    delete_file.spec_id = first.spec_id  # not a field of the struct: from_args drops it
    return delete_file


def read_position_deletes(io: FileIO, delete_file: DataFile) -> dict[str, pa.ChunkedArray]:
    """The positions a position delete file removes, per data file path it names."""
    return _read_deletes(io, delete_file)
