"""The subcommands of ``tidemark``, one module each, registered here in the order of ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]


def _registry() -> list[Command]:
    # Imported here so that each command module may import this one for `Command`.
    from tidemark.commands import (
        export_flink_cdc,
        ingest,
        maintain,
        plan,
        stack,
        status,
        validate,
    )

    return [
        stack.COMMAND,
        validate.COMMAND,
        plan.COMMAND,
        ingest.COMMAND,
        status.COMMAND,
        maintain.COMMAND,
        export_flink_cdc.COMMAND,
    ]


COMMANDS: list[Command] = _registry()
