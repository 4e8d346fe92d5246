"""Problems found in a pipeline file, and the one error that carries all of them.

A file is checked completely before anything is reported, so the user fixes every mistake in one
pass. Each problem names the file, the line, the key path, what is wrong and how to fix it; it
never contains a secret: messages never quote the values of secret keys, values quoted from the
file go through ``Problems.redactor`` (which knows every secret value read), and the passwords of
URLs are masked in every message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from tidemark.config.secrets import Redactor, mask_url_passwords
from tidemark.errors import ConfigError


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or suspicious) in a file, printable as one line."""

    file: str
    line: int | None
    key: str
    message: str
    severity: Severity = Severity.ERROR
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class PipelineConfigError(ConfigError):
    """A pipeline file (or several) is wrong; ``str()`` has one line per problem."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


@dataclass
class Problems:
    """Collects problems while a file is checked; raises them together at the end."""

    file: str
    redactor: Redactor = field(default_factory=Redactor)
    items: list[Problem] = field(default_factory=list)

    def error(self, line: int | None, key: str, message: str, column: int | None = None) -> None:
        self._add(Problem(self.file, line, key, message, Severity.ERROR, column))

    def warning(self, line: int | None, key: str, message: str) -> None:
        self._add(Problem(self.file, line, key, message, Severity.WARNING))

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.items if p.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.items if p.severity is Severity.WARNING)

    def raise_if_errors(self) -> None:
        errors = self.errors
        if errors:
            raise PipelineConfigError(self._final(errors))

    def final_warnings(self) -> tuple[Problem, ...]:
        return self._final(self.warnings)

    def redact(self, text: str) -> str:
        """``text`` quoted from the file, with every known secret value masked."""
        return self.redactor.redact(text)

    def _add(self, problem: Problem) -> None:
        if problem not in self.items:
            self.items.append(problem)

    def _final(self, problems: Iterable[Problem]) -> tuple[Problem, ...]:
        """In line order, with URL passwords masked (a message may quote a URL from a library)."""
        ordered = sorted(problems, key=lambda p: (p.line is None, p.line or 0))
        return tuple(
            Problem(p.file, p.line, p.key, mask_url_passwords(p.message), p.severity, p.column)
            for p in ordered
        )
