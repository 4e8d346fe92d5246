"""The replica ids tests give their binlog readers: none twice in a run, none a concurrent run
on the same stack holds, none of the ids the stack and its tools use."""

from __future__ import annotations

import random

import pytest

from tests.server_ids import BLOCK, FIRST, LAST, LOCK_PREFIX, ServerIds
from tidemark.config.model import DEFAULT_SERVER_ID
from tidemark.stack.endpoints import StackEndpoints


def test_a_run_hands_out_each_id_once_far_from_the_stacks_own(
    endpoints: StackEndpoints, server_ids: ServerIds
) -> None:
    ids = [server_ids() for _ in range(100)]

    assert len(set(ids)) == 100
    assert all(server_ids.first <= server_id < server_ids.first + BLOCK for server_id in ids)
    assert FIRST <= server_ids.first and server_ids.first + BLOCK <= LAST <= 2**32 - 1
    assert endpoints.mariadb.server_id < FIRST and DEFAULT_SERVER_ID < FIRST


def test_a_concurrent_run_that_draws_a_block_this_run_holds_draws_again(
    endpoints: StackEndpoints, server_ids: ServerIds, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = next(first for first in range(FIRST, LAST, BLOCK) if first != server_ids.first)
    draws = iter([server_ids.first, other])
    monkeypatch.setattr(random.SystemRandom, "randrange", lambda *_: next(draws))

    with ServerIds.reserved(endpoints.mariadb.admin_source()) as concurrent:
        assert concurrent.first == other
        assert concurrent() == other
        assert not lock_is_free(endpoints, other)

    assert lock_is_free(endpoints, other)  # released when that run ends
    assert not lock_is_free(endpoints, server_ids.first)


def lock_is_free(endpoints: StackEndpoints, first: int) -> bool:
    with endpoints.mariadb.admin_source().connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT IS_FREE_LOCK(%s)", (f"{LOCK_PREFIX}{first}",))
        return cursor.fetchone() == (1,)
