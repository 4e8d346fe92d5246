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
        backfill,
        demo,
        export_flink_cdc,
        ingest,
        maintain,
        plan,
        release,
        run,
        schedule,
        stack,
        status,
        validate,
        verify,
        window,
    )

    return [
        stack.COMMAND,
        demo.COMMAND,
        validate.COMMAND,
        plan.COMMAND,
        ingest.COMMAND,
        schedule.COMMAND,
        run.COMMAND,
        status.COMMAND,
        release.COMMAND,
        window.COMMAND,
        backfill.COMMAND,
        maintain.COMMAND,
        verify.COMMAND,
        export_flink_cdc.COMMAND,
    ]


COMMANDS: list[Command] = _registry()
