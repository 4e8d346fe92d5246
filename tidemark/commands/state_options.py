"""Where the scheduler's state lives: the options of the commands that read or change it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.state import StateSettings
    from tidemark.config.model import PipelineConfig


def add_state_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dsn",
        help="libpq connection string of the state database "
        "(default: the catalog's PostgreSQL database, from the first file's sink)",
    )
    parser.add_argument(
        "--state-schema", default="tidemark_scheduler", help="schema of the scheduler's tables"
    )


def state_settings(args: argparse.Namespace, config: PipelineConfig) -> StateSettings:
    from scheduler.state import StateSettings
    from tidemark.config.model import reveal

    if args.state_dsn:
        return StateSettings.from_dsn(args.state_dsn, args.state_schema)
    return StateSettings.from_catalog(reveal(config.sink.catalog_properties), args.state_schema)
