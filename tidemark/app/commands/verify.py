"""``tidemark verify FILE``: does every mirror table equal its MySQL source? Exit 1 if not."""

from __future__ import annotations

import argparse
import sys

from tidemark.app.commands.command import Command, add_file_argument


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--table", help="only this sink table")
    parser.add_argument(
        "--page-rows", type=int, default=10_000, help="rows compared per primary-key page"
    )
    parser.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    from tidemark.app.output.verify import verification_lines
    from tidemark.app.pipeline import Pipeline

    failures = 0
    for result in Pipeline.open(args.file).verify(args.table, args.page_rows):
        sys.stdout.write("".join(line + "\n" for line in verification_lines(result)))
        sys.stdout.flush()
        failures += result.failed
    return 1 if failures else 0


COMMAND = Command("verify", "compare every mirror table with its MySQL source", _configure)
