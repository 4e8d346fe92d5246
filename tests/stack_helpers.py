"""Helpers for tests that start services of their own beside the shared stack."""

from __future__ import annotations

import ipaddress
import os
import random
import shutil
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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


def free_port_block(size: int, offset: int, below: int = 32768) -> int:
    """The first of ``size`` consecutive ports that nothing listens on, nor on any of them plus
    ``offset``, all below ``below`` (the object store's block and its gRPC ports)."""
    for _ in range(200):
        first = random.randrange(15000, below - offset - size)
        ports = [*range(first, first + size), *range(first + offset, first + offset + size)]
        if _all_free(ports):
            return first
    raise AssertionError(f"no free block of {size} ports (and +{offset}) below {below}")


def _all_free(ports: list[int]) -> bool:
    with ExitStack() as sockets:
        for port in ports:
            sock = sockets.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """The TCP addresses process ``pid`` listens on, from /proc: a socket bound to every
    address shows as 0.0.0.0 or ::, one bound to loopback as 127.0.0.1 (IPv4-mapped too)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target.removeprefix("socket:[").removesuffix("]"))
    listening = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                address, port = local.split(":")
                listening.add((_proc_address(address), int(port, 16)))
    return listening


def _proc_address(hexadecimal: str) -> str:
    """/proc/net/tcp{,6} write addresses as 32-bit words in the machine's byte order."""
    words = [bytes.fromhex(hexadecimal[i : i + 8]) for i in range(0, len(hexadecimal), 8)]
    raw = b"".join(word[::-1] if _LITTLE_ENDIAN else word for word in words)
    address = ipaddress.ip_address(raw)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


_LITTLE_ENDIAN = socket.htonl(1) != 1


@contextmanager
def second_stack_home(stack_settings: StackSettings, name: str) -> Iterator[Path]:
    """A second stack's home beside the first, sharing its jars, MySQL system and SeaweedFS
    binary so nothing is downloaded; whatever it started is stopped and the folder removed
    afterwards.

    Not under /tmp: PostgreSQL runs as the postgres user, who cannot enter pytest's tmp folders.
    """
    home = stack_settings.home / "test-stacks" / name
    home.mkdir(parents=True)
    (home / "jars").symlink_to(stack_settings.jars_dir)
    (home / "mysql-system").symlink_to(stack_settings.mysql_system_dir)
    (home / "seaweedfs").symlink_to(stack_settings.seaweedfs_dir)
    try:
        yield home
    finally:
        Stack(StackSettings(home=home)).down()
        shutil.rmtree(home)
