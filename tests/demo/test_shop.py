"""The demo shop's user shards: ids are global, every id lives in exactly one shard."""

from __future__ import annotations

from collections import Counter

from tidemark.app.demo.shop import user_shard, user_shards


def test_user_ids_spread_evenly_over_every_shard() -> None:
    placed = Counter(user_shard(user_id) for user_id in range(1, 4001))

    assert set(placed) == set(user_shards())
    assert set(placed.values()) == {1000}
