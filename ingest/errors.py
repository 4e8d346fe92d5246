"""Errors of the ingest package: one root, transient or terminal by class."""

from __future__ import annotations

from tidemark.errors import TerminalError, TidemarkError


class IngestError(TidemarkError):
    """Root of the errors ingest raises on purpose."""


class SchemaChangeStopError(IngestError, TerminalError):
    """The binlog changes the structure of an onboarded table; ingest stopped before it."""
