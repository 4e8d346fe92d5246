"""``tidemark plan FILE``: which MySQL tables a pipeline would onboard, where to, and what not."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tidemark.app.commands.command import Command
from tidemark.app.output.console import write
from tidemark.app.output.plan import plan_json, plan_view
from tidemark.app.pipeline import Pipeline


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="a pipeline YAML file")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=_plan)


def _plan(args: argparse.Namespace) -> int:
    pipeline = Pipeline.open(args.file)
    plan = pipeline.plan
    if args.json:
        sys.stdout.write(json.dumps(plan_json(pipeline.config, plan), indent=2) + "\n")
    else:
        write(sys.stdout, plan_view(pipeline.config, plan))
    return 0 if plan.ok else 1


COMMAND = Command(
    "plan", "show which MySQL tables a pipeline onboards, and what it cannot", _configure
)
