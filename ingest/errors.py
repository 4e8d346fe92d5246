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
