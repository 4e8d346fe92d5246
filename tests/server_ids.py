"""Replica ids (``server_id``) for the binlog readers tests start.

Two readers with one id disconnect each other at the server, so no two readers may share one:
not two tests of a run, and not two runs that share the stack. A run reserves a block of ids,
drawn at random, with a named lock on the source server that one connection holds for as long
as the run lasts; a concurrent run that draws the same block draws again.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from contextlib import contextmanager

from tidemark.source import SourceConnection

#: Far above the ids the stack and its tools use (the server's own is 1, a pipeline file without
#: ``server-id`` reads as 5400, Flink CDC draws from 5400-6400, the benchmarks take 4900-4999),
#: and below the largest MariaDB and MySQL accept (2**32 - 1).
FIRST, LAST = 1_000_000_000, 4_000_000_000
#: the ids one run may hand out (a whole-suite run takes a few hundred)
BLOCK = 10_000
LOCK_PREFIX = "tidemark-tests.server-ids."
DRAWS = 20


class ServerIds:
    """``server_ids()``: an id no other reader of this run, or of a concurrent one, uses."""

    def __init__(self, first: int) -> None:
        self.first = first
        self._ids = itertools.count(first)

    def __call__(self) -> int:
        server_id = next(self._ids)
        assert server_id < self.first + BLOCK, f"this run has used its {BLOCK} server ids"
        return server_id

    @classmethod
    @contextmanager
    def reserved(cls, admin: SourceConnection) -> Iterator[ServerIds]:
        """Ids from a block this run holds a lock on at ``admin``'s server until the block ends."""
        draw = random.SystemRandom()
        with admin.connect() as connection, connection.cursor() as cursor:
            for _ in range(DRAWS):
                first = draw.randrange(FIRST, LAST, BLOCK)
                cursor.execute("SELECT GET_LOCK(%s, 0)", (f"{LOCK_PREFIX}{first}",))
                if cursor.fetchone() == (1,):
                    break
            else:
                raise AssertionError(f"every one of {DRAWS} blocks of server ids drawn is in use")
            yield cls(first)
