"""What a test's code asks of the shared catalog, recorded while the real catalog answers."""

from __future__ import annotations

from typing import Any

import pytest
from pyiceberg.catalog import Catalog


def recording_load_table(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The identifiers ``catalog.load_table`` is asked for from here on."""
    asked: list[str] = []
    load_table = catalog.load_table

    def recording(identifier: str | tuple[str, ...]) -> Any:
        asked.append(identifier if isinstance(identifier, str) else ".".join(identifier))
        return load_table(identifier)

    monkeypatch.setattr(catalog, "load_table", recording)
    return asked
