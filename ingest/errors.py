"""Errors of the ingest package: one root, transient or terminal by class."""

from __future__ import annotations

from tidemark.errors import TerminalError, TidemarkError


class IngestError(TidemarkError):
    """Root of the errors ingest raises on purpose."""


class SchemaChangeStopError(IngestError, TerminalError):
    """The binlog changes the structure of an onboarded table; ingest stopped before it."""


class StartupCheckError(IngestError, TerminalError):
    """The source is not ready for change data capture; names every problem with its fix."""

    def __init__(self, source: str, problems: tuple[str, ...]) -> None:
        lines = "\n".join(f"- {problem}" for problem in problems)
        super().__init__(
            f"the source {source} is not ready for change data capture; "
            f"fix these {len(problems)} problem(s) and start again:\n{lines}"
        )
        self.problems = problems


class UnnamedColumnsError(IngestError, TerminalError):
    """Row events whose table map names no column: the server wrote them with
    ``binlog_row_metadata=MINIMAL`` after ingest's start-up check passed."""

    def __init__(self, database: str, table: str) -> None:
        super().__init__(
            f"the binlog's row events of {database}.{table} carry no column names: the server "
            "wrote them with binlog_row_metadata=MINIMAL. Run SET GLOBAL binlog_row_metadata = "
            "FULL (and set it under [mysqld] in my.cnf); the events written meanwhile cannot be "
            "matched to their columns, so start ingest after them (scan.startup.mode: "
            "timestamp) and bootstrap the tables they changed again (drop their changelog "
            "tables, scan.startup.mode: initial)"
        )
        self.database = database
        self.table = table

    def __reduce__(self) -> tuple[type[UnnamedColumnsError], tuple[str, str]]:
        # raised in the reading process and raised again here, as pickled
        return type(self), (self.database, self.table)


class PartialJsonUpdatesError(IngestError, TerminalError):
    """The binlog holds a MySQL partial JSON update (``binlog_row_value_options=PARTIAL_JSON``),
    written after ingest's start-up check passed: its after image is a diff, not the row."""

    def __init__(self, position: str) -> None:
        super().__init__(
            f"the binlog holds a partial JSON update at {position}: the server wrote it with "
            "binlog_row_value_options=PARTIAL_JSON, which logs a change to a JSON column as a "
            "diff instead of the row. Run SET GLOBAL binlog_row_value_options = '' (and remove "
            "it from my.cnf); the rows changed meanwhile cannot be read exactly, so start "
            "ingest after them (scan.startup.mode: timestamp) and bootstrap the tables they "
            "changed again (drop their changelog tables, scan.startup.mode: initial)"
        )
        self.position = position

    def __reduce__(self) -> tuple[type[PartialJsonUpdatesError], tuple[str]]:
        # raised in the reading process and raised again here, as pickled
        return type(self), (self.position,)


class SourceSchemaError(IngestError, TerminalError):
    """A source table's structure cannot be read or has a column Tidemark cannot map."""


class UnconvertibleValueError(IngestError):
    """One value of one row cannot be represented in the lake; the row goes to the error table.

    Not transient (it fails the same way every time) and not terminal for the pipeline: only the
    row is refused.
    """

    def __init__(self, table: str, column: str, raw: str, reason: str) -> None:
        super().__init__(f"{table}.{column}: cannot convert the value {raw}: {reason}")
        self.table = table
        self.column = column
        #: ``repr`` of the value as the binlog decoding produced it
        self.raw = raw
        self.reason = reason


class NulledValuesError(IngestError):
    """A row whose values the lake could not hold in part, stored with NULL in their place (a
    zero or impossible date in a nullable column): not an error for the row, which lands, but a
    change of data that must leave a trace. ``values`` is the row as the lake holds it;
    ``nulled`` names each value replaced, as an error table records it."""

    def __init__(
        self, values: tuple[object, ...], nulled: tuple[UnconvertibleValueError, ...]
    ) -> None:
        super().__init__("; ".join(str(value) for value in nulled))
        self.values = values
        self.nulled = nulled
