"""PyIceberg's v2 manifest and manifest-list writers, with their Avro set-up made once, and
the delete manifest writer PyIceberg lacks.

Opening one of PyIceberg's (0.12) Avro writers derives the file's Iceberg schema from the
table's partition type, converts it to an Avro schema (JSON, for the header) and builds a
tree of value writers from it; for a one-row changelog commit that was a third of the CPU
(issue 25). All three depend only on the table's schema and spec (the manifest) or on nothing
(the manifest list), so ``AvroLayout`` keeps them, and the writers here take it instead of
deriving it. The bytes written are PyIceberg's: the same header keys, schema and records.

PyIceberg writes data manifests only; ``DeleteManifestWriter`` is its v2 writer marked as a
manifest of delete files, as Java's writer marks one.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyiceberg.avro.file import (
    _SCHEMA_KEY,
    AVRO_CODEC_KEY,
    CODEC_MAPPING_ICEBERG_TO_AVRO,
    MAGIC,
    META_SCHEMA,
    SYNC_SIZE,
    AvroFileHeader,
    AvroOutputFile,
)
from pyiceberg.avro.resolver import construct_writer, resolve_writer
from pyiceberg.avro.writer import Writer
from pyiceberg.io import OutputFile
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_LIST_FILE_SCHEMAS,
    ManifestContent,
    ManifestListWriterV2,
    ManifestWriterV2,
    data_file_with_partition,
    manifest_entry_schema_with_data_file,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import TableProperties
from pyiceberg.utils.schema_conversion import AvroSchemaConversion


@dataclass(frozen=True)
class AvroLayout:
    """An Avro file's schemas as PyIceberg's writer derives them, derived once."""

    file_schema: Schema
    schema_name: str
    #: the file schema as Avro JSON, for the header
    avro_json: str
    writer: Writer
    #: the header's metadata where it is the same for every file of the layout
    metadata: Mapping[str, str] | None = None

    @classmethod
    def of(cls, file_schema: Schema, record_schema: Schema, schema_name: str) -> AvroLayout:
        avro = AvroSchemaConversion().iceberg_to_avro(file_schema, schema_name=schema_name)
        return cls(
            file_schema=file_schema,
            schema_name=schema_name,
            avro_json=json.dumps(avro),
            writer=resolve_writer(record_schema=record_schema, file_schema=file_schema),
        )


def manifest_layout(spec: PartitionSpec, schema: Schema, compression: str) -> AvroLayout:
    """The layout of a v2 data manifest of a table with ``spec`` and ``schema``, compressed
    with ``compression``."""

    def entry_schema(version: int) -> Schema:
        data_file = data_file_with_partition(
            format_version=version,  # type: ignore[arg-type]
            partition_type=spec.partition_type(schema),
        )
        return manifest_entry_schema_with_data_file(
            format_version=version,  # type: ignore[arg-type]
            data_file=data_file,
        )

    layout = AvroLayout.of(entry_schema(2), entry_schema(DEFAULT_READ_VERSION), "manifest_entry")
    # the header PyIceberg's writer gives every manifest of this schema and spec
    metadata = ManifestWriterV2(
        spec,
        schema,
        None,  # type: ignore[arg-type]  # read by nothing that _meta uses
        snapshot_id=0,
        avro_compression=compression,  # type: ignore[arg-type]
    )._meta
    return replace(layout, metadata=metadata)


@functools.cache
def manifest_list_layout() -> AvroLayout:
    return AvroLayout.of(
        MANIFEST_LIST_FILE_SCHEMAS[2],
        MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION],
        "manifest_file",
    )


class _LaidOutAvroFile(AvroOutputFile[Any]):
    """``AvroOutputFile`` with its writer and header schema from an ``AvroLayout``."""

    def __init__(
        self, output_file: OutputFile, layout: AvroLayout, metadata: dict[str, str]
    ) -> None:  # no super().__init__: it would derive what the layout holds
        self.output_file = output_file
        self.file_schema = layout.file_schema
        self.schema_name = layout.schema_name
        self.sync_bytes = os.urandom(SYNC_SIZE)
        self.writer = layout.writer
        self.metadata = metadata
        self._layout = layout

    def _write_header(self) -> None:
        codec = self.metadata.get(AVRO_CODEC_KEY, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT)
        codec = CODEC_MAPPING_ICEBERG_TO_AVRO.get(codec, codec)
        meta = {**self.metadata, _SCHEMA_KEY: self._layout.avro_json, AVRO_CODEC_KEY: codec}
        _header_writer().write(self.encoder, AvroFileHeader(MAGIC, meta, self.sync_bytes))


@functools.cache
def _header_writer() -> Writer:
    return construct_writer(META_SCHEMA)


class LaidOutManifestWriter(ManifestWriterV2):
    """PyIceberg's v2 manifest writer on a layout made once per table schema and spec, with
    its header's metadata (which holds the schema and spec as JSON) made once too."""

    def __init__(self, layout: AvroLayout, **arguments: Any) -> None:
        super().__init__(**arguments)
        self._layout = layout

    @property
    def _meta(self) -> dict[str, str]:
        if self._layout.metadata is None:
            return super()._meta
        return dict(self._layout.metadata)

    def new_writer(self) -> AvroOutputFile[Any]:
        return _LaidOutAvroFile(self._output_file, self._layout, self._meta)


class LaidOutManifestListWriter(ManifestListWriterV2):
    """PyIceberg's v2 manifest-list writer on the layout made once."""

    def __enter__(self) -> LaidOutManifestListWriter:
        self._writer = _LaidOutAvroFile(self._output_file, manifest_list_layout(), self._meta)
        self._writer.__enter__()
        return self


class DeleteManifestWriter(ManifestWriterV2):
    """A format version 2 manifest of delete files: PyIceberg writes data manifests only."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}
