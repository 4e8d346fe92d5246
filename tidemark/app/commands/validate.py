"""``tidemark validate FILE...``: check pipeline files offline, reporting every problem at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tidemark.app.commands.command import Command
from tidemark.config import (
    PaimonSink,
    PipelineConfig,
    PipelineConfigError,
    Problem,
    Severity,
    load_pipeline,
)
from tidemark.config.values import format_duration


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="pipeline YAML files")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    parser.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    problems: list[Problem] = []
    for path in args.files:
        try:
            config = load_pipeline(path)
        except PipelineConfigError as error:
            problems.extend(error.problems)
            continue
        for warning in config.warnings:
            sys.stderr.write(f"tidemark validate: warning: {warning}\n")
        if args.strict and config.warnings:
            problems.extend(_as_error(w) for w in config.warnings)
            continue
        sys.stdout.write(f"{path}: valid ({summary(config)})\n")
    if problems:
        raise PipelineConfigError(problems)
    return 0


def summary(config: PipelineConfig) -> str:
    source = config.source
    parts = [
        f"mysql {source.username}@{source.hostname}:{source.port}",
        _lake(config),
        _count(len(source.table_selectors), "table pattern"),
        _count(len(config.routes), "route"),
        _count(len(config.transforms), "transform"),
        _mirrors(config),
        _count(len(config.tidemark.jobs), "job"),
    ]
    return ", ".join(parts)


def _mirrors(config: PipelineConfig) -> str:
    if isinstance(config.sink, PaimonSink):  # a primary-key table: no window merges it
        return "each table its own mirror"
    return f"mirrors every {format_duration(config.tidemark.window)}"


def _lake(config: PipelineConfig) -> str:
    if isinstance(config.sink, PaimonSink):
        return f"paimon {config.sink.metastore} metastore"
    return f"iceberg {config.sink.catalog_properties.get('type', 'custom')} catalog"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _as_error(warning: Problem) -> Problem:
    return Problem(
        warning.file, warning.line, warning.key, warning.message, Severity.ERROR, warning.column
    )


COMMAND = Command(
    "validate", "check pipeline files offline, with every problem at once", _configure
)
