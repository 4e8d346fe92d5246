"""Helpers for tests that start services of their own beside the shared stack."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on right now (the kernel picks them)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@contextmanager
def second_stack_home(stack_settings: StackSettings, name: str) -> Iterator[Path]:
    """A second stack's home beside the first, sharing its jars and MySQL system so nothing is
    downloaded; whatever it started is stopped and the folder removed afterwards.

    Not under /tmp: PostgreSQL runs as the postgres user, who cannot enter pytest's tmp folders.
    """
    home = stack_settings.home / "test-stacks" / name
    home.mkdir(parents=True)
    (home / "jars").symlink_to(stack_settings.jars_dir)
    (home / "mysql-system").symlink_to(stack_settings.mysql_system_dir)
    try:
        yield home
    finally:
        Stack(StackSettings(home=home)).down()
        shutil.rmtree(home)
