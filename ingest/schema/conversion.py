"""How the row images of a source table become changelog values, with the structure's version."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ingest.schema.types import Values

#: the changelog's number of a table's first known structure
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Conversion:
    """How the images of one row event become changelog values."""

    #: an image's values to the lake's, in the same order (``ingest.schema.types.values_converter``)
    convert: Callable[[Values], Values]
    #: the changelog's number of the structure the images were written with
    schema_version: int


def _unchanged(values: Values) -> Values:
    return values


AS_READ = Conversion(_unchanged, SCHEMA_VERSION)
