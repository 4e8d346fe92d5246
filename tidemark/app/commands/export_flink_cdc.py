"""``tidemark export-flink-cdc FILE``: the pipeline file as Flink CDC 3.x takes it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tidemark.app.commands.command import Command
from tidemark.config import load_pipeline
from tidemark.config.document import read_text
from tidemark.config.flink_export import export_flink_cdc


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="a pipeline YAML file")
    parser.add_argument(
        "--resolve",
        action="store_true",
        help="replace ${VAR} references by their values, except those of secrets "
        "(comments are not kept)",
    )
    parser.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    load_pipeline(args.file)  # only a valid file is exported
    text = read_text(args.file)
    sys.stdout.write(export_flink_cdc(text, args.file, os.environ, resolve=args.resolve))
    return 0


COMMAND = Command(
    "export-flink-cdc",
    "print a pipeline file without the tidemark block, for Flink CDC",
    _configure,
)
