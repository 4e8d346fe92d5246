"""``tidemark stack up | down | status``: the local services for the demo and the tests."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tidemark.app.commands.command import Command
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack


def _configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser("up", help="install what is missing, start every service, wait")
    up.set_defaults(handler=_up)
    down = actions.add_parser("down", help="stop the services this stack started")
    down.set_defaults(handler=_down)
    status = actions.add_parser("status", help="health and endpoints of every service")
    status.add_argument("--json", action="store_true", help="machine-readable, with credentials")
    status.set_defaults(handler=_status)


def _up(args: argparse.Namespace) -> int:
    stack = Stack(StackSettings.from_env())
    stack.up()
    report = stack.status()
    _print_table(report)
    return 0 if report["healthy"] else 1


def _down(args: argparse.Namespace) -> int:
    stopped = Stack(StackSettings.from_env()).down()
    sys.stdout.write(f"stopped: {', '.join(stopped)}\n" if stopped else "nothing was running\n")
    return 0


def _status(args: argparse.Namespace) -> int:
    report = Stack(StackSettings.from_env()).status()
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        _print_table(report)
    return 0 if report["healthy"] else 1


def _print_table(report: dict[str, Any]) -> None:
    services = report["services"]
    lines = [f"tidemark stack in {report['home']}"]
    for name, service in services.items():
        state = "healthy" if service["healthy"] else "DOWN"
        lines.append(f"  {name:<13}{state:<9}{_where(name, service)}")
    sys.stdout.write("\n".join(lines) + "\n")


def _where(name: str, service: dict[str, Any]) -> str:
    if name == "kafka":
        return f"bootstrap.servers={service['bootstrap_servers']}"
    if name == "spark":
        return f"{service['master']}, {len(service['jars'])} jars"
    if name == "postgres":
        return f"{service['jdbc_uri']} (Iceberg catalog '{service['catalog_name']}')"
    if name == "object_store":
        return f"{service['endpoint']} (S3, bucket '{service['bucket']}')"
    if name == "rest_catalog":
        return (
            f"{service['uri']} (Iceberg REST catalog '{service['name']}', {service['warehouse']})"
        )
    return f"{service['host']}:{service['port']}"


COMMAND = Command("stack", "start, stop and inspect the local services", _configure)
