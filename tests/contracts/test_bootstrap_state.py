"""The bootstrap's state in a commit's summary: what a resumed bootstrap reads back."""

from __future__ import annotations

import datetime as dt
import json

from tidemark.contracts.bootstrap_state import BOOTSTRAP_KEY, BootstrapState, SourceTableBootstrap

STATE = BootstrapState(
    {
        "shop.orders": SourceTableBootstrap(False, ("eu", 5123), 5123, ("region", "id")),
        "shop.visits": SourceTableBootstrap(
            False, (dt.datetime(2026, 1, 2, 3, 4, 5),), 90, ("at",)
        ),
        "shop.items": SourceTableBootstrap(True, None, 10, ("id",)),
    },
    errors_order=7,
)


def test_a_state_survives_the_round_trip_through_a_summary_with_its_chunk_keys() -> None:
    assert BootstrapState.from_summary(STATE.summary()) == STATE


def test_a_state_written_before_chunk_keys_were_kept_reads_without_them() -> None:
    document = json.loads(STATE.summary()[BOOTSTRAP_KEY])
    for entry in document["tables"].values():
        del entry["key"]

    older = BootstrapState.from_summary({BOOTSTRAP_KEY: json.dumps(document)})

    assert older is not None
    assert older.table("shop.orders") == SourceTableBootstrap(False, ("eu", 5123), 5123, None)
